/**
 * Kernel launch (`cuLaunchKernel`): the hot path. The symbol is resolved once and kept here; the
 * caller passes an argument block it packed once (an array of pointers to argument slots).
 */
import { driverSymbol, type DriverApi } from '../sys.js';
import { cudaError } from '../check.js';

let cuLaunchKernel: DriverApi['cuLaunchKernel'] | null = null;

/** Launches `fn` on `stream` with the packed parameter array at address `params`. */
export function launchKernel(
  op: string,
  fn: bigint,
  gridX: number,
  gridY: number,
  gridZ: number,
  blockX: number,
  blockY: number,
  blockZ: number,
  sharedMem: number,
  stream: bigint,
  params: bigint,
): void {
  const rc = (cuLaunchKernel ??= driverSymbol(op, 'cuLaunchKernel'))(
    fn,
    gridX,
    gridY,
    gridZ,
    blockX,
    blockY,
    blockZ,
    sharedMem,
    stream,
    params,
    null,
  );
  if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
}
