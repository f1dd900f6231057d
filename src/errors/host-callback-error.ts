import { CudagraphError } from './base.js';

/** The codes of `HostCallbackError`. */
export type HostCallbackErrorCode = 'ERR_HOST_CALLBACK_FAILED' | 'ERR_HOST_CALL_PENDING';

/** Facts about an `ERR_HOST_CALL_PENDING` refusal, for programs. */
export interface HostCallPendingDetails {
  /** The driver entry point that was not called, e.g. `cuStreamSynchronize`. */
  readonly driverCall?: string;
  /** Operations submitted since the first host call in flight (queue refusals). */
  readonly queued?: number;
  /** How many may be submitted while a host call is in flight (queue refusals). */
  readonly limit?: number;
  /** Bytes copied from pageable memory since the first host call in flight (staging refusals). */
  readonly staged?: number;
  /** How many bytes may be copied from pageable memory meanwhile (staging refusals). */
  readonly stagedLimit?: number;
}

/**
 * A JS host function (a `HostFunction` launched on a stream, or a host node of a graph) and the
 * JS thread got in each other's way:
 *
 * - `ERR_HOST_CALLBACK_FAILED`: the function threw while the GPU ran it. The driver cannot be told
 *   (a host function returns nothing), so the error is kept and thrown by the next checked call, or
 *   by the `synchronizeAsync()` promise that waited for it. `cause` is the first error thrown;
 *   `errors` holds every one kept since the last report.
 * - `ERR_HOST_CALL_PENDING`: a call was refused, changing nothing, because a JS host call is in
 *   flight (submitted and not yet run, or running now): the driver thread running a host function
 *   waits for the JS thread, so a driver call that waits for the GPU (a synchronous wait, loading
 *   a module, a synchronous or pageable copy) would never return, and neither would an enqueue
 *   once the driver's queue behind the host function is full. `details.driverCall` names the
 *   driver call. Await `synchronizeAsync()` first (frees are not refused: they are deferred).
 */
export class HostCallbackError extends CudagraphError {
  readonly code: HostCallbackErrorCode;
  /** The operation that reported it, e.g. `Stream.synchronizeAsync`. */
  readonly operation: string;
  /** Every error the host functions threw since the last report (empty for `ERR_HOST_CALL_PENDING`). */
  readonly errors: readonly unknown[];
  /** Facts about an `ERR_HOST_CALL_PENDING` refusal (empty for `ERR_HOST_CALLBACK_FAILED`). */
  readonly details: HostCallPendingDetails;

  constructor(
    operation: string,
    code: HostCallbackErrorCode,
    message: string,
    errors: readonly unknown[] = [],
    details: HostCallPendingDetails = {},
  ) {
    super(`${operation}: ${message}`, errors.length > 0 ? { cause: errors[0] } : undefined);
    this.code = code;
    this.operation = operation;
    this.errors = errors;
    this.details = Object.freeze({ ...details });
  }
}
