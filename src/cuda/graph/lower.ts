/**
 * Lowering: a `ComputeGraph` (built by hand, with `GraphBuilder`, or read from JSON) becomes a real
 * CUDA graph, node by node (`cuGraphAddKernelNode_v2`, `cuGraphAddMemcpyNode`,
 * `cuGraphAddMemsetNode`, `cuGraphAddHostNode`, `cuGraphAddEmptyNode`, `cuGraphAddEventRecordNode`,
 * `cuGraphAddEventWaitNode`, `cuGraphAddChildGraphNode`, `cuGraphAddMemAllocNode`,
 * `cuGraphAddMemFreeNode`), with the model's edges and their data as its dependencies
 * (`cuGraphAddDependencies_v2`). Kernels are resolved by name from loaded
 * modules, with their arguments bound; copies and fills are bound to named buffers; host nodes to
 * JS callbacks. (The upstream Rust lowers every node to an empty placeholder.)
 */
import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { describe, requireInstance, requireOptions } from '../../util/validate.js';
import { graph as gr, graphBuild as gb } from '../../driver/result/index.js';
import { CU_GRAPH_DEPENDENCY_TYPE, CU_GRAPH_KERNEL_NODE_PORT } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { surfaceCleanupErrors, type Lifetime } from '../core/lifetime.js';
import { Device } from '../device/device.js';
import type { Module } from '../kernel/module.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import { HostFunction, hostTrampoline } from '../host/host-function.js';
import { arg as cudaArg, type KernelArgValue } from '../kernel/arg.js';
import { checkConfig } from '../kernel/launch-config.js';
import { packScratch } from '../kernel/packed-args.js';
import { requireGraph, type ComputeGraph } from '../../model/compute-graph.js';
import type { ArgSpec, BufferRef, NodeBinding } from '../../model/builder.js';
import type { GraphNode } from '../../model/node.js';
import type { NodeId } from '../../model/ids.js';
import type { Kernel } from '../kernel/kernel.js';
import type { Stream } from '../device/stream.js';
import type { Event } from '../device/event.js';
import { Graph } from './graph.js';
import type { GraphExec } from './graph-exec.js';
import type { InstantiateFlags } from './instantiate-flags.js';
import { brands } from '../core/brands.js';

/** What `lowerGraph` binds the graph's nodes to. */
export interface LowerBindings {
  /** Where kernels are looked up by function name (the first module that has it wins). */
  readonly modules: Module | readonly Module[];
  /** Per node: its arguments, buffers or callback (`GraphBuilder.build().bindings`). */
  readonly nodes?: ReadonlyMap<NodeId, NodeBinding>;
  /** Device memory for the builder's `buffer(name)`s, by name. */
  readonly buffers?: Readonly<Record<string, DeviceBuffer>>;
  /** Host memory for the builder's `hostBuffer(name)`s, by name: pinned, since the graph copies it at every launch. */
  readonly hostBuffers?: Readonly<Record<string, PinnedHostBuffer>>;
  /** Host callbacks by label: override or provide what the node bindings say. */
  readonly callbacks?: Readonly<Record<string, (() => void) | HostFunction>>;
  /** The events of event record and wait nodes, by the node's `event` id. */
  readonly events?: Readonly<Record<number, Event>>;
  /** The device (default: the first module's). */
  readonly device?: Device;
}

/**
 * A `ComputeGraph` built on the GPU: the CUDA `graph` (owned: disposed with this), the model
 * graph it came from, and which driver node each model node became.
 *
 * @example
 * const { graph, bindings } = builder.build();
 * using lowered = lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x, y }, hostBuffers: { in: pin } });
 * using exec = lowered.instantiate();
 * exec.launch(s); await s.synchronizeAsync();
 */
export class LoweredGraph {
  /** The CUDA graph (read it back, draw it, instantiate it). */
  readonly graph: Graph;
  /** The model graph it was lowered from. */
  readonly source: ComputeGraph;
  readonly #handles: BigUint64Array;
  readonly #owned: HostFunction[];

