/**
 * Order statistics shared by the benchmarks: `npm run bench:gpu` (bench/gpu/stats.ts builds its
 * summaries on these) and `cudagraph bench`.
 */
import { InvalidArgumentError } from '../errors/base.js';

function requireSamples(op: string, xs: readonly number[]): void {
  if (!Array.isArray(xs) || xs.length === 0) {
    throw new InvalidArgumentError(op, 'samples', 'samples must be a non-empty array');
  }
  for (const x of xs) {
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      throw new InvalidArgumentError(op, 'samples', `every sample must be a finite number, got ${String(x)}`);
    }
  }
}

/**
 * The `p` quantile (0 ≤ p ≤ 1) by linear interpolation between order statistics (the common
 * "type 7" definition: numpy's default). Throws `InvalidArgumentError` on an empty array, a
 * non-finite sample or p outside 0..1.
 */
export function quantile(xs: readonly number[], p: number): number {
  requireSamples('quantile', xs);
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
    throw new InvalidArgumentError('quantile', 'p', `p must be in 0..1, got ${String(p)}`);
  }
  const s = [...xs].sort((a, b) => a - b);
  const h = (s.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return s[lo]! + (s[hi]! - s[lo]!) * (h - lo);
}

/** The median (mean of the two middle values for an even count). Throws as `quantile` does. */
export function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}
