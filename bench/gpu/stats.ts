/**
 * The statistics of `npm run bench:gpu`, as pure functions: medians, quantiles, the spread of a
 * row, ratios to C, whether two results differ by more than their spread, and the order in which
 * implementations take turns. docs/benchmark.md explains the choices.
 */
import { InvalidArgumentError } from '../../src/errors/base.js';
import { requireInt } from '../../src/util/validate.js';
import { median, quantile } from '../../src/cli/stats.js';

export { quantile, median } from '../../src/cli/stats.js';

/** How a `Summary`'s `lo`..`hi` were obtained. */
export type SpreadKind = 'round-min-max' | 'iqr';

/** One implementation's result on one row, over every round that ran it. */
export interface Summary {
  /** Median of the per-round medians: the figure reported. */
  readonly median: number;
  /** The spread: min..max of the per-round medians with 3 rounds or more, else the pooled IQR. */
  readonly lo: number;
  readonly hi: number;
  readonly spreadKind: SpreadKind;
  /** Median and quartiles of every sample of every round, pooled. */
  readonly pooledMedian: number;
  readonly q1: number;
  readonly q3: number;
  readonly rounds: number;
  readonly samples: number;
  readonly roundMedians: readonly number[];
}

/** Fewest rounds whose min..max of medians is used as the spread (below it, the pooled IQR). */
export const MIN_ROUNDS_FOR_RANGE = 3;

/**
 * Summarises one row of one implementation from its samples, one array per round. Run-to-run
 * drift on the device is larger than the scatter inside one burst of repetitions (measured on the H200: docs/benchmark.md), so
 * the spread is taken across rounds: the min and max of the per-round medians.
 * Throws `InvalidArgumentError` when there is no round or a round has no valid sample.
 */
export function summarize(rounds: readonly (readonly number[])[]): Summary {
  if (!Array.isArray(rounds) || rounds.length === 0) {
    throw new InvalidArgumentError('summarize', 'rounds', 'rounds must be a non-empty array of sample arrays');
  }
  const roundMedians = rounds.map((r) => median(r));
  const pooled = rounds.flat();
  const q1 = quantile(pooled, 0.25);
  const q3 = quantile(pooled, 0.75);
  const byRange = rounds.length >= MIN_ROUNDS_FOR_RANGE;
  return {
    median: median(roundMedians),
    lo: byRange ? Math.min(...roundMedians) : q1,
    hi: byRange ? Math.max(...roundMedians) : q3,
    spreadKind: byRange ? 'round-min-max' : 'iqr',
    pooledMedian: median(pooled),
    q1,
    q3,
    rounds: rounds.length,
    samples: pooled.length,
    roundMedians,
  };
}

/** How one result compares with a baseline. */
export interface Comparison {
  /**
   * value / baseline, above 1 slower than the baseline: the median of the per-round ratios when
   * the rounds are known (`pairedRatios`), else the ratio of the medians.
   */
  readonly ratio: number;
  /** value.median / baseline.median. */
  readonly ratioOfMedians: number;
  /** True when the two spreads do not overlap: the difference is larger than the noise. */
  readonly beyondSpread: boolean;
  /** The per-round ratios (`pairedRatios`): their median, min and max; null without common rounds. */
  readonly perRound: { readonly median: number; readonly lo: number; readonly hi: number; readonly rounds: number } | null;
  /** True when every per-round ratio lies on the same side of 1 (`sameSideEveryRound`). */
  readonly sameSideEveryRound: boolean;
}

/** `a / b` for a finite `a ≥ 0` and a finite `b > 0`. Throws `InvalidArgumentError` otherwise. */
export function ratio(a: number, b: number): number {
  if (typeof a !== 'number' || !Number.isFinite(a) || a < 0) {
    throw new InvalidArgumentError('ratio', 'a', `a must be a finite number ≥ 0, got ${String(a)}`);
  }
  if (typeof b !== 'number' || !Number.isFinite(b) || b <= 0) {
    throw new InvalidArgumentError('ratio', 'b', `b must be a positive finite number, got ${String(b)}`);
  }
  return a / b;
}

