/** bench/serve-load.ts against a server over the fake engine: the figures add up, refusals are counted, the bounds hold. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatLoadReport, loadTest, parseLoadArgs } from '../../bench/serve-load.js';
import { defaultRequests, formatRounds, interleavedLoad, pairedRatios, summarizeRounds } from '../../bench/serve-rounds.js';
import { closedPort, withServer } from './helpers.js';

const T = { timeout: 30_000 };

test('loadTest: every request streams to the end; tokens, rates and percentiles add up; batches form', T, async () => {
  await withServer({ engine: { slots: 8, delayMs: 1 } }, async ({ url, engine }) => {
    const reports = await loadTest({ url, concurrency: [1, 4], requests: 8, maxTokens: 5 });
    assert.equal(reports.length, 2);
    for (const r of reports) {
      assert.equal(r.ok, 8);
      assert.deepEqual(r.errors, {});
      assert.equal(r.completionTokens, 40);
      assert.ok(r.tokensPerSecond > 0 && r.requestsPerSecond > 0);
      assert.ok(r.timeToFirstTokenMs.p50 > 0 && r.timeToFirstTokenMs.p99 >= r.timeToFirstTokenMs.p50);
      assert.ok(r.interTokenMs.p50 > 0 && r.interTokenMs.p99 >= r.interTokenMs.p50);
      assert.ok(r.latencyMs.p50 >= r.timeToFirstTokenMs.p50);
    }
    assert.ok(engine.largestBatch > 1, 'the concurrent level shared steps');
    const table = formatLoadReport(reports);
    assert.match(table, /^\| concurrency \|/);
    assert.match(table, /\n\| 4 \| 8 \/ 8 \| [\d.]+ \|.*\| none \|\n$/);
  });
});

test('loadTest: refusals are counted by status; only loopback hosts; bounded counts', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 }, scheduler: { queueLimit: 0 } }, async ({ url }) => {
    const [r] = await loadTest({ url, concurrency: [4], requests: 8, maxTokens: 10 });
    assert.ok(r!.errors['429']! > 0, JSON.stringify(r!.errors));
    assert.equal(r!.ok + r!.errors['429']!, 8);
  });
  await assert.rejects(loadTest({ url: 'http://example.com:8000' }), /only a server on this machine/);
  await assert.rejects(loadTest({ url: 'http://127.0.0.1:1', concurrency: [1000] }), /concurrency must be an integer from 1 to 256/);
  await assert.rejects(loadTest({ url: 'http://127.0.0.1:1', requests: 0 }), /requests must be an integer from 1 to 10000/);
  // Nothing listening: network errors, not a crash.
  const [down] = await loadTest({ url: `http://127.0.0.1:${await closedPort()}`, concurrency: [2], requests: 2 });
  assert.deepEqual(down!.errors, { network: 2 });
});

test('parseLoadArgs: the script\'s options', () => {
  assert.deepEqual(parseLoadArgs(['--url', 'http://localhost:9', '--concurrency', '1,8', '--requests', '5', '--max-tokens', '3', '--timeout', '2', '--prompt', 'a', '--prompt', 'b', '--json']), {
    url: 'http://localhost:9',
    concurrency: [1, 8],
    requests: 5,
    maxTokens: 3,
    timeoutMs: 2000,
    prompts: ['a', 'b'],
    json: true,
  });
  assert.throws(() => parseLoadArgs(['--requests', 'x']), /--requests must be a whole number/);
  assert.throws(() => parseLoadArgs(['--concurrency', '1,,2']), /comma-separated/);
  assert.throws(() => parseLoadArgs(['--what']), /unknown option '--what'/);
  assert.throws(() => parseLoadArgs(['--url']), /--url needs a value/);
});

test('interleavedLoad: every target at every level each round, the order rotated; summaries and paired ratios from those rounds', T, async () => {
  await withServer({ engine: { slots: 4, delayMs: 1 } }, async (fast) => {
    await withServer({ engine: { slots: 4, delayMs: 4 } }, async (slow) => {
      const targets = [{ name: 'fast', url: fast.url }, { name: 'slow', url: slow.url }];
      const result = await interleavedLoad({ targets, concurrency: [1, 4], rounds: 3, requests: (c) => 2 * c, maxTokens: 4 });
      assert.deepEqual(Object.keys(result), ['fast', 'slow']);
      for (const name of ['fast', 'slow']) {
        assert.deepEqual(result[name]!.map((rounds) => rounds.length), [3, 3]);
        assert.deepEqual(result[name]!.map((rounds) => rounds.map((r) => [r.concurrency, r.requests, r.ok])), [[[1, 2, 2], [1, 2, 2], [1, 2, 2]], [[4, 8, 8], [4, 8, 8], [4, 8, 8]]]);
      }
      const s = summarizeRounds(result);
      const t = s['fast']![1]!.tokensPerSecond;
      assert.ok(t.lo <= t.median && t.median <= t.hi && t.lo > 0);
      assert.equal(s['slow']![0]!.failed, 0);
      const r = pairedRatios(result, 'fast', 'slow');
      assert.equal(r.length, 2);
      const byRound = result['fast']![1]!.map((x, i) => x.tokensPerSecond / result['slow']![1]![i]!.tokensPerSecond);
      assert.equal(r[1]!.lo, Math.min(...byRound));
      assert.equal(r[1]!.hi, Math.max(...byRound));
      // 1 ms steps against 4 ms: the fast server is ahead in every round.
      assert.ok(r[1]!.lo > 1, JSON.stringify(r));
      const table = formatRounds(result, [['fast', 'slow'], ['fast', 'missing']]);
      assert.match(table, /^3 interleaved rounds/);
      assert.match(table, /\n\| slow \| 4 \| [\d.]+ \[[\d.]+–[\d.]+\] \|/);
      assert.match(table, /fast \/ slow, tokens\/s, per round: c=1 [\d.]+× \[[\d.]+–[\d.]+\], c=4 /);
      assert.doesNotMatch(table, /missing/);
    });
  });
});

test('defaultRequests: at least 64 a level, 4 a client', () => {
  assert.deepEqual([1, 16, 64, 256].map(defaultRequests), [64, 64, 256, 1024]);
});
