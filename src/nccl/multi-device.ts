import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireOptions, assertInstance } from '../util/validate.js';
import type { Stream } from '../cuda/device/stream.js';
import { StreamGraphCapture } from '../cuda/capture/stream-graph-capture.js';
import type { GraphExec } from '../cuda/graph/graph-exec.js';
import type { Graph } from '../cuda/graph/graph.js';
import type { CaptureMode } from '../cuda/capture/capture-mode.js';
import { brands } from '../cuda/core/brands.js';

/** Options of `captureMultiDevice`. */
export interface MultiDeviceCaptureGpuOptions {
  /** Capture mode of every stream's capture. Default `'global'` (NCCL supports it from one thread). */
  readonly mode?: CaptureMode;
}

/**
 * The per-device graphs of one multi-GPU step, launched and disposed together. `launch()` replays
 * every device's graph on its stream, in rank order, from the JS thread. NVIDIA's NCCL guide warns
 * that with several GPUs per process a graph launch can block until the peers' graphs are
 * launched (single-threaded programs may deadlock); the launches here are plain asynchronous
 * `cuGraphLaunch` calls in a row, as nccl-tests does with `-G`, and docs/nccl.md records what ran.
 *
 * @example
 * using step = captureMultiDevice(streams, (s) => {
 *   for (let r = 0; r < s.length; r++) grad[r]!.launch(s[r]!);
 *   clique.allReduce(s, (r) => ({ send: grads[r], count: n, type: 'f32', op: 'sum' }));
 * });
 * for (let i = 0; i < 1000; i++) step.launch();
 * step.synchronize();
 */
export class MultiDeviceGraphExec {
  /** One executable graph per stream, index = position in `streams`. */
  readonly execs: readonly GraphExec[];
  /** The streams captured (and launched on), in order. */
  readonly streams: readonly Stream[];
  #launches = 0;
  #disposed = false;

  /** @internal Made by `captureMultiDevice`. */
  constructor(execs: readonly GraphExec[], streams: readonly Stream[]) {
    this.execs = Object.freeze([...execs]);
    this.streams = Object.freeze([...streams]);
  }

  /** Node count of each device's graph. */
  get nodeCounts(): number[] {
    return this.execs.map((e) => e.nodeCount);
  }

  /** Completed `launch()` calls. */
  get launchCount(): number {
    return this.#launches;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /**
   * Launches every device's graph on its stream (one `cuGraphLaunch` each, in order).
   * @throws DisposedError after dispose; CudaError from the driver (graphs launched before the
   *   failing one are not undone: synchronize, then dispose).
   */
  launch(): void {
    for (let i = 0; i < this.execs.length; i++) this.execs[i]!.launch(this.streams[i]!);
    this.#launches++;
  }

  /** Uploads every graph ahead of its first launch (`cuGraphUpload`). */
  upload(): void {
    for (let i = 0; i < this.execs.length; i++) this.execs[i]!.upload(this.streams[i]!);
  }

  /** Blocks until every stream's work is done. */
  synchronize(): void {
    for (const s of this.streams) s.synchronize();
  }

  /** Resolves when every stream's work is done, without blocking the event loop. */
  async synchronizeAsync(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.synchronizeAsync()));
  }

  /** Disposes every graph (work already launched completes). Idempotent; never throws. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const e of this.execs) e.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** `MultiDeviceGraphExec(2 devices, nodes 3+3)`. */
  toString(): string {
    return `MultiDeviceGraphExec(${this.execs.length} devices, nodes ${this.nodeCounts.join('+')})`;
  }
}

/**
 * Captures one step on several streams (usually one per GPU) at once: begins a capture on every
 * stream, runs `step(streams)` once (it enqueues each device's work, and the collectives of all
 * ranks in one group, e.g. through `NcclClique`), ends every capture and returns the per-device
 * graphs as one `MultiDeviceGraphExec`. Run the step once eagerly first: NCCL connects peers on
 * the first collective of a kind, which should not happen inside a capture.
 *
 * If the step throws, or any capture fails to end, every capture is ended and everything captured
 * is destroyed; the step's error is rethrown (a cleanup failure rides along in a
 * `SuppressedCleanupError`).
 * @throws InvalidArgumentError for an empty or repeated stream list, a non-function step, or a
 *   step that returns a promise (captures must not span an await); whatever the step throws;
 *   CudaError from the driver (e.g. 901 when the step did something illegal during capture).
 */
export function captureMultiDevice(
  streams: readonly Stream[],
  step: (streams: readonly Stream[]) => void,
  options?: MultiDeviceCaptureGpuOptions,
): MultiDeviceGraphExec {
  const op = 'captureMultiDevice';
  if (!Array.isArray(streams) || streams.length === 0) {
    throw new InvalidArgumentError(op, 'streams', `streams must be a non-empty array of Streams, got ${describe(streams)}`);
  }
  streams.forEach((s, i) => {
    assertInstance(op, `streams[${i}]`, s, brands.Stream);
    if (streams.indexOf(s) !== i) throw new InvalidArgumentError(op, `streams[${i}]`, `streams[${i}] repeats streams[${streams.indexOf(s)}]`);
  });
  if (typeof step !== 'function') throw new InvalidArgumentError(op, 'step', `step must be a function, got ${describe(step)}`);
  const o = requireOptions<MultiDeviceCaptureGpuOptions>(op, options, ['mode']);
  const mode: CaptureMode = o.mode ?? 'global';

  const caps: StreamGraphCapture[] = [];
  const abandon = (): void => {
    for (const c of caps) c.dispose();
  };
  try {
    for (const s of streams) caps.push(StreamGraphCapture.begin(s, mode));
  } catch (e) {
    abandon();
    throw e;
  }
  let result: unknown;
  try {
    result = step(Object.freeze([...streams]));
  } catch (e) {
    abandon();
    throw e;
  }
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    abandon();
    throw new InvalidArgumentError(op, 'step', 'step returned a promise: a capture must not span an await (the captures were abandoned)');
  }
  // End every capture before instantiating any graph: instantiation is not permitted while
  // another capture in the process is active (global mode; seen on two H200s as 900 from
  // cuGraphInstantiateWithParams), and the captures are still active until each one ends.
  const graphs: Graph[] = [];
  let failure: unknown = null;
  for (const c of caps) {
    if (failure !== null) {
      c.dispose();
      continue;
    }
    try {
      graphs.push(c.endGraph());
    } catch (e) {
      failure = e;
    }
  }
  const execs: GraphExec[] = [];
  if (failure === null) {
    for (const [i, g] of graphs.entries()) {
      try {
        execs.push(g.instantiateFor(op, undefined, streams[i]!, true));
      } catch (e) {
        failure = e;
        break;
      }
    }
  }
  if (failure !== null) {
    for (const e of execs) e.dispose(); // never throws; each disposes its own graph
    for (const g of graphs.slice(execs.length)) g.dispose();
    throw failure;
  }
  return new MultiDeviceGraphExec(execs, streams);
}
