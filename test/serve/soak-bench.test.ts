/** bench/serve-soak.ts against a server over the fake engine: the mix's outcomes, the memory samples, the verdict, the bounds. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatSoakReport, judgeFlat, metricValue, soak, type MemorySample } from '../../bench/serve-soak.js';
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

test('judgeFlat: a heap that saws between collections is flat; a rising floor, a growing resident set or device memory is not', () => {
  const MiB = 1 << 20;
  const at = (i: number, heapMiB: number, rssMiB = 300, deviceMiB: number | null = 1000): MemorySample => ({
    afterRequests: i * 500, rssBytes: rssMiB * MiB, heapUsedBytes: heapMiB * MiB, externalBytes: 0, deviceUsedBytes: deviceMiB === null ? null : deviceMiB * MiB, running: 0, queueDepth: 0,
  });
  // The H200 run's shape: garbage piles up to 47 MiB before a collection; the floor stays near 20.
  const saw = [35, 26, 27, 20, 25, 29, 28, 30, 32, 37, 48].map((h, i) => at(i, h));
  assert.deepEqual(judgeFlat(saw, 500), { rss: true, heap: true, device: true });
  const leak = [20, 20, 22, 24, 27, 30, 33, 36, 40, 44, 48].map((h, i) => at(i, h));
  assert.equal(judgeFlat(leak, 500).heap, false);
  const rss = [300, 300, 310, 320, 330, 340, 350, 360, 370, 380, 390].map((r, i) => at(i, 20, r));
  assert.equal(judgeFlat(rss, 500).rss, false);
  const device = [1000, 1000, 1000, 1002].map((d, i) => at(i, 20, 300, d));
  assert.equal(judgeFlat(device, 500).device, false);
  assert.equal(judgeFlat([at(0, 20, 300, null), at(1, 20, 300, null)], 500).device, null);
});
