import { CudagraphError } from './base.js';
import { CURESULT_TABLE, CUresult, type CUresultName } from './curesult-table.js';

export { CUresult, type CUresultName };

const byCode = new Map<number, readonly [name: string, description: string]>(
  CURESULT_TABLE.map(([name, code, description]) => [code, [name, description]] as const),
);

/**
 * The constant name of a CUresult, e.g. `cudaErrorName(901) === 'CUDA_ERROR_STREAM_CAPTURE_INVALIDATED'`.
 * A number cuda.h does not define gives `CUDA_ERROR_UNRECOGNIZED(<code>)` (a newer driver than the
 * table, or a corrupted value).
 */
export function cudaErrorName(code: number): string {
  return byCode.get(code)?.[0] ?? `CUDA_ERROR_UNRECOGNIZED(${code})`;
}

/** The description cuda.h gives for a CUresult, or a note that the code is unknown to it. */
export function cudaErrorDescription(code: number): string {
  return byCode.get(code)?.[1] ?? `CUresult ${code} is not defined by the cuda.h this package was built from`;
}

/** Extra facts about a failure, for programs (the message already says them in words). */
export type CudaErrorDetails = Readonly<Record<string, string | number | bigint | boolean | null>>;

/** What a `CudaError` is made from. */
export interface CudaErrorInit {
  /** The CUresult number. */
  readonly code: number;
  /** The public operation that failed, e.g. `Stream.synchronize`. */
  readonly operation: string;
  /** The driver entry point that returned the code, e.g. `cuStreamSynchronize`, when there was one. */
  readonly driverCall?: string;
  /** The driver's own text for the code (`cuGetErrorString`); the header's is used when absent. */
  readonly description?: string;
  /** What the library knows beyond the code: which call invalidated a capture, which paths were tried. */
  readonly detail?: string;
  /** Facts for programs, e.g. `{ reason: 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED', node: 3 }`. */
  readonly details?: CudaErrorDetails;
  readonly cause?: unknown;
}

/**
 * A failure reported by the CUDA driver (or by the loader, before there is a driver): `code` is the
 * CUresult number, `errorName` its cuda.h constant and `description` the driver's text.
 *
 * The message reads `${operation}: ${errorName} (${code}): ${description}`, followed by what the
 * library knows beyond the code (for a capture invalidated earlier: the first illegal call and
 * its JS stack).
 *
 * @example
 * try { Device.count(); }
 * catch (e) { if (e instanceof CudaError && e.code === CUresult.CUDA_ERROR_NOT_INITIALIZED) … }
 */
export class CudaError extends CudagraphError {
  /** The CUresult number, e.g. 901. */
  readonly code: number;
  /** The cuda.h constant, e.g. `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`. */
  readonly errorName: string;
  /** The driver's description of the code (the header's when no driver answered). */
  readonly description: string;
  /** The public operation that failed, e.g. `StreamGraphCapture.end`. */
  readonly operation: string;
  /** The driver entry point that returned the code, e.g. `cuStreamEndCapture`; undefined for loader errors. */
  readonly driverCall: string | undefined;
  /** Facts for programs; empty when there are none. */
  readonly details: CudaErrorDetails;

  constructor(init: CudaErrorInit) {
    const errorName = cudaErrorName(init.code);
    const description = init.description ?? cudaErrorDescription(init.code);
    const call = init.driverCall !== undefined && init.driverCall !== init.operation ? ` [${init.driverCall}]` : '';
    const detail = init.detail ? `\n${init.detail}` : '';
    super(`${init.operation}: ${errorName} (${init.code}): ${description}${call}${detail}`, { cause: init.cause });
    this.code = init.code;
    this.errorName = errorName;
    this.description = description;
    this.operation = init.operation;
    this.driverCall = init.driverCall;
    this.details = Object.freeze({ ...(init.details ?? {}) });
  }
}

/** True for the stream-capture CUresults 900–908 (unsupported, invalidated, merge, … wrong thread). */
export function isCaptureErrorCode(code: number): boolean {
  return code >= 900 && code <= 908;
}

/**
 * A failure of NVRTC, the run-time CUDA C++ compiler: the library could not be loaded, or the
 * source did not compile. `log` holds the compiler's log (empty when there is none); `code` is the
 * nvrtcResult name (`NVRTC_ERROR_COMPILATION`) or `NVRTC_NOT_LOADED` when the library was not found.
 */
export class NvrtcError extends CudagraphError {
  /** `NVRTC_ERROR_COMPILATION`, `NVRTC_ERROR_INVALID_OPTION`, … or `NVRTC_NOT_LOADED`. */
  readonly code: string;
  /** The nvrtcResult number; -1 when the library could not be loaded. */
  readonly result: number;
  /** The operation that failed, e.g. `Module.compile`. */
  readonly operation: string;
  /** The compiler's log (warnings and errors with line numbers); empty when there is none. */
  readonly log: string;

  constructor(operation: string, code: string, result: number, message: string, log = '', options?: { cause?: unknown }) {
    super(`${operation}: ${code}${result >= 0 ? ` (${result})` : ''}: ${message}${log ? `\n${log.trimEnd()}` : ''}`, options);
    this.operation = operation;
    this.code = code;
    this.result = result;
    this.log = log;
  }
}
