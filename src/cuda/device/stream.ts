import { InvalidArgumentError, DisposedError, privateConstructorError } from '../../errors/base.js';
import { describe, requireBoolean, requireInstance, requireOptions } from '../../util/validate.js';
import { stream as st, wait } from '../../driver/result/index.js';
import { CU, CU_EVENT_EXTERNAL } from '../../driver/layouts.js';
import { INTERNAL, CAPTURE, RECORDED_IN, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure } from '../core/lifetime.js';
import { invalidateChecks } from '../core/check-epoch.js';
import type { CaptureSink } from '../core/capture-hooks.js';
import { surfaceHostCallbackErrors } from '../host/host-calls.js';
import type { Device } from './device.js';
import type { Event } from './event.js';
import { LaunchSequence } from '../kernel/launch-sequence.js';
import type { PreparedLaunch } from '../kernel/prepared-launch.js';
import { brands, registerBrand } from '../core/brands.js';
import type { ConditionalHandle, ConditionalNode } from '../graph/conditional.js';
import type { NotAPromise } from '../capture/capture-options.js';

/** Options of `device.createStream`. */
export interface StreamOptions {
  /** In `device.streamPriorityRange()`; lower runs first. Default 0. */
  readonly priority?: number;
  /** Do not synchronize with the legacy NULL stream (needed for capture). Default true. */
  readonly nonBlocking?: boolean;
}

/**
 * What every `Stream` object of one `CUstream` shares: the stream cudagraph created and each
 * `Stream.wrap` of its handle are one stream to the driver, so they capture together.
 */
interface StreamCell {
  /** The capture the stream records into, or null. */
  sink: CaptureSink | null;
}

/**
 * Streams cudagraph created, by handle: `Stream.wrap` of one of these handles is tied to that
 * stream (same capture state; unusable once it is disposed), never a second, unguarded owner.
 */
const created = new Map<bigint, { readonly stream: WeakRef<Stream>; readonly cell: StreamCell }>();

/** What the capture module provides for conditional capture (registered when it loads: it imports this module). */
export interface ConditionalCaptureCall {
  handle(op: string, stream: Stream, options: unknown): ConditionalHandle;
  conditional(op: string, stream: Stream, kind: 'if' | 'while' | 'switch', handle: unknown, bodies: readonly unknown[], size: number): ConditionalNode;
}

let conditionalCapture: ConditionalCaptureCall | null = null;

/** @internal Called once by `capture/conditional-capture.ts`. */
export function registerConditionalCapture(call: ConditionalCaptureCall): void {
  conditionalCapture = call;
}

function conditionalCall(op: string): ConditionalCaptureCall {
  if (conditionalCapture === null) throw new InvalidArgumentError(op, 'stream', 'conditional capture is not loaded');
  return conditionalCapture;
}

/**
 * A CUDA stream: an ordered queue of GPU work. Created by `device.createStream()` or
 * `device.stream()`; `Stream.wrap` adopts a handle made elsewhere.
 *
 * @example
 * using s = device.createStream();
 * buf.memsetAsync(s, 0);
 * await s.synchronizeAsync();      // the event loop keeps running meanwhile
 */
export class Stream {
  /** The device whose primary context owns the stream. */
  readonly device: Device;
  /** The stream's priority (lower runs first). */
  readonly priority: number;
  /** Whether the stream skips synchronization with the legacy NULL stream. */
  readonly nonBlocking: boolean;
  /** Whether cudagraph created the handle (and destroys it on dispose). */
  readonly owned: boolean;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  readonly #cell: StreamCell;
  /** For a wrap of a stream cudagraph created: that stream, whose disposal ends this one's use. */
  readonly #origin: Stream | null;
  #syncEvent: Event | null = null;

  /** @internal Use `device.createStream()` or `Stream.wrap`. */
  constructor(key: typeof INTERNAL, device: Device, priority: number, nonBlocking: boolean, adopt?: bigint, origin?: Stream) {
    if (key !== INTERNAL) throw privateConstructorError('Stream', 'device.createStream() or device.stream()');
    const op = 'Device.createStream';
    this.device = device;
    this.priority = priority;
    this.nonBlocking = nonBlocking;
    if (adopt !== undefined) {
      this.#handle = adopt;
      this.owned = false;
      this.#origin = origin ?? null;
      this.#cell = origin !== undefined ? origin.#cell : { sink: null };
      this[LIFETIME] = new Lifetime(`Stream 0x${adopt.toString(16)} (wrapped)`, this, () => {});
      return;
    }
    makeCurrent(op, device.context);
    const handle = st.streamCreate(op, nonBlocking ? CU.STREAM_NON_BLOCKING : 0, priority);
    const cell: StreamCell = { sink: null };
    this.#handle = handle;
    this.#cell = cell;
    this.#origin = null;
    this.owned = true;
    created.set(handle, { stream: new WeakRef(this), cell });
    this[LIFETIME] = new Lifetime(`Stream 0x${handle.toString(16)}`, this, () => {
      // The handle may be reused by the driver for a new stream from now on.
      if (created.get(handle)?.cell === cell) created.delete(handle);
      keepFailure(st.streamDestroy('Stream.dispose', handle), 'Stream.dispose', 'cuStreamDestroy_v2');
    });
  }

