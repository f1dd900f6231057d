import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { graph as gr } from '../driver/result/index.js';
import { cudaError } from '../driver/check.js';
import { CU_GRAPH_EXEC_UPDATE_RESULT } from '../driver/layouts.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../cuda/internal.js';
import { makeCurrent } from '../cuda/context.js';
import { checkEpoch } from '../cuda/check-epoch.js';
import { Lifetime, keepFailure } from '../cuda/lifetime.js';
import { hostCallsSubmitted } from '../cuda/host-calls.js';
import { Stream } from '../cuda/stream.js';
import { Graph } from './graph.js';

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
  #stream: Stream | null;
  #launches = 0;
  /** cudagraph host-function calls one launch makes (counted for the synchronous-wait guard). */
  #hostCalls: number;
  /** The stream `launch`'s checks last passed with, its handle, and the check epoch then. */
  #checkedStream: Stream | null = null;
  #checkedHandle = 0n;
  #checkedEpoch = -1;
  /** Lifetimes this exec holds: its graph (index 0 is kept in step with #graph). */
  readonly #held: Lifetime[];

  /** @internal Made by `Graph.instantiate` and `StreamGraphCapture.end`. */
  constructor(key: typeof INTERNAL, graph: Graph, handle: bigint, stream: Stream | null, ownsGraph: boolean) {
    if (key !== INTERNAL) throw new TypeError('GraphExec: use capture.end() or graph.instantiate()');
    this.#graph = graph;
    this.#handle = handle;
    this.#ctx = graph.device.context;
    this.#stream = stream;
    this.#ownsGraph = ownsGraph;
    this.nodeCount = graph.nodeCount;
    this.#hostCalls = graph.jsHostCallCount('GraphExec');
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

  /** The template graph (for read-back and DOT). Replaced by `update(graph)`. */
  get graph(): Graph {
    return this.#graph;
  }

  /** The `CUgraphExec` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('GraphExec.handle');
    return this.#handle;
  }

  /** The stream `launch()` uses by default: the captured stream, else the device's default stream. */
  get stream(): Stream {
    if (this.#stream === null || this.#stream.disposed) this.#stream = this.#graph.device.stream();
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
   */
  launch(stream?: Stream): void {
    // Fast path: the checks passed for this stream and nothing that could fail them has happened
    // since (cuda/check-epoch.ts); otherwise run them all, in the order of the errors they throw.
    const s = stream === undefined ? this.#stream : stream;
    if (s === null || s !== this.#checkedStream || checkEpoch.value !== this.#checkedEpoch) {
      this.#checkedHandle = this.#check(stream);
    }
    const checked = this.#checkedStream!;
    makeCurrent(LAUNCH, this.#ctx);
    gr.graphLaunch(LAUNCH, this.#handle, this.#checkedHandle);
    this.#launches++;
    if (this.#hostCalls !== 0) hostCallsSubmitted(this.#hostCalls);
    const sink = checked[CAPTURE];
    if (sink !== null) sink.retain(this[LIFETIME]);
  }

  /** The checks of `launch`; on success remembers the stream and the epoch, and returns its handle. */
  #check(stream: Stream | undefined): bigint {
    this[LIFETIME].assertAlive(LAUNCH);
    const s = stream === undefined ? this.stream : stream;
    if (!(s instanceof Stream)) throw new InvalidArgumentError(LAUNCH, 'stream', `stream must be a Stream, got ${describe(s)}`);
    const epoch = checkEpoch.value;
    const h = s.handleFor(LAUNCH);
    this.#checkedStream = s;
    this.#checkedEpoch = epoch;
    return h;
  }

  /** Uploads the graph's work to the device ahead of launch (`cuGraphUpload`), on `stream` (default `this.stream`). */
  upload(stream?: Stream): void {
    const op = 'GraphExec.upload';
    this[LIFETIME].assertAlive(op);
    const s = stream === undefined ? this.stream : stream;
    if (!(s instanceof Stream)) throw new InvalidArgumentError(op, 'stream', `stream must be a Stream, got ${describe(s)}`);
    makeCurrent(op, this.#ctx);
    gr.graphUpload(op, this.#handle, s.handleFor(op));
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
    if (!(graph instanceof Graph)) throw new InvalidArgumentError(op, 'graph', `graph must be a Graph, got ${describe(graph)}`);
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
    this.#hostCalls = graph.jsHostCallCount(op);
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
