import { DisposedError, InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { requireBoolean, requireInstance } from '../../util/validate.js';
import { graph as gr, memory as mem, cudaError } from '../../driver/result/index.js';
import { CU_GRAPH_EXEC_UPDATE_RESULT } from '../../driver/layouts.js';
import { GraphError } from '../../errors/graph-error.js';
import { GraphErrorCode } from '../../model/error-codes.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { checkEpoch } from '../core/check-epoch.js';
import { Lifetime, keepFailure } from '../core/lifetime.js';
import { graphHostCallsSubmitted, isForeignCapture } from '../host/host-function.js';
import type { Stream } from '../device/stream.js';
import type { CaptureSink } from '../core/capture-hooks.js';
import type { Graph } from './graph.js';
import { brands, registerBrand } from '../core/brands.js';
import type { HostFunction } from '../host/host-function.js';
import type { Event } from '../device/event.js';
import type { Kernel } from '../kernel/kernel.js';
import type { KernelArg, KernelArgValue } from '../kernel/arg.js';
import type { LaunchConfig } from '../kernel/launch-config.js';
import type { CudaNode } from './cuda-node.js';
import type { MemcpyNodeParams, MemsetNodeParams } from './node-params.js';
import {
  hostIdsByNode, nodeIndex, setChildParams, setCopyParams, setEvent, setFillParams, setHostParams, setKernelArgs, setKernelParams, targetNode, type ExecTarget,
} from './exec-setters.js';
import { kernelArgSite, setKernelArg, setKernelArgAt, type KernelArgSite } from './kernel-arg-patch.js';

const LAUNCH = 'GraphExec.launch';

/**
 * An executable graph (`CUgraphExec`): `launch()` replays all its work with one `cuGraphLaunch`.
 * Keeps its template `graph` alive, and through it every buffer and module the work uses.
 *
 * @example
 * using exec = capture.end();
 * for (let i = 0; i < 100; i++) exec.launch();
 * await exec.stream.synchronizeAsync();
 */
export class GraphExec {
  /** Number of nodes of the template graph at instantiation (`cuGraphGetNodes`). */
  readonly nodeCount: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  readonly #ctx: bigint;
  #graph: Graph;
  #ownsGraph: boolean;
  /** The stream `launch()` uses by default, fixed when the exec is made (never switched silently). */
  readonly #stream: Stream;
  #launches = 0;
  /** The host functions one launch calls (one id per host node): kept alive and counted in flight per launch. */
  #hostFunctions: readonly number[];
  /** The stream `launch`'s checks last passed with, its handle, and the check epoch then. */
  #checkedStream: Stream | null = null;
  #checkedHandle = 0n;
  #checkedSink: CaptureSink | null = null;
  #checkedEpoch = -1;
  /** Lifetimes this exec holds: its graph (index 0 is kept in step with #graph). */
  readonly #held: Lifetime[];

  /** The graph the exec was instantiated from: per-node setters name its nodes. */
  readonly #template: Graph;
  /** Allocations the graph makes and nothing frees (no `autoFreeOnLaunch`), and whether a launch left them allocated. */
  readonly #unfreed: readonly bigint[];
  #allocated = false;
  /** The host function ids each host or child graph node calls, once a setter changed one (else null). */
  #hostIdsByNode: Map<bigint, number[]>;
  /** Host functions the exec made for plain callbacks given to setters. */
  readonly #owned: HostFunction[] = [];
  /** What the per-node setters use (made on first use). */
  #setterTarget: ExecTarget | null = null;
  /** The template's `structureVersion` at instantiation. */
  readonly #templateVersion: number;

  /** @internal Made by `Graph.instantiate` and `StreamGraphCapture.end`. */
  constructor(key: typeof INTERNAL, graph: Graph, handle: bigint, stream: Stream, ownsGraph: boolean, unfreed: readonly bigint[] = []) {
    if (key !== INTERNAL) throw privateConstructorError('GraphExec', 'capture.end() or graph.instantiate()');
    this.#graph = graph;
    this.#template = graph;
    this.#templateVersion = graph.structureVersion;
    this.#handle = handle;
    this.#ctx = graph.device.context;
    this.#stream = stream;
    this.#ownsGraph = ownsGraph;
    this.#unfreed = Object.freeze([...unfreed]);
    this.nodeCount = graph.nodeCount;
    this.#hostFunctions = graph.jsHostFunctionIds('GraphExec');
    this.#hostIdsByNode = this.#hostMapOf('GraphExec', graph, graph);
    // Two holds on the template: one as the current graph (index 0, replaced by update), one as
    // the graph the exec was instantiated from, whose nodes the per-node setters name.
    graph[LIFETIME].retain();
    graph[LIFETIME].retain();
    graph.noteInstantiation(1);
    const held = [graph[LIFETIME], graph[LIFETIME]];
    this.#held = held;
    const owned = this.#owned;
    this[LIFETIME] = new Lifetime(`GraphExec 0x${handle.toString(16)}`, this, () => {
      try {
        keepFailure(gr.graphExecDestroy('GraphExec.dispose', handle), 'GraphExec.dispose', 'cuGraphExecDestroy');
      } finally {
        graph.noteInstantiation(-1);
        for (const l of held.splice(0)) l.release();
        for (const h of owned.splice(0)) h.dispose();
      }
    });
  }

  /** @internal True for a GraphExec this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is GraphExec {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('GraphExec', GraphExec);
  }

  /** The template graph (for read-back and DOT). Replaced by `update(graph)`. */
  get graph(): Graph {
    return this.#graph;
  }

  /** The `CUgraphExec` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('GraphExec.handle');
    return this.#handle;
  }

  /**
   * The stream `launch()` and `upload()` use by default: the captured stream, or the stream given
   * to (else the device's default stream at) `instantiate`. Fixed for the exec's life: once it is
   * disposed, a launch without a stream is refused rather than sent elsewhere.
   */
  get stream(): Stream {
    return this.#stream;
  }

  /** Successful launches so far. */
  get launchCount(): number {
    return this.#launches;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * Replays the graph on `stream` (default: `this.stream`) with one `cuGraphLaunch`. The CUDA 13.0
   * driver refuses a graph launch on a capturing stream (900, which invalidates that capture);
   * where a driver captures it, that capture keeps this exec alive.
   * @throws DisposedError for a disposed exec or stream (also the default stream: pass another);
   *   InvalidArgumentError for a non-Stream; HostCallbackError when a host call is in flight and
   *   the driver's queue could fill; CudaError from the driver.
   */
  launch(stream?: Stream): void {
    this.launchFor(LAUNCH, stream);
  }

  /** @internal `launch` for a caller that names its own operation in errors (`CapturedGraph.launch`, `launchAndWait`). */
  launchFor(op: string, stream: Stream | undefined): void {
    // Fast path: the checks passed for this stream and nothing that could fail them has happened
    // since (cuda/check-epoch.ts); otherwise run them all, in the order of the errors they throw.
    const s = stream === undefined ? this.#stream : stream;
    if (s !== this.#checkedStream || checkEpoch.value !== this.#checkedEpoch) {
      this.#checkedHandle = this.#check(op, stream);
    }
    if (this.#unfreed.length !== 0) this.#checkAllocations(op);
    makeCurrent(op, this.#ctx);
    gr.graphLaunch(op, this.#handle, this.#checkedHandle);
    this.#launches++;
    if (this.#unfreed.length !== 0) this.#allocated = true;
    // The stream's capture as the checks saw it: a capture beginning or ending bumps the epoch.
    const sink = this.#checkedSink;
    if (this.#hostFunctions.length !== 0) this.#hostCallsLaunched(op, sink);
    if (sink !== null) sink.retain(this[LIFETIME]);
  }

  /**
   * `launch(stream)` then `await stream.synchronizeAsync()`: resolves when this launch (and the work
   * before it on the stream) is done, the event loop free meanwhile, at about a blocking wait's
   * cost (docs/driver.md, "Waiting without blocking"). A refusal of the launch rejects.
   *
   * @example
   * await exec.launchAndWait();
   */
  launchAndWait(stream?: Stream): Promise<void> {
    const op = 'GraphExec.launchAndWait';
    try {
      // Refused under this call's name, and before anything is launched.
      this[LIFETIME].assertAlive(op);
      const s = this.#streamFor(op, stream);
      s.waitableHandle(op);
      this.launchFor(op, s);
      return s.synchronizeAsync();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Refuses a relaunch while the last launch's unfreed allocations are outstanding (CUDA's rule). */
  #checkAllocations(op: string): void {
    if (!this.#allocated) return;
    const n = this.#unfreed.length;
    throw new GraphError(
      'InvalidPlan',
      GraphErrorCode.AllocationNotFreed,
      `${op}: the graph allocates ${n} block${n === 1 ? '' : 's'} of graph memory that nothing in it frees, and the last launch's ` +
        `${n === 1 ? 'is' : 'are'} still allocated; CUDA refuses to launch it again before they are freed: call exec.freeAllocations(stream) ` +
        'after the work that reads them, or instantiate with { autoFreeOnLaunch: true }',
    );
  }

  /**
   * The addresses of the graph memory this exec's launches allocate and nothing in the graph
   * frees (empty with `autoFreeOnLaunch`, or when every allocation is freed in the graph).
   */
  get unfreedAllocations(): readonly bigint[] {
    return this.#unfreed;
  }

  /**
   * Frees, on `stream` (default `this.stream`), the graph memory the last launch left allocated
   * (`cuMemFreeAsync` of each of `unfreedAllocations`), so the exec can be launched again. Work
   * queued on `stream` before this call may still read the memory.
   * @throws GraphError `GRAPH_ALLOCATION_NOT_FREED` when no launch left memory allocated;
   *   DisposedError; CudaError from the driver.
   */
  freeAllocations(stream?: Stream): void {
    const op = 'GraphExec.freeAllocations';
    this[LIFETIME].assertAlive(op);
    const s = this.#streamFor(op, stream);
    if (!this.#allocated) {
      throw new GraphError(
        'InvalidPlan',
        GraphErrorCode.AllocationNotFreed,
        `${op}: nothing to free: ${this.#unfreed.length === 0 ? 'the graph leaves no allocation unfreed' : 'no launch since the last free left memory allocated'}`,
      );
    }
    const h = s.handleFor(op);
    makeCurrent(op, this.#ctx);
    // Marked first: a free that fails part-way must not lead the next call to free the others twice.
    this.#allocated = false;
    for (const a of this.#unfreed) {
      const rc = mem.memFreeAsync(op, a, h);
      if (rc !== 0) throw cudaError(rc, op, 'cuMemFreeAsync');
    }
  }

  /**
   * A launch of a graph with JS host nodes ran (not recorded into a capture, cudagraph's or
   * another's): its host calls are in flight until they have run.
   */
  #hostCallsLaunched(op: string, sink: CaptureSink | null): void {
    if (sink !== null || isForeignCapture(op, this.#checkedStream!, this.#checkedHandle)) return;
    graphHostCallsSubmitted(this.#hostFunctions);
  }

  /** The checks of `launch`; on success remembers the stream and the epoch, and returns its handle. */
  #check(op: string, stream: Stream | undefined): bigint {
    this[LIFETIME].assertAlive(op);
    const s = this.#streamFor(op, stream);
    const epoch = checkEpoch.value;
    const h = s.handleFor(op);
    this.#checkedSink = s[CAPTURE];
    this.#checkedStream = s;
    this.#checkedEpoch = epoch;
    return h;
  }

  /** `stream`, or the default stream; refuses a non-Stream, and a disposed default stream by name. */
  #streamFor(op: string, stream: Stream | undefined): Stream {
    if (stream !== undefined) return requireInstance(op, 'stream', stream, brands.Stream);
    const s = this.#stream;
    if (s.disposed) throw new DisposedError(op, `the exec's default stream ${s} (pass another stream: launch(stream))`);
    return s;
  }

  /** Uploads the graph's work to the device ahead of launch (`cuGraphUpload`), on `stream` (default `this.stream`). */
  upload(stream?: Stream): void {
    this.uploadFor('GraphExec.upload', stream);
  }

  /** @internal `upload` for a caller that names its own operation in errors (`CapturedGraph.upload`). */
  uploadFor(op: string, stream: Stream | undefined): void {
    this[LIFETIME].assertAlive(op);
    const s = this.#streamFor(op, stream);
    makeCurrent(op, this.#ctx);
    gr.graphUpload(op, this.#handle, s.handleFor(op));
  }

  /**
   * Turns node `node` off or on for later launches (`cuGraphNodeSetEnabled`): a disabled node does
   * no work, but still orders the nodes around it. `node` is the node's index in `graph.nodes()`.
   * Launches already queued are not affected.
   * @throws InvalidArgumentError for an index out of range, a non-boolean, or a node other than a
   *   kernel, memset or memcpy node (the only kinds CUDA enables and disables); DisposedError after
   *   dispose; CudaError from the driver.
   */
  setNodeEnabled(node: CudaNode | number, enabled: boolean): void {
    const op = 'GraphExec.setNodeEnabled';
    const h = this.#switchable(op, node);
    const on = requireBoolean(op, 'enabled', enabled);
    makeCurrent(op, this.#ctx);
    gr.nodeSetEnabled(op, this.#handle, h, on);
  }

  /** Whether node `node` (its index in `graph.nodes()`) runs at launch (`cuGraphNodeGetEnabled`). @throws as `setNodeEnabled`. */
  isNodeEnabled(node: CudaNode | number): boolean {
    const op = 'GraphExec.isNodeEnabled';
    const h = this.#switchable(op, node);
    makeCurrent(op, this.#ctx);
    return gr.nodeGetEnabled(op, this.#handle, h);
  }

  /** The template's node (a CudaNode or its index), refused unless CUDA can enable and disable its kind. */
  #switchable(op: string, node: unknown): bigint {
    this[LIFETIME].assertAlive(op);
    const t = this.#target();
    const n = targetNode(op, t, node, null);
    if (n.type !== 'kernel' && n.type !== 'memset' && n.type !== 'memcpy') {
      throw new InvalidArgumentError(op, 'node', `node #${nodeIndex(op, t, n)} is a '${n.type}' node; CUDA enables and disables only kernel, memset and memcpy nodes`);
    }
    return n.handle;
  }

  /**
   * The JS host functions each host or child graph node of `graph` calls, keyed by the node of
   * `template` in the same position (the exec's nodes, as its setters name them): what the exec
   * runs now, so a setter's change replaces one node's entry. Empty, with no scan, for a graph that
   * calls none.
   */
  #hostMapOf(op: string, graph: Graph, template: Graph): Map<bigint, number[]> {
    if (graph.jsHostFunctionIds(op).length === 0) return new Map();
    // Unchecked: the exec holds its template (and `update` checked `graph`), disposed by its owner or not.
    const byNode = hostIdsByNode(op, graph.handleUnchecked());
    if (graph === template) return byNode;
    const ours = gr.graphNodes(op, template.handleUnchecked());
    const theirs = gr.graphNodes(op, graph.handleUnchecked());
    const out = new Map<bigint, number[]>();
    theirs.forEach((h, i) => {
      const ids = byNode.get(h);
      if (ids !== undefined && ours[i] !== undefined) out.set(ours[i]!, ids);
    });
    return out;
  }

  /** What the per-node setters see of this exec (made once). */
  #target(): ExecTarget {
    if (this.#setterTarget !== null) return this.#setterTarget;
    const exec = this;
    const held = this.#held;
    // The holds setters add (a set, so a repeated update checks one lookup).
    const heldSet = new Set<Lifetime>(held);
    const target: ExecTarget = {
      handle: this.#handle,
      template: this.#template,
      templateVersion: this.#templateVersion,
      get current() {
        return exec.#graph;
      },
      kernels: new Map(),
      kernelsEpoch: 0,
      named: new Map(),
      hold: (lives) => {
        for (const l of lives) target.holdOne(l);
      },
      holdOne: (l) => {
        if (heldSet.has(l)) return;
        l.retain();
        held.push(l);
        heldSet.add(l);
      },
      own: (hf) => void exec.#owned.push(hf),
      hostCallsChanged: (node, ids) => {
        const map = exec.#hostIdsByNode;
        map.set(node, [...ids]);
        exec.#hostFunctions = Object.freeze([...map.values()].flat());
      },
    };
    this.#setterTarget = target;
    return target;
  }

  #setter(op: string): ExecTarget {
    this[LIFETIME].assertAlive(op);
    return this.#target();
  }

  /**
   * Points kernel node `node` at a new launch (`cuGraphExecKernelNodeSetParams_v2`): `params` is
   * a launch configuration (grid, block, sharedMem, args), with `kernel` to run another function
   * of the same device (default: the node's own). Later launches run it; queued ones do not.
   * `node` is a `CudaNode` of the graph the exec was instantiated from, or its index in that
   * graph's `nodes()`. The exec holds the new module and buffers.
   * @throws InvalidArgumentError naming the node for a node that is not a kernel node, a bad
   *   configuration, arguments that do not fit the kernel; DisposedError; CudaError from the driver.
   */
  setKernelNodeParams(node: CudaNode | number, params: LaunchConfig & { readonly kernel?: Kernel }): void {
    setKernelParams(this.#setter('GraphExec.setKernelNodeParams'), node, params);
  }

  /**
   * New arguments for a kernel node, its function and shape kept (`cuGraphExecKernelNodeSetParams_v2`).
   * `node` is the kernel's name (when one node runs it), a `CudaNode` or an index. Works on every
   * exec: captured, built node by node, or lowered.
   * @throws InvalidArgumentError for an unknown or ambiguous name, a node that is not a kernel
   *   node, arguments that do not match the kernel's parameters.
   */
  setKernelArgs(node: string | number | CudaNode, args: readonly KernelArg[]): void {
    this.setKernelArgsFor('GraphExec.setKernelArgs', node, args);
  }

  /** @internal `setKernelArgs` for `op` (`CapturedGraph.setKernelArgs` calls it). */
  setKernelArgsFor(op: string, node: unknown, args: unknown): void {
    setKernelArgs(op, this.#setter(op), node, args);
  }

  /**
   * Replaces argument `index` of a kernel node, keeping its other arguments and its launch shape
   * (`cuGraphExecKernelNodeSetParams_v2`): the value for a position or a step that changes per
   * launch. `node` is a kernel's name (every node running it is changed), a `CudaNode` or an
   * index. Arguments are named by index: neither the driver nor a compiled kernel keeps parameter
   * names. `value` is typed as for `kernel.launch` (`arg.i32(pos)`, a buffer) and must have the
   * parameter's size. Later launches see it; queued ones do not. Returns the nodes changed.
   * @throws InvalidArgumentError for an unknown name, a node that is not a kernel node, an index
   *   past the kernel's parameters, a value of another size or type, or a node whose arguments
   *   the exec does not know (drivers before CUDA 12.4 cannot say a kernel's parameters);
   *   DisposedError; CudaError from the driver.
   *
   * @example
   * exec.setKernelArg('attention', 3, arg.i32(position));   // every node running `attention`
   */
  setKernelArg(node: string | number | CudaNode, index: number, value: KernelArg): number {
    return this.setKernelArgFor('GraphExec.setKernelArg', node, index, value);
  }

  /** @internal `setKernelArg` for `op` (`CapturedGraph.setKernelArg` calls it). */
  setKernelArgFor(op: string, node: unknown, index: unknown, value: unknown): number {
    return setKernelArg(op, this.#setter(op), node, index, value);
  }

  /** @internal The checked site of argument `index` of `node`, for values of `size` bytes written later with `setKernelArgAtFor`. */
  kernelArgSiteFor(op: string, node: unknown, index: unknown, size: number): KernelArgSite {
    return kernelArgSite(op, this.#setter(op), node, index, size);
  }

  /** @internal Writes `value` at `site` (from `kernelArgSiteFor`). */
  setKernelArgAtFor(op: string, site: KernelArgSite, value: KernelArgValue): void {
    setKernelArgAt(op, this.#setter(op), site, value);
  }

  /**
   * A copy node's memory and size (`cuGraphExecMemcpyNodeSetParams`): `{ dst, src, byteLength,
   * dstOffset?, srcOffset? }`. CUDA updates 1-D copies only and keeps each side's memory kind and
   * context: both are refused here first, naming the node.
   */
  setMemcpyNodeParams(node: CudaNode | number, params: MemcpyNodeParams): void {
    setCopyParams(this.#setter('GraphExec.setMemcpyNodeParams'), node, params);
  }

  /** A fill node's destination, value and size (`cuGraphExecMemsetNodeSetParams`); CUDA keeps a 2-D fill's shape and a 1-D fill's single row. */
  setMemsetNodeParams(node: CudaNode | number, params: MemsetNodeParams): void {
    setFillParams(this.#setter('GraphExec.setMemsetNodeParams'), node, params);
  }

  /** The function a host node calls (`cuGraphExecHostNodeSetParams`): a plain function (the exec owns its HostFunction) or a HostFunction. */
  setHostNodeParams(node: CudaNode | number, fn: (() => void) | HostFunction): void {
    setHostParams(this.#setter('GraphExec.setHostNodeParams'), node, fn);
  }

  /**
   * The parameters of a child graph node's nodes, from `child` (`cuGraphExecChildGraphNodeSetParams`):
   * `child` must have the same topology and node order as the node's graph (refused here first).
   */
  setChildGraphNodeParams(node: CudaNode | number, child: Graph): void {
    setChildParams(this.#setter('GraphExec.setChildGraphNodeParams'), node, child);
  }

  /** The event an event record node records (`cuGraphExecEventRecordNodeSetEvent`). */
  setEventRecordNodeEvent(node: CudaNode | number, event: Event): void {
    setEvent(this.#setter('GraphExec.setEventRecordNodeEvent'), true, node, event);
  }

  /** The event an event wait node waits on (`cuGraphExecEventWaitNodeSetEvent`). */
  setEventWaitNodeEvent(node: CudaNode | number, event: Event): void {
    setEvent(this.#setter('GraphExec.setEventWaitNodeEvent'), false, node, event);
  }

  /**
   * Updates the executable in place from `graph`, which must have the same topology and node
   * kinds (only parameters may differ: kernel arguments and launch shape, memset values, copy
   * addresses). On success the exec keeps `graph` alive and `this.graph` becomes it.
   * @throws CudaError 910 `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE` whose message names the reason
   *   (`CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED`, …) and the failing node (`details.reason`,
   *   `details.node`); the exec is unchanged. InvalidArgumentError for a non-Graph; DisposedError
   *   for a disposed exec or graph.
   */
  update(graph: Graph): void {
    const op = 'GraphExec.update';
    this[LIFETIME].assertAlive(op);
    requireInstance(op, 'graph', graph, brands.Graph);
    graph[LIFETIME].assertAlive(op);
    const g = graph.handleUnchecked();
    makeCurrent(op, this.#ctx);
    // Everything that can fail before the driver's update: after it, nothing may throw, or the
    // exec would run `graph`'s parameters without holding it.
    const hostFunctions = graph.jsHostFunctionIds(op);
    const hostIdsByNode = this.#hostMapOf(op, graph, this.#template);
    const out = gr.graphExecUpdate(op, this.#handle, g);
    if (out.code !== 0) {
      const reason = CU_GRAPH_EXEC_UPDATE_RESULT[out.result] ?? `CUgraphExecUpdateResult ${out.result}`;
      const node = out.errorNode !== 0n ? graph.describeNode(op, out.errorNode) : null;
      const from = out.errorFromNode !== 0n ? graph.describeNode(op, out.errorFromNode) : null;
      const where = node ? `; failing node ${node} of the new graph${from ? `, on the edge from ${from}` : ''}` : '';
      throw cudaError(out.code, op, 'cuGraphExecUpdate_v2', `update result: ${reason}${where}`, {
        reason,
        node,
        fromNode: from,
      });
    }
    // The exec now runs the new graph's parameters (also when it is the current graph, which undoes
    // the setters' changes): what the setters remembered is stale.
    this.#hostFunctions = hostFunctions;
    this.#hostIdsByNode = hostIdsByNode;
    if (this.#setterTarget !== null) {
      this.#setterTarget.kernels.clear();
      this.#setterTarget.kernelsEpoch++;
    }
    if (graph === this.#graph) return;
    graph[LIFETIME].retain();
    const old = this.#graph;
    const oldOwned = this.#ownsGraph;
    this.#held[0] = graph[LIFETIME];
    this.#graph = graph;
    this.#ownsGraph = false;
    old[LIFETIME].release();
    if (oldOwned) old.dispose();
  }

  /**
   * Destroys the executable (work already launched completes); a graph it owns (from a capture)
   * is disposed with it. Idempotent; never throws.
   */
  dispose(): void {
    const graph = this.#graph;
    const life = this[LIFETIME];
    // When the exec is freed now and is the only holder of the template it owns, destroy the
    // template first (as CuPy, PyTorch and C programs do right after instantiating): the driver
    // records the next capture faster after that order (docs/ffi-decision.md). What the graph's
    // work uses stays alive until both are gone.
    // This exec holds its template twice while it is the current graph (see the constructor).
    const mine = graph === this.#template ? 2 : 1;
    if (this.#ownsGraph && !life.disposed && life.holders === 0 && graph[LIFETIME].holders === mine) {
      graph.destroyTemplateBeforeExec('GraphExec.dispose');
    }
    life.dispose();
    if (this.#ownsGraph) graph.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
