// The statistics of `npm run bench:gpu` (bench/gpu/stats.ts): what the results table reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvalidArgumentError } from '../../src/index.js';
import {
  MIN_PAIRED_ROUNDS, MIN_ROUNDS_FOR_RANGE, beyondSpread, compare, interleave, median, pairedRatios, quantile, ratio,
  sameSideEveryRound, summarize,
} from '../../bench/gpu/stats.js';

const refused = (op: string) => (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `);
const finite = fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true });

test('median: middle value for an odd count, mean of the two middle ones for an even count', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([7]), 7);
  assert.equal(median([5, 5, 5, 100]), 5);
});

test('median does not reorder its input', () => {
  const xs = [3, 1, 2];
  median(xs);
  assert.deepEqual(xs, [3, 1, 2]);
});

test('median lies between min and max and ignores the order of the samples', () => {
  fc.assert(fc.property(fc.array(finite, { minLength: 1, maxLength: 50 }), (xs) => {
    const m = median(xs);
    assert.ok(m >= Math.min(...xs) && m <= Math.max(...xs));
    assert.equal(median([...xs].reverse()), m);
  }));
});

test('quantile interpolates between order statistics (numpy default)', () => {
  const xs = [10, 20, 30, 40, 50];
  assert.equal(quantile(xs, 0), 10);
  assert.equal(quantile(xs, 1), 50);
  assert.equal(quantile(xs, 0.25), 20);
  assert.equal(quantile([1, 2, 3, 4], 0.25), 1.75);
  assert.equal(quantile([1, 2, 3, 4], 0.75), 3.25);
});

test('quantile and median refuse empty input, non-finite samples and p outside 0..1', () => {
  for (const bad of [[], [NaN], [1, Infinity], [1, -Infinity], ['1' as unknown as number]]) {
    assert.throws(() => median(bad), refused('quantile'), JSON.stringify(bad));
  }
  for (const p of [-0.1, 1.1, NaN]) assert.throws(() => quantile([1, 2], p), refused('quantile'));
});

test('summarize: median of round medians, spread = min..max of round medians from 3 rounds on', () => {
  const s = summarize([[1, 2, 3], [4, 5, 6], [10, 11, 100]]);
  assert.equal(s.median, 5);
  assert.equal(s.lo, 2);
  assert.equal(s.hi, 11);
  assert.equal(s.spreadKind, 'round-min-max');
  assert.deepEqual(s.roundMedians, [2, 5, 11]);
  assert.equal(s.rounds, 3);
  assert.equal(s.samples, 9);
  assert.equal(s.pooledMedian, 5);
});

test('summarize: with fewer rounds than MIN_ROUNDS_FOR_RANGE the spread is the pooled IQR', () => {
  assert.equal(MIN_ROUNDS_FOR_RANGE, 3);
  const s = summarize([[1, 2, 3, 4], [5, 6, 7, 8]]);
  assert.equal(s.spreadKind, 'iqr');
  assert.equal(s.median, 4.5); // median of 2.5 and 6.5
  assert.equal(s.lo, quantile([1, 2, 3, 4, 5, 6, 7, 8], 0.25));
  assert.equal(s.hi, quantile([1, 2, 3, 4, 5, 6, 7, 8], 0.75));
});

test('summarize: the reported median always lies inside its spread', () => {
  const rounds = fc.array(fc.array(fc.double({ min: 0, max: 1e4, noNaN: true }), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 8 });
  fc.assert(fc.property(rounds, (rs) => {
    const s = summarize(rs);
    if (s.spreadKind === 'round-min-max') assert.ok(s.lo <= s.median && s.median <= s.hi);
    assert.ok(s.q1 <= s.pooledMedian && s.pooledMedian <= s.q3);
  }));
});

test('summarize refuses no rounds and empty rounds', () => {
  assert.throws(() => summarize([]), refused('summarize'));
  assert.throws(() => summarize([[1], []]), refused('quantile'));
});

test('ratio divides medians; refuses a baseline that is not positive and non-finite values', () => {
  assert.equal(ratio(5, 4), 1.25);
  assert.equal(ratio(0, 4), 0);
  for (const [a, b] of [[1, 0], [1, -1], [NaN, 1], [1, NaN], [Infinity, 1], [-1, 1]] as const) {
    assert.throws(() => ratio(a, b), refused('ratio'), `${a}/${b}`);
  }
});

test('beyondSpread: true only when the two ranges do not overlap', () => {
  assert.equal(beyondSpread({ lo: 1, hi: 2 }, { lo: 3, hi: 4 }), true);
  assert.equal(beyondSpread({ lo: 3, hi: 4 }, { lo: 1, hi: 2 }), true);
  assert.equal(beyondSpread({ lo: 1, hi: 3 }, { lo: 2, hi: 4 }), false);
  assert.equal(beyondSpread({ lo: 1, hi: 2 }, { lo: 2, hi: 4 }), false); // touching ranges overlap
  assert.equal(beyondSpread({ lo: 0, hi: 10 }, { lo: 4, hi: 5 }), false);
});

test('compare: ratio to the baseline and whether the gap exceeds the spread (symmetric)', () => {
  const c = summarize([[4.5], [4.6], [4.7]]);
  const slow = summarize([[5.5], [5.6], [5.9]]);
  const close = summarize([[4.6], [4.8], [5.0]]);
  const r = compare(slow, c);
  assert.ok(Math.abs(r.ratio - 5.6 / 4.6) < 1e-12);
  assert.equal(r.beyondSpread, true);
  assert.equal(compare(close, c).beyondSpread, false);
  assert.equal(compare(c, slow).beyondSpread, true);
});

test('pairedRatios: round by round, only rounds both sides have, in round order', () => {
  const c = new Map([[0, 2], [1, 4], [2, 1], [3, 5]]);
  const x = new Map([[2, 1.5], [0, 3], [1, 6]]);
  assert.deepEqual(pairedRatios(x, c), [1.5, 1.5, 1.5]);
  assert.deepEqual(pairedRatios(new Map(), c), []);
  assert.deepEqual(pairedRatios(new Map([[0, 1]]), new Map([[0, 0]])), []); // no ratio to a zero baseline
});

test('sameSideEveryRound: a sign test over at least MIN_PAIRED_ROUNDS rounds', () => {
  assert.equal(MIN_PAIRED_ROUNDS, 5);
  assert.equal(sameSideEveryRound([1.1, 1.2, 1.05, 1.3, 1.01]), true);
  assert.equal(sameSideEveryRound([0.9, 0.8, 0.95, 0.7, 0.99]), true);
  assert.equal(sameSideEveryRound([1.1, 1.2, 0.9, 1.3, 1.01]), false);
  assert.equal(sameSideEveryRound([1.1, 1.2, 1.0, 1.3, 1.01]), false); // a tie is not a side
  assert.equal(sameSideEveryRound([1.1, 1.2, 1.3, 1.4]), false); // too few rounds
});

test('compare with rounds: per-round ratios beside the ratio of medians', () => {
  const c = summarize([[1], [2], [1], [2], [1]]);
  const x = summarize([[1.2], [2.4], [1.2], [2.4], [1.2]]);
  const byRound = (xs: number[]) => new Map(xs.map((v, i) => [i, v]));
  const r = compare(x, c, { value: byRound([1.2, 2.4, 1.2, 2.4, 1.2]), baseline: byRound([1, 2, 1, 2, 1]) });
  assert.equal(r.beyondSpread, false);
  assert.equal(r.sameSideEveryRound, true);
  assert.deepEqual(r.perRound, { median: 1.2, lo: 1.2, hi: 1.2, rounds: 5 });
  assert.equal(r.ratio, 1.2);
  assert.ok(Math.abs(r.ratioOfMedians - 1.2) < 1e-12);
  // Unbalanced rounds: the ratio of medians is skewed, the paired ratio is not.
  const skewed = compare(summarize([[2.2], [1.1], [2.2]]), summarize([[2], [1], [1], [1]]), {
    value: byRound([2.2, 1.1, 2.2]), baseline: byRound([2, 1, 2, 1]),
  });
  assert.ok(Math.abs(skewed.ratio - 1.1) < 1e-12);
  assert.ok(Math.abs(skewed.ratioOfMedians - 2.2) < 1e-12);
  assert.equal(compare(x, c).perRound, null);
  assert.equal(compare(x, c).sameSideEveryRound, false);
});

test('interleave: every implementation runs every step once per round, A B C D per step', () => {
  const turns = interleave(['a', 'b', 'c', 'd'], 2, 0);
  assert.deepEqual(turns.map((t) => `${t.step}${t.impl}`), ['0a', '0b', '0c', '0d', '1a', '1b', '1c', '1d']);
  assert.ok(turns.every((t) => t.round === 0));
});

test('interleave: the first implementation rotates with the round', () => {
  assert.deepEqual(interleave(['a', 'b', 'c'], 1, 1).map((t) => t.impl), ['b', 'c', 'a']);
  assert.deepEqual(interleave(['a', 'b', 'c'], 1, 2).map((t) => t.impl), ['c', 'a', 'b']);
  assert.deepEqual(interleave(['a', 'b', 'c'], 1, 3).map((t) => t.impl), ['a', 'b', 'c']);
});

test('interleave: each (step, impl) pair exactly once, steps in order, for any sizes', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 50 }), (k, steps, round) => {
    const impls = Array.from({ length: k }, (_, i) => i);
    const turns = interleave(impls, steps, round);
    assert.equal(turns.length, k * steps);
    const seen = new Set(turns.map((t) => `${t.step}/${t.impl}`));
    assert.equal(seen.size, k * steps);
    for (let i = 1; i < turns.length; i++) assert.ok(turns[i]!.step >= turns[i - 1]!.step);
    // Over k consecutive rounds every implementation goes first exactly once.
    if (steps > 0) {
      const firsts = new Set(Array.from({ length: k }, (_, r) => interleave(impls, steps, round + r)[0]!.impl));
      assert.equal(firsts.size, k);
    }
  }));
});

test('interleave: no implementations gives no turns; bad counts are refused', () => {
  assert.deepEqual(interleave([], 3, 0), []);
  for (const [steps, round] of [[-1, 0], [1.5, 0], [1, -1], [1, NaN]] as const) {
    assert.throws(() => interleave(['a'], steps, round), refused('interleave'));
  }
});
