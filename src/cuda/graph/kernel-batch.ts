/**
 * `graph.addKernelNodes`: many kernel nodes in one call. Everything is checked first, as
 * `addKernelNode` checks one node; then the nodes go to the driver in one batch (one Node-API
 * call where the addon is loaded, the driver calls back to back as a C loop makes them), so
 * building a large graph costs about what C's `cuGraphAddKernelNode` loop costs. All or nothing.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe } from '../../util/validate.js';
import { graphBuild as gb, launchEx as lx } from '../../driver/result/index.js';
import { LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import type { Lifetime } from '../core/lifetime.js';
import { brands } from '../core/brands.js';
import type { Kernel } from '../kernel/kernel.js';
import type { LaunchConfig, CheckedAttributes } from '../kernel/launch-config.js';
import type { PackedArgs } from '../kernel/packed-args.js';
import { CudaNode, nodeHandleIn } from './cuda-node.js';
import { kernelFunction, resolveKernel, type KernelFunction } from './node-params.js';
import type { Graph } from './graph.js';

/** One node of `graph.addKernelNodes`. */
export interface KernelNodeEntry {
  /** The kernel the node runs (`module.function(name)`). */
  readonly kernel: Kernel;
  /** Its launch, as `addKernelNode` takes it. One object given to many nodes is checked once. */
  readonly config: LaunchConfig;
  /**
   * What the node runs after: nodes of the graph, or the indices of earlier entries of the same
   * call (`after: [i - 1]` makes a chain). Default: nothing.
   */
  readonly after?: readonly (CudaNode | number)[];
}

/** A distinct (kernel, config) pair of a batch: its launch, what its nodes hold, its attributes. */
interface Launch {
  readonly input: gb.KernelNodeInput;
  readonly holds: readonly Lifetime[];
  readonly attributes: CheckedAttributes | null;
}

/** `graph.addKernelNodes`. */
export function addKernels(graph: Graph, specs: unknown): CudaNode[] {
  const op = 'Graph.addKernelNodes';
  graph[LIFETIME].assertAlive(op);
  if (!Array.isArray(specs)) throw new InvalidArgumentError(op, 'nodes', `nodes must be an array of { kernel, config, after? }, got ${describe(specs)}`);
  const list = specs as readonly unknown[];
  const n = list.length;
  if (n === 0) return [];
  const launches: Launch[] = [];
  const arrays = takeArrays(n);
  const launchOf = arrays.launchOf.subarray(0, n);
  const depStart = arrays.depStart.subarray(0, n + 1);
  const deps = arrays.deps;
  const blocks: PackedArgs[] = [];
  try {
    readEntries(op, graph, list, launches, blocks, launchOf, depStart, deps);
    makeCurrent(op, graph.device.context);
    const handles = gb.addKernelNodes(op, graph.handle, {
      launches: launches.map((l) => l.input),
      launchOf,
      depStart,
      depIndex: deps.index.subarray(0, deps.length),
      depHandle: deps.handle.subarray(0, deps.length),
      out: arrays.out.subarray(0, n),
    });
    setAttributes(op, launches, launchOf, handles);
    const holds = new Set<Lifetime>();
    for (const l of launches) for (const h of l.holds) holds.add(h);
    return graph.attachMany(handles, 'kernel', [...holds]);
  } finally {
    // The driver has copied every argument value (or added nothing): the batch's own blocks can go.
    for (const b of blocks) b.free();
    giveArrays(arrays);
  }
}

/**
 * Checks the entries of a batch, resolving each distinct (kernel, config) pair once into
 * `launches` (arguments packed for the batch go to `blocks`), and writes each entry's launch and
 * dependencies (what the driver call then reads).
 */
