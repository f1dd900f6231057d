/**
 * A small, fast, seedable pseudo-random generator (mulberry32), for reproducible data: the same
 * numbers on every machine for the same seed. Not for anything that needs unpredictability.
 */

/** A generator of numbers in [0, 1) from `seed` (an integer; only its low 32 bits count). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
