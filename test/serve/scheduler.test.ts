/** The scheduler over the fake engine: batching, joining and leaving, limits, cancellation, EOS, fairness, failures, metrics. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { InvalidArgumentError } from '../../src/errors/base.js';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { BOS, EOS } from '../../src/llm/tokenizer.js';
import { ContextLengthError, EngineStepError, QueueFullError, ShuttingDownError } from '../../src/serve/errors.js';
import { Generation, Scheduler, type GenerationResult } from '../../src/serve/scheduler.js';
import { FakeEngine, defaultNext, expectedTokens } from './fake-engine.js';

const T = { timeout: 10_000 };

/** A prompt of `n` tokens: BOS then bytes. */
function prompt(n: number, seed = 1): number[] {
  return [BOS, ...Array.from({ length: n - 1 }, (_, i) => (seed * 37 + i * 11) % 256)];
}

/** Splits the log's entries of each slot into runs (a run starts at position 0): the step indices of each run. */
function runs(log: readonly DecodeEntry[][]): { slot: number; steps: number[]; positions: number[] }[] {
  const open = new Map<number, { slot: number; steps: number[]; positions: number[] }>();
  const all: { slot: number; steps: number[]; positions: number[] }[] = [];
  log.forEach((entries, k) => {
    for (const e of entries) {
      let r = open.get(e.slot);
      if (e.position === 0 || r === undefined) {
        r = { slot: e.slot, steps: [], positions: [] };
        open.set(e.slot, r);
        all.push(r);
      }
      r.steps.push(k);
      r.positions.push(e.position);
    }
  });
  return all;
}

test('a request generates what the model gives for it alone: with prefillChunk 1, one prompt token per step, then its tokens fed back', T, async () => {
  const engine = new FakeEngine({ slots: 2 });
  const s = new Scheduler(engine, { prefillChunk: 1 });
  assert.equal(s.prefillChunk, 1);
  const p = prompt(5);
  const seen: number[] = [];
  const gen = s.submit({ prompt: p, maxTokens: 4, onToken: (t) => seen.push(t) });
  assert.ok(gen instanceof Generation);
  assert.equal(gen.state, 'queued');
  const iterated: number[] = [];
  for await (const t of gen) iterated.push(t);
  const r = await gen.result;
  const want = expectedTokens(p, 4);
  assert.deepEqual([...r.tokens], want.tokens);
  assert.deepEqual(seen, want.tokens);
  assert.deepEqual(iterated, want.tokens);
  assert.equal(r.finishReason, 'length');
  assert.equal(r.promptTokens, 5);
  assert.equal(r.completionTokens, 4);
  assert.ok(r.timeToFirstTokenMs !== null && r.timeToFirstTokenMs >= 0);
  assert.equal(gen.state, 'finished');
  // 5 prompt positions (the last one answers the first token), then 3 generated tokens fed back.
  assert.equal(engine.log.length, 5 + 4 - 1);
  engine.log.forEach((entries, k) => {
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.position, k);
    assert.equal(entries[0]!.token, k < 5 ? p[k] : want.tokens[k - 5]);
  });
  const m = s.metrics();
  assert.equal(m.promptTokens, 5);
  assert.equal(m.generatedTokens, 4);
  assert.equal(m.steps, 8);
  assert.equal(m.running, 0);
  assert.equal(m.freeSlots, 2);
});