  /** @internal True for a Stream this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Stream {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Stream', Stream);
  }

  /**
   * Adopts a `CUstream` created elsewhere (another library, or the special handles
   * `0n`/`CU_STREAM_LEGACY` (1n)/`CU_STREAM_PER_THREAD` (2n)). The handle is not destroyed on
   * dispose. The legacy NULL stream can run work but cannot be captured.
   *
   * The handle of a stream cudagraph created gives a Stream tied to it: it shares that stream's
   * capture state (work submitted through either is recorded by the same capture) and refuses use
   * (`DisposedError`) once that stream is disposed, whose handle the driver may then reuse.
   * @throws InvalidArgumentError unless `device` is a Device and `handle` a non-negative bigint, or
   *   when the handle is of a cudagraph stream of another device; DisposedError when it is the handle
   *   of a cudagraph stream already disposed.
   */
  static wrap(device: Device, handle: bigint): Stream {
    const op = 'Stream.wrap';
    requireInstance(op, 'device', device, brands.Device);
    if (typeof handle !== 'bigint' || handle < 0n || handle >= 1n << 64n) {
      throw new InvalidArgumentError(op, 'handle', `handle must be a bigint in 0..2^64-1, got ${describe(handle)}`);
    }
    const known = created.get(handle)?.stream.deref();
    if (known !== undefined) {
      if (known.disposed) throw new DisposedError(op, `${known}, whose handle this is,`);
      if (known.device !== device) {
        throw new InvalidArgumentError(op, 'device', `handle 0x${handle.toString(16)} is a stream of ${known.device}, not of ${device}`);
      }
      return new Stream(INTERNAL, device, known.priority, known.nonBlocking, handle, known);
    }
    return new Stream(INTERNAL, device, 0, false, handle);
  }

