/**
 * The small, fixed-size statistics the server keeps: a ring of the latest samples (for p50/p99
 * without a growing history) and a rate over a sliding window of one-second buckets.
 */

/** The `q`-quantile (q in [0, 1]) of ascending `sorted` by nearest rank: the smallest sample with at least q of the samples at or below it; 0 when empty. */
export function nearestRank(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  return n === 0 ? 0 : sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
}

/** The latest `capacity` samples; older ones are overwritten. */
export class SampleRing {
  readonly #values: Float64Array;
  #next = 0;
  #count = 0;

  /** @param capacity how many of the latest samples are kept (≥ 1). */
  constructor(capacity: number) {
    this.#values = new Float64Array(Math.max(1, Math.floor(capacity)));
  }

  /** Keeps `value`, dropping the oldest sample when full. */
  push(value: number): void {
    this.#values[this.#next] = value;
    this.#next = (this.#next + 1) % this.#values.length;
    if (this.#count < this.#values.length) this.#count++;
  }

  /** Samples held (at most the capacity). */
  get count(): number {
    return this.#count;
  }

  /** The mean of the samples held, 0 when none. */
  mean(): number {
    let sum = 0;
    for (let i = 0; i < this.#count; i++) sum += this.#values[i]!;
    return this.#count === 0 ? 0 : sum / this.#count;
  }

  /** The `q`-quantiles (each in [0, 1]) of the samples held, by nearest rank (`nearestRank`); 0 for each when there are none. */
  quantiles(qs: readonly number[]): number[] {
    const sorted = this.#values.slice(0, this.#count).sort();
    return qs.map((q) => nearestRank(sorted, q));
  }
}

/** A count per second over the last `seconds` seconds, in one-second buckets. */
export class RateWindow {
  readonly #counts: Float64Array;
  readonly #seconds: Float64Array;
  readonly #start: number;

  /**
   * @param seconds the window's length (≥ 1).
   * @param now the current time in milliseconds (the clock that `add` and `rate` are given).
   */
  constructor(seconds: number, now: number) {
    const n = Math.max(1, Math.floor(seconds));
    this.#counts = new Float64Array(n);
    this.#seconds = new Float64Array(n).fill(-1);
    this.#start = now;
  }

  /** Counts `n` at time `now` (milliseconds). */
  add(now: number, n: number): void {
    const s = Math.floor(now / 1000);
    const i = s % this.#counts.length;
    if (this.#seconds[i] !== s) {
      this.#seconds[i] = s;
      this.#counts[i] = 0;
    }
    this.#counts[i]! += n;
  }

  /**
   * The count per second over the window ending at `now`: what the buckets of the last `seconds`
   * seconds hold (the current one partly filled), divided by the time they span (from the start of
   * the oldest bucket, or from the start, whichever is later, to `now`).
   */
  rate(now: number): number {
    const s = Math.floor(now / 1000);
    let sum = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      if (this.#seconds[i]! > s - this.#counts.length && this.#seconds[i]! <= s) sum += this.#counts[i]!;
    }
    const span = Math.min(now / 1000 - (s - this.#counts.length + 1), (now - this.#start) / 1000);
    return span > 0 ? sum / span : 0;
  }
}
