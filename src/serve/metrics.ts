/**
 * What the scheduler counts and times, kept in fixed-size structures (rings of the latest samples,
 * one-second buckets), and the snapshot it hands out (`Scheduler.metrics()`). Times are in seconds,
 * as Prometheus names them.
 */
import { RateWindow, SampleRing } from './stats.js';

/** The latest samples kept for each quantile: steps, first tokens, gaps between tokens. */
export const SAMPLES = Object.freeze({ steps: 1024, firstTokens: 1024, interTokens: 4096 });
/** The window of the token rates, in seconds. */
export const RATE_WINDOW_SECONDS = 10;

/** Quantiles of the latest samples, with the totals since the start. */
export interface Quantiles {
  /** Median of the latest samples (0 when none). */
  readonly p50: number;
  /** 99th percentile of the latest samples, by nearest rank (0 when none). */
  readonly p99: number;
  /** Sum of every sample since the start. */
  readonly sum: number;
  /** Samples since the start. */
  readonly count: number;
}

/** One bucket of a cumulative histogram: how many observations were ≤ `le`. */
export interface Bucket {
  readonly le: number;
  readonly count: number;
}

/** A copy of the scheduler's state and counters (`Scheduler.metrics()`). */
export interface SchedulerSnapshot {
  /** Sequences stepped together at most: `min(engine.slots, engine.maxBatch)`. */
  readonly capacity: number;
  /** Requests that may wait beyond the free slots. */
  readonly queueLimit: number;
  /** Requests waiting for a slot. */
  readonly queueDepth: number;
  /** Sequences holding a slot (prefilling or generating). */
  readonly running: number;
  /** Slots free: `capacity − running`. */
  readonly freeSlots: number;
  /** Steps run (failed ones included). */
  readonly steps: number;
  /** Steps whose engine call failed. */
  readonly failedSteps: number;
  /** Prompt tokens fed to the engine. */
  readonly promptTokens: number;
  /** Tokens generated (an `EOS` that ended a sequence included). */
  readonly generatedTokens: number;
  /** Prompt tokens fed per second over the last `RATE_WINDOW_SECONDS`. */
  readonly promptTokensPerSecond: number;
  /** Tokens generated per second over the last `RATE_WINDOW_SECONDS`. */
  readonly generatedTokensPerSecond: number;
  /** Engine step times (the awaited `engine.step` call), seconds. */
  readonly stepSeconds: Quantiles;
  /**
   * Entries per step (a sequence's one, or its prompt chunk's tokens one each): the mean of the
   * latest steps, and a cumulative histogram since the start (bounds up to `engine.maxBatch`).
   */
  readonly batchSize: { readonly recentMean: number; readonly buckets: readonly Bucket[]; readonly sum: number; readonly count: number };
  /** From `submit` to the first generated token, seconds. */
  readonly timeToFirstTokenSeconds: Quantiles;
  /** Between consecutive tokens of one sequence, seconds. */
  readonly interTokenSeconds: Quantiles;
  /** Requests accepted, and how the finished ones ended. */
  readonly requests: { readonly submitted: number; readonly stop: number; readonly length: number; readonly cancelled: number; readonly failed: number };
  /** Requests refused by `submit`, by reason. */
  readonly refused: { readonly queueFull: number; readonly contextLength: number; readonly shuttingDown: number; readonly invalid: number };
}

/** A quantile series: a ring of the latest samples and the totals. */
class Series {
  readonly #ring: SampleRing;
  #sum = 0;
  #count = 0;

  constructor(capacity: number) {
    this.#ring = new SampleRing(capacity);
  }

  add(v: number): void {
    this.#ring.push(v);
    this.#sum += v;
    this.#count++;
  }

  mean(): number {
    return this.#ring.mean();
  }

  snapshot(): Quantiles {
    const [p50, p99] = this.#ring.quantiles([0.5, 0.99]);
    return { p50: p50!, p99: p99!, sum: this.#sum, count: this.#count };
  }
}

/** The powers of two up to `capacity`, and `capacity` itself: the batch-size buckets (capacity: the engine's maxBatch). */
function batchBounds(capacity: number): number[] {
  const b: number[] = [];
  for (let x = 1; x < capacity; x *= 2) b.push(x);
  b.push(capacity);
  return b;
}

/** The scheduler's recorder: one call per event, a snapshot on demand. Times given in milliseconds. */
export class SchedulerMetrics {
  readonly #steps = new Series(SAMPLES.steps);
  readonly #batch = new Series(SAMPLES.steps);
  readonly #bounds: number[];
  readonly #batchCounts: Float64Array;
  readonly #ttft = new Series(SAMPLES.firstTokens);
  readonly #itl = new Series(SAMPLES.interTokens);
  readonly #promptRate: RateWindow;
  readonly #generatedRate: RateWindow;
  #failedSteps = 0;
  #promptTokens = 0;
  #generatedTokens = 0;
  readonly requests = { submitted: 0, stop: 0, length: 0, cancelled: 0, failed: 0 };
  readonly refused = { queueFull: 0, contextLength: 0, shuttingDown: 0, invalid: 0 };

  constructor(capacity: number, now: number) {
    this.#bounds = batchBounds(capacity);
    this.#batchCounts = new Float64Array(this.#bounds.length);
    this.#promptRate = new RateWindow(RATE_WINDOW_SECONDS, now);
    this.#generatedRate = new RateWindow(RATE_WINDOW_SECONDS, now);
  }

  /** A step of `size` entries that took `ms` (`failed`: the engine call failed). */
  step(ms: number, size: number, failed: boolean): void {
    this.#steps.add(ms / 1000);
    this.#batch.add(size);
    let i = 0;
    while (i < this.#bounds.length - 1 && size > this.#bounds[i]!) i++;
    this.#batchCounts[i]!++;
    if (failed) this.#failedSteps++;
  }

  /** `prompt` prompt tokens fed and `generated` tokens generated by a step that ended at `now`. */
  tokens(now: number, prompt: number, generated: number): void {
    this.#promptTokens += prompt;
    this.#generatedTokens += generated;
    this.#promptRate.add(now, prompt);
    this.#generatedRate.add(now, generated);
  }

  /** A sequence's first token, `ms` after its submission. */
  firstToken(ms: number): void {
    this.#ttft.add(ms / 1000);
  }

  /** A sequence's next token, `ms` after its previous one. */
  interToken(ms: number): void {
    this.#itl.add(ms / 1000);
  }

  /** The counters and quantiles, with the gauges the scheduler passes. */
  snapshot(now: number, gauges: { capacity: number; queueLimit: number; queueDepth: number; running: number }): SchedulerSnapshot {
    let cumulative = 0;
    const buckets = this.#bounds.map((le, i) => ({ le, count: (cumulative += this.#batchCounts[i]!) }));
    const batch = this.#batch.snapshot();
    return {
      ...gauges,
      freeSlots: gauges.capacity - gauges.running,
      steps: batch.count,
      failedSteps: this.#failedSteps,
      promptTokens: this.#promptTokens,
      generatedTokens: this.#generatedTokens,
      promptTokensPerSecond: this.#promptRate.rate(now),
      generatedTokensPerSecond: this.#generatedRate.rate(now),
      stepSeconds: this.#steps.snapshot(),
      batchSize: { recentMean: this.#batch.mean(), buckets, sum: batch.sum, count: batch.count },
      timeToFirstTokenSeconds: this.#ttft.snapshot(),
      interTokenSeconds: this.#itl.snapshot(),
      requests: { ...this.requests },
      refused: { ...this.refused },
    };
  }
}
