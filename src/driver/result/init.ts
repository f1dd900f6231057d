/** Driver initialisation and version (`cuInit`, `cuDriverGetVersion`). */
import { driverSymbol, probeDriver, driverLibraryPath } from '../sys.js';
import type { CudaError } from '../../errors/cuda-error.js';
import { cudaError } from './check.js';
import { i32 } from './scratch.js';

let initialised = false;
let version: number | null = null;

/** The CUDA version the driver supports, e.g. 13000 for 13.0 (`cuDriverGetVersion`; needs no `cuInit`). */
export function driverVersion(op: string): number {
  if (version !== null) return version;
  const rc = driverSymbol(op, 'cuDriverGetVersion')(i32);
  if (rc !== 0) throw cudaError(rc, op, 'cuDriverGetVersion');
  version = i32[0]!;
  return version;
}

/**
 * Whether a driver library loads (loads it on first call; never throws): `{ ok: false, error }`
 * carries the error every driver call would throw, its message starting with `op`.
 */
export function probe(op: string): { ok: true; path: string } | { ok: false; error: CudaError } {
  return probeDriver(op);
}

/** True once the driver library is loaded. */
export function driverLoaded(): boolean {
  return driverLibraryPath() !== null;
}

/** Initialises the driver once per process (`cuInit(0)`); a failure is thrown again on every call. */
export function init(op: string): void {
  if (initialised) return;
  const rc = driverSymbol(op, 'cuInit')(0);
  if (rc !== 0) throw cudaError(rc, op, 'cuInit');
  initialised = true;
}
