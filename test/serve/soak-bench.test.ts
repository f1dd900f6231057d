/** bench/serve-soak.ts against a server over the fake engine: the mix's outcomes, the memory samples, the verdict, the bounds. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatSoakReport, metricValue, soak } from '../../bench/serve-soak.js';
import { withServer } from './helpers.js';

const T = { timeout: 60_000 };

test('soak: every kind of request ends as it should (streamed, plain, dropped, refused); slots drain; samples read /metrics', T, async () => {
  await withServer({ engine: { slots: 8, delayMs: 1 }, scheduler: { queueLimit: 64 } }, async ({ url }) => {
    const r = await soak({ url, requests: 200, concurrency: 16, sampleEvery: 50, seed: 3 });
    assert.equal(r.unexpected, 0, JSON.stringify(r.outcomes));
    assert.equal((r.outcomes['ok'] ?? 0) + (r.outcomes['dropped'] ?? 0) + (r.outcomes['refused'] ?? 0), 200);
    assert.ok((r.outcomes['dropped'] ?? 0) > 0 && (r.outcomes['refused'] ?? 0) > 0, 'the mix has every kind');
    assert.ok(r.drained);
    // 0, 50, 100, 150 and the end.
    assert.deepEqual(r.samples.map((s) => s.afterRequests), [0, 50, 100, 150, 200]);
    for (const s of r.samples) assert.ok(s.rssBytes > 0 && s.heapUsedBytes > 0, JSON.stringify(s));
    assert.equal(r.samples[0]!.deviceUsedBytes, null, 'the fake engine reports no device');
    assert.ok(r.flat.rss && r.flat.heap);
    assert.equal(r.flat.device, null);
    assert.match(formatSoakReport(r), /^200 requests in [\d.]+ s: .*not as expected: 0; drained: true\n/);
  });
});

test('soak: refusals it did not ask for count as unexpected; only loopback; bounded counts', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 }, scheduler: { queueLimit: 0 } }, async ({ url }) => {
    const r = await soak({ url, requests: 40, concurrency: 8, seed: 1 });
    assert.ok((r.outcomes['429'] ?? 0) > 0 && r.unexpected >= r.outcomes['429']!, JSON.stringify(r.outcomes));
  });
  await assert.rejects(soak({ url: 'http://example.com:1', requests: 1, concurrency: 1 }), /only a server on this machine/);
  await assert.rejects(soak({ url: 'http://127.0.0.1:1', requests: 0, concurrency: 1 }), /requests must be an integer/);
  await assert.rejects(soak({ url: 'http://127.0.0.1:1', requests: 1, concurrency: 300 }), /concurrency must be an integer/);
});

test('metricValue: a plain sample, a labelled one, absent names', () => {
  const text = '# HELP a x\na 5\nab 7\nc{stat="x"} 2.5\nc{stat="y"} 3\n';
  assert.equal(metricValue(text, 'a'), 5);
  assert.equal(metricValue(text, 'ab'), 7);
  assert.equal(metricValue(text, 'c', 'stat="y"'), 3);
  assert.equal(metricValue(text, 'c'), null);
  assert.equal(metricValue(text, 'd'), null);
});
