/** Driver initialisation and version (`cuInit`, `cuDriverGetVersion`). */
import { driverSymbol } from '../sys.js';
import { cudaError } from '../check.js';
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

/** Initialises the driver once per process (`cuInit(0)`); a failure is thrown again on every call. */
export function init(op: string): void {
  if (initialised) return;
  const rc = driverSymbol(op, 'cuInit')(0);
  if (rc !== 0) throw cudaError(rc, op, 'cuInit');
  initialised = true;
}