test('EOS ends a sequence: finish "stop", the EOS counted but not delivered, the slot freed', T, async () => {
  // EOS as the third generated token of a 3-token prompt (answer at position 2 + 2).
  const next = (e: DecodeEntry): number => (e.position === 4 ? EOS : defaultNext(e));
  const engine = new FakeEngine({ slots: 1, next });
  const s = new Scheduler(engine);
  const r = await s.submit({ prompt: prompt(3), maxTokens: 10 }).result;
  assert.equal(r.finishReason, 'stop');
  assert.equal(r.tokens.length, 2);
  assert.ok(!r.tokens.includes(EOS));
  assert.equal(r.completionTokens, 3);
  assert.deepEqual([...r.tokens], expectedTokens(prompt(3), 10, next).tokens);
  assert.equal(s.metrics().freeSlots, 1);
  assert.equal(s.metrics().requests.stop, 1);
  // Another request gets the slot and runs to its length.
  const again = await s.submit({ prompt: prompt(2), maxTokens: 2 }).result;
  assert.equal(again.finishReason, 'length');
  // A custom stop token.
  const other = new Scheduler(new FakeEngine({ next: () => 65 }), { eos: 65 });
  const r2 = await other.submit({ prompt: [BOS], maxTokens: 5 }).result;
  assert.equal(r2.finishReason, 'stop');
  assert.equal(r2.tokens.length, 0);
});

test('requests join and leave the running batch between steps', T, async () => {
  const engine = new FakeEngine({ slots: 4, manual: true });
  const s = new Scheduler(engine, { prefillChunk: 1 });
  const a = s.submit({ prompt: prompt(2, 1), maxTokens: 6 });
  let step = await engine.waitForStep();
  assert.deepEqual(step.map((e) => e.position), [0]);
  // B arrives while A's first step is in flight: it joins at the next step, not this one.
  const b = s.submit({ prompt: prompt(2, 2), maxTokens: 2 });
  assert.equal(b.state, 'queued');
  assert.equal(s.metrics().queueDepth, 1);
  engine.release();
  step = await engine.waitForStep();
  assert.equal(step.length, 2);
  assert.equal(b.state, 'running');
  const aSlot = step.find((e) => e.position === 1)!.slot;
  const bSlot = step.find((e) => e.position === 0)!.slot;
  assert.notEqual(aSlot, bSlot);
  engine.release();
  await engine.releaseUntil(b.result);
  // B needed 3 steps (positions 0..2); after it leaves, A runs alone.
  const rb = await b.result;
  assert.equal(rb.finishReason, 'length');
  await engine.releaseUntil(a.result);
  const sizes = engine.log.map((e) => e.length);
  assert.deepEqual(sizes, [1, 2, 2, 2, 1, 1, 1]);
  assert.deepEqual([...(await a.result).tokens], expectedTokens(prompt(2, 1), 6).tokens);
  assert.deepEqual([...rb.tokens], expectedTokens(prompt(2, 2), 2).tokens);
});

test('a burst submitted in one turn shares the first step; no step exceeds the engine\'s maxBatch', T, async () => {
  const engine = new FakeEngine({ slots: 8, maxBatch: 3, delayMs: 1 });
  const s = new Scheduler(engine);
  assert.equal(s.capacity, 3);
  const gens = Array.from({ length: 10 }, (_, i) => s.submit({ prompt: prompt(1 + (i % 4), i), maxTokens: 1 + (i % 5) }));
  const results = await Promise.all(gens.map((g) => g.result));
  assert.equal(engine.log[0]!.length, 3);
  assert.equal(engine.largestBatch, 3);
  assert.ok(engine.log.every((e) => e.length <= 3));
  results.forEach((r, i) => assert.deepEqual([...r.tokens], expectedTokens(prompt(1 + (i % 4), i), 1 + (i % 5)).tokens, `request ${i}`));
  // Only the first `capacity` slots are used.
  assert.ok(engine.log.flat().every((e) => e.slot < 3));
});