function readEntries(
  op: string,
  graph: Graph,
  list: readonly unknown[],
  launches: Launch[],
  blocks: PackedArgs[],
  launchOf: Uint32Array,
  depStart: Uint32Array,
  deps: Dependencies,
): void {
  const n = launchOf.length;
  depStart[0] = 0;
  // The dependency entries' length and index array, in locals while the loop appends earlier
  // entries (the usual dependency): written back to `deps` around the rarer calls that use it.
  let depLength = 0;
  let depIndex = deps.index;
  // Launches already resolved in this call, by config object and then kernel function.
  const byConfig = new Map<object, Map<KernelFunction, number>>();
  let lastConfig: unknown = null;
  let lastFn: KernelFunction | null = null;
  let lastLaunch = -1;
  let lastKernel: unknown = null;
  let fn: KernelFunction | null = null;
  // While every entry so far runs launch 0 (a batch of one configuration, the usual one), no
  // entry's launch is written: the array is filled with zeros at the end (or when another launch
  // first appears), which costs less than a store per entry.
  let mixed = false;
  for (let i = 0; i < n; i++) {
    const spec = list[i];
    // Names are made only for a refusal: a string per entry would cost as much as the driver call.
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
      throw new InvalidArgumentError(op, `nodes[${i}]`, `nodes[${i}] must be an object { kernel, config, after? }, got ${describe(spec)}`);
    }
    for (const key in spec) {
      if (key !== 'kernel' && key !== 'config' && key !== 'after') {
        throw new InvalidArgumentError(op, `nodes[${i}]`, `unknown field of nodes[${i}] '${key.length > 60 ? `${key.slice(0, 60)}…` : key}' (known: kernel, config, after)`);
      }
    }
    const s = spec as Partial<KernelNodeEntry>;
    const kernel = s.kernel;
    if (kernel !== lastKernel) {
      if (!brands.Kernel.is(kernel)) throw new InvalidArgumentError(op, `nodes[${i}].kernel`, `nodes[${i}].kernel must be a Kernel (module.function(name)), got ${describe(kernel)}`);
      kernel.module[LIFETIME].assertAlive(op);
      fn = kernelFunction(kernel);
      lastKernel = kernel;
    }
    const config = s.config;
    let at: number;
    if (config === lastConfig && fn === lastFn) at = lastLaunch;
    else {
      if (typeof config !== 'object' || config === null) throw new InvalidArgumentError(op, `nodes[${i}].config`, `nodes[${i}].config must be a launch configuration { grid, block, args }, got ${describe(config)}`);
      let perFn = byConfig.get(config);
      const known = perFn?.get(fn!);
      if (known !== undefined) at = known;
      else {
        const k = resolveEntry(op, i, fn!, config, graph, blocks);
        at = launches.length;
        launches.push(k);
        if (perFn === undefined) byConfig.set(config, (perFn = new Map()));
        perFn.set(fn!, at);
      }
      lastConfig = config;
      lastFn = fn;
      lastLaunch = at;
    }
    if (at !== 0) {
      if (!mixed) {
        launchOf.fill(0, 0, i);
        mixed = true;
      }
      launchOf[i] = at;
    } else if (mixed) launchOf[i] = 0;
    const after = s.after;
    if (after !== undefined) {
      // The usual entry, one earlier entry (a chain), takes the short way (its handle slot is not
      // written: the addon reads the entry's node).
      const d: unknown = Array.isArray(after) && after.length === 1 ? after[0] : undefined;
      if (typeof d === 'number' && d >= 0 && d < i && Number.isInteger(d)) {
        if (depLength === depIndex.length) {
          deps.length = depLength;
          deps.grow();
          depIndex = deps.index;
        }
        depIndex[depLength++] = d;
      } else {
        deps.length = depLength;
        readAfter(op, after, i, graph, deps);
        depLength = deps.length;
        depIndex = deps.index;
      }
    }
    depStart[i + 1] = depLength;
  }
  deps.length = depLength;
  if (!mixed) launchOf.fill(0);
}

/** The typed arrays of a batch: each entry's launch, where its dependencies start, the dependencies, the handles added. */
interface BatchArrays {
  readonly launchOf: Uint32Array;
  readonly depStart: Uint32Array;
  readonly deps: Dependencies;
  readonly out: BigUint64Array;
}

/**
 * The arrays of the last batch, kept for the next: a 10,000-node batch needs about 280 KB of them,
 * and allocating (and zeroing) that much per call costs a few ns a node and brings the next
 * garbage collection closer. A call takes them (null while in use: a batch started from inside
 * another, by a getter of an entry, gets its own) and gives them back; only arrays for at most
 * `KEPT_NODES` nodes are kept, so one huge batch does not pin its memory.
 */
let spare: BatchArrays | null = null;
const KEPT_NODES = 1 << 16;

function takeArrays(n: number): BatchArrays {
  const s = spare;
  if (s !== null && s.launchOf.length >= n) {
    spare = null;
    return s;
  }
  return { launchOf: new Uint32Array(n), depStart: new Uint32Array(n + 1), deps: new Dependencies(n), out: new BigUint64Array(n) };
}

