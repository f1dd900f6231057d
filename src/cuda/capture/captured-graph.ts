import { InvalidArgumentError, DisposedError, privateConstructorError } from '../../errors/base.js';
import { requireInstance } from '../../util/validate.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { Lifetime } from '../core/lifetime.js';
import type { Stream } from '../device/stream.js';
import type { KernelArg, KernelArgValue } from '../kernel/arg.js';
import type { KernelArgSite } from '../graph/kernel-arg-patch.js';
import type { Device } from '../device/device.js';
import type { GraphExec } from '../graph/graph-exec.js';
import type { CudaNode } from '../graph/cuda-node.js';
import type { Graph } from '../graph/graph.js';
import type { CapturePool } from '../pool/capture-pool.js';
import { brands } from '../core/brands.js';

/** A kernel node of a captured graph, as `kernelNodes()` lists it. */
export interface KernelNodeRef {
  /** Its index in `captured.graph.nodes()`. */
  readonly index: number;
  /** The kernel's name. */
  readonly name: string;
}

/** What the graph's cleanup releases; never the CapturedGraph itself. */
interface GraphHoldings {
  readonly exec: GraphExec;
  readonly pool: CapturePool | null;
}

/**
 * An instantiated graph from `GraphCaptureGuard.finish()`: `launch()` replays everything the
 * capture recorded with one `cuGraphLaunch`. It keeps alive every buffer, module and pinned
 * buffer its work was given during capture (dropping your last reference to a buffer cannot free
 * memory a replay still uses) and the `CapturePool` it was captured with.
 *
 * Values can change between replays without a new capture: write them into a `DeviceScalar`
 * before `launch()`, or point a kernel node at new arguments with `setKernelArgs`.
 *
 * @example
 * using graph = guard.finish();
 * graph.upload();                          // first-launch setup out of the loop
 * for (let i = 0; i < 1000; i++) graph.launch();
 * await graph.stream.synchronizeAsync();
 */
export class CapturedGraph {
  /** The stream the work was captured on: where `launch()` replays it by default. */
  readonly stream: Stream;
  /** The device the graph runs on. */
  readonly device: Device;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #exec: GraphExec;
  readonly #pool: CapturePool | null;
  readonly #holdings: GraphHoldings;
  #replays = 0;
  #uploaded = false;
  #kernelNodes: KernelNodeRef[] | null = null;
  /** The one stream launches may use (null: any), and why, for the refusal. */
  #only: Stream | null = null;
  #onlyWhy = '';

  /** @internal Made by `GraphCaptureGuard.finish`; takes one hold on `pool` (released on dispose). */
  constructor(key: typeof INTERNAL, exec: GraphExec, stream: Stream, pool: CapturePool | null) {
    if (key !== INTERNAL) throw privateConstructorError('CapturedGraph', 'GraphCaptureGuard.finish()');
    this.#exec = exec;
    this.stream = stream;
    this.device = stream.device;
    this.#pool = pool;
    if (pool !== null) pool.retainHold('GraphCaptureGuard.finish');
    if (pool?.stream != null) {
      this.#only = pool.stream;
      this.#onlyWhy = `it was captured with ${pool}, a one-stream pool whose graphs share memory, so that no two of them may be in flight together`;
    }
    const holdings: GraphHoldings = { exec, pool };
    this.#holdings = holdings;
    this[LIFETIME] = new Lifetime(`CapturedGraph (${exec.nodeCount} nodes)`, this, () => {
      try {
        holdings.exec.dispose();
      } finally {
        holdings.pool?.releaseHold();
      }
    });
  }

  /** @internal True for a CapturedGraph this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is CapturedGraph {
    return typeof value === 'object' && value !== null && #exec in value;
  }

  /** Number of nodes of the graph. */
  get nodeCount(): number {
    return this.#exec.nodeCount;
  }

  /** The template graph, for read-back (`graph.readBack()`, kernel names, edges) and DOT; disposed with this one. */
  get graph(): Graph {
    return this.#exec.graph;
  }