  /** The `CUstream` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    return this.handleFor('Stream.handle');
  }

  /** True after `dispose()` (for a wrap of a cudagraph stream: also once that stream is disposed). */
  get disposed(): boolean {
    return this[LIFETIME].disposed || (this.#origin !== null && this.#origin.disposed);
  }

  /** True for the legacy NULL stream (`0n` or `CU_STREAM_LEGACY`), which cannot be captured. */
  get isLegacyDefault(): boolean {
    return this.#handle === 0n || this.#handle === CU.STREAM_LEGACY;
  }

  /** True while a `StreamGraphCapture` records this stream's work (begun on it, or joined through an event). */
  get isCapturing(): boolean {
    return this.#cell.sink !== null;
  }

  /** @internal The capture this stream records into, or null (shared with every wrap of the handle). */
  get [CAPTURE](): CaptureSink | null {
    return this.#cell.sink;
  }

  set [CAPTURE](sink: CaptureSink | null) {
    this.#cell.sink = sink;
    // The hot calls remember the capture of the stream their checks passed with: check again.
    invalidateChecks();
  }

  /**
   * Blocks the JS thread until the stream's work is done (`cuStreamSynchronize`).
   * @throws HostCallbackError `ERR_HOST_CALL_PENDING` while a JS host call is in flight (waiting
   *   would deadlock: use `synchronizeAsync`); `ERR_HOST_CALLBACK_FAILED` when one threw.
   */
  synchronize(): void {
    const op = 'Stream.synchronize';
    const h = this.handleFor(op);
    st.streamSynchronize(op, h);
    surfaceHostCallbackErrors(op);
  }

  /**
   * Resolves when the work submitted to the stream before this call is done, without blocking the
   * event loop, so JS host functions in the work can run meanwhile. The wait costs about what a
   * blocking `synchronize()` costs (docs/driver.md, "Waiting without blocking"): an event recorded
   * here is polled by one completion thread for all waits of the process. Rejects with
   * `HostCallbackError` when a host function threw, `CudaError` when the work failed.
   * @throws InvalidArgumentError (as a rejection) while the stream is capturing: synchronizing
   *   would end the capture, so nothing is done.
   */
  synchronizeAsync(): Promise<void> {
    const op = 'Stream.synchronizeAsync';
    try {
      const h = this.waitableHandle(op);
      const ctx = this.device.context;
      makeCurrent(op, ctx);
      return wait.streamWaitAsync(op, ctx, h).then(() => surfaceHostCallbackErrors(op));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * @internal The handle for a wait made by `op` (`synchronizeAsync`, a `launchAndWait`), after the
   * disposed checks; refuses a capturing stream, which a wait would end (so a `launchAndWait`
   * checks it before it launches anything).
   */
  waitableHandle(op: string): bigint {
    const h = this.handleFor(op);
    if (this.#cell.sink !== null) {
      throw new InvalidArgumentError(op, 'stream', 'the stream is capturing: a wait cannot be captured (CUDA would end the capture); wait after the capture ends');
    }
    return h;
  }

  /** True when all submitted work is done, false while some is pending (`cuStreamQuery`). */
  query(): boolean {
    const op = 'Stream.query';
    return st.streamQuery(op, this.handleFor(op));
  }

  /**
   * Makes future work on this stream wait for the work before `event`'s last record. When the
   * event was recorded in a capturing stream, this stream joins that capture (as the driver does).
   * With `{ external: true }`, on a capturing stream, the capture gets an event wait node instead
   * (`CU_EVENT_WAIT_EXTERNAL`): every launch of the graph waits for the event's record made outside
   * it. The graph then holds the event.
   * @throws InvalidArgumentError for `external` outside a capture (CUDA refuses it there).
   */
  wait(event: Event, options?: { external?: boolean }): this {
    const op = 'Stream.wait';
    const h = this.handleFor(op);
    requireInstance(op, 'event', event, brands.Event);
    const o = requireOptions<{ external: boolean }>(op, options, ['external']);
    const external = o.external === undefined ? false : requireBoolean(op, 'external', o.external);
    if (external) {
      const sink = this.#cell.sink;
      if (sink === null) throw new InvalidArgumentError(op, 'options', 'external waits are for a capturing stream (an event wait node); outside a capture, wait without it');
      st.streamWaitEvent(op, h, event.handleFor(op), CU_EVENT_EXTERNAL.WAIT);
      sink.retain(event[LIFETIME]);
      return this;
    }
    st.streamWaitEvent(op, h, event.handleFor(op));
    const sink = event[RECORDED_IN];
    if (sink !== null && this.#cell.sink === null) sink.join(this);
    return this;
  }

  /**
   * Records `event` (or a new event, returned) at the current end of this stream's work.
   * @throws InvalidArgumentError if `event` is not an Event of the same device.
   */
  record(event?: Event, options?: { external?: boolean }): Event {
    const op = 'Stream.record';
    this.handleFor(op);
    if (event !== undefined) requireInstance(op, 'event', event, brands.Event);
    // Checked before an event is made for the call, so a refusal leaves nothing behind.
    const o = requireOptions<{ external: boolean }>(op, options, ['external']);
    const external = o.external === undefined ? false : requireBoolean(op, 'external', o.external);
    if (external && this.#cell.sink === null) {
      throw new InvalidArgumentError(op, 'options', 'external records are for a capturing stream (an event record node); outside a capture, record without it');
    }
    const e = event ?? this.device.createEvent();
    e.record(this, options);
    return e;
  }

  /**
   * A condition for a conditional node of the graph this stream's capture records into
   * (`graph.conditionalHandle` of `capture.graph`); pass it to `captureWhile` / `captureIf` /
   * `captureSwitch` and to the kernels that set it (`handle.arg()`).
   * @throws InvalidArgumentError when the stream is not capturing.
   */
  conditionalHandle(options?: { default?: number; assignDefault?: boolean }): ConditionalHandle {
    return conditionalCall('Stream.conditionalHandle').handle('Stream.conditionalHandle', this, options);
  }

  /**
   * During a capture: adds a WHILE node after the work captured so far on this stream, and
   * captures `body(s)` into its body, on the stream `s` it is given (launch the body's work on
   * `s`, not on this stream). The body runs again and again on the GPU while `handle`'s condition
   * is non-zero (tested before each run); a kernel in it sets the condition for the next round
   * (`cudaGraphSetConditional`, `CONDITIONAL_DEVICE_API`). Work captured on this stream afterwards
   * runs after the loop. Bodies nest (`s.captureWhile(…)` inside a body).
   * @throws InvalidArgumentError when the stream is not capturing, for a handle of another graph
   *   or one that serves a node already; the body's own error, unchanged (the outer capture then
   *   fails when it ends, naming this call).
   */
  captureWhile<R>(handle: ConditionalHandle, body: (stream: Stream) => R & NotAPromise<R>): ConditionalNode {
    const op = 'Stream.captureWhile';
    return conditionalCall(op).conditional(op, this, 'while', handle, [body], 1);
  }

  /**
   * During a capture: adds an IF node and captures `then(s)` into the body that runs when
   * `handle`'s condition is non-zero and, when given, `otherwise(s)` into the one that runs when
   * it is zero. As `captureWhile` for the rest.
   */
  captureIf<R, E>(handle: ConditionalHandle, then: (stream: Stream) => R & NotAPromise<R>, otherwise?: (stream: Stream) => E & NotAPromise<E>): ConditionalNode {
    const op = 'Stream.captureIf';
    const bodies = otherwise === undefined ? [then] : [then, otherwise];
    return conditionalCall(op).conditional(op, this, 'if', handle, bodies, bodies.length);
  }

  /**
   * During a capture: adds a SWITCH node and captures `cases[v](s)` into the body that runs when
   * `handle`'s condition is `v` (none runs when it is `cases.length` or more). As `captureWhile`
   * for the rest.
   */
  captureSwitch(handle: ConditionalHandle, cases: ReadonlyArray<(stream: Stream) => void>): ConditionalNode {
    const op = 'Stream.captureSwitch';
    if (!Array.isArray(cases) || cases.length === 0) throw new InvalidArgumentError(op, 'cases', `cases must be a non-empty array of functions (stream) => void, got ${describe(cases)}`);
    return conditionalCall(op).conditional(op, this, 'switch', handle, cases, cases.length);
  }

  /**
   * A new stream that starts after this stream's work so far (fork). During a capture the new
   * stream joins it, so its work is captured as a parallel branch; `join` it back before `end()`.
   * The caller owns the new stream: dispose it when done (after the join, for a capture), or
   * declare it with `using`.
   */
  fork(options?: StreamOptions): Stream {
    const op = 'Stream.fork';
    this.handleFor(op);
    const child = this.device.createStream(options ?? { priority: this.priority, nonBlocking: this.nonBlocking });
    child.wait(this.#marker());
    return child;
  }

  /** Makes this stream wait for `other`'s work so far (join). @throws InvalidArgumentError for a non-Stream. */
  join(other: Stream): this {
    const op = 'Stream.join';
    this.handleFor(op);
    requireInstance(op, 'other', other, Stream);
    other.handleFor(op);
    return this.wait(other.#marker());
  }

  /**
   * A `LaunchSequence` of `launches`, all on this stream, in order: `seq.launch()` submits every
   * one with a single call into native code (the Node-API addon loops `cuLaunchKernel` in C), which
   * removes the per-call cost of crossing from JS when a program submits many launches. A launch
   * may appear more than once.
   * @throws InvalidArgumentError when `launches` is not an iterable of `PreparedLaunch` of this
   *   stream's device; DisposedError when this stream or a launch (or what it holds) is disposed.
   * @example
   * using seq = stream.sequence([matmul, bias, relu, matmul2]);
   * seq.launch();
   */
  sequence(launches: Iterable<PreparedLaunch>): LaunchSequence {
    const op = 'Stream.sequence';
    this.handleFor(op);
    if (typeof launches !== 'object' || launches === null || typeof (launches as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') {
      throw new InvalidArgumentError(op, 'launches', `launches must be an iterable of PreparedLaunch, got ${describe(launches)}`);
    }
    const entries = Array.from(launches, (launch) => ({ launch, stream: this }));
    return new LaunchSequence(INTERNAL, op, entries);
  }

  /** Records this stream's reusable fork/join event and returns it. */
  #marker(): Event {
    if (this.#syncEvent === null || this.#syncEvent.disposed) this.#syncEvent = this.device.createEvent();
    return this.#syncEvent.record(this);
  }

  /**
   * @internal The handle without the disposed check or the surfacing of kept errors, for
   * cleanup paths (a stream's destroy is deferred while a capture is active, so the handle of a
   * stream disposed during a capture is still valid until the capture ends).
   */
  handleUnchecked(): bigint {
    return this.#handle;
  }

  /** @internal The handle for a driver call in `op`, after the disposed checks. */
  handleFor(op: string): bigint {
    this[LIFETIME].assertAlive(op);
    const origin = this.#origin;
    if (origin !== null && origin.disposed) throw new DisposedError(op, `${origin}, which this wrapped Stream shares,`);
    return this.#handle;
  }

  /**
   * Destroys the stream (pending work still completes). Idempotent; never throws (a failure is
   * reported by the next call). Deferred while a capture is active. A wrap only lets go of the
   * handle (it is not destroyed).
   */
  dispose(): void {
    this.#syncEvent?.dispose();
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `Stream(0x${this.#handle.toString(16)} on device ${this.device.ordinal})`;
  }
}
