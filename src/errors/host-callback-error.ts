import { CudagraphError } from './base.js';

/** The codes of `HostCallbackError`. */
export type HostCallbackErrorCode = 'ERR_HOST_CALLBACK_FAILED' | 'ERR_HOST_CALL_PENDING';

/**
 * A JS host function (a `HostFunction` launched on a stream, or a host node of a graph) and the
 * JS thread got in each other's way:
 *
 * - `ERR_HOST_CALLBACK_FAILED`: the function threw while the GPU ran it. The driver cannot be told
 *   (a host function returns nothing), so the error is kept and thrown by the next checked call, or
 *   by the `synchronizeAsync()` promise that waited for it. `cause` is the first error thrown;
 *   `errors` holds every one kept since the last report.
 * - `ERR_HOST_CALL_PENDING`: a synchronous wait (`stream.synchronize()`, `event.synchronize()`,
 *   `device.synchronize()`) was refused because JS host calls are still pending: the driver thread
 *   running a host function waits for the JS thread, so blocking the JS thread until the GPU is
 *   done would never return. Await `synchronizeAsync()` instead.
 */
export class HostCallbackError extends CudagraphError {
  readonly code: HostCallbackErrorCode;
  /** The operation that reported it, e.g. `Stream.synchronizeAsync`. */
  readonly operation: string;
  /** Every error the host functions threw since the last report (empty for `ERR_HOST_CALL_PENDING`). */
  readonly errors: readonly unknown[];

  constructor(operation: string, code: HostCallbackErrorCode, message: string, errors: readonly unknown[] = []) {
    super(`${operation}: ${message}`, errors.length > 0 ? { cause: errors[0] } : undefined);
    this.code = code;
    this.operation = operation;
    this.errors = errors;
  }
}