  /** Successful launches so far (a launch that throws is not counted). */
  get numReplays(): number {
    return this.#replays;
  }

  /** True once `upload()` has succeeded. */
  get isUploaded(): boolean {
    return this.#uploaded;
  }

  /** True when the graph was captured with a `CapturePool`. */
  get hasPool(): boolean {
    return this.#pool !== null;
  }

  /** The pool the graph was captured with (share it with another capture), or null. */
  get pool(): CapturePool | null {
    return this.#pool;
  }

  /** The pool's `bufferCount`, or 0 without a pool. */
  get poolBufferCount(): number {
    return this.#pool === null ? 0 : this.#pool.bufferCount;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * The one stream `launch` accepts, or null for any: the stream of the `GraphCache` that owns the
   * graph, or of the one-stream `CapturePool` it was captured with. Those graphs share memory,
   * which is safe only while they replay in one stream's order.
   */
  get onlyStream(): Stream | null {
    return this.#only;
  }

  /** @internal Binds the graph's launches to `stream` (a `GraphCache` does, for its graphs); `why` ends the refusal's reason. */
  restrictTo(key: typeof INTERNAL, stream: Stream, why: string): void {
    if (key !== INTERNAL) throw privateConstructorError('CapturedGraph', 'GraphCaptureGuard.finish() (restrictTo is internal)');
    this.#only = stream;
    this.#onlyWhy = why;
  }

  #wrongStream(op: string, s: Stream): InvalidArgumentError {
    return new InvalidArgumentError(op, 'stream', `this graph launches on ${this.#only} only, not on ${s}: ${this.#onlyWhy}. Launch it on that stream (graph.launch() does)`);
  }

