/**
 * CpuDecodeEngine: a step over sequences of different lengths gives each the logits it gets alone
 * and the logits of the whole-sequence pass; every refusal is typed, named after the call and
 * leaves the engine as it was (the next steps behave as if it never happened); stats count what
 * was decoded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DisposedError, InvalidArgumentError } from '../../src/errors/base.js';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { llamaConfig } from '../../src/llm/config.js';
import { CPU_STEP_SLICE_MS, CpuDecodeEngine } from '../../src/llm/reference-engine.js';
import { ReferenceDecoder, argmax, forwardSequence } from '../../src/llm/reference.js';
import { BOS } from '../../src/llm/tokenizer.js';
import { syntheticWeights } from '../../src/llm/weights.js';
import { TINY, assertClose } from './helpers.js';

const WEIGHTS = syntheticWeights(TINY, 3);
const V = TINY.vocab;

/** `promise` rejects with `type`, its message starting `op: ` and matching `pattern`. */
async function rejects(promise: Promise<unknown>, type: new (...args: never[]) => Error, op: string, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof type, `a ${type.name}, got ${String(e)}`);
    assert.ok(e.message.startsWith(`${op}: `), e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

/** The logits of each step of one sequence run alone in a fresh engine. */
async function alone(tokens: readonly number[]): Promise<Float32Array[]> {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 1 });
  const rows: Float32Array[] = [];
  for (let p = 0; p < tokens.length; p++) rows.push((await engine.step([{ slot: 0, token: tokens[p]!, position: p }], { logits: true })).logits!);
  return rows;
}

const SEQS = [
  [BOS, 72, 105],
  [BOS, 1, 2, 3, 4, 5, 6, 7, 8],
  [BOS],
  [BOS, 200, 100, 50, 25, 12],
];

test('one step over sequences of different lengths gives each the logits it gets alone, and the whole-sequence logits', async () => {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 6 });
  // Slots out of order: sequence i lives in slot SLOTS[i].
  const SLOTS = [4, 0, 5, 2];
  // Prefill each sequence but its last token, several sequences a step while they last.
  const longest = Math.max(...SEQS.map((s) => s.length));
  for (let p = 0; p < longest - 1; p++) {
    const entries = SEQS.flatMap((s, i) => (p < s.length - 1 ? [{ slot: SLOTS[i]!, token: s[p]!, position: p }] : []));
    if (entries.length > 0) await engine.step(entries);
  }
  // Then one step with every sequence's last token, each at its own position.
  const last = SEQS.map((s, i) => ({ slot: SLOTS[i]!, token: s[s.length - 1]!, position: s.length - 1 }));
  const { tokens, logits } = await engine.step(last, { logits: true });
  assert.equal(logits!.length, SEQS.length * V);
  for (let i = 0; i < SEQS.length; i++) {
    const s = SEQS[i]!;
    const mine = logits!.subarray(i * V, (i + 1) * V);
    assert.deepEqual(mine, (await alone(s))[s.length - 1], `sequence ${i}: the same logits as alone`);
    assertClose(mine, forwardSequence(TINY, WEIGHTS, s).subarray((s.length - 1) * V), 1e-6, `sequence ${i} against forwardSequence`);
    assert.equal(tokens[i], argmax(mine));
  }
});

