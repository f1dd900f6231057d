/**
 * The raw NCCL declarations: one koffi prototype per C entry point, no policy, resolved lazily
 * like the driver's (`src/driver/sys.ts`, whose `LibrarySlot`/`LazyLibrary` this reuses). The only
 * file of the NCCL layer that touches koffi's untyped functions.
 *
 * The declarations (`NcclApi`, `NCCL_PROTOTYPES`) are generated from nccl.h (2.28) into
 * `api.generated.ts` by `scripts/gen-bindings.mjs`, from the list in `entry-points.txt`. NCCL has no
 * versioned symbols.
 * Conventions: `ncclResult_t` and the other C enums are `int`; `ncclComm_t` and `cudaStream_t`
 * are `void *` (a bigint handle); device buffers are `uint64_t` (the same 64-bit argument as
 * `void *` in the x86-64 and AArch64 C ABIs, as the driver binding passes `CUdeviceptr`);
 * `size_t` counts are JS numbers; `ncclUniqueId` is passed BY VALUE to `ncclCommInitRank`, so it
 * is declared as a 128-byte koffi struct.
 */
import type { WritableEnvironment } from '../util/environment.js';
import { koffi } from '../driver/koffi.js';
import { LibrarySlot, type LazyLibrary } from '../driver/sys.js';
import { describeAttempts, type LoadAttempt } from '../driver/loader.js';
import { NCCL_UNIQUE_ID_BYTES } from './codes.js';
import { NcclError } from './nccl-error.js';
import { ncclCandidates, NCCL_ADVICE } from './loader.js';
import { gate, passGate, type HostWait } from '../driver/host-gate.js';
// The declarations themselves are generated from nccl.h by scripts/gen-bindings.mjs, from the list
// in entry-points.txt beside this file.
import { NCCL_PROTOTYPES, type NcclApi, type NcclSymbol } from './api.generated.js';

export { NCCL_PROTOTYPES };
export type { NcclApi, NcclSymbol };

/** An opaque NCCL or CUDA handle (`ncclComm_t`, `cudaStream_t`): a bigint address, or null. */
export type NcclHandle = bigint | null;
/** Host memory NCCL writes into: a TypedArray/Buffer, a raw address, or null. */
export type NcclHostPtr = ArrayBufferView | bigint | null;
/** `ncclUniqueId` by value, as koffi takes it. */
export interface NcclUniqueIdStruct {
  internal: Uint8Array;
}

/** The koffi type name of `ncclUniqueId` (koffi's type names are process-wide: prefixed to stay apart). */
export const UNIQUE_ID_TYPE = 'cudagraph_ncclUniqueId';

/**
 * How each NCCL entry point behaves while a JS host function blocks a stream (driver/host-gate.ts):
 * creating and destroying communicators can wait for the GPU (NCCL allocates, synchronizes, and
 * `ncclCommDestroy` finalizes, flushing the communicator's operations), so they are `'gpu'`;
 * collectives and `ncclGroupEnd` enqueue kernels (`'queue'`); the rest are queries.
 */
export const NCCL_WAITS: { readonly [K in NcclSymbol]: HostWait } = {
  ncclGetVersion: 'none',
  ncclGetUniqueId: 'none',
  ncclCommInitRank: 'gpu',
  ncclCommInitAll: 'gpu',
  ncclCommDestroy: 'gpu',
  ncclCommAbort: 'gpu',
  ncclCommGetAsyncError: 'none',
  ncclCommCount: 'none',
  ncclCommCuDevice: 'none',
  ncclCommUserRank: 'none',
  ncclGetErrorString: 'none',
  ncclGetLastError: 'none',
  ncclGroupStart: 'none',
  ncclGroupEnd: 'queue',
  ncclAllReduce: 'queue',
  ncclBroadcast: 'queue',
  ncclReduce: 'queue',
  ncclAllGather: 'queue',
  ncclReduceScatter: 'queue',
};

let typesDefined = false;

/** Declares the `ncclUniqueId` struct with koffi once (before the first prototype that names it). */
function defineTypes(): void {
  if (typesDefined) return;
  const k = koffi();
  k.struct(UNIQUE_ID_TYPE, { internal: k.array('uint8_t', NCCL_UNIQUE_ID_BYTES, 'Typed') });
  typesDefined = true;
}

let explicitPath: string | undefined;

function loaderError(op: string, attempts: readonly LoadAttempt[], cause?: unknown): NcclError {
  return new NcclError({
    result: -1,
    code: 'NCCL_NOT_LOADED',
    operation: op,
    description: 'the NCCL library (libnccl.so.2) is not available',
    detail: describeAttempts('NCCL (libnccl)', attempts, NCCL_ADVICE),
    cause,
  });
}

