import { CudagraphError } from '../../errors/base.js';

/**
 * The codes of `CaptureStateError`:
 * - `ERR_GUARD_FINISHED`: the guard was already finished or disposed (`finish()` consumes it).
 * - `ERR_ASYNC_CAPTURE`: the function given to `captureGraph`/`makeGraphed` returned a Promise.
 * - `ERR_POOL_SEALED`: a sealed `CapturePool` was asked for a capture or an allocation.
 * - `ERR_CAPTURE_NOT_ACTIVE`: the stream left capture mode without the guard ending it.
 * - `ERR_POOL_SHARED`: `trim()` of a one-stream `CapturePool` whose live graphs use memory it gave back.
 */
export type CaptureStateErrorCode = 'ERR_GUARD_FINISHED' | 'ERR_ASYNC_CAPTURE' | 'ERR_POOL_SEALED' | 'ERR_CAPTURE_NOT_ACTIVE' | 'ERR_POOL_SHARED';

/**
 * A capture-layer object was used in a state that does not allow the call: a guard finished
 * twice, a sealed pool, a capture body that returned a Promise, a capture ended behind the
 * guard's back. The message starts with the operation and says what to do instead.
 *
 * @example
 * try { guard.finish(); } catch (e) { if (e instanceof CaptureStateError && e.code === 'ERR_GUARD_FINISHED') … }
 */
export class CaptureStateError extends CudagraphError {
  /** Which state refused the call. */
  readonly code: CaptureStateErrorCode;
  /** The operation refused, e.g. `GraphCaptureGuard.finish`. */
  readonly operation: string;

  constructor(operation: string, code: CaptureStateErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${operation}: ${message}`, options);
    this.operation = operation;
    this.code = code;
  }
}