test('several consecutive positions of a slot in one step (a prompt chunk), beside other slots: each entry\'s logits are those of the sequence alone', async () => {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 3, maxBatch: 12 });
  const a = SEQS[1]!;
  const b = SEQS[3]!;
  // Slot 0 takes a's first 5 tokens in one step, slot 2 b's first 2 interleaved; then the rest.
  const first = [0, 1, 2, 3, 4].map((p) => ({ slot: 0, token: a[p]!, position: p }));
  first.splice(2, 0, { slot: 2, token: b[0]!, position: 0 }, { slot: 2, token: b[1]!, position: 1 });
  const r1 = await engine.step(first, { logits: true });
  const rest = [...[5, 6, 7, 8].map((p) => ({ slot: 0, token: a[p]!, position: p })), ...[2, 3, 4, 5].map((p) => ({ slot: 2, token: b[p]!, position: p }))];
  const r2 = await engine.step(rest, { logits: true });
  const wantA = await alone(a);
  const wantB = await alone(b);
  [...first, ...rest].forEach((e, i) => {
    const rows = i < first.length ? r1.logits! : r2.logits!;
    const k = i < first.length ? i : i - first.length;
    assert.deepEqual(rows.subarray(k * V, (k + 1) * V), (e.slot === 0 ? wantA : wantB)[e.position], `slot ${e.slot} position ${e.position}`);
  });
  assert.deepEqual(engine.stats(), { steps: 2, tokens: 15 });
});

test('a step gives the greedy tokens, the logits only when asked, and stats count steps and tokens', async () => {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 3 });
  assert.equal(engine.name, 'cpu reference');
  assert.equal(engine.maxBatch, 3);
  assert.equal(engine.maxPositions, TINY.maxPositions);
  assert.deepEqual(engine.config, TINY);
  assert.deepEqual(engine.stats(), { steps: 0, tokens: 0 });
  const r = await engine.step([{ slot: 1, token: BOS, position: 0 }, { slot: 0, token: 65, position: 0 }]);
  assert.equal(r.logits, undefined);
  assert.ok(r.tokens instanceof Int32Array);
  const expected = [forwardSequence(TINY, WEIGHTS, [BOS]), forwardSequence(TINY, WEIGHTS, [65])].map((l) => argmax(l));
  assert.deepEqual([...r.tokens], expected);
  await engine.step([{ slot: 1, token: r.tokens[0]!, position: 1 }], { logits: false });
  await assert.rejects(engine.step([]));
  const s = engine.stats();
  assert.deepEqual(s, { steps: 2, tokens: 3 });
  s.steps = 99 as never;
  assert.equal(engine.stats().steps, 2, 'stats() is a copy');
});

test('a slot restarted at position 0 holds the new sequence only', async () => {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 1 });
  for (const [p, t] of [9, 8, 7, 6].entries()) await engine.step([{ slot: 0, token: t, position: p }]);
  const b = [BOS, 33, 44];
  let row: Float32Array | undefined;
  for (let p = 0; p < b.length; p++) row = (await engine.step([{ slot: 0, token: b[p]!, position: p }], { logits: true })).logits;
  assert.deepEqual(row, (await alone(b))[2]);
  // Writing at position 1 drops what the slot held beyond it: position 3 is now past the end.
  await engine.step([{ slot: 0, token: 1, position: 1 }]);
  await rejects(engine.step([{ slot: 0, token: 1, position: 3 }]), InvalidArgumentError, 'CpuDecodeEngine.step', /past what slot 0 holds \(2 positions\)/);
});

