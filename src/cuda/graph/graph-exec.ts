import { DisposedError, InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { requireBoolean, requireInstance, requireInt } from '../../util/validate.js';
import { graph as gr, cudaError } from '../../driver/result/index.js';
import { CU_GRAPH_EXEC_UPDATE_RESULT, CU_GRAPH_NODE_TYPE } from '../../driver/layouts.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { checkEpoch } from '../core/check-epoch.js';
import { Lifetime, keepFailure } from '../core/lifetime.js';
import { graphHostCallsSubmitted, isForeignCapture } from '../host/host-function.js';
import type { Stream } from '../device/stream.js';
import type { CaptureSink } from '../core/capture-hooks.js';
import type { Graph } from './graph.js';
import { brands, registerBrand } from '../core/brands.js';

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

  /** @internal Made by `Graph.instantiate` and `StreamGraphCapture.end`. */
  constructor(key: typeof INTERNAL, graph: Graph, handle: bigint, stream: Stream, ownsGraph: boolean) {
    if (key !== INTERNAL) throw privateConstructorError('GraphExec', 'capture.end() or graph.instantiate()');
    this.#graph = graph;
    this.#handle = handle;
    this.#ctx = graph.device.context;
    this.#stream = stream;
    this.#ownsGraph = ownsGraph;
    this.nodeCount = graph.nodeCount;
    this.#hostFunctions = graph.jsHostFunctionIds('GraphExec');
    graph[LIFETIME].retain();
    const held = [graph[LIFETIME]];
    this.#held = held;
    this[LIFETIME] = new Lifetime(`GraphExec 0x${handle.toString(16)}`, this, () => {
      try {
        keepFailure(gr.graphExecDestroy('GraphExec.dispose', handle), 'GraphExec.dispose', 'cuGraphExecDestroy');
      } finally {
        for (const l of held.splice(0)) l.release();
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
    // Fast path: the checks passed for this stream and nothing that could fail them has happened
    // since (cuda/check-epoch.ts); otherwise run them all, in the order of the errors they throw.
    const s = stream === undefined ? this.#stream : stream;
    if (s !== this.#checkedStream || checkEpoch.value !== this.#checkedEpoch) {
      this.#checkedHandle = this.#check(stream);
    }
    makeCurrent(LAUNCH, this.#ctx);
    gr.graphLaunch(LAUNCH, this.#handle, this.#checkedHandle);
    this.#launches++;
    // The stream's capture as the checks saw it: a capture beginning or ending bumps the epoch.
    const sink = this.#checkedSink;
    if (this.#hostFunctions.length !== 0) this.#hostCallsLaunched(sink);
    if (sink !== null) sink.retain(this[LIFETIME]);
  }

  /**
   * A launch of a graph with JS host nodes ran (not recorded into a capture, cudagraph's or
   * another's): its host calls are in flight until they have run.
   */
  #hostCallsLaunched(sink: CaptureSink | null): void {
    if (sink !== null || isForeignCapture(LAUNCH, this.#checkedStream!, this.#checkedHandle)) return;
    graphHostCallsSubmitted(this.#hostFunctions);
  }

  /** The checks of `launch`; on success remembers the stream and the epoch, and returns its handle. */
  #check(stream: Stream | undefined): bigint {
    this[LIFETIME].assertAlive(LAUNCH);
    const s = this.#streamFor(LAUNCH, stream);
    const epoch = checkEpoch.value;
    const h = s.handleFor(LAUNCH);
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
    const op = 'GraphExec.upload';
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
  setNodeEnabled(node: number, enabled: boolean): void {
    const op = 'GraphExec.setNodeEnabled';
    const h = this.#switchable(op, node);
    const on = requireBoolean(op, 'enabled', enabled);
    makeCurrent(op, this.#ctx);
    gr.nodeSetEnabled(op, this.#handle, h, on);
  }

  /** Whether node `node` (its index in `graph.nodes()`) runs at launch (`cuGraphNodeGetEnabled`). @throws as `setNodeEnabled`. */
  isNodeEnabled(node: number): boolean {
    const op = 'GraphExec.isNodeEnabled';
    const h = this.#switchable(op, node);
    makeCurrent(op, this.#ctx);
    return gr.nodeGetEnabled(op, this.#handle, h);
  }

  /** The template's node at index `node`, refused unless CUDA can enable and disable its kind. */
  #switchable(op: string, node: unknown): bigint {
    this[LIFETIME].assertAlive(op);
    const handles = gr.graphNodes(op, this.#graph.handle);
    const i = requireInt(op, 'node', node, 0, Math.max(0, handles.length - 1));
    const h = handles[i]!;
    const type = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)] ?? 'unknown';
    if (type !== 'kernel' && type !== 'memset' && type !== 'memcpy') {
      throw new InvalidArgumentError(op, 'node', `node #${i} is a '${type}' node; CUDA enables and disables only kernel, memset and memcpy nodes`);
    }
    return h;
  }

  /**
   * Updates the executable in place from `graph`, which must have the same topology and node
   * kinds (only parameters may differ: kernel arguments and launch shape, memset values, copy
   * addresses). On success the exec keeps `graph` alive and `this.graph` becomes it.
   * @throws CudaError 910 `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE` whose message names the reason
   *   (`CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED`, …) and the failing node (`details.reason`,
   *   `details.node`); the exec is unchanged.
   */
  update(graph: Graph): void {
    const op = 'GraphExec.update';
    this[LIFETIME].assertAlive(op);
    requireInstance(op, 'graph', graph, brands.Graph);
    const g = graph.handle;
    makeCurrent(op, this.#ctx);
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
    if (graph === this.#graph) return;
    graph[LIFETIME].retain();
    const old = this.#graph;
    const oldOwned = this.#ownsGraph;
    this.#held[0] = graph[LIFETIME];
    this.#graph = graph;
    this.#ownsGraph = false;
    this.#hostFunctions = graph.jsHostFunctionIds(op);
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
    if (this.#ownsGraph && !life.disposed && life.holders === 0 && graph[LIFETIME].holders === 1) {
      graph.destroyTemplateBeforeExec('GraphExec.dispose');
    }
    life.dispose();
    if (this.#ownsGraph) graph.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
