/**
 * NCCL's C enums and sizes, as numbers, with the string names the API uses.
 *
 * Source of every value (nccl.h is not installed on the build machine): NVIDIA/nccl,
 * `src/nccl.h.in` at commit 021e8045ff77a8a9fba909617a0129d3c3d44def (the template nccl.h is made
 * from), read through the project's code search:
 * - `ncclResult_t`: `ncclSuccess = 0` … `ncclTimeout = 8`, `ncclNumResults = 9`;
 * - `ncclRedOp_t`: `ncclSum = 0`, `ncclProd = 1`, `ncclMax = 2`, `ncclMin = 3`, `ncclAvg = 4`;
 * - `ncclDataType_t`: `ncclInt8 = 0` … `ncclFloat64 = 8`, `ncclBfloat16 = 9`,
 *   `ncclFloat8e4m3 = 10`, `ncclFloat8e5m2 = 11`;
 * - `#define NCCL_UNIQUE_ID_BYTES 128` (`typedef struct { char internal[128]; } ncclUniqueId`);
 * - `NCCL_VERSION(X,Y,Z)`: `X*1000+Y*100+Z` up to 2.8, `X*10000+Y*100+Z` from 2.9 on.
 * Versions that introduced values (NCCL release notes, the same header's history): `ncclAvg` and
 * `ncclBfloat16` in 2.10, `ncclRemoteError` and `ncclGetLastError` in 2.13, `ncclInProgress` in
 * 2.14, `ncclTimeout` later (2.2x), the FP8 types in 2.24.
 */
import type { ElementType, ReduceOp } from '../model/element-type.js';
import { requireInt } from '../util/validate.js';

/** `NCCL_UNIQUE_ID_BYTES`: the size of `ncclUniqueId`. */
export const NCCL_UNIQUE_ID_BYTES = 128;

/** `ncclResult_t`: name → number (nccl.h.in, see the file comment). */
export const NcclResult = Object.freeze({
  ncclSuccess: 0,
  ncclUnhandledCudaError: 1,
  ncclSystemError: 2,
  ncclInternalError: 3,
  ncclInvalidArgument: 4,
  ncclInvalidUsage: 5,
  ncclRemoteError: 6,
  ncclInProgress: 7,
  ncclTimeout: 8,
} as const);

/** A `ncclResult_t` constant name. */
export type NcclResultName = keyof typeof NcclResult;

/**
 * What each result means, for messages when the library cannot say itself (no library loaded):
 * the text of NCCL's own `ncclGetErrorString` (NVIDIA/nccl `src/init.cc`), except `ncclTimeout`,
 * whose text there was not seen.
 */
const RESULT_TEXT: readonly string[] = [
  'no error',
  'unhandled cuda error (run with NCCL_DEBUG=INFO for details)',
  'unhandled system error (run with NCCL_DEBUG=INFO for details)',
  'internal error - please report this issue to the NCCL developers',
  'invalid argument (run with NCCL_DEBUG=WARN for details)',
  'invalid usage (run with NCCL_DEBUG=WARN for details)',
  'remote process exited or there was a network error',
  'NCCL operation in progress',
  'NCCL operation timed out',
];

const RESULT_NAMES = Object.keys(NcclResult) as NcclResultName[];

/** The constant name of a `ncclResult_t`, e.g. `ncclResultName(1) === 'ncclUnhandledCudaError'`. */
export function ncclResultName(code: number): string {
  return Number.isInteger(code) && code >= 0 && code < RESULT_NAMES.length
    ? RESULT_NAMES[code]!
    : `ncclUnknownResult(${code})`;
}

/** The header-derived description of a `ncclResult_t` (used when the library gives none). */
export function ncclResultDescription(code: number): string {
  return RESULT_TEXT[code] ?? `ncclResult_t ${code} is not defined by the nccl.h this package was written from`;
}

/** Each data type: its `ncclDataType_t` value, its size in bytes, and the NCCL version that has it. */
export const NCCL_DATA_TYPES: { readonly [K in ElementType]: { readonly code: number; readonly bytes: number; readonly since: number } } =
  Object.freeze({
    i8: { code: 0, bytes: 1, since: 0 }, // ncclInt8
    u8: { code: 1, bytes: 1, since: 0 }, // ncclUint8
    i32: { code: 2, bytes: 4, since: 0 }, // ncclInt32
    u32: { code: 3, bytes: 4, since: 0 }, // ncclUint32
    i64: { code: 4, bytes: 8, since: 0 }, // ncclInt64
    u64: { code: 5, bytes: 8, since: 0 }, // ncclUint64
    f16: { code: 6, bytes: 2, since: 0 }, // ncclFloat16
    f32: { code: 7, bytes: 4, since: 0 }, // ncclFloat32
    f64: { code: 8, bytes: 8, since: 0 }, // ncclFloat64
    bf16: { code: 9, bytes: 2, since: 21000 }, // ncclBfloat16, NCCL 2.10
  });

/** Each reduction: its `ncclRedOp_t` value and the NCCL version that has it. */
export const NCCL_RED_OPS: { readonly [K in ReduceOp]: { readonly code: number; readonly since: number } } = Object.freeze({
  sum: { code: 0, since: 0 }, // ncclSum
  prod: { code: 1, since: 0 }, // ncclProd
  max: { code: 2, since: 0 }, // ncclMax
  min: { code: 3, since: 0 }, // ncclMin
  avg: { code: 4, since: 21000 }, // ncclAvg, NCCL 2.10
});

/**
 * Decodes `ncclGetVersion`'s integer: `X*10000+Y*100+Z` from 2.9 on, `X*1000+Y*100+Z` before
 * (the header's `NCCL_VERSION` macro).
 * @throws InvalidArgumentError unless `code` is an integer in 0..2^31−1 (an `int`, as NCCL gives it).
 */
export function decodeNcclVersion(code: number): { major: number; minor: number; patch: number } {
  requireInt('decodeNcclVersion', 'code', code, 0, 0x7fff_ffff);
  if (code >= 10000) return { major: Math.floor(code / 10000), minor: Math.floor((code % 10000) / 100), patch: code % 100 };
  return { major: Math.floor(code / 1000), minor: Math.floor((code % 1000) / 100), patch: code % 100 };
}

/** The version code of `major.minor.patch`, as `NCCL_VERSION` computes it. */
export function ncclVersionCode(major: number, minor: number, patch: number): number {
  return major <= 2 && minor <= 8 ? major * 1000 + minor * 100 + patch : major * 10000 + minor * 100 + patch;
}

/** The first NCCL whose collectives can be captured in a CUDA graph (2.9). */
export const NCCL_MIN_CAPTURE_VERSION = 20900;