test('every refusal is typed and named after the call, and writes nothing', async () => {
  using engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 4, maxBatch: 3, maxPositions: 16 });
  const op = 'CpuDecodeEngine.step';
  await engine.step([{ slot: 0, token: BOS, position: 0 }, { slot: 1, token: BOS, position: 0 }]);
  const ok = { slot: 0, token: 5, position: 1 };
  const cases: [unknown, unknown, RegExp][] = [
    [[], undefined, /a step takes 1\.\.3 entries \(maxBatch\), got 0/],
    [[ok, { slot: 1, token: 1, position: 1 }, { slot: 2, token: 1, position: 0 }, { slot: 3, token: 1, position: 0 }], undefined, /1\.\.3 entries \(maxBatch\), got 4/],
    ['abc', undefined, /entries must be an array/],
    [[ok, null], undefined, /entries\[1\] must be \{ slot, token, position \}, got null/],
    [[ok, { slot: 4, token: 1, position: 0 }], undefined, /entries\[1\]\.slot must be an integer in 0\.\.3, got 4/],
    [[ok, { slot: -1, token: 1, position: 0 }], undefined, /entries\[1\]\.slot must be an integer in 0\.\.3, got -1/],
    [[ok, { slot: 1.5, token: 1, position: 0 }], undefined, /entries\[1\]\.slot/],
    [[ok, { token: 1, position: 0 }], undefined, /entries\[1\]\.slot must be an integer in 0\.\.3, got undefined/],
    [[ok, { slot: 1, token: 258, position: 1 }], undefined, /entries\[1\]\.token must be an integer in 0\.\.257, got 258/],
    [[ok, { slot: 1, token: NaN, position: 1 }], undefined, /entries\[1\]\.token/],
    [[ok, { slot: 1, token: 1, position: 16 }], undefined, /entries\[1\]\.position must be an integer in 0\.\.15, got 16/],
    [[ok, { slot: 1, token: 1, position: 2 }], undefined, /entries\[1\]\.position \(2\) is past what slot 1 holds \(1 positions\)/],
    [[ok, { slot: 2, token: 1, position: 1 }], undefined, /past what slot 2 holds \(0 positions\)/],
    [[ok, { slot: 1, token: 1, position: 1 }, { slot: 0, token: 1, position: 1 }], undefined, /entries\[2\]\.position \(1\): slot 0 is at position 1 in entries\[0\], so a later entry of it must be at the next position \(2\)/],
    [[ok, { slot: 0, token: 1, position: 3 }], undefined, /entries\[1\]\.position \(3\).*next position \(2\)/],
    [[ok], { logits: 1 }, /logits must be a boolean, got 1/],
    [[ok], { logit: true }, /unknown option 'logit'/],
    [[ok], 'x', /options must be an object/],
  ];
  for (const [entries, options, pattern] of cases) {
    await rejects(engine.step(entries as DecodeEntry[], options as never), InvalidArgumentError, op, pattern);
  }
  assert.deepEqual(engine.stats(), { steps: 1, tokens: 2 }, 'refused steps are not counted');
  // Nothing was written: slot 0 still holds one position (position 2 is refused), slots 2 and 3 none,
  // and its next step gives what an engine that never saw the refusals gives.
  await rejects(engine.step([{ slot: 0, token: 5, position: 2 }]), InvalidArgumentError, op, /past what slot 0 holds \(1 positions\)/);
  await rejects(engine.step([{ slot: 2, token: 5, position: 1 }]), InvalidArgumentError, op, /past what slot 2 holds \(0 positions\)/);
  const next = await engine.step([ok], { logits: true });
  assert.deepEqual(next.logits, (await alone([BOS, 5]))[1]);
  // Other fields of an entry are the caller's and let be.
  await engine.step([{ slot: 3, token: 1, position: 0, id: 'request-7' } as DecodeEntry]);
});

test('after dispose() a step is refused with DisposedError; dispose is idempotent', async () => {
  const engine = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 1 });
  engine.dispose();
  engine.dispose();
  await rejects(engine.step([{ slot: 0, token: BOS, position: 0 }]), DisposedError, 'CpuDecodeEngine.step', /the engine has been disposed/);
  let outside: CpuDecodeEngine;
  {
    using scoped = new CpuDecodeEngine(TINY, WEIGHTS, { slots: 1 });
    await scoped.step([{ slot: 0, token: BOS, position: 0 }]);
    outside = scoped;
  }
  await rejects(outside.step([{ slot: 0, token: BOS, position: 0 }]), DisposedError, 'CpuDecodeEngine.step', /disposed/);
});

