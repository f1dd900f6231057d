import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { requireInstance, requireOptions, requireBoolean } from '../../util/validate.js';
import { event as ev, wait } from '../../driver/result/index.js';
import { CU, CU_EVENT_EXTERNAL } from '../../driver/layouts.js';
import { INTERNAL, CAPTURE, RECORDED_IN, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure } from '../core/lifetime.js';
import type { CaptureSink } from '../core/capture-hooks.js';
import { surfaceHostCallbackErrors } from '../host/host-calls.js';
import type { Device } from './device.js';
import type { Stream } from './stream.js';
import { brands, registerBrand } from '../core/brands.js';

/** Options of `device.createEvent`. */
export interface EventOptions {
  /** Record timestamps so `elapsedMs` works. Default false (recording is cheaper without). */
  readonly timing?: boolean;
}

/**
 * A CUDA event: a marker in a stream's work, for cross-stream ordering (`stream.wait(event)`),
 * completion checks and timing.
 *
 * @example
 * const start = device.createEvent({ timing: true }).record(s);
 * … work on s …
 * const stop = device.createEvent({ timing: true }).record(s);
 * stop.synchronize();
 * console.log(stop.elapsedMs(start));
 */
export class Event {
  /** The device whose context owns the event. */
  readonly device: Device;
  /** Whether the event records timestamps. */
  readonly timing: boolean;
  /** @internal The capture active on the stream of the last record, or null. */
  [RECORDED_IN]: CaptureSink | null = null;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;

  /** @internal Use `device.createEvent()`. */
  constructor(key: typeof INTERNAL, device: Device, options?: EventOptions) {
    if (key !== INTERNAL) throw privateConstructorError('Event', 'device.createEvent()');
    const op = 'Device.createEvent';
    const o = requireOptions<EventOptions>(op, options, ['timing']);
    this.timing = o.timing === undefined ? false : requireBoolean(op, 'timing', o.timing);
    this.device = device;
    makeCurrent(op, device.context);
    const handle = ev.eventCreate(op, this.timing ? 0 : CU.EVENT_DISABLE_TIMING);
    this.#handle = handle;
    this[LIFETIME] = new Lifetime(`Event 0x${handle.toString(16)}`, this, () =>
      keepFailure(ev.eventDestroy('Event.dispose', handle), 'Event.dispose', 'cuEventDestroy_v2'),
    );
  }

  /** @internal True for an Event this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Event {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Event', Event);
  }

  /** The `CUevent` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    return this.handleFor('Event.handle');
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /** @internal */
  handleFor(op: string): bigint {
    this[LIFETIME].assertAlive(op);
    return this.#handle;
  }

  /**
   * Records the event at the current end of `stream`'s work; returns the event. With
   * `{ external: true }`, on a capturing stream, the capture gets an event record node instead
   * (`cuEventRecordWithFlags` with `CU_EVENT_RECORD_EXTERNAL`): every launch of the graph records
   * the event, for work outside the graph to wait on. The graph then holds the event.
   * @throws InvalidArgumentError for `external` outside a capture (CUDA refuses it there).
   */
  record(stream: Stream, options?: { external?: boolean }): this {
    const op = 'Event.record';
    this[LIFETIME].assertAlive(op);
    requireInstance(op, 'stream', stream, brands.Stream);
    const o = requireOptions<{ external: boolean }>(op, options, ['external']);
    const external = o.external === undefined ? false : requireBoolean(op, 'external', o.external);
    const h = stream.handleFor(op);
    const sink = stream[CAPTURE];
    if (!external) {
      ev.eventRecord(op, this.#handle, h);
      this[RECORDED_IN] = sink;
      return this;
    }
    if (sink === null) throw new InvalidArgumentError(op, 'options', 'external records are for a capturing stream (an event record node); outside a capture, record without it');
    ev.eventRecordWithFlags(op, this.#handle, h, CU_EVENT_EXTERNAL.RECORD);
    sink.retain(this[LIFETIME]);
    return this;
  }

  /** True when the work before the last record is done (`cuEventQuery`). */
  query(): boolean {
    const op = 'Event.query';
    this[LIFETIME].assertAlive(op);
    return ev.eventQuery(op, this.#handle);
  }

  /**
   * Blocks until the work before the last record is done (`cuEventSynchronize`).
   * @throws HostCallbackError `ERR_HOST_CALL_PENDING` while a JS host call is in flight (use `synchronizeAsync`).
   */
  synchronize(): void {
    const op = 'Event.synchronize';
    this[LIFETIME].assertAlive(op);
    ev.eventSynchronize(op, this.#handle);
    surfaceHostCallbackErrors(op);
  }

  /**
   * Resolves when the work before the last record is done, without blocking the event loop (the
   * same completion thread as `Stream.synchronizeAsync`). Rejects with `HostCallbackError` when a
   * host function threw, `CudaError` when the work failed.
   */
  synchronizeAsync(): Promise<void> {
    const op = 'Event.synchronizeAsync';
    try {
      const life = this[LIFETIME];
      life.assertAlive(op);
      const waiting = wait.eventWaitAsync(op, this.device.context, this.#handle);
      // The completion thread queries the handle until the wait ends: a dispose meanwhile waits for it.
      life.retain();
      return waiting.finally(() => life.release()).then(() => surfaceHostCallbackErrors(op));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Milliseconds from `since`'s record to this event's record (both complete, both timing events).
   * @throws InvalidArgumentError when either event was created without `timing: true`.
   */
  elapsedMs(since: Event): number {
    const op = 'Event.elapsedMs';
    this[LIFETIME].assertAlive(op);
    requireInstance(op, 'since', since, Event);
    if (!this.timing || !since.timing) {
      throw new InvalidArgumentError(op, 'since', 'both events must be created with { timing: true }');
    }
    return ev.eventElapsedTime(op, since.handleFor(op), this.#handle);
  }

  /** Destroys the event. Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