  #streamFor(op: string, stream: unknown): Stream {
    const s = stream === undefined ? this.stream : requireInstance(op, 'stream', stream, brands.Stream);
    if (s.disposed) {
      throw new DisposedError(op, stream === undefined ? `the captured stream ${s} (pass another stream: launch(stream))` : String(s));
    }
    if (s.device !== this.device) {
      throw new InvalidArgumentError(op, 'stream', `the stream is on ${s.device}, the graph on ${this.device}`);
    }
    return s;
  }

  /**
   * Replays the graph on `stream` (default: the stream it was captured on) with one
   * `cuGraphLaunch`; counts the replay once the driver accepted it.
   * A graph with an `onlyStream` (one of a `GraphCache`, or captured with a one-stream
   * `CapturePool`) refuses every other stream, changing nothing.
   * @throws InvalidArgumentError for a non-Stream, a stream of another device, or a stream other
   *   than `onlyStream`; DisposedError for a disposed graph or stream; CudaError from the driver
   *   (e.g. 900 on a capturing stream).
   */
  launch(stream?: Stream): void {
    this.launchFor('CapturedGraph.launch', stream);
  }

  /** @internal `launch` for a caller that names its own operation in errors (`launchAndWait`, a `GraphCache`). */
  launchFor(op: string, stream: Stream | undefined): void {
    this[LIFETIME].assertAlive(op);
    const s = this.#streamFor(op, stream);
    // One comparison when the graph is bound and launched where it belongs.
    if (s !== this.#only && this.#only !== null) throw this.#wrongStream(op, s);
    this.#exec.launchFor(op, s);
    this.#replays++;
    this.#pool?.memory?.noteLaunch(s);
  }

  /**
   * `launch(stream)` then `await stream.synchronizeAsync()`: resolves when the replay (and the work
   * before it on the stream) is done, the event loop free meanwhile (docs/driver.md, "Waiting
   * without blocking"). Refusals reject under this call's name, before anything is launched.
   */
  launchAndWait(stream?: Stream): Promise<void> {
    const op = 'CapturedGraph.launchAndWait';
    try {
      this[LIFETIME].assertAlive(op);
      const s = this.#streamFor(op, stream);
      if (s !== this.#only && this.#only !== null) throw this.#wrongStream(op, s);
      s.waitableHandle(op);
      this.launchFor(op, s);
      return s.synchronizeAsync();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Uploads the graph to the device ahead of its first launch (`cuGraphUpload`) on `stream`
   * (default: the captured stream). Idempotent: only the first successful call reaches the driver.
   */
  upload(stream?: Stream): void {
    const op = 'CapturedGraph.upload';
    this[LIFETIME].assertAlive(op);
    const s = this.#streamFor(op, stream);
    if (this.#uploaded) return;
    this.#exec.uploadFor(op, s);
    this.#uploaded = true;
  }

  /** The graph's kernel nodes with their indices and names (read back once). */
  kernelNodes(): KernelNodeRef[] {
    const op = 'CapturedGraph.kernelNodes';
    this[LIFETIME].assertAlive(op);
    if (this.#kernelNodes === null) {
      this.#kernelNodes = this.#exec.graph
        .readBack()
        .nodes.flatMap((n) => (n.kernel === undefined ? [] : [Object.freeze({ index: n.index, name: n.kernel.name })]));
    }
    return [...this.#kernelNodes];
  }

  /**
   * Points a kernel node of the instantiated graph at new arguments
   * (`cuGraphExecKernelNodeSetParams_v2`): launches made after this call run the kernel with
   * `args`; launches already queued keep the old ones. `node` is the kernel's name (when one node
   * runs it), the node's index in `captured.graph.nodes()` (or in `kernelNodes()`' `index`), or its `CudaNode`. Arguments are typed as for
   * `kernel.launch` and checked against the kernel's parameters; the graph keeps the new buffers
   * alive. (`GraphExec.setKernelArgs` is the same on any exec.)
   * @throws InvalidArgumentError for an unknown or ambiguous node, or arguments that do not match
   *   the kernel's parameters; DisposedError for a disposed graph or buffer.
   */
  setKernelArgs(node: string | number | CudaNode, args: readonly KernelArg[]): void {
    const op = 'CapturedGraph.setKernelArgs';
    this[LIFETIME].assertAlive(op);
    this.#exec.setKernelArgsFor(op, node, args);
  }

  /**
   * Replaces argument `index` of a kernel node, keeping its other arguments
   * (`cuGraphExecKernelNodeSetParams_v2`): a position or step that changes per launch without a
   * new capture. `node` is a kernel's name (every node running it is changed), the node's index
   * in `captured.graph.nodes()` or its `CudaNode`. Arguments are named by index: neither the
   * driver nor a compiled kernel keeps parameter names (a `GraphCache` lets you name them:
   * `scalars`). Launches after the call see the value; queued ones do not. Returns the number of
   * nodes changed. (`GraphExec.setKernelArg` is the same on any exec.)
   * @throws as `GraphExec.setKernelArg`.
   *
   * @example
   * graph.setKernelArg('rope', 2, arg.i32(position));
   * graph.launch();
   */
  setKernelArg(node: string | number | CudaNode, index: number, value: KernelArg): number {
    const op = 'CapturedGraph.setKernelArg';
    this[LIFETIME].assertAlive(op);
    return this.#exec.setKernelArgFor(op, node, index, value);
  }

  /** @internal `GraphExec.kernelArgSiteFor` of the graph's exec. */
  kernelArgSite(op: string, node: unknown, index: unknown, size: number): KernelArgSite {
    this[LIFETIME].assertAlive(op);
    return this.#exec.kernelArgSiteFor(op, node, index, size);
  }

  /** @internal `GraphExec.setKernelArgAtFor` of the graph's exec. */
  setKernelArgAt(op: string, site: KernelArgSite, value: KernelArgValue): void {
    this[LIFETIME].assertAlive(op);
    this.#exec.setKernelArgAtFor(op, site, value);
  }

  /**
   * Destroys the executable graph (launches already queued complete) and releases what it kept
   * alive: its buffers, its argument blocks and its hold on the pool. Idempotent; never throws.
   */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `CapturedGraph(${this.#exec.nodeCount} nodes on ${this.stream})`;
  }
}