const slot = new LibrarySlot(() => ncclCandidates(process.env, explicitPath), NCCL_PROTOTYPES, loaderError);

/**
 * NVLink SHARP (NVLS, NVLink multicast) is switched off in this process unless the program chose:
 * on a shared host, NCCL setting up NVLink multicast objects can take GPUs that other tenants use
 * out of service (the project's device machines forbid it), and its gain matters only for large
 * all-reduces on NVSwitch systems. NCCL reads its environment when it initialises (the first
 * `ncclGetUniqueId`/`ncclCommInit*`), so this runs before the library is even loaded; Node's
 * `process.env` writes reach the C environment (`setenv`), and child processes inherit it.
 */
export function ensureNcclEnvironment(env: WritableEnvironment = process.env): void {
  if (env['NCCL_NVLS_ENABLE'] === undefined) env['NCCL_NVLS_ENABLE'] = '0';
}

/** The loaded NCCL library, loading it on first use. @throws NcclError `NCCL_NOT_LOADED` listing every attempt. */
function nccl(op: string): LazyLibrary {
  if (slot.lib !== null) return slot.lib;
  ensureNcclEnvironment();
  try {
    defineTypes();
  } catch {
    // koffi itself is missing: the slot reports it as the first attempt.
  }
  return slot.get(op);
}

/**
 * Loads NCCL now, from `path` if given (a file, or a folder holding libnccl.so.2), tried before
 * `$NCCL_LIBRARY` and the usual places. Returns where it loaded from. Calling it again with the
 * same or no path is a no-op.
 * @throws NcclError `NCCL_NOT_LOADED` listing every path tried; InvalidUsage-style NcclError
 *   (`NCCL_ALREADY_LOADED`) when NCCL is already loaded from another file.
 */
export function loadNcclLibrary(op: string, path?: string): string {
  if (slot.lib !== null) {
    if (path !== undefined && path !== slot.lib.path && !slot.lib.path.startsWith(path)) {
      throw new NcclError({
        result: -1,
        code: 'NCCL_ALREADY_LOADED',
        operation: op,
        description: `NCCL is already loaded from ${slot.lib.path}; a process can load one NCCL`,
      });
    }
    return slot.lib.path;
  }
  if (path !== undefined) {
    explicitPath = path;
    slot.reset(); // an earlier failure did not try this path
  }
  return nccl(op).path;
}

/** Where NCCL was loaded from, or null when it is not loaded (yet, or at all). */
export function ncclLibraryPath(): string | null {
  return slot.lib?.path ?? null;
}

/** Whether NCCL loads here (loads it on first call). Never throws. */
export function probeNccl(): { ok: true; path: string } | { ok: false; error: NcclError } {
  try {
    return { ok: true, path: nccl('probeNccl').path };
  } catch (e) {
    return { ok: false, error: e as NcclError };
  }
}

/**
 * The NCCL function `name`, resolved on first use.
 * While a JS host call is in flight, the call passes the host-call gate first (`NCCL_WAITS`).
 * @throws NcclError `NCCL_NOT_LOADED` when no library loads; `NCCL_SYMBOL_MISSING` naming the
 *   symbol when this NCCL lacks it (an older release); HostCallbackError `ERR_HOST_CALL_PENDING`.
 */
export function ncclSymbol<K extends NcclSymbol>(op: string, name: K): NcclApi[K] {
  if (gate.calls !== 0) passGate(op, name, NCCL_WAITS[name]);
  const lib = nccl(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') {
    throw new NcclError({
      result: -1,
      code: 'NCCL_SYMBOL_MISSING',
      operation: op,
      ncclCall: name,
      description: `the symbol ${name} is missing from ${lib.path}: this NCCL predates the call; use a newer NCCL (${fn})`,
    });
  }
  return fn as unknown as NcclApi[K];
}

/** Whether the loaded NCCL exports `name` (false when NCCL does not load). */
export function hasNcclSymbol(name: NcclSymbol): boolean {
  try {
    return typeof nccl('hasNcclSymbol').resolve(name) !== 'string';
  } catch {
    return false;
  }
}

/**
 * Test hook: forget the loaded NCCL and any explicit path, so the next call loads again (reading
 * `$NCCL_LIBRARY` anew). @internal
 */
export function resetNcclForTesting(): void {
  slot.reset();
  explicitPath = undefined;
}
