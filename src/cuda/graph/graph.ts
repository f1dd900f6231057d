import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateConstructorError } from '../../errors/base.js';
import { requireBoolean, requireInstance, requireOptions } from '../../util/validate.js';
import { graph as gr, graphBuild as gb, module as mod, memory as mem } from '../../driver/result/index.js';
import { CU, CU_GRAPH_NODE_TYPE, CU_MEMORYTYPE } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure, surfaceCleanupErrors, cleanupsDeferred } from '../core/lifetime.js';
import { Device } from '../device/device.js';
import { hostFunctionsExist } from '../host/host-function.js';
import type { ComputeGraph } from '../../model/compute-graph.js';
import { computeGraphOf, jsHostFunctionIdsOf, readBackHandle, readContext, readNode } from './read-back.js';
import type { Stream } from '../device/stream.js';
import { GraphExec } from './graph-exec.js';
import { checkInstantiateFlags, type InstantiateFlags } from './instantiate-flags.js';
import type { CapturedNodeInfo, GraphReadBack } from './node-info.js';
import { brands, registerBrand } from '../core/brands.js';

/**
 * A CUDA graph (`CUgraph`): the template a `GraphExec` is instantiated from. Captured graphs come
 * from `StreamGraphCapture` (`capture.endGraph()`, or `exec.graph`); `Graph.create` makes an empty
 * one. A graph keeps alive every buffer, module and pinned buffer its captured work touches.
 *
 * @example
 * const g = capture.endGraph();
 * const { nodes, edges } = g.readBack();   // real node kinds, kernel names and dependencies
 * console.log(g.debugDot());
 * using exec = g.instantiate();
 */
export class Graph {
  /** The device whose context the graph's work belongs to. */
  readonly device: Device;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  /** The host function of each JS host node (its id); null until read (known at once for lowered graphs). */
  #jsHostFunctions: readonly number[] | null = null;
  /** Set once the `CUgraph` has been destroyed (by the Lifetime's cleanup or `destroyTemplateBeforeExec`). */
  readonly #destroyed = { done: false };

  /**
   * @internal Wraps a `CUgraph` this object now owns; `held` are the resources its work uses
   * (already retained on its behalf; released when the graph is destroyed).
   */
  constructor(key: typeof INTERNAL, device: Device, handle: bigint, held: readonly Lifetime[]) {
    if (key !== INTERNAL) throw privateConstructorError('Graph', 'Graph.create() or a capture');
    this.device = device;
    this.#handle = handle;
    const keep = [...held];
    const destroyed = this.#destroyed;
    this[LIFETIME] = new Lifetime(`Graph 0x${handle.toString(16)}`, this, () => {
      try {
        if (!destroyed.done) keepFailure(gr.graphDestroy('Graph.dispose', handle), 'Graph.dispose', 'cuGraphDestroy');
        destroyed.done = true;
      } finally {
        for (const l of keep.splice(0)) l.release();
      }
    });
  }

