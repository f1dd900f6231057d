/**
 * Sampling through the scheduler and the HTTP server over the fake engine: a sampled request draws
 * its tokens from the step's logits with its own seeded sampler (the same tokens whatever it is
 * batched with), logits are asked for only when a sampled sequence is due a token, greedy requests
 * are untouched, and an engine that answers without logits fails the step.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { encode } from '../../src/llm/tokenizer.js';
import { Sampler, checkSampling } from '../../src/serve/sampling.js';
import { Scheduler } from '../../src/serve/scheduler.js';
import { EngineStepError } from '../../src/serve/errors.js';
import { FakeEngine, defaultNext, expectedTokens, fakeLogits } from './fake-engine.js';
import { complete, withServer } from './helpers.js';

const T = { timeout: 30_000 };

/** What a sampled request generates alone: the fake's logits fed to the same sampler (the EOS never comes: the fake's greedy token is a byte and the sampled ones stay in 0..vocab). */
function expectedSampled(prompt: ArrayLike<number>, maxTokens: number, p: { temperature: number; seed: number; topK?: number; topP?: number }, vocab: number): number[] {
  const s = new Sampler(checkSampling('t', p)!);
  const out: number[] = [];
  let token = prompt[0]!;
  for (let pos = 0; out.length < maxTokens; pos++) {
    token = pos < prompt.length ? prompt[pos]! : token;
    const e: DecodeEntry = { slot: 0, token, position: pos };
    if (pos < prompt.length - 1) continue;
    const t = s.sample(fakeLogits(e, defaultNext(e), vocab), 0, vocab);
    if (t === 257) break;
    out.push(t);
    token = t;
  }
  return out;
}

test('a sampled request: its own seeded draws, whatever it is batched with; logits only when a sampled sequence is due a token', T, async () => {
  const engine = new FakeEngine({ slots: 4 });
  const s = new Scheduler(engine);
  const vocab = engine.config.vocab;
  const sampling = { temperature: 1.5, seed: 42 };
  const prompt = encode('Hello');
  const alone = await s.submit({ prompt, maxTokens: 12, sampling }).result;
  assert.equal(engine.logitSteps, 12, 'one logits step per generated token, none while prefilling');
  const want = expectedSampled(prompt, 12, sampling, vocab);
  assert.deepEqual([...alone.tokens], want);
  assert.notDeepEqual([...alone.tokens], expectedTokens(prompt, 12).tokens, 'at this temperature it leaves the greedy path');
  // Batched with greedy requests: the same tokens; the greedy ones still greedy.
  const g1 = s.submit({ prompt: encode('abc'), maxTokens: 20 });
  const again = s.submit({ prompt, maxTokens: 12, sampling });
  const g2 = s.submit({ prompt: encode('a much longer prompt'), maxTokens: 5 });
  assert.deepEqual([...(await again.result).tokens], want);
  assert.deepEqual([...(await g1.result).tokens], expectedTokens(encode('abc'), 20).tokens);
  assert.deepEqual([...(await g2.result).tokens], expectedTokens(encode('a much longer prompt'), 5).tokens);
  // Greedy alone: no logits cross.
  const before = engine.logitSteps;
  await s.submit({ prompt, maxTokens: 4 }).result;
  assert.equal(engine.logitSteps, before);
  // A bad sampling refusal names submit and changes nothing.
  assert.throws(() => s.submit({ prompt, maxTokens: 4, sampling: { temperature: 3 } }), /^InvalidArgumentError: Scheduler\.submit: temperature must be a number from 0 to 2/);
  assert.equal(s.metrics().queueDepth + s.metrics().running, 0);
});

test('an engine that answers a sampled step without logits fails that step with a clear error', T, async () => {
  const engine = new FakeEngine({ slots: 2 });
  // The fake's step without its options: tokens only.
  const s = new Scheduler({ config: engine.config, slots: 2, maxBatch: 2, maxPositions: engine.maxPositions, name: 'no logits', step: (e: readonly DecodeEntry[]) => engine.step(e), stats: () => ({}), dispose() {}, [Symbol.dispose]() {} });
  const r = s.submit({ prompt: encode('x'), maxTokens: 3, sampling: { temperature: 1, seed: 1 } }).result;
  await assert.rejects(r, (e: unknown) => e instanceof EngineStepError && /for the logits of 2 entries \(a Float32Array of 2 × 258 expected\)/.test((e as Error).message));
});

test('HTTP: temperature, top_p, top_k and seed reach the sampler; a seeded request repeats; null means not given', T, async () => {
  await withServer({ engine: { slots: 4 } }, async ({ url, engine }) => {
    const body = { prompt: 'Hi there', max_tokens: 10, temperature: 1.2, top_p: 0.95, top_k: 50, seed: 7 };
    const a = (await (await complete(url, body)).json()) as { choices: { text: string }[] };
    const b = (await (await complete(url, { ...body, stream: false })).json()) as { choices: { text: string }[] };
    assert.equal(a.choices[0]!.text, b.choices[0]!.text);
    const want = expectedSampled(encode('Hi there'), 10, { temperature: 1.2, topP: 0.95, topK: 50, seed: 7 }, engine.config.vocab);
    assert.ok(a.choices[0]!.text.length > 0);
    assert.equal(a.choices[0]!.text, new TextDecoder().decode(Uint8Array.from(want.filter((t) => t < 256))));
    const greedy = (await (await complete(url, { prompt: 'Hi there', max_tokens: 10, temperature: null, seed: null })).json()) as { choices: { text: string }[] };
    assert.equal(greedy.choices[0]!.text, new TextDecoder().decode(Uint8Array.from(expectedTokens(encode('Hi there'), 10).tokens)));
  });
});
