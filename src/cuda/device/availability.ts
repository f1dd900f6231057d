import { init } from '../../driver/result/index.js';
import type { CudaError } from '../../errors/cuda-error.js';

/**
 * Whether a CUDA driver library loads on this machine (loads it on first call; never throws).
 * `{ ok: false, error }` carries the `CudaError` every driver call would throw, whose message
 * lists the paths tried.
 *
 * @example
 * const d = driverAvailable();
 * if (!d.ok) console.warn(d.error.message);
 */
export function driverAvailable(): { ok: true; path: string } | { ok: false; error: CudaError } {
  return init.probe('driverAvailable');
}