  /**
   * @internal For `GraphExec.dispose` of the exec that owns this graph and is its last holder:
   * destroys the `CUgraph` now, before the exec, keeping what its work uses alive until the
   * Lifetime's cleanup runs (after the exec is destroyed). The order matters for speed, not for
   * correctness: a capture made after destroying the template before its exec records nodes about a
   * quarter faster on CUDA 13.0 than one made after the reverse order (docs/ffi-decision.md).
   * Does nothing where the free would be deferred (a capture is active) or was already made.
   */
  destroyTemplateBeforeExec(op: string): void {
    if (this.#destroyed.done || cleanupsDeferred()) return;
    this.#destroyed.done = true;
    keepFailure(gr.graphDestroy(op, this.#handle), op, 'cuGraphDestroy');
  }

  /** @internal True for a Graph this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Graph {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Graph', Graph);
  }

  /** An empty graph on `device` (default: device 0) (`cuGraphCreate`). */
  static create(device?: Device): Graph {
    const op = 'Graph.create';
    if (device !== undefined) requireInstance(op, 'device', device, brands.Device);
    surfaceCleanupErrors(op);
    const d = device ?? Device.getFor(op, 0);
    makeCurrent(op, d.context);
    return new Graph(INTERNAL, d, gr.graphCreate(op), []);
  }

  /** The `CUgraph` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('Graph.handle');
    return this.#handle;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /** Number of nodes (`cuGraphGetNodes`). */
  get nodeCount(): number {
    const op = 'Graph.nodeCount';
    this[LIFETIME].assertAlive(op);
    return gr.graphNodeCount(op, this.#handle);
  }

  /** The nodes with their kinds and parameters (see `readBack`). */
  nodes(): CapturedNodeInfo[] {
    return [...this.readBack().nodes];
  }

  /** The dependency edges `[from, to]` as indices into `nodes()` (`cuGraphGetEdges_v2`). */
  edges(): Array<[number, number]> {
    return this.readBack().edges.map(([a, b]) => [a, b]);
  }

  /**
   * Reads the graph back from the driver: every node with its kind, kernel name and launch shape
   * (`cuGraphKernelNodeGetParams_v2` + `cuFuncGetName`), copy and memset parameters, and the
   * real dependency edges (`cuGraphGetEdges_v2`), not a chain.
   */
  readBack(): GraphReadBack {
    const op = 'Graph.readBack';
    this[LIFETIME].assertAlive(op);
    return readBackHandle(op, this.#handle);
  }

  /**
   * The graph as the model's `ComputeGraph`, from `readBack()`: the driver's nodes (in its order:
   * node `i` is `readBack().nodes[i]`) and its real edges, so the model's queries, schedules, DOT
   * and JSON work on what was really captured or built.
   *
   * Kinds map as: kernel → `'kernel'` (the function's name, launch shape); memcpy → `'memcpy'` with
   * the direction from the memory types and the byte count; memset → `'memset'` (bytes, value,
   * element size); host → `'hostCallback'` labelled with the `HostFunction`'s label (`'host'` for a
   * foreign one); empty → `'empty'`; event record / wait → `'eventRecord'` / `'eventWait'` (events
   * numbered 0, 1, … in the order first seen); child graph → `'childGraph'` (read back too);
   * allocation / free → `'memAlloc'` / `'memFree'` (a free of an allocation of the same graph
   * names that node). Edges keep their data (programmatic edges, ports). Kinds the model has no
   * record for (conditional, external semaphores, batch memory operations, a host-to-host copy)
   * become `'empty'` nodes named after the kind, so the dependencies through them are kept.
   * @throws DisposedError after dispose; CudaError from the driver.
   */
  toComputeGraph(): ComputeGraph {
    return computeGraphOf(this.readBack());
  }

  /**
   * @internal The host functions one launch of this graph calls: the id (`userData`) of each host
   * node that calls the cudagraph trampoline. Read once, and only while host functions exist.
   */
  jsHostFunctionIds(op: string): readonly number[] {
    if (this.#jsHostFunctions !== null) return this.#jsHostFunctions;
    if (!hostFunctionsExist()) return [];
    this.#jsHostFunctions = Object.freeze(jsHostFunctionIdsOf(op, this.#handle));
    return this.#jsHostFunctions;
  }

  /** @internal Sets the host functions of a graph built node by node (lowering knows them). */
  setJsHostFunctionIds(ids: readonly number[]): void {
    this.#jsHostFunctions = Object.freeze([...ids]);
  }

  /** @internal A node's description for error messages: `#3 (kernel 'axpy')`. */
  describeNode(op: string, node: bigint): string {
    try {
      const handles = gr.graphNodes(op, this.#handle);
      const i = handles.indexOf(node);
      const info = readNode(op, node, i, readContext());
      const what = info.kernel ? `kernel '${info.kernel.name}'` : info.type;
      return i >= 0 ? `#${i} (${what})` : `(${what}, not a node of this graph)`;
    } catch {
      return `0x${node.toString(16)}`;
    }
  }

  /**
   * The graph as Graphviz DOT, written by the driver (`cuGraphDebugDotPrint`) to a temporary
   * file and read back. `verbose` adds every node's parameters.
   */
  debugDot(options?: { verbose?: boolean }): string {
    const op = 'Graph.debugDot';
    this[LIFETIME].assertAlive(op);
    const o = requireOptions<{ verbose: boolean }>(op, options, ['verbose']);
    const verbose = o.verbose === undefined ? false : requireBoolean(op, 'verbose', o.verbose);
    const dir = mkdtempSync(join(tmpdir(), 'cudagraph-dot-'));
    try {
      const path = join(dir, 'graph.dot');
      gr.graphDebugDotPrint(op, this.#handle, path, verbose ? CU.GRAPH_DEBUG_DOT_FLAGS_VERBOSE : 0);
      return readFileSync(path, 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * Instantiates the graph into a launchable `GraphExec`. The exec keeps this graph (and what it
   * holds) alive; `exec.launch()` defaults to `stream`, else the device's default stream (as it
   * is now: the exec keeps that stream as its default).
   * @throws InvalidArgumentError for bad flags; CudaError naming the instantiation result and the failing node.
   */
  instantiate(flags?: InstantiateFlags, stream?: Stream): GraphExec {
    const op = 'Graph.instantiate';
    if (stream !== undefined) requireInstance(op, 'stream', stream, brands.Stream);
    return this.instantiateFor(op, flags, stream ?? null, false);
  }

  /** @internal Instantiation shared with `StreamGraphCapture.end`; `owns` makes the exec dispose this graph with itself. */
  instantiateFor(op: string, flags: unknown, stream: Stream | null, owns: boolean): GraphExec {
    this[LIFETIME].assertAlive(op);
    const f = checkInstantiateFlags(op, flags);
    makeCurrent(op, this.device.context);
    const upload = f.upload !== null ? f.upload.handleFor(op) : null;
    // The exec's default stream is fixed now: the given one, else the device's default stream.
    const launchOn = stream ?? this.device.stream();
    const exec = gr.graphInstantiate(op, this.#handle, f.bits, upload, (n) => this.describeNode(op, n));
    return new GraphExec(INTERNAL, this, exec, launchOn, owns);
  }

  /**
   * Destroys the graph, once no `GraphExec` holds it; then releases the resources its work used.
   * Idempotent; never throws.
   */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