test('the constructor refuses bad sizes, unknown options, weights that do not fit, a cache too large', () => {
  const op = 'new CpuDecodeEngine';
  const bad: [unknown, RegExp][] = [
    [{ slots: 0 }, /slots must be an integer in 1\.\.65536, got 0/],
    [{ slots: 2, maxBatch: 0 }, /maxBatch must be an integer in 1\.\.65536, got 0/],
    [{ maxPositions: 65 }, /maxPositions must be an integer in 1\.\.64, got 65/],
    [{ maxPositions: 0 }, /maxPositions/],
    [{ slot: 1 }, /unknown option 'slot'/],
  ];
  for (const [options, pattern] of bad) {
    assert.throws(() => new CpuDecodeEngine(TINY, WEIGHTS, options as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && pattern.test(e.message));
  }
  const partial = new Map(WEIGHTS);
  partial.delete('model.norm.weight');
  assert.throws(() => new CpuDecodeEngine(TINY, partial), (e: unknown) => e instanceof InvalidArgumentError && /^new CpuDecodeEngine: tensor 'model\.norm\.weight' \[64\] is missing/.test(e.message));
  const big = { ...TINY, maxPositions: 1 << 20 };
  assert.throws(() => new CpuDecodeEngine(big, WEIGHTS, { slots: 4096 }), (e: unknown) => e instanceof InvalidArgumentError && /^new CpuDecodeEngine: a KV cache of 4096 slots × 1048576 positions would take 2048\.0 GiB/.test(e.message));
  assert.throws(() => new CpuDecodeEngine({ ...TINY, rmsEps: 0 }, WEIGHTS), (e: unknown) => e instanceof InvalidArgumentError && /^new CpuDecodeEngine: rmsEps/.test(e.message));
});

/** A config large enough that one step takes tens of milliseconds (each layer a few). */
const MID = llamaConfig('mid', { layers: 6, dim: 256, heads: 4, kvHeads: 2, hidden: 768, maxPositions: 64 });

test('a long step gives the event loop turns (timers run before it resolves) and its tokens and logits are those of the plain decoder', async () => {
  const weights = syntheticWeights(MID, 5);
  using engine = new CpuDecodeEngine(MID, weights, { slots: 8 });
  const entries = Array.from({ length: 8 }, (_, slot) => ({ slot, token: slot === 0 ? BOS : 40 + slot, position: 0 }));
  let fired = 0;
  const timer = setInterval(() => fired++, 1);
  const started = performance.now();
  let timeout = false;
  setTimeout(() => (timeout = true), 0);
  const { tokens, logits } = await engine.step(entries, { logits: true });
  const took = performance.now() - started;
  clearInterval(timer);
  assert.ok(took > 3 * CPU_STEP_SLICE_MS, `the step is long enough to need turns (${took.toFixed(1)} ms)`);
  assert.equal(timeout, true, 'a timer set before the step ran before it resolved');
  assert.ok(fired >= 2, `a 1 ms interval ran ${fired} times during a ${took.toFixed(1)} ms step`);
  // The same values as the synchronous decoder's, bit for bit.
  const decoder = new ReferenceDecoder(MID, weights);
  const cache = decoder.createCache(8, MID.maxPositions);
  entries.forEach(({ slot, token, position }, i) => {
    const row = decoder.decode(cache, slot, token, position);
    assert.deepEqual(logits!.subarray(i * MID.vocab, (i + 1) * MID.vocab), row, `entry ${i}`);
    assert.equal(tokens[i], argmax(row));
  });
});

test('while a step runs, another is refused and writes nothing; dispose() rejects the running step', async () => {
  const weights = syntheticWeights(MID, 6);
  const engine = new CpuDecodeEngine(MID, weights, { slots: 8 });
  const entries = Array.from({ length: 8 }, (_, slot) => ({ slot, token: BOS, position: 0 }));
  const first = engine.step(entries);
  await rejects(engine.step([{ slot: 0, token: BOS, position: 0 }]), InvalidArgumentError, 'CpuDecodeEngine.step', /a step is in flight/);
  await first;
  assert.deepEqual(engine.stats(), { steps: 1, tokens: 8 });
  const running = engine.step(entries.map((e) => ({ ...e, position: 1 })));
  await new Promise((r) => setTimeout(r, 0));
  engine.dispose();
  await rejects(running, DisposedError, 'CpuDecodeEngine.step', /disposed/);
  assert.deepEqual(engine.stats(), { steps: 1, tokens: 8 }, 'the rejected step is not counted');
});