test('fairness: with prefillChunk 1, every step advances every running sequence by one position', T, async () => {
  const engine = new FakeEngine({ slots: 5, delayMs: 0 });
  const s = new Scheduler(engine, { queueLimit: 100, prefillChunk: 1 });
  const asks = Array.from({ length: 40 }, (_, i) => ({ prompt: prompt(1 + ((i * 7) % 9), i), maxTokens: 1 + ((i * 5) % 11) }));
  const results = await Promise.all(asks.map((a) => s.submit(a).result));
  const rs = runs(engine.log);
  assert.equal(rs.length, asks.length);
  for (const r of rs) {
    r.steps.forEach((k, i) => {
      assert.equal(k, r.steps[0]! + i, `slot ${r.slot}: a running sequence was left out of step ${r.steps[0]! + i}`);
      assert.equal(r.positions[i], i);
    });
  }
  // Each sequence was stepped exactly prompt + generated − 1 times (the last token is not fed back).
  const need = results.map((r) => r.promptTokens + r.completionTokens - 1).sort((x, y) => x - y);
  assert.deepEqual(rs.map((r) => r.steps.length).sort((x, y) => x - y), need);
  // While requests wait, every step is full.
  const waitingSteps = engine.log.slice(0, 5);
  assert.ok(waitingSteps.every((e) => e.length === 5));
});

test('chunked prefill: a prompt alone takes ceil(L / prefillChunk) steps to its first token, its chunk consecutive positions of its slot', T, async () => {
  for (const chunk of [32, 7, 3]) {
    const engine = new FakeEngine({ slots: 4, maxBatch: 32 });
    const s = new Scheduler(engine, chunk === 32 ? {} : { prefillChunk: chunk });
    assert.equal(s.prefillChunk, chunk, 'the default is the engine\'s maxBatch');
    const p = prompt(20);
    const r = await s.submit({ prompt: p, maxTokens: 3 }).result;
    assert.deepEqual([...r.tokens], expectedTokens(p, 3).tokens);
    const prefill = Math.ceil(20 / chunk);
    assert.equal(engine.log.length, prefill + 2, `chunks of ${chunk}: ${prefill} prefill steps, then 2 tokens fed back`);
    engine.log.slice(0, prefill).forEach((entries, k) => {
      assert.deepEqual(entries.map((e) => e.position), Array.from({ length: Math.min(chunk, 20 - k * chunk) }, (_, i) => k * chunk + i));
      assert.ok(entries.every((e) => e.slot === entries[0]!.slot && e.token === p[e.position]));
    });
    assert.equal(s.metrics().promptTokens, 20);
  }
});

test('chunked prefill, property: whatever the sizes and chunk, every request gets what it gets alone, every running sequence is in every step, no step exceeds maxBatch', T, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 1, max: 12 }),
      fc.array(fc.record({ length: fc.integer({ min: 1, max: 30 }), maxTokens: fc.integer({ min: 1, max: 6 }), seed: fc.nat(1000) }), { minLength: 1, maxLength: 12 }),
      async (slots, maxBatch, chunkPick, asks) => {
        const engine = new FakeEngine({ slots, maxBatch });
        const chunk = 1 + ((chunkPick - 1) % maxBatch);
        const s = new Scheduler(engine, { queueLimit: 100, prefillChunk: chunk });
        const results = await Promise.all(asks.map((a) => s.submit({ prompt: prompt(a.length, a.seed), maxTokens: a.maxTokens }).result));
        results.forEach((r, i) => assert.deepEqual([...r.tokens], expectedTokens(prompt(asks[i]!.length, asks[i]!.seed), asks[i]!.maxTokens).tokens, `request ${i}`));
        assert.ok(engine.log.every((e) => e.length <= maxBatch), 'no step exceeds maxBatch');
        // A sequence's runs: it is in every step from its first to its last, with at most `chunk` entries in one.
        for (const r of runs(engine.log)) {
          const steps = [...new Set(r.steps)];
          steps.forEach((k, i) => assert.equal(k, steps[0]! + i, `slot ${r.slot}: left out of step ${steps[0]! + i}`));
          r.positions.forEach((pos, i) => assert.equal(pos, i));
          for (const k of steps) assert.ok(r.steps.filter((x) => x === k).length <= chunk);
        }
        assert.equal(s.metrics().promptTokens, asks.reduce((n, a) => n + a.length, 0));
      },
    ),
    { numRuns: 150 },
  );
});

