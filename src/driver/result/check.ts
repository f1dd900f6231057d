/**
 * Turns a CUresult into a thrown `CudaError`, with the driver's own description, and tells the
 * capture bookkeeping about stream-capture failures (900–908) so that a later
 * `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` can name the call that caused it.
 */
import { CudaError, isCaptureErrorCode, type CudaErrorDetails } from '../../errors/cuda-error.js';
import { driverSymbol, koffi } from '../sys.js';
import { forgetPendingHostCalls } from '../host-gate.js';

type CaptureErrorListener = (error: CudaError) => void;
let captureErrorListener: CaptureErrorListener | null = null;

/**
 * Installs the function told about every stream-capture error (900–908) this binding creates.
 * The object layer installs one; there is one listener at a time.
 */
export function setCaptureErrorListener(listener: CaptureErrorListener | null): void {
  captureErrorListener = listener;
}

const scratch = new BigUint64Array(1);

/**
 * The "sticky" errors: after one, the context is unusable and the driver runs none of the work
 * queued in it, host functions included (700 illegal address, 714 hardware stack error,
 * 715 illegal instruction, 716 misaligned address, 717 invalid address space, 718 invalid PC,
 * 719 launch failed).
 */
const STICKY = new Set([700, 714, 715, 716, 717, 718, 719]);

/** The driver's text for `code` (`cuGetErrorString`), or undefined when the driver cannot say. */
function driverDescription(code: number): string | undefined {
  try {
    const fn = driverSymbol('cuGetErrorString', 'cuGetErrorString');
    scratch[0] = 0n;
    if (fn(code, scratch) !== 0 || scratch[0] === 0n) return undefined;
    return koffi().decode.string(scratch[0]);
  } catch {
    return undefined;
  }
}

/**
 * The `CudaError` for a failed driver call. Capture errors (900–908) are reported to the capture
 * listener; the error's stack is the caller's, which is what the capture records.
 */
export function cudaError(
  code: number,
  operation: string,
  driverCall: string,
  detail?: string,
  details?: CudaErrorDetails,
  cause?: unknown,
): CudaError {
  const init = {
    code,
    operation,
    driverCall,
    ...(detail !== undefined ? { detail } : {}),
    ...(details !== undefined ? { details } : {}),
    ...(cause !== undefined ? { cause } : {}),
  };
  // Host calls that will never run must not keep the host-call gate closed for ever.
  if (STICKY.has(code)) forgetPendingHostCalls();
  const description = driverDescription(code);
  const error = new CudaError(description !== undefined ? { ...init, description } : init);
  if (isCaptureErrorCode(code) && captureErrorListener !== null) captureErrorListener(error);
  return error;
}

/** Throws the `CudaError` for `code` unless it is `CUDA_SUCCESS`. */
export function check(code: number, operation: string, driverCall: string, detail?: string): void {
  if (code !== 0) throw cudaError(code, operation, driverCall, detail);
}