  /** @internal Made by `lowerGraph`. */
  constructor(key: typeof INTERNAL, graph: Graph, source: ComputeGraph, handles: BigUint64Array, owned: HostFunction[]) {
    if (key !== INTERNAL) throw privateConstructorError('LoweredGraph', 'lowerGraph(graph, bindings)');
    this.graph = graph;
    this.source = source;
    this.#handles = handles;
    this.#owned = owned;
  }

  /** The driver node (`CUgraphNode`) model node `id` became. @throws InvalidArgumentError for an unknown id; DisposedError after dispose. */
  nodeHandle(id: NodeId): bigint {
    this.graph[LIFETIME].assertAlive('LoweredGraph.nodeHandle');
    const h = this.#handles[id];
    if (!Number.isInteger(id) || h === undefined) {
      throw new InvalidArgumentError('LoweredGraph.nodeHandle', 'id', `id must be a node of the source graph (0..${this.#handles.length - 1}), got ${describe(id)}`);
    }
    return h;
  }

  /**
   * For each node of `graph.readBack()` (the driver's order), the model node it came from: so
   * `graph.toComputeGraph()` node `i` is `source` node `modelIds()[i]`.
   */
  modelIds(): NodeId[] {
    const op = 'LoweredGraph.modelIds';
    this.graph[LIFETIME].assertAlive(op);
    const index = new Map<bigint, number>();
    this.#handles.forEach((h, i) => index.set(h, i));
    return gr.graphNodes(op, this.graph.handleUnchecked()).map((h) => index.get(h)! as NodeId);
  }

  /** Instantiates the CUDA graph (`graph.instantiate`); the exec keeps it alive. */
  instantiate(flags?: InstantiateFlags, stream?: Stream): GraphExec {
    return this.graph.instantiate(flags, stream);
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this.graph.disposed;
  }

