import { CudagraphError } from '../errors/base.js';
import { ncclResultDescription, ncclResultName } from './codes.js';

/** What an `NcclError` is made from. */
export interface NcclErrorInit {
  /** The `ncclResult_t` number; -1 when there is no result (the library did not load, a symbol is missing). */
  readonly result: number;
  /** The public operation that failed, e.g. `NcclComm.allReduce`. */
  readonly operation: string;
  /** The NCCL entry point that returned the result, e.g. `ncclAllReduce`. */
  readonly ncclCall?: string;
  /** `ncclGetErrorString(result)`; the header's text when the library cannot say. */
  readonly description?: string;
  /** `ncclGetLastError(comm)`: NCCL's own message for the last failure on this thread; '' when none. */
  readonly lastError?: string;
  /** The code name when `result` is -1: `NCCL_NOT_LOADED` or `NCCL_SYMBOL_MISSING`. */
  readonly code?: string;
  /** What cudagraph knows beyond the code (the paths tried, the version found). */
  readonly detail?: string;
  readonly cause?: unknown;
}

/**
 * A failure reported by NCCL (or by its loader, before there is a library): `result` is the
 * `ncclResult_t` number, `code` its nccl.h name (`ncclUnhandledCudaError`, `ncclInvalidUsage`, …),
 * `description` NCCL's `ncclGetErrorString` and `lastError` its `ncclGetLastError` text (what NCCL
 * itself says went wrong, e.g. which argument). When the library could not be loaded, `code` is
 * `NCCL_NOT_LOADED` (`result` -1) and the message lists every path tried.
 *
 * The message reads `${operation}: ${code} (${result}): ${description} [${ncclCall}]`, then the
 * last-error text and the detail on their own lines.
 *
 * @example
 * try { comm.allReduce(s, { send, count, type: 'f32', op: 'sum' }); }
 * catch (e) { if (e instanceof NcclError && e.code === 'ncclUnhandledCudaError') … }
 */
export class NcclError extends CudagraphError {
  /** The nccl.h name of `result` (`ncclInvalidArgument`), or `NCCL_NOT_LOADED` / `NCCL_SYMBOL_MISSING`. */
  readonly code: string;
  /** The `ncclResult_t` number; -1 for loader failures. */
  readonly result: number;
  /** The public operation that failed. */
  readonly operation: string;
  /** The NCCL entry point, when there was one. */
  readonly ncclCall: string | undefined;
  /** NCCL's description of the result (`ncclGetErrorString`), or the header's. */
  readonly description: string;
  /** NCCL's last-error message (`ncclGetLastError`); '' when NCCL gave none. */
  readonly lastError: string;

  constructor(init: NcclErrorInit) {
    const code = init.code ?? ncclResultName(init.result);
    const description = init.description ?? (init.result >= 0 ? ncclResultDescription(init.result) : 'NCCL is not available');
    const call = init.ncclCall !== undefined ? ` [${init.ncclCall}]` : '';
    const last = init.lastError ? `\nNCCL says: ${init.lastError}` : '';
    const detail = init.detail ? `\n${init.detail}` : '';
    const num = init.result >= 0 ? ` (${init.result})` : '';
    super(`${init.operation}: ${code}${num}: ${description}${call}${last}${detail}`, { cause: init.cause });
    this.code = code;
    this.result = init.result;
    this.operation = init.operation;
    this.ncclCall = init.ncclCall;
    this.description = description;
    this.lastError = init.lastError ?? '';
  }
}
