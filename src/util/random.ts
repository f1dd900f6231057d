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

/** murmur3's 32-bit finaliser: a bijection of the 32-bit integers that spreads every input bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * A generator of numbers in [0, 1) from `seed`, any safe integer, each its own stream: xoshiro128**
 * (128 bits of state) started from both 32-bit halves of the seed. The first two state words are
 * bijections of the low and the high half, so two seeds never start in the same state (a 32-bit
 * generator would fold 2^53 seeds into 2^32 states); the other two make the state never all zero.
 */
export function xoshiro128ss(seed: number): () => number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  let s0 = fmix32(lo);
  let s1 = fmix32(hi ^ 0x9e3779b9);
  let s2 = fmix32(lo ^ 0x7f4a7c15);
  let s3 = fmix32(hi ^ 0x94d049bb) | 1;
  return () => {
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return r / 4294967296;
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