  /** Disposes the graph (once no exec holds it) and the host functions lowering made. Idempotent. */
  dispose(): void {
    this.graph.dispose();
    for (const h of this.#owned) h.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** Describes a node for messages: `node 3 (kernel 'scale')`. */
function what(n: GraphNode): string {
  return `node ${n.id} (${n.kind} '${n.name}')`;
}

/**
 * Builds `graph` on the GPU: one driver node per model node, bound as `bindings` says, and the
 * model's edges (with their data: programmatic edges, ports) as dependencies. The CUDA graph keeps
 * every module, buffer, pinned buffer, event and host function it uses alive.
 *
 * - kernel: the function named `functionName` in `bindings.modules`, launched with the node's grid,
 *   block and shared memory, and the node binding's arguments (buffers by name, typed scalars);
 *   arguments are checked against the kernel's parameters when the driver reports them;
 * - memcpy: from the binding's `src` to its `dst` (device buffers from `buffers`, host memory from
 *   `hostBuffers`), `sizeBytes` bytes at the offsets; the direction must match the buffers';
 * - memset: `sizeBytes / elementSize` elements of `value` into the binding's `dst`;
 * - hostCallback: `callbacks[label]`, else the binding's function, as a `HostFunction`;
 * - empty: an empty node;
 * - eventRecord / eventWait: `events[event]`;
 * - childGraph: the child lowered the same way (its nodes bound by the child's own bindings when
 *   the builder gave them), then added as a child graph node (the driver clones it);
 * - memAlloc: graph memory on the lowering's device; a buffer the builder declared with `memAlloc`
 *   is this memory for every node that uses it, which must run after the allocation and before
 *   its free;
 * - memFree: frees the allocation of the node it names.
 *
 * @throws InvalidArgumentError naming the node (`lowerGraph: node 3 (kernel 'scale'): …`; inside a
 *   child `node 3 (childGraph 'body'): node 1 (…): …`) for a missing binding, buffer, event or
 *   kernel, a buffer too small, arguments that do not fit the kernel, graph memory used outside its
 *   lifetime, a kernel of a module loaded on another device, bindings of the wrong shape (`nodes`
 *   not a Map); DisposedError for a disposed module, buffer, pinned buffer, event or host
 *   function; CudaError from the driver. Nothing is left allocated on failure.
 */
export function lowerGraph(graph: ComputeGraph, bindings: LowerBindings): LoweredGraph {
  const OP = 'lowerGraph';
  requireGraph(OP, 'graph', graph);
  const b = requireOptions<LowerBindings>(OP, bindings, ['modules', 'nodes', 'buffers', 'hostBuffers', 'callbacks', 'events', 'device']);
  if (bindings === undefined) throw new InvalidArgumentError(OP, 'bindings', 'bindings { modules, … } are required');
  const modules = Array.isArray(b.modules) ? (b.modules as readonly Module[]) : b.modules === undefined ? [] : [b.modules as Module];
  for (let i = 0; i < modules.length; i++) {
    requireInstance(OP, `modules[${i}]`, modules[i], brands.Module);
    modules[i]![LIFETIME].assertAlive(OP);
  }
  if (b.device !== undefined) requireInstance(OP, 'device', b.device, brands.Device);
  if (b.nodes !== undefined && !(b.nodes instanceof Map)) {
    throw new InvalidArgumentError(OP, 'nodes', `nodes must be a Map of node id → binding (GraphBuilder.build().bindings), got ${describe(b.nodes)}`);
  }
  for (const name of ['buffers', 'hostBuffers', 'callbacks', 'events'] as const) {
    const v: unknown = b[name];
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) {
      throw new InvalidArgumentError(OP, name, `${name} must be an object of name → ${name === 'events' ? 'Event' : name === 'callbacks' ? 'function or HostFunction' : name === 'buffers' ? 'DeviceBuffer' : 'PinnedHostBuffer'}, got ${describe(v)}`);
    }
  }
  const device = b.device ?? modules[0]?.device ?? Device.getFor(OP, 0);
  surfaceCleanupErrors(OP);

  const ctx: LowerContext = { b, device, modules, kernels: new Map(), held: new Set(), owned: [], hostIds: [] };
  makeCurrent(OP, device.context);
  const handle = gr.graphCreate(OP);
  let handles: BigUint64Array;
  try {
    handles = lowerInto(ctx, graph, b.nodes, handle, '', '', topLevelMemory);
  } catch (e) {
    gr.graphDestroy(OP, handle);
    for (const h of ctx.owned) h.dispose();
    throw e;
  }
  for (const l of ctx.held) l.retain();
  const memory = graph.nodes().some((n) => n.kind === 'memAlloc' || n.kind === 'memFree');
  const g = new Graph(INTERNAL, device, handle, [...ctx.held], memory);
  g.setJsHostFunctionIds(ctx.hostIds);
  return new LoweredGraph(INTERNAL, g, graph, handles, ctx.owned);
}

const OP = 'lowerGraph';

/** What one `lowerGraph` call shares across the graphs it lowers (the graph and its child graphs). */
interface LowerContext {
  readonly b: Partial<LowerBindings>;
  readonly device: Device;
  readonly modules: readonly Module[];
  readonly kernels: Map<string, Kernel>;
  /** What the CUDA graph keeps alive. */
  readonly held: Set<Lifetime>;
  /** Host functions lowering made (disposed with the lowered graph). */
  readonly owned: HostFunction[];
  /** The JS host functions the graph calls, child graphs included. */
  readonly hostIds: number[];
}

/**
 * Graph memory a graph being lowered can use: the address of buffer `ref` for node `user`, or
 * null when `ref` is not graph memory; refuses (via `fail`) a use outside the memory's lifetime.
 */
type GraphMemory = (ref: BufferRef, user: GraphNode, fail: (n: GraphNode, m: string) => never) => bigint | null;

/** The outermost graph sees no graph memory but its own. */
const topLevelMemory: GraphMemory = () => null;

/**
 * Lowers `graph` into the empty `CUgraph` `handle`: its nodes, then its edges. `where` prefixes
 * refusals inside a child graph (`path` its parameter name, `nodes[3].graph.`); `outer` resolves graph memory of the graphs around it.
 * Returns the driver node of each model node.
 */
function lowerInto(
  ctx: LowerContext,
  graph: ComputeGraph,
  nodeBindings: ReadonlyMap<NodeId, NodeBinding> | undefined,
  handle: bigint,
  path: string,
  where: string,
  outer: GraphMemory,
): BigUint64Array {
  const { b, device, modules, kernels, held, owned, hostIds } = ctx;
  const nodes = graph.nodes();
  const fail = (n: GraphNode, message: string): never => {
    throw new InvalidArgumentError(OP, `${path}nodes[${n.id}]`, `${where}${what(n)}: ${message}`);
  };
  const kernelNamed = (n: GraphNode, name: string): Kernel => {
    const hit = kernels.get(name);
    if (hit !== undefined) return hit;
    for (const [i, m] of modules.entries()) {
      try {
        const k = m.function(name);
        if (m.device !== device) return fail(n, `kernel '${name}' is in modules[${i}], loaded on ${m.device}; the graph is built on ${device}`);
        kernels.set(name, k);
        return k;
      } catch (e) {
        if (!(e instanceof CudaError && e.code === 500)) throw e;
      }
    }
    return fail(n, `no kernel named '${name}' in the ${modules.length} module(s) given`);
  };

  // Graph memory of this graph: allocation node id → address, and the buffers the builder declared on it.
  const allocs = new Map<number, bigint>();
  const freeOf = new Map<number, number>();
  for (const n of nodes) if (n.kind === 'memFree' && n.alloc !== null) freeOf.set(n.alloc, n.id);
  const memBuffers = new Map<string, number>();
  nodeBindings?.forEach((x, id) => {
    if (x.kind === 'memAlloc') memBuffers.set(x.buffer.name, id);
  });
  const memory: GraphMemory = (ref, user, failAt) => {
    const alloc = ref.allocatedBy ?? memBuffers.get(ref.name);
    if (alloc === undefined || alloc === null) return outer(ref, user, failAt);
    const dptr = allocs.get(alloc);
    if (dptr === undefined || !graph.isReachable(alloc as NodeId, user.id)) {
      return failAt(user, `it uses graph memory '${ref.name}' but does not run after its allocation node ${alloc}`);
    }
    const free = freeOf.get(alloc);
    if (free !== undefined && (free === user.id || !graph.isReachable(user.id, free as NodeId))) {
      return failAt(user, `it uses graph memory '${ref.name}' but does not run before its free node ${free}`);
    }
    return dptr;
  };
  /** Device memory for node `n` (`need` bytes): graph memory (its address), or a bound `DeviceBuffer` (then held). */
  const deviceTarget = (n: GraphNode, ref: BufferRef, need: number): DeviceBuffer | bigint => {
    const m = memory(ref, n, fail);
    if (m !== null) {
      if (ref.sizeBytes < need) return fail(n, `graph memory '${ref.name}' holds ${ref.sizeBytes} bytes, the node needs ${need}`);
      return m;
    }
    const buf = b.buffers?.[ref.name];
    if (!brands.DeviceBuffer.is(buf)) return fail(n, `buffer '${ref.name}' is not bound: give bindings.buffers['${ref.name}'] (a DeviceBuffer)`);
    if (buf.byteLength < need) return fail(n, `buffer '${ref.name}' holds ${buf.byteLength} bytes, the node needs ${need}`);
    held.add(buf[LIFETIME]);
    return buf;
  };
  const deviceAddress = (n: GraphNode, ref: BufferRef, need: number): bigint => {
    const t = deviceTarget(n, ref, need);
    return typeof t === 'bigint' ? t : t.ptrFor(OP);
  };
  const host_ = (n: GraphNode, ref: BufferRef, need: number): PinnedHostBuffer => {
    const buf = b.hostBuffers?.[ref.name];
    if (!brands.PinnedHostBuffer.is(buf)) {
      return fail(n, `host buffer '${ref.name}' is not bound: give bindings.hostBuffers['${ref.name}'] (a PinnedHostBuffer: the graph copies it at every launch)`);
    }
    if (buf.byteLength < need) return fail(n, `host buffer '${ref.name}' holds ${buf.byteLength} bytes, the node needs ${need}`);
    buf[LIFETIME].assertAlive(OP);
    return buf;
  };
  const bindingOf = (n: GraphNode): NodeBinding | undefined => {
    const x = nodeBindings?.get(n.id);
    if (x !== undefined && x.kind !== n.kind) return fail(n, `its binding is for a '${x.kind}' node`);
    return x;
  };
  const eventOf = (n: GraphNode & { event: number }): bigint => {
    const e = b.events?.[n.event];
    if (!brands.Event.is(e)) return fail(n, `event ${n.event} is not bound: give bindings.events[${n.event}] (an Event)`);
    if (e.device !== device) return fail(n, `events[${n.event}] belongs to device ${e.device.ordinal}, the graph is built on device ${device.ordinal}`);
    held.add(e[LIFETIME]);
    return e.handleFor(OP);
  };

  const handles = new BigUint64Array(nodes.length);
  for (const n of nodes) {
    switch (n.kind) {
      case 'kernel': {
        const binding = bindingOf(n) as (NodeBinding & { kind: 'kernel' }) | undefined;
        const k = kernelNamed(n, n.functionName);
        const args = (binding?.args ?? []).map((a) => {
          if (a.kind === 'scalar') return scalar(a);
          if (a.host) return fail(n, `argument '${a.name}' is host memory; kernels take device buffers`);
          return cudaArg.ptr(deviceTarget(n, a, a.sizeBytes));
        });
        let params: bigint;
        try {
          const c = checkConfig(OP, k.name, { grid: n.grid, block: n.block, sharedMem: n.sharedMem, args }, k.paramSizes);
          params = packScratch(c.args, (buf) => buf.ptrFor(OP));
        } catch (e) {
          if (e instanceof InvalidArgumentError) return fail(n, e.message.slice(OP.length + 2));
          throw e;
        }
        handles[n.id] = gb.addKernelNode(OP, handle, { func: k.handle, grid: n.grid, block: n.block, sharedMem: n.sharedMem, kernelParams: params });
        held.add(k.module[LIFETIME]);
        break;
      }
      case 'memcpy': {
        const binding = bindingOf(n) as (NodeBinding & { kind: 'memcpy' }) | undefined;
        if (binding === undefined) return fail(n, 'a copy needs a binding (src and dst buffers): give bindings.nodes');
        const want = typeof n.dir === 'string' ? n.dir : 'DeviceToDevice';
        const have = binding.src.host ? 'HostToDevice' : binding.dst.host ? 'DeviceToHost' : 'DeviceToDevice';
        if (want !== have) return fail(n, `the node copies ${want} but its binding copies '${binding.src.name}' → '${binding.dst.name}' (${have})`);
        const end = (ref: BufferRef, offset: number): gb.CopyEnd => {
          if (ref.host) {
            const h = host_(n, ref, offset + n.sizeBytes);
            held.add(h[LIFETIME]);
            return { host: true, address: h.ptr + BigInt(offset) };
          }
          return { host: false, address: deviceAddress(n, ref, offset + n.sizeBytes) + BigInt(offset) };
        };
        const src = end(binding.src, binding.srcOffset);
        const dst = end(binding.dst, binding.dstOffset);
        handles[n.id] = gb.addMemcpyNode(OP, handle, src, dst, n.sizeBytes, device.context);
        break;
      }
      case 'memset': {
        const binding = bindingOf(n) as (NodeBinding & { kind: 'memset' }) | undefined;
        if (binding === undefined) return fail(n, 'a fill needs a binding (its dst buffer): give bindings.nodes');
        const dst = deviceAddress(n, binding.dst, binding.offset + n.sizeBytes);
        const count = n.sizeBytes / n.elementSize;
        handles[n.id] = gb.addMemsetNode(OP, handle, dst + BigInt(binding.offset), n.value, n.elementSize, count, device.context);
        break;
      }
      case 'hostCallback': {
        const binding = bindingOf(n) as (NodeBinding & { kind: 'hostCallback' }) | undefined;
        const given = b.callbacks?.[n.label] ?? binding?.fn ?? null;
        if (given === null) return fail(n, `no callback for label '${n.label}': give bindings.callbacks['${n.label}'] or a function to GraphBuilder.host`);
        let hf: HostFunction;
        if (brands.HostFunction.is(given)) {
          given[LIFETIME].assertAlive(OP);
          hf = given;
        } else if (typeof given === 'function') {
          hf = HostFunction.create(given, { label: n.label });
          owned.push(hf);
        } else return fail(n, `callbacks['${n.label}'] must be a function or a HostFunction, got ${describe(given)}`);
        handles[n.id] = gb.addHostNode(OP, handle, hostTrampoline(), BigInt(hf.id));
        held.add(hf[LIFETIME]);
        hostIds.push(hf.id);
        break;
      }
      case 'empty':
        handles[n.id] = gb.addEmptyNode(OP, handle);
        break;
      case 'eventRecord':
        handles[n.id] = gb.addEventRecordNode(OP, handle, eventOf(n));
        break;
      case 'eventWait':
        handles[n.id] = gb.addEventWaitNode(OP, handle, eventOf(n));
        break;
      case 'childGraph': {
        const binding = bindingOf(n) as (NodeBinding & { kind: 'childGraph' }) | undefined;
        // The child sees this graph's memory as used by the child node itself.
        const inner: GraphMemory = (ref, _user, failAt) => memory(ref, n, (_x, m) => failAt(n, m));
        const child = gr.graphCreate(OP);
        try {
          lowerInto(ctx, n.graph, binding?.bindings ?? undefined, child, `${path}nodes[${n.id}].graph.`, `${where}${what(n)}: `, inner);
          handles[n.id] = gb.addChildGraphNode(OP, handle, child);
        } finally {
          // The node holds the driver's clone; this copy is ours to destroy.
          gr.graphDestroy(OP, child);
        }
        break;
      }
      case 'memAlloc': {
        if (n.device !== device.ordinal) return fail(n, `it allocates on device ${n.device}, the graph is built on device ${device.ordinal}`);
        const a = gb.addMemAllocNode(OP, handle, n.sizeBytes, n.device);
        handles[n.id] = a.node;
        allocs.set(n.id, a.dptr);
        break;
      }
      case 'conditional':
        // The kernels that set a condition need the driver's handle as an argument, which bindings cannot name yet.
        return fail(n, 'conditional nodes are not lowered yet: build them on the Graph (addWhileNode, addIfNode, addSwitchNode) or by capture (stream.captureWhile)');
      case 'memFree': {
        if (n.alloc === null) return fail(n, 'it frees memory allocated outside this graph, for which lowering has no address; free an allocation node of the graph');
        handles[n.id] = gb.addMemFreeNode(OP, handle, allocs.get(n.alloc)!);
        break;
      }
    }
  }
  const edges = graph.edgeRecords();
  const from = new BigUint64Array(edges.length);
  const to = new BigUint64Array(edges.length);
  let data: Array<readonly [number, number]> | null = null;
  edges.forEach((e, i) => {
    from[i] = handles[e.from]!;
    to[i] = handles[e.to]!;
    if (e.kind !== 'plain' || e.port !== 'completion') {
      data ??= edges.map(() => [CU_GRAPH_KERNEL_NODE_PORT.DEFAULT, CU_GRAPH_DEPENDENCY_TYPE.DEFAULT] as const);
      data[i] = [PORTS[e.port], e.kind === 'programmatic' ? CU_GRAPH_DEPENDENCY_TYPE.PROGRAMMATIC : CU_GRAPH_DEPENDENCY_TYPE.DEFAULT];
    }
  });
  gb.addDependencies(OP, handle, from, to, data);
  return handles;
}

/** The driver's port of each model port. */
const PORTS = {
  completion: CU_GRAPH_KERNEL_NODE_PORT.DEFAULT,
  trigger: CU_GRAPH_KERNEL_NODE_PORT.PROGRAMMATIC,
  launchOrder: CU_GRAPH_KERNEL_NODE_PORT.LAUNCH_ORDER,
} as const;

function scalar(a: ArgSpec & { kind: 'scalar' }): KernelArgValue {
  switch (a.type) {
    case 'i32':
      return cudaArg.i32(a.value as number);
    case 'u32':
      return cudaArg.u32(a.value as number);
    case 'i64':
      return cudaArg.i64(a.value);
    case 'u64':
      return cudaArg.u64(a.value);
    case 'f32':
      return cudaArg.f32(a.value as number);
    case 'f64':
      return cudaArg.f64(a.value as number);
  }
}