test('the queue limit: beyond the free slots and the queue, submit is refused with QueueFullError', T, async () => {
  const engine = new FakeEngine({ slots: 2, manual: true });
  const s = new Scheduler(engine, { queueLimit: 3 });
  const gens = Array.from({ length: 5 }, (_, i) => s.submit({ prompt: prompt(2, i), maxTokens: 2 }));
  assert.throws(
    () => s.submit({ prompt: prompt(2), maxTokens: 2 }),
    (e: unknown) => e instanceof QueueFullError && e.code === 'ERR_QUEUE_FULL' && e.queueLimit === 3 && /queue is full/.test(e.message),
  );
  assert.equal(s.metrics().refused.queueFull, 1);
  assert.equal(s.metrics().queueDepth, 5);
  await engine.waitForStep();
  assert.equal(s.metrics().queueDepth, 3);
  assert.equal(s.metrics().running, 2);
  await engine.releaseUntil(Promise.all(gens.map((g) => g.result)));
  // Room again.
  const late = s.submit({ prompt: prompt(2), maxTokens: 1 });
  await engine.releaseUntil(late.result);
  // queueLimit 0: only what fits the free slots.
  const tight = new Scheduler(new FakeEngine({ slots: 1, manual: true }), { queueLimit: 0 });
  tight.submit({ prompt: [BOS], maxTokens: 3 });
  assert.throws(() => tight.submit({ prompt: [BOS], maxTokens: 3 }), QueueFullError);
  tight.cancelAll();
});

test('prompt + maxTokens beyond maxPositions is refused up front, never truncated', T, async () => {
  const engine = new FakeEngine({ slots: 1, maxPositions: 16 });
  const s = new Scheduler(engine);
  assert.throws(
    () => s.submit({ prompt: prompt(10), maxTokens: 7 }),
    (e: unknown) => e instanceof ContextLengthError && e.code === 'ERR_CONTEXT_LENGTH' && e.promptTokens === 10 && e.maxTokens === 7 && e.maxPositions === 16 && /context is 16 tokens, but 17/.test(e.message),
  );
  assert.throws(() => s.submit({ prompt: prompt(16), maxTokens: 1 }), ContextLengthError);
  assert.throws(() => s.submit({ prompt: prompt(40), maxTokens: 1 }), ContextLengthError);
  assert.equal(s.metrics().refused.contextLength, 3);
  assert.equal(engine.stepCount, 0);
  // Exactly the limit fits, and every token asked for comes.
  const r = await s.submit({ prompt: prompt(10), maxTokens: 6 }).result;
  assert.equal(r.tokens.length, 6);
  assert.equal(Math.max(...engine.log.flat().map((e) => e.position)), 14);
});

test('cancellation: a running sequence frees its slot at the next step boundary; a queued one leaves at once', T, async () => {
  const engine = new FakeEngine({ slots: 1, manual: true });
  const s = new Scheduler(engine);
  const a = s.submit({ prompt: prompt(3, 1), maxTokens: 50 });
  const b = s.submit({ prompt: prompt(3, 2), maxTokens: 2 });
  const c = s.submit({ prompt: prompt(3, 3), maxTokens: 2 });
  const first = await engine.waitForStep();
  assert.equal(first[0]!.position, 0);
  engine.release();
  await engine.waitForStep();
  // Cancel A while its second step is in flight; cancel C while it waits.
  a.cancel();
  c.cancel();
  assert.equal(c.state, 'finished');
  assert.equal((await c.result).finishReason, 'cancelled');
  assert.equal(s.metrics().queueDepth, 1);
  assert.equal(a.state, 'running');
  engine.release();
  const next = await engine.waitForStep();
  // The slot went to B (position 0), A is gone.
  assert.deepEqual(next.map((e) => e.position), [0]);
  const ra = await a.result;
  assert.equal(ra.finishReason, 'cancelled');
  assert.equal(ra.tokens.length, 0);
  await engine.releaseUntil(b.result);
  assert.equal((await b.result).finishReason, 'length');
  assert.equal(s.metrics().requests.cancelled, 2);
  assert.equal(s.metrics().freeSlots, 1);
});