/** True when the intervals [a.lo, a.hi] and [b.lo, b.hi] do not overlap. */
export function beyondSpread(a: Pick<Summary, 'lo' | 'hi'>, b: Pick<Summary, 'lo' | 'hi'>): boolean {
  return a.lo > b.hi || a.hi < b.lo;
}

/**
 * The ratio value/baseline of the round medians, round by round, for the rounds both have. Within
 * one round the implementations run back to back under the same machine state, and on the device
 * that state moves every round medians up or down together (docs/benchmark.md), so per-round
 * ratios are much steadier than either side alone. Rounds whose baseline median is not positive
 * are left out.
 */
export function pairedRatios(value: ReadonlyMap<number, number>, baseline: ReadonlyMap<number, number>): number[] {
  const out: number[] = [];
  for (const [round, b] of [...baseline].sort((x, y) => x[0] - y[0])) {
    const v = value.get(round);
    if (v !== undefined && b > 0) out.push(ratio(v, b));
  }
  return out;
}

/** Fewest paired rounds for `sameSideEveryRound` to say anything (3 rounds on one side: p = 1/4). */
export const MIN_PAIRED_ROUNDS = 5;

/**
 * True when there are at least `MIN_PAIRED_ROUNDS` ratios and all are above 1 or all below 1: a
 * sign test (with 10 rounds, chance alone gives this 2 times in 1024).
 */
export function sameSideEveryRound(ratios: readonly number[]): boolean {
  return ratios.length >= MIN_PAIRED_ROUNDS && (ratios.every((r) => r > 1) || ratios.every((r) => r < 1));
}

/**
 * Compares `value` with `baseline` (usually C): the ratio (paired per round when the round
 * medians are given by round index, else of the medians), whether the spreads do not overlap,
 * and whether the paired ratios stay on one side of 1. The paired ratio is the better estimate
 * when rounds drift together or a round is missing on one side.
 * Throws `InvalidArgumentError` when the baseline's median is not positive (see `ratio`).
 */
export function compare(
  value: Summary,
  baseline: Summary,
  rounds?: { readonly value: ReadonlyMap<number, number>; readonly baseline: ReadonlyMap<number, number> },
): Comparison {
  const paired = rounds ? pairedRatios(rounds.value, rounds.baseline) : [];
  const ofMedians = ratio(value.median, baseline.median);
  return {
    ratio: paired.length > 0 ? median(paired) : ofMedians,
    ratioOfMedians: ofMedians,
    beyondSpread: beyondSpread(value, baseline),
    perRound: paired.length > 0 ? { median: median(paired), lo: Math.min(...paired), hi: Math.max(...paired), rounds: paired.length } : null,
    sameSideEveryRound: sameSideEveryRound(paired),
  };
}

/** One turn of the schedule: implementation `impl` runs step `step` of the plan in round `round`. */
export interface Turn<I> {
  readonly round: number;
  readonly step: number;
  readonly impl: I;
}

/**
 * The order of one round: for each step of the plan, every implementation in turn (A B C D), the
 * starting implementation rotated by the round index so none is always first after another's
 * work. Each (step, impl) pair appears exactly once. Throws `InvalidArgumentError` for a negative
 * or fractional round or step count.
 */
export function interleave<I>(impls: readonly I[], steps: number, round: number): Turn<I>[] {
  requireInt('interleave', 'steps', steps, 0, Number.MAX_SAFE_INTEGER);
  requireInt('interleave', 'round', round, 0, Number.MAX_SAFE_INTEGER);
  const turns: Turn<I>[] = [];
  const k = impls.length;
  for (let step = 0; step < steps; step++) {
    for (let j = 0; j < k; j++) turns.push({ round, step, impl: impls[(j + round) % k]! });
  }
  return turns;
}