function giveArrays(a: BatchArrays): void {
  if (a.launchOf.length > KEPT_NODES || a.deps.index.length > 4 * KEPT_NODES) return;
  if (spare === null || spare.launchOf.length < a.launchOf.length) spare = a;
}

/**
 * The dependency entries of a batch, in growable typed arrays (-1 with a handle: a node of the
 * graph). Slots past `length` hold an earlier batch's entries: nothing reads them.
 */
class Dependencies {
  index: Int32Array;
  handle: BigUint64Array;
  length = 0;

  constructor(capacity: number) {
    this.index = new Int32Array(capacity);
    this.handle = new BigUint64Array(capacity);
  }

  push(index: number, handle: bigint): void {
    if (this.length === this.index.length) this.grow();
    this.index[this.length] = index;
    this.handle[this.length++] = handle;
  }

  /** Doubles the capacity, keeping the first `length` entries. */
  grow(): void {
    const index = new Int32Array(2 * this.length + 8);
    const handles = new BigUint64Array(2 * this.length + 8);
    index.set(this.index);
    handles.set(this.handle);
    this.index = index;
    this.handle = handles;
  }
}

/** `resolveKernel` for entry `i`: a refusal names the entry (`nodes[4].config: grid[0] must be …`). */
function resolveEntry(op: string, i: number, fn: KernelFunction, config: object, graph: Graph, blocks: PackedArgs[]): Launch {
  try {
    return resolveKernel(op, fn, config, graph.device, true, blocks);
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e;
    const text = e.message.startsWith(`${op}: `) ? e.message.slice(op.length + 2) : e.message;
    const at = e.parameter === 'kernel' ? `nodes[${i}]` : `nodes[${i}].config`;
    throw new InvalidArgumentError(op, `${at}.${e.parameter}`, `${at}: ${text}`);
  }
}

/** Reads `nodes[i].after` into the batch's dependency entries. */
function readAfter(op: string, after: unknown, i: number, graph: Graph, deps: Dependencies): void {
  if (!Array.isArray(after)) throw new InvalidArgumentError(op, `nodes[${i}].after`, `nodes[${i}].after must be an array of CudaNodes and indices of earlier entries, got ${describe(after)}`);
  const first = deps.length;
  // Repeats are found by scanning the short lists nodes usually have, with a set for long ones.
  const seen = after.length > 16 ? new Set<number | bigint>() : null;
  for (let k = 0; k < after.length; k++) {
    const d: unknown = after[k];
    let index = -1;
    let handle = 0n;
    if (typeof d === 'number') {
      if (!Number.isInteger(d) || d < 0 || d >= i) {
        throw new InvalidArgumentError(op, `nodes[${i}].after[${k}]`, `nodes[${i}].after[${k}] must be the index of an earlier entry (an integer in 0..${i - 1}), got ${describe(d)}`);
      }
      index = d;
    } else handle = nodeHandleIn(op, `nodes[${i}].after[${k}]`, d, graph);
    let repeated = false;
    if (seen !== null) {
      const key = index >= 0 ? index : handle;
      repeated = seen.has(key);
      seen.add(key);
    } else for (let j = first; j < deps.length && !repeated; j++) repeated = deps.index[j] === index && deps.handle[j] === handle;
    if (repeated) throw new InvalidArgumentError(op, `nodes[${i}].after[${k}]`, `nodes[${i}].after[${k}] repeats a dependency already listed; list each once`);
    deps.push(index, handle);
  }
}

/** Sets the node attributes of the launches that have them; on a failure the whole batch is taken back. */
function setAttributes(op: string, launches: readonly Launch[], launchOf: Uint32Array, handles: BigUint64Array): void {
  if (!launches.some((l) => l.attributes !== null)) return;
  try {
    for (let i = 0; i < handles.length; i++) {
      const a = launches[launchOf[i]!]!.attributes;
      if (a !== null) lx.setKernelNodeAttributes(op, handles[i]!, a);
    }
  } catch (e) {
    for (let i = handles.length - 1; i >= 0; i--) {
      try {
        gb.destroyNode(op, handles[i]!);
      } catch {
        // Best effort: the first error stands.
      }
    }
    throw e;
  }
}