test('stop(): the consumer ends a generation as a stop (a stop string): its slot freed at the next boundary, counted as a stop, not a cancellation', T, async () => {
  const engine = new FakeEngine({ slots: 1, delayMs: 1 });
  const s = new Scheduler(engine);
  const g = s.submit({ prompt: prompt(3), maxTokens: 100, onToken: () => void (g.tokens().length === 4 && g.stop()) });
  const r = await g.result;
  assert.equal(r.finishReason, 'stop');
  assert.equal(r.tokens.length, 4);
  // Stopped on the token that also reaches maxTokens: still a stop.
  const last = s.submit({ prompt: prompt(3, 2), maxTokens: 2, onToken: () => void (last.tokens().length === 2 && last.stop()) });
  assert.equal((await last.result).finishReason, 'stop');
  // A cancel after the stop changes nothing.
  g.cancel();
  const { stop, cancelled, length } = s.metrics().requests;
  assert.deepEqual({ stop, cancelled, length }, { stop: 2, cancelled: 0, length: 0 });
  assert.equal(s.metrics().freeSlots, 1);
});

test('cancellation through an AbortSignal, and by leaving the token loop early', T, async () => {
  const engine = new FakeEngine({ slots: 2, delayMs: 1 });
  const s = new Scheduler(engine);
  const ac = new AbortController();
  const viaSignal = s.submit({ prompt: prompt(2), maxTokens: 100, signal: ac.signal, onToken: () => void (viaSignal.tokens().length === 3 && ac.abort()) });
  const viaLoop = s.submit({ prompt: prompt(2, 2), maxTokens: 100 });
  let n = 0;
  for await (const _ of viaLoop) if (++n === 2) break;
  const [r1, r2] = await Promise.all([viaSignal.result, viaLoop.result]);
  assert.equal(r1.finishReason, 'cancelled');
  assert.equal(r1.tokens.length, 3);
  assert.equal(r2.finishReason, 'cancelled');
  assert.ok(r2.tokens.length >= 2 && r2.tokens.length < 100);
  // One signal shared by many requests: each removes its listener when it ends.
  const shared = new AbortController();
  await Promise.all(Array.from({ length: 10 }, (_, i) => s.submit({ prompt: prompt(2, i), maxTokens: 2, signal: shared.signal }).result));
  assert.equal(getEventListeners(shared.signal, 'abort').length, 0);
  // An already aborted signal: cancelled before it ever runs.
  const pre = s.submit({ prompt: prompt(2), maxTokens: 5, signal: AbortSignal.abort() });
  assert.equal((await pre.result).finishReason, 'cancelled');
  assert.equal(s.metrics().freeSlots, 2);
  await s.drain();
  const steps = engine.stepCount;
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(engine.stepCount, steps, 'no step runs for cancelled requests');
});

