import { requireName, requireOptions } from '../util/validate.js';
import { decodeNcclVersion } from './codes.js';
import { getVersion } from './result.js';
import { loadNcclLibrary, ncclLibraryPath, probeNccl } from './sys.js';
import type { NcclError } from './nccl-error.js';

let cached: number | null = null;

/** @internal The loaded NCCL's version code, read once (`ncclGetVersion`). */
export function ncclVersion(op: string): number {
  if (cached === null) cached = getVersion(op);
  return cached;
}

/** @internal Forget the cached version (tests that load another library). */
export function forgetNcclVersion(): void {
  cached = null;
}

/** Which NCCL cudagraph uses. */
export interface NcclInfo {
  /** The file it was loaded from. */
  readonly path: string;
  /** `ncclGetVersion`'s code, e.g. 22703. */
  readonly code: number;
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** `2.27.3`. */
  readonly version: string;
}

/** Options of `loadNccl`. */
export interface LoadNcclOptions {
  /** libnccl.so.2 (or its folder), tried before `$NCCL_LIBRARY` and the usual places. */
  readonly path?: string;
}

/**
 * Loads NCCL now (otherwise the first NCCL call does) and says which one: from `path` if given,
 * else `$NCCL_LIBRARY`, the dynamic loader, pip's `nvidia/nccl/lib` in Python site-packages, the
 * system folders. Also sets `NCCL_NVLS_ENABLE=0` in the environment unless it is set (see
 * docs/nccl.md: NVLink multicast can take a shared host's GPUs out of service).
 * @throws NcclError `NCCL_NOT_LOADED` listing every path tried; `NCCL_ALREADY_LOADED` when another
 *   file is already loaded; InvalidArgumentError for bad options.
 *
 * @example
 * const nccl = loadNccl();                       // or loadNccl({ path: '/opt/nccl/lib' })
 * console.log(nccl.version, nccl.path);
 */
export function loadNccl(options?: LoadNcclOptions): NcclInfo {
  const op = 'loadNccl';
  const o = requireOptions<LoadNcclOptions>(op, options, ['path']);
  const path = o.path === undefined ? undefined : requireName(op, 'path', o.path);
  const loadedFrom = loadNcclLibrary(op, path);
  const code = ncclVersion(op);
  const v = decodeNcclVersion(code);
  return Object.freeze({ path: loadedFrom, code, ...v, version: `${v.major}.${v.minor}.${v.patch}` });
}

/** Where NCCL was loaded from, or null when it is not (yet) loaded. */
export function ncclPath(): string | null {
  return ncclLibraryPath();
}

/**
 * Whether NCCL loads here (loads it on first call; never throws). `{ ok: false, error }` carries
 * the `NcclError` every NCCL call would throw, whose message lists the paths tried.
 */
export function ncclAvailable(): { ok: true; path: string } | { ok: false; error: NcclError } {
  return probeNccl();
}
