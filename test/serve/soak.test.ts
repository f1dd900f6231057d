/**
 * 10,000 requests of mixed sizes (some ending at EOS, some cancelled while waiting or running)
 * through the scheduler and the fake engine: every result right, the scheduler's maps empty and
 * every slot free afterwards, the heap flat.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { BOS, EOS } from '../../src/llm/tokenizer.js';
import { Scheduler, type GenerationResult } from '../../src/serve/scheduler.js';
import { FakeEngine, defaultNext, expectedTokens } from './fake-engine.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** EOS now and then, else the default byte. */
const next = (e: DecodeEntry): number => ((e.token * 7 + e.position * 13) % 89 === 0 ? EOS : defaultNext(e));

interface Tally {
  ok: number;
  stop: number;
  cancelled: number;
  wrong: number;
}

/** Submits `n` requests (seeded sizes), waits for all, checks each against the model alone. */
async function wave(s: Scheduler, n: number, seed: number, tally: Tally): Promise<void> {
  const pending: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const k = seed * 100_003 + i;
    const len = 1 + (k % 37);
    const prompt = [BOS, ...Array.from({ length: len - 1 }, (_, j) => (k * 31 + j * 7) % 256)];
    const maxTokens = 1 + ((k * 13) % 48);
    const cancelAfter = k % 10 === 3 ? (k >> 4) % 5 : -1; // 10 %: cancelled after 0–4 tokens
    const ac = cancelAfter >= 0 ? new AbortController() : undefined;
    let got = 0;
    const gen = s.submit({
      prompt,
      maxTokens,
      ...(ac ? { signal: ac.signal, onToken: () => void (++got === cancelAfter && ac.abort()) } : {}),
    });
    if (cancelAfter === 0) gen.cancel(); // while it waits
    pending.push(
      gen.result.then((r: GenerationResult) => {
        if (r.finishReason === 'cancelled') {
          tally.cancelled++;
          return;
        }
        const want = expectedTokens(prompt, maxTokens, next);
        if (want.finish !== r.finishReason || want.tokens.length !== r.tokens.length || want.tokens.some((t, j) => t !== r.tokens[j])) tally.wrong++;
        else if (r.finishReason === 'stop') tally.stop++;
        else tally.ok++;
      }),
    );
  }
  await Promise.all(pending);
}

test('10,000 mixed requests: right results, empty maps, free slots, a flat heap', { timeout: 120_000 }, async () => {
  const engine = new FakeEngine({ slots: 64, maxPositions: 128, delayMs: 0, next, log: false });
  const s = new Scheduler(engine, { queueLimit: 10_000 });
  const warm: Tally = { ok: 0, stop: 0, cancelled: 0, wrong: 0 };
  // The warm-up is as large as a wave, so the maps and arrays reach their size before the first measure.
  await wave(s, 5000, 1, warm);
  gc();
  const before = process.memoryUsage().heapUsed;
  const tally: Tally = { ok: 0, stop: 0, cancelled: 0, wrong: 0 };
  await wave(s, 5000, 2, tally);
  await wave(s, 5000, 3, tally);
  gc();
  const after = process.memoryUsage().heapUsed;
  assert.equal(tally.wrong, 0);
  assert.equal(tally.ok + tally.stop + tally.cancelled, 10_000);
  assert.ok(tally.stop > 100, `${tally.stop} ended at EOS`);
  assert.ok(tally.cancelled > 500, `${tally.cancelled} cancelled`);
  const m = s.metrics();
  assert.equal(m.queueDepth, 0);
  assert.equal(m.running, 0);
  assert.equal(m.freeSlots, 64);
  assert.equal(m.requests.submitted, 15_000);
  assert.equal(m.requests.stop + m.requests.length + m.requests.cancelled, 15_000);
  assert.ok(engine.largestBatch === 64);
  const growth = after - before;
  assert.ok(growth < 1024 * 1024, `heap grew by ${(growth / 1048576).toFixed(2)} MiB over 10,000 requests`);
});