test('the event loop stays free between steps, even with an engine whose steps resolve at once', T, async () => {
  const engine = new FakeEngine({ slots: 1, delayMs: 0 });
  const s = new Scheduler(engine);
  let ticks = 0;
  let on = true;
  const tick = (): void => {
    ticks++;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const timer = new Promise<number>((resolve) => setTimeout(() => resolve(engine.stepCount), 0));
  const r = await s.submit({ prompt: [BOS], maxTokens: 200 }).result;
  on = false;
  assert.equal(r.tokens.length, 200);
  assert.ok(ticks >= 100, `the loop turned ${ticks} times during 200 steps`);
  assert.ok((await timer) < 200, 'a timer fired before the generation ended');
});

test('a failed step ends the sequences in it with EngineStepError and frees their slots; the queue goes on', T, async () => {
  const engine = new FakeEngine({ slots: 2, failSteps: [2], delayMs: 1 });
  const s = new Scheduler(engine);
  const a = s.submit({ prompt: prompt(2, 1), maxTokens: 5 });
  const b = s.submit({ prompt: prompt(2, 2), maxTokens: 5 });
  const c = s.submit({ prompt: prompt(2, 3), maxTokens: 3 });
  for (const g of [a, b]) {
    await assert.rejects(g.result, (e: unknown) => e instanceof EngineStepError && e.code === 'ERR_ENGINE_STEP' && /fails on purpose/.test(e.message) && e.cause instanceof Error);
  }
  const rc = await c.result;
  assert.deepEqual([...rc.tokens], expectedTokens(prompt(2, 3), 3).tokens);
  const m = s.metrics();
  assert.equal(m.failedSteps, 1);
  assert.equal(m.requests.failed, 2);
  assert.equal(m.freeSlots, 2);
  // The token loop throws the same error.
  const bad = new Scheduler(new FakeEngine({ failSteps: [0], delayMs: 1 }));
  const g = bad.submit({ prompt: [BOS], maxTokens: 2 });
  await assert.rejects(async () => {
    for await (const _ of g);
  }, EngineStepError);
});

test('an engine that answers badly fails the step, not the scheduler', T, async () => {
  const wrong = new FakeEngine({ slots: 1 });
  wrong.step = () => Promise.resolve({ tokens: new Int32Array(0) });
  const s = new Scheduler(wrong);
  await assert.rejects(s.submit({ prompt: [BOS], maxTokens: 2 }).result, /answered 0 tokens for 1 entries/);
  const outside = new FakeEngine({ slots: 1, next: () => 999 });
  await assert.rejects(new Scheduler(outside).submit({ prompt: [BOS], maxTokens: 2 }).result, /token 999 .*outside the vocabulary/);
  const throwing = new FakeEngine({ slots: 1 });
  throwing.step = () => {
    throw new Error('synchronous');
  };
  await assert.rejects(new Scheduler(throwing).submit({ prompt: [BOS], maxTokens: 2 }).result, /synchronous/);
  // Not a promise at all: a good answer is taken, a bad one fails the step.
  const plain = new FakeEngine({ slots: 1 });
  plain.step = (() => ({ tokens: Int32Array.of(66) })) as unknown as typeof plain.step;
  assert.deepEqual([...(await new Scheduler(plain).submit({ prompt: [BOS], maxTokens: 2 }).result).tokens], [66, 66]);
  const nothing = new FakeEngine({ slots: 1 });
  nothing.step = (() => undefined) as unknown as typeof nothing.step;
  await assert.rejects(new Scheduler(nothing).submit({ prompt: [BOS], maxTokens: 2 }).result, /answered undefined for 1 entries/);
});

test('an onToken that throws cancels its generation and rejects its result with that exception', T, async () => {
  const s = new Scheduler(new FakeEngine({ slots: 1 }));
  const boom = new Error('boom');
  const g = s.submit({ prompt: [BOS], maxTokens: 10, onToken: () => { throw boom; } });
  await assert.rejects(g.result, (e: unknown) => e === boom);
  assert.equal(s.metrics().freeSlots, 1);
  assert.equal((await s.submit({ prompt: [BOS], maxTokens: 2 }).result).finishReason, 'length');
});

test('the next step is in flight while the tokens of the step before are handed out', T, async () => {
  const engine = new FakeEngine({ slots: 2, delayMs: 1 });
  const s = new Scheduler(engine, { prefillChunk: 1 });
  // Seen by each token's callback: whether the engine was running a step, and which step it was.
  const seen: [boolean, number][] = [];
  const a = s.submit({ prompt: prompt(3, 1), maxTokens: 6, onToken: () => seen.push([engine.inFlight, engine.stepCount]) });
  const b = s.submit({ prompt: prompt(2, 2), maxTokens: 3 });
  const [ra, rb] = await Promise.all([a.result, b.result]);
  assert.deepEqual([...ra.tokens], expectedTokens(prompt(3, 1), 6).tokens);
  assert.deepEqual([...rb.tokens], expectedTokens(prompt(2, 2), 3).tokens);
  assert.equal(seen.length, 6);
  // A's tokens come from steps 3..8 (its prompt takes 3); each but the last is handed out with the
  // following step already launched (stepCount counts the launched steps).
  seen.slice(0, -1).forEach(([inFlight, launched], i) => assert.deepEqual([inFlight, launched], [true, 4 + i], `token ${i}`));
  assert.deepEqual(seen.at(-1), [false, 8]);
});

test('an onToken that throws while the next step runs: that step\'s token is dropped, the slot reused after it, the others go on', T, async () => {
  const engine = new FakeEngine({ slots: 2, manual: true });
  const s = new Scheduler(engine, { prefillChunk: 1 });
  const boom = new Error('boom');
  const other: number[] = [];
  const a = s.submit({ prompt: [BOS], maxTokens: 10, onToken: () => { throw boom; } });
  const b = s.submit({ prompt: [BOS], maxTokens: 4, onToken: (t) => other.push(t) });
  assert.deepEqual((await engine.waitForStep()).length, 2);
  engine.release();
  // A's callback threw as its token was handed out, with step 2 (A and B) already launched.
  await assert.rejects(a.result, (e: unknown) => e === boom);
  assert.equal(engine.inFlight, true);
  assert.equal((await engine.waitForStep()).length, 2);
  // C arrives now; it takes A's slot only after the step in flight.
  const c = s.submit({ prompt: [BOS], maxTokens: 2 });
  assert.equal(c.state, 'queued');
  engine.release();
  await engine.releaseUntil(Promise.all([b.result, c.result]));
  assert.deepEqual(other, expectedTokens([BOS], 4).tokens);
  assert.deepEqual([...(await c.result).tokens], expectedTokens([BOS], 2).tokens);
  const m = s.metrics();
  assert.deepEqual([m.requests.failed, m.requests.length, m.freeSlots], [1, 2, 2]);
});

test('a step that fails after an onToken threw: each generation is settled once, with its own error', T, async () => {
  const engine = new FakeEngine({ slots: 2, failSteps: [1] });
  const s = new Scheduler(engine, { prefillChunk: 1 });
  const boom = new Error('boom');
  const a = s.submit({ prompt: [BOS], maxTokens: 10, onToken: () => { throw boom; } });
  const b = s.submit({ prompt: [BOS], maxTokens: 10 });
  await assert.rejects(a.result, (e: unknown) => e === boom);
  await assert.rejects(b.result, (e: unknown) => e instanceof EngineStepError);
  const m = s.metrics();
  assert.deepEqual([m.requests.failed, m.running, m.freeSlots], [2, 0, 2]);
});

test('submit refuses bad requests with InvalidArgumentError; close() refuses new ones and waits for the accepted', T, async () => {
  const engine = new FakeEngine({ slots: 1, delayMs: 1 });
  const s = new Scheduler(engine);
  const bad: [unknown, RegExp][] = [
    [{ prompt: [], maxTokens: 1 }, /at least one token/],
    [{ prompt: [BOS, 258], maxTokens: 1 }, /prompt\[1\] must be a token in 0\.\.257, got 258/],
    [{ prompt: [1.5], maxTokens: 1 }, /prompt\[0\]/],
    [{ prompt: 'text', maxTokens: 1 }, /prompt must be an array of tokens/],
    [{ prompt: [BOS], maxTokens: 0 }, /maxTokens must be an integer/],
    [{ prompt: [BOS], maxTokens: 2.5 }, /maxTokens must be an integer/],
    [{ prompt: [BOS], maxTokens: 1, temperature: 1 }, /unknown field of request 'temperature'/],
    [{ prompt: [BOS], maxTokens: 1, signal: {} }, /signal must be an AbortSignal/],
    [null, /request must be an object/],
  ];
  for (const [req, message] of bad) {
    assert.throws(() => s.submit(req as never), (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message), String(message));
  }
  assert.equal(s.metrics().refused.invalid, bad.length);
  const running = s.submit({ prompt: [BOS], maxTokens: 5 });
  const queued = s.submit({ prompt: [BOS], maxTokens: 5 });
  let closed = false;
  const closing = s.close().then(() => (closed = true));
  assert.ok(s.closing);
  assert.throws(() => s.submit({ prompt: [BOS], maxTokens: 1 }), (e: unknown) => e instanceof ShuttingDownError && e.code === 'ERR_SHUTTING_DOWN');
  assert.equal(closed, false);
  await closing;
  for (const g of [running, queued]) assert.equal((await g.result).finishReason, 'length');
  assert.equal(s.metrics().refused.shuttingDown, 1);
  assert.throws(() => new Generation(Symbol('x'), 1, 1, 1, () => {}, () => {}), /made by scheduler\.submit/);
  assert.throws(() => new Scheduler({} as never), /must be a DecodeEngine/);
  assert.throws(() => new Scheduler(engine, { queueLimit: -1 }), /queueLimit must be an integer/);
  for (const bad of [0, 1.5, NaN, engine.maxBatch + 1, '2']) {
    assert.throws(() => new Scheduler(engine, { prefillChunk: bad as number }), (e: unknown) => e instanceof InvalidArgumentError && /^new Scheduler: prefillChunk must be an integer in 1\.\./.test((e as Error).message));
  }
});

test('metrics: counters agree with the results; quantiles, rates and the batch histogram', T, async () => {
  const engine = new FakeEngine({ slots: 4, delayMs: 2 });
  const s = new Scheduler(engine);
  const asks = Array.from({ length: 12 }, (_, i) => ({ prompt: prompt(1 + (i % 3), i), maxTokens: 2 + (i % 4) }));
  const results: GenerationResult[] = await Promise.all(asks.map((a) => s.submit(a).result));
  const m = s.metrics();
  assert.equal(m.requests.submitted, 12);
  assert.equal(m.requests.length, 12);
  assert.equal(m.generatedTokens, results.reduce((a, r) => a + r.completionTokens, 0));
  assert.equal(m.promptTokens, results.reduce((a, r) => a + r.promptTokens, 0));
  assert.equal(m.steps, engine.stepCount);
  assert.equal(m.batchSize.count, engine.stepCount);
  assert.equal(m.batchSize.sum, engine.log.reduce((a, e) => a + e.length, 0));
  assert.deepEqual(m.batchSize.buckets.map((b) => b.le), [1, 2, 4]);
  assert.equal(m.batchSize.buckets.at(-1)!.count, m.steps);
  assert.equal(m.batchSize.buckets[0]!.count, engine.log.filter((e) => e.length === 1).length);
  assert.ok(m.batchSize.recentMean > 1);
  assert.ok(m.stepSeconds.p50 >= 0.001 && m.stepSeconds.p99 >= m.stepSeconds.p50, JSON.stringify(m.stepSeconds));
  assert.equal(m.timeToFirstTokenSeconds.count, 12);
  assert.ok(m.timeToFirstTokenSeconds.p50 > 0);
  assert.equal(m.interTokenSeconds.count, m.generatedTokens - 12);
  assert.ok(m.interTokenSeconds.p99 >= m.interTokenSeconds.p50 && m.interTokenSeconds.p50 > 0);
  assert.ok(m.generatedTokensPerSecond > 0 && m.promptTokensPerSecond > 0);
  assert.deepEqual([m.queueDepth, m.running, m.freeSlots, m.capacity, m.queueLimit], [0, 0, 4, 4, 64]);
});
