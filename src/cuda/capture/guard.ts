import { SuppressedCleanupError, privateConstructorError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { requireInstance, requireOptions, assertInstance, isThenable } from '../../util/validate.js';
import { CaptureStatus } from '../../model/capture-status.js';
import { graph as gr } from '../../driver/result/index.js';
import { INTERNAL } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { keepCleanupError } from '../core/lifetime.js';
import type { Stream } from '../device/stream.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import { DEFAULT_CAPTURE_MODE, requireCaptureMode, type CaptureMode } from './capture-mode.js';
import { checkInstantiateFlags, type InstantiateFlags } from '../graph/instantiate-flags.js';
import { ASYNC_CAPTURE_RULE, checkCaptureBody, checkCaptureOptions, type CaptureBody, type NotAPromise, type CaptureOptions, type CheckedCaptureOptions } from './capture-options.js';
import { StreamGraphCapture, type CaptureAllocator, type CaptureFailure } from './stream-graph-capture.js';
import type { CapturePool } from '../pool/capture-pool.js';
import { CapturedGraph } from './captured-graph.js';
import { CaptureStateError } from './guard-errors.js';
import { explainCaptureStatus, type GuardStatusReport } from './guard-status.js';
import type { GraphExec } from '../graph/graph-exec.js';
import { brands } from '../core/brands.js';

/** Where a guard is: capturing, or ended one of three ways. */
export type GuardState = 'capturing' | 'finished' | 'failed' | 'abandoned';

const STATUS = [CaptureStatus.None, CaptureStatus.Active, CaptureStatus.Invalidated] as const;


/** Marks a refused Promise as handled: its eventual rejection must not become an unhandled rejection. */
function silence(thenable: PromiseLike<unknown>): void {
  try {
    Promise.resolve(thenable).catch(() => {});
  } catch {
    // A hostile thenable: nothing more to do.
  }
}

/**
 * The error to throw for `error` when the cleanup after it failed with `cleanup`: `error` itself,
 * with `cleanup` attached as its non-enumerable `suppressed` property, so the caller still sees
 * (and can `===`) the exception that stopped the capture. When nothing can be attached (a thrown
 * primitive, a frozen object, one that already has `suppressed`), a `SuppressedCleanupError`
 * whose `error` is the original and `suppressed` the cleanup failure.
 */
export function attachCleanupFailure(error: unknown, cleanup: unknown, op: string): unknown {
  if (cleanup === null || cleanup === undefined) return error;
  if (error !== null && typeof error === 'object' && Object.isExtensible(error) && !Object.hasOwn(error, 'suppressed')) {
    Object.defineProperty(error, 'suppressed', { value: cleanup, enumerable: false, writable: true, configurable: true });
    return error;
  }
  const what = error instanceof Error ? error.message : String(error);
  const why = cleanup instanceof Error ? cleanup.message : String(cleanup);
  return new SuppressedCleanupError(error, cleanup, `${op}: ${what}\n(and cleaning up the capture failed: ${why})`);
}

/**
 * The scoped capture of a stream, the `with torch.cuda.graph(g):` of TypeScript. Work submitted
 * to the stream between `begin` and `finish()` is recorded, not run; `finish()` returns it as an
 * instantiated `CapturedGraph`. Leaving the scope without `finish()` (an exception mid-capture)
 * ends the capture best-effort, discards it, releases what it allocated and leaves the stream
 * usable; it never throws, so the exception that left the scope is the one you see.
 *
 * @example
 * let graph: CapturedGraph;
 * {
 *   using guard = GraphCaptureGuard.begin(device.stream());
 *   runKernels();                  // recorded
 *   graph = guard.finish();        // consumes the guard
 * }
 * graph.upload();
 * for (let i = 0; i < 1000; i++) graph.launch();
 */
export class GraphCaptureGuard {
  /** The stream being captured. */
  readonly stream: Stream;
  /** The capture mode. */
  readonly mode: CaptureMode;
  /** The pool the capture allocates from and attaches to its graph, or null. */
  readonly pool: CapturePool | null;
  readonly #capture: StreamGraphCapture;
  /** Buffers this capture allocated from the pool: given back if it fails. */
  readonly #pooled: DeviceBuffer[];
  #state: GuardState = 'capturing';
  #cleanupError: unknown = null;

  /** @internal Use `GraphCaptureGuard.begin`, `beginWithMode` or `beginWithPool`. */
  constructor(key: typeof INTERNAL, capture: StreamGraphCapture, pool: CapturePool | null, pooled: DeviceBuffer[]) {
    if (key !== INTERNAL) throw privateConstructorError('GraphCaptureGuard', 'GraphCaptureGuard.begin(stream)');
    this.#capture = capture;
    this.stream = capture.stream;
    this.mode = capture.mode;
    this.pool = pool;
    this.#pooled = pooled;
  }

  /**
   * Begins capturing `stream` in `'threadLocal'` mode (only unsafe calls from this thread can
   * invalidate the capture).
   * @throws InvalidArgumentError for a non-Stream, the legacy NULL stream, or a stream already
   *   capturing; DisposedError for a disposed stream; CudaError from the driver.
   */
  static begin(stream: Stream): GraphCaptureGuard {
    return GraphCaptureGuard.#open('GraphCaptureGuard.begin', stream, DEFAULT_CAPTURE_MODE, null);
  }

  /**
   * Begins capturing `stream` in `mode` (`'global'`, `'threadLocal'` or `'relaxed'`).
   * @throws as `begin`, and InvalidArgumentError for an unknown mode.
   */
  static beginWithMode(stream: Stream, mode: CaptureMode): GraphCaptureGuard {
    return GraphCaptureGuard.#open('GraphCaptureGuard.beginWithMode', stream, mode, null);
  }

  /**
   * Begins capturing `stream` with `pool` (mode `'threadLocal'` unless given):
   * `DeviceBuffer.allocAsync` on the capture's streams takes memory from the pool, and the graph
   * `finish()` returns holds the pool.
   * @throws as `begin`; InvalidArgumentError for a non-CapturePool or a pool whose memory is on
   *   another device; CaptureStateError `ERR_POOL_SEALED` for a sealed pool; DisposedError for a
   *   released pool.
   */
  static beginWithPool(stream: Stream, pool: CapturePool, mode: CaptureMode = DEFAULT_CAPTURE_MODE): GraphCaptureGuard {
    return GraphCaptureGuard.#open('GraphCaptureGuard.beginWithPool', stream, mode, pool);
  }

  /**
   * Captures `fn(stream)` and returns the graph: `captureGraph` as a static. See `captureGraph`.
   */
  static capture<R>(stream: Stream, fn: (stream: Stream) => R & NotAPromise<R>, options?: CaptureOptions): CapturedGraph {
    return GraphCaptureGuard.captureFor('GraphCaptureGuard.capture', stream, fn, options);
  }

  static #open(op: string, stream: unknown, mode: unknown, given: unknown): GraphCaptureGuard {
    assertInstance(op, 'stream', stream, brands.Stream);
    const m = requireCaptureMode(op, mode);
    const pool = given === null ? null : requireInstance(op, 'pool', given, brands.CapturePool);
    if (pool !== null) {
      // The stream is checked first: a refused begin leaves the pool as it was.
      StreamGraphCapture.capturableHandle(op, stream);
      // The pool's memory is created before the capture begins: creating it is not capture-safe.
      pool.holdFor(op, stream);
    }
    try {
      const pooled: DeviceBuffer[] = [];
      const allocator: CaptureAllocator | null =
        pool === null
          ? null
          : {
              allocate(aop, s, n) {
                const buffer = pool.allocateFor(aop, s, n);
                pooled.push(buffer);
                return buffer;
              },
            };
      const capture = StreamGraphCapture.beginFor(op, stream, m, allocator);
      // A guard dropped without finish() or dispose() is abandoned when its capture is collected:
      // the pool memory it took and its hold on the pool go back then. (The closure holds the pool
      // and the list, never the guard.)
      if (pool !== null) capture.onCollected(() => releasePooled(pool, pooled));
      return new GraphCaptureGuard(INTERNAL, capture, pool, pooled);
    } catch (e) {
      pool?.releaseHold();
      throw e;
    }
  }

  /** @internal `capture`/`captureGraph` with the operation name errors start with. */
  static captureFor(op: string, stream: Stream, fn: CaptureBody, options: CaptureOptions | undefined): CapturedGraph {
    const body = checkCaptureBody(op, fn);
    return GraphCaptureGuard.captureChecked(op, stream, body, checkCaptureOptions(op, options));
  }

  /** @internal The one implementation of the capture entry points that run a body, on checked options. */
  static captureChecked(op: string, stream: Stream, fn: CaptureBody, o: CheckedCaptureOptions): CapturedGraph {
    const guard = GraphCaptureGuard.#open(op, stream, o.mode, o.pool);
    let result: unknown;
    try {
      result = fn(guard.stream);
    } catch (e) {
      throw guard.#fail(op, e);
    }
    if (isThenable(result)) {
      silence(result);
      throw guard.#fail(
        op,
        new CaptureStateError(
          op,
          'ERR_ASYNC_CAPTURE',
          `fn returned a Promise: ${ASYNC_CAPTURE_RULE}. The capture was ended and discarded; work fn submits after its first await runs eagerly, outside any graph.`,
        ),
      );
    }
    return guard.finishFor(op, o.flags === undefined ? undefined : { flags: o.flags });
  }

  /** @internal True for a GraphCaptureGuard this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is GraphCaptureGuard {
    return typeof value === 'object' && value !== null && #capture in value;
  }

  /** `capturing` until `finish()` (then `finished`, or `failed` when it threw) or `dispose()` (`abandoned`). */
  get state(): GuardState {
    return this.#state;
  }

  /** The first illegal call made through cudagraph during the capture (operation, error, JS stack), or null. */
  get firstFailure(): CaptureFailure | null {
    return this.#capture.firstFailure;
  }

  /**
   * What went wrong while ending and discarding the capture (in `dispose()`, or after a failed
   * `finish()`), or null. A dispose failure is also thrown by the next public call, since
   * `dispose()` itself cannot throw.
   */
  get cleanupError(): unknown {
    return this.#cleanupError;
  }

  /**
   * The driver's capture status of the stream (`cuStreamIsCapturing`): `Active` while the guard
   * captures, `None` once it has ended. An unexpected `Invalidated` (or `None` while the guard
   * still captures) usually means a forbidden call (an allocation, a synchronization, a host
   * copy) happened under capture: `statusReport()` explains it and names the first illegal call.
   * @throws DisposedError when the stream was disposed; CudaError from the driver.
   */
  status(): CaptureStatus {
    const op = 'GraphCaptureGuard.status';
    const h = this.stream.handleFor(op);
    makeCurrent(op, this.stream.device.context);
    return STATUS[gr.streamIsCapturing(op, h)] ?? CaptureStatus.Invalidated;
  }

  /**
   * `status()` with an explanation: whether it is what the guard expects, why not (the first
   * illegal call with its JS stack, or the usual causes), and what `finish()`/`dispose()` will do.
   */
  statusReport(): GuardStatusReport {
    return explainCaptureStatus(this.status(), this.#state === 'capturing', this.#capture.firstFailure);
  }

  /**
   * Ends the capture and instantiates the graph. Consumes the guard whether it succeeds or not:
   * on failure the capture is discarded, what it allocated is released, and the stream is usable.
   * @throws CaptureStateError `ERR_GUARD_FINISHED` when the guard was already finished or
   *   disposed; CudaError 901 `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` naming the first illegal call
   *   and its JS stack (`cause` is that call's error); CaptureStateError `ERR_CAPTURE_NOT_ACTIVE`
   *   when the capture was ended behind the guard; InvalidArgumentError for bad flags, DisposedError
   *   for a disposed upload stream (the guard keeps capturing either way); CudaError from instantiation. A cleanup failure after a failed end is
   *   attached as the error's `suppressed` property (see `attachCleanupFailure`).
   */
  finish(options?: { flags?: InstantiateFlags }): CapturedGraph {
    return this.finishFor('GraphCaptureGuard.finish', options);
  }

  /** @internal `finish` for a caller that names its own operation in errors (`captureGraph`, `makeGraphed`, a `GraphCache`). */
  finishFor(op: string, options: unknown): CapturedGraph {
    if (this.#state !== 'capturing') {
      throw new CaptureStateError(
        op,
        'ERR_GUARD_FINISHED',
        this.#state === 'abandoned'
          ? 'this guard was disposed: its capture was discarded; begin a new guard to capture again'
          : 'this guard has already finished: finish() consumes it; begin a new guard to capture again',
      );
    }
    const o = requireOptions<{ flags: InstantiateFlags }>(op, options, ['flags']);
    checkInstantiateFlags(op, o.flags);
    this.#state = 'failed'; // consumed from here on, whatever happens
    let before: CaptureStatus | null = null;
    try {
      // Raw: a public call here would throw (and so lose) an error kept for the program. The
      // handle is valid: a stream's destroy waits for the capture to end.
      makeCurrent(op, this.stream.device.context);
      before = STATUS[gr.streamIsCapturing(op, this.stream.handleUnchecked())] ?? CaptureStatus.Invalidated;
    } catch {
      before = null;
    }
    let exec: GraphExec;
    try {
      exec = this.#capture.endFor(op, o.flags === undefined ? undefined : { flags: o.flags });
    } catch (e) {
      let error = e;
      if (before === CaptureStatus.None && !(e instanceof CudaError && e.code === 901)) {
        const report = explainCaptureStatus(CaptureStatus.None, true, this.#capture.firstFailure);
        error = new CaptureStateError(op, 'ERR_CAPTURE_NOT_ACTIVE', report.explanation, { cause: e });
      }
      throw this.#failWith(op, error);
    }
    let graph: CapturedGraph;
    try {
      graph = new CapturedGraph(INTERNAL, exec, this.stream, this.pool);
    } catch (e) {
      exec.dispose();
      throw this.#failWith(op, e);
    }
    // A one-stream pool takes back now what the program freed during the capture (docs/graph-cache.md).
    this.pool?.shareFreed(this.#pooled);
    this.pool?.releaseHold(); // the graph holds the pool now
    this.#pooled.length = 0; // the pool keeps them; the graph holds what its work uses
    this.#state = 'finished';
    return graph;
  }

  /** Discards the capture after `error` stopped it; returns what to throw. */
  #fail(op: string, error: unknown): unknown {
    this.#state = 'abandoned';
    return this.#failWith(op, error);
  }

  #failWith(op: string, error: unknown): unknown {
    const cleanup = this.#release(op);
    if (cleanup !== null) this.#cleanupError = cleanup;
    return attachCleanupFailure(error, cleanup, op);
  }

  /**
   * Ends the capture if it is still active, gives back the pool memory it allocated, and drops
   * its hold on the pool. Never throws; returns the first cleanup failure or null.
   */
  #release(op: string): unknown {
    let failure: unknown = null;
    try {
      failure = this.#capture.abandon(op);
    } catch (e) {
      failure = e;
    }
    if (this.pool !== null) failure ??= releasePooled(this.pool, this.#pooled);
    return failure;
  }

  /**
   * Leaving the scope: when the guard has not finished, ends the capture best-effort, discards
   * the graph, releases what the capture allocated (graph allocations and pool memory) and leaves
   * the stream usable. Never throws (a throwing dispose would replace the exception that left the
   * scope): a cleanup failure is kept in `cleanupError` and thrown by the next public call.
   * A no-op after `finish()`; idempotent.
   */
  dispose(): void {
    if (this.#state !== 'capturing') return;
    this.#state = 'abandoned';
    const failure = this.#release('GraphCaptureGuard.dispose');
    if (failure !== null) {
      this.#cleanupError = failure;
      keepCleanupError(failure);
    }
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `GraphCaptureGuard(${this.stream}, ${this.mode}, ${this.#state})`;
  }
}

/**
 * Gives back the pool memory a failed or abandoned capture took from `pool` and drops the capture's
 * hold on it. Never throws; returns the first failure or null.
 */
function releasePooled(pool: CapturePool, pooled: DeviceBuffer[]): unknown {
  let failure: unknown = null;
  for (const buffer of pooled.splice(0)) {
    try {
      pool.forgetAllocation(buffer);
    } catch (e) {
      failure ??= e;
    }
  }
  try {
    pool.releaseHold();
  } catch (e) {
    failure ??= e;
  }
  return failure;
}

/**
 * Captures `fn(stream)` into a graph: begins a capture (mode `'threadLocal'` unless
 * `options.mode`; with `options.pool`, allocations come from that pool), runs `fn`, and returns
 * the instantiated `CapturedGraph`. If `fn` throws, the capture is ended and discarded, what it
 * allocated is released, and `fn`'s exception is rethrown as itself; a cleanup failure is
 * attached to it as its `suppressed` property (or, for a thrown primitive, both travel in a
 * `SuppressedCleanupError`).
 *
 * `fn` must be synchronous: an `async function` is refused before anything starts
 * (InvalidArgumentError), and a function that returns a Promise has its capture ended and
 * discarded (CaptureStateError `ERR_ASYNC_CAPTURE`). See docs/guard.md, "Async code".
 *
 * @example
 * const graph = captureGraph(s, (s) => {
 *   step.launch(s);
 *   out.copyFromDeviceAsync(s, tmp);
 * });
 */
export function captureGraph<R>(stream: Stream, fn: (stream: Stream) => R & NotAPromise<R>, options?: CaptureOptions): CapturedGraph {
  return GraphCaptureGuard.captureFor('captureGraph', stream, fn, options);
}
