/**
 * The sampler against a plain reference: temperature, top-k and top-p keep the right tokens and
 * draw them with the right frequencies; a seed gives the same tokens every time; the refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { Sampler, checkSampling } from '../../src/serve/sampling.js';

/** The reference: the distribution the sampler should draw from, computed the obvious way. */
function reference(logits: number[], t: number, topK: number, topP: number): Map<number, number> {
  // Less the largest first, as a softmax must be computed (and as the sampler does: the same rounding on near-ties).
  const max = Math.max(...logits);
  const e = logits.map((l) => Math.exp((l - max) / t));
  const z = e.reduce((a, b) => a + b, 0);
  const ranked = e.map((x, i) => ({ i, x, p: x / z })).sort((a, b) => b.x - a.x || a.i - b.i);
  let kept = topK > 0 ? ranked.slice(0, topK) : ranked;
  if (topP < 1) {
    const out = [];
    let cum = 0;
    for (const r of kept) {
      out.push(r);
      cum += r.p;
      if (cum >= topP) break;
    }
    kept = out;
  }
  const zk = kept.reduce((a, r) => a + r.p, 0);
  return new Map(kept.map((r) => [r.i, r.p / zk]));
}

const draw = (p: { temperature: number; topP?: number; topK?: number; seed: number }, logits: number[], n: number): number[] => {
  const s = new Sampler(checkSampling('t', p)!);
  const row = Float32Array.from(logits);
  return Array.from({ length: n }, () => s.sample(row, 0, row.length));
};

test('frequencies match the reference distribution (temperature, top-k, top-p)', () => {
  const logits = [2, 1, 0.5, 0, -1, 3, 1];
  for (const [t, topK, topP] of [[1, 0, 1], [0.5, 0, 1], [1.5, 3, 1], [1, 0, 0.8], [2, 4, 0.9]] as const) {
    const n = 40_000;
    const counts = new Map<number, number>();
    for (const x of draw({ temperature: t, topK, topP, seed: 7 }, logits, n)) counts.set(x, (counts.get(x) ?? 0) + 1);
    const want = reference(logits, t, topK, topP);
    for (const tok of counts.keys()) assert.ok(want.has(tok), `t=${t} k=${topK} p=${topP}: token ${tok} is not in the kept set`);
    for (const [tok, p] of want) {
      const got = (counts.get(tok) ?? 0) / n;
      // Five standard deviations of a binomial frequency.
      assert.ok(Math.abs(got - p) <= 5 * Math.sqrt((p * (1 - p)) / n) + 1e-9, `t=${t} k=${topK} p=${topP}: token ${tok} drawn ${got}, expected ${p}`);
    }
  }
});

test('property: every draw is in the reference kept set; a seed repeats its tokens; row offsets are honoured', () => {
  fc.assert(
    fc.property(
      fc.array(fc.float({ min: -20, max: 20, noNaN: true }), { minLength: 2, maxLength: 40 }),
      fc.double({ min: 0.05, max: 2, noNaN: true }),
      fc.integer({ min: 0, max: 6 }),
      fc.double({ min: 0.01, max: 1, noNaN: true }),
      fc.integer({ min: 0, max: 2 ** 40 }),
      (logits, t, topK, topP, seed) => {
        if (topK === 1) return; // greedy: no sampler
        const want = reference(logits.map((x) => Math.fround(x)), t, topK, topP);
        const a = draw({ temperature: t, topK, topP, seed }, logits, 20);
        assert.deepEqual(draw({ temperature: t, topK, topP, seed }, logits, 20), a);
        for (const x of a) assert.ok(want.has(x) || want.size === 0, `${x} not in ${[...want.keys()]}`);
        // The same row placed after another one.
        const s = new Sampler(checkSampling('t', { temperature: t, topK, topP, seed })!);
        const two = Float32Array.from([...logits.map(() => 0), ...logits]);
        assert.deepEqual(Array.from({ length: 20 }, () => s.sample(two, logits.length, logits.length)), a);
      },
    ),
    { numRuns: 200 },
  );
});

test('greedy needs no sampler: temperature 0 or top_k 1; different seeds draw differently', () => {
  assert.equal(checkSampling('t', undefined), null);
  assert.equal(checkSampling('t', { temperature: 0, topP: 0.5, seed: 3 }), null);
  assert.equal(checkSampling('t', { temperature: 1, topK: 1 }), null);
  const flat = Array.from({ length: 50 }, () => 0);
  assert.notDeepEqual(draw({ temperature: 1, seed: 1 }, flat, 30), draw({ temperature: 1, seed: 2 }, flat, 30));
  // Seeds above 2^32 are not folded onto smaller ones.
  assert.notDeepEqual(draw({ temperature: 1, seed: 5 }, flat, 30), draw({ temperature: 1, seed: 5 + 2 ** 33 }, flat, 30));
  // Seeds whose halves XOR to the same 32 bits (0, -1 = 2^32 · -1 + (2^32 − 1), 2^32 + 1), and neighbours across the halves: each its own stream.
  const seeds = [0, -1, 2 ** 32 + 1, 1, 2 ** 32, -(2 ** 32), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 32 - 1, 2 ** 33 + 2];
  const streams = new Set(seeds.map((seed) => draw({ temperature: 1, seed }, flat, 30).join(',')));
  assert.equal(streams.size, seeds.length);
  // top_k -1 (what vLLM's clients send for no limit) is 0; below it is refused.
  assert.equal(checkSampling('t', { temperature: 1, topK: -1, seed: 3 })!.topK, 0);
  assert.deepEqual(draw({ temperature: 1, topK: -1, seed: 9 }, flat, 30), draw({ temperature: 1, topK: 0, seed: 9 }, flat, 30));
  assert.throws(() => checkSampling('t', { temperature: 1, topK: -2 }), /topK must be an integer ≥ 0 \(0 or -1: no limit\), got -2/);
  // Unseeded samplers get a seed of their own.
  assert.equal(typeof checkSampling('t', { temperature: 1 })!.seed, 'number');
});

test('refusals name the call and the parameter', () => {
  const bad: [unknown, RegExp, string][] = [
    [{ temperature: -0.1 }, /^op: temperature must be a number from 0 to 2, got -0\.1/, 'temperature'],
    [{ temperature: Number.NaN }, /temperature must be a number from 0 to 2, got NaN/, 'temperature'],
    [{ temperature: '1' }, /temperature .* got "1"/, 'temperature'],
    [{ temperature: 1, topP: 1.5 }, /topP must be a number in \(0, 1\]/, 'topP'],
    [{ temperature: 1, topP: 0 }, /topP must be a number in \(0, 1\]/, 'topP'],
    [{ temperature: 1, topK: -2 }, /topK must be an integer ≥ 0/, 'topK'],
    [{ temperature: 1, seed: 0.5 }, /seed must be a safe integer/, 'seed'],
    [5, /sampling must be an object, got 5/, 'sampling'],
    [null, /sampling must be an object, got null/, 'sampling'],
  ];
  for (const [p, re, param] of bad) {
    assert.throws(() => checkSampling('op', p as never), (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message) && e.parameter === param, String(re));
  }
  assert.throws(() => checkSampling('op', { temperature: 1, topP: 2 }, { topP: 'top_p', topK: 'top_k' }), /op: top_p must be/);
});
