/** The fixed-size statistics, the Prometheus writer and the event-stream reader and writer. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrometheusText } from '../../src/serve/prometheus.js';
import { SSE_DONE, readSse, sseEvent } from '../../src/serve/sse.js';
import { RateWindow, SampleRing, nearestRank } from '../../src/serve/stats.js';

test('nearestRank: the smallest sample with at least q of them at or below it', () => {
  const s = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  assert.equal(nearestRank(s, 0.5), 5);
  assert.equal(nearestRank(s, 0.99), 10);
  assert.equal(nearestRank(s, 0.9), 9);
  assert.equal(nearestRank(s, 0), 1);
  assert.equal(nearestRank(s, 1), 10);
  assert.equal(nearestRank([7], 0.5), 7);
  assert.equal(nearestRank([], 0.5), 0);
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(nearestRank(hundred, 0.99), 99);
  assert.equal(nearestRank(hundred, 0.5), 50);
});

test('SampleRing keeps the latest samples only; mean and quantiles over them', () => {
  const r = new SampleRing(4);
  assert.deepEqual(r.quantiles([0.5, 0.99]), [0, 0]);
  assert.equal(r.mean(), 0);
  for (const v of [100, 100, 100, 1, 2, 3, 4]) r.push(v);
  assert.equal(r.count, 4);
  assert.equal(r.mean(), 2.5);
  assert.deepEqual(r.quantiles([0.5, 0.99]), [2, 4]);
});

test('RateWindow: a count per second over the last seconds, from the start while shorter', () => {
  const w = new RateWindow(10, 0);
  w.add(100, 5);
  w.add(900, 5);
  assert.equal(w.rate(1000), 10);
  w.add(1500, 10);
  assert.equal(w.rate(2000), 10);
  // Full window: the buckets of seconds 3..12 at 12.5 s, and nothing older.
  const x = new RateWindow(10, 0);
  for (let s = 0; s < 13; s++) x.add(s * 1000 + 500, 100);
  assert.equal(x.rate(12_500), 1000 / 9.5);
  assert.equal(x.rate(40_000), 0);
});

test('PrometheusText: families with HELP and TYPE, escaped labels, summaries and histograms', () => {
  const text = new PrometheusText()
    .counter('a_total', 'A counter\nwith two lines', 3)
    .gauge('g', 'A gauge', [[{ name: 'say "hi"\\\n' }, 1.5]])
    .summary('s_seconds', 'A summary', { p50: 0.1, p99: 0.2, sum: 3, count: 20 })
    .histogram('h', 'A histogram', [{ le: 1, count: 2 }, { le: 4, count: 5 }], 9, 6)
    .toString();
  assert.equal(
    text,
    [
      '# HELP a_total A counter\\nwith two lines',
      '# TYPE a_total counter',
      'a_total 3',
      '# HELP g A gauge',
      '# TYPE g gauge',
      'g{name="say \\"hi\\"\\\\\\n"} 1.5',
      '# HELP s_seconds A summary',
      '# TYPE s_seconds summary',
      's_seconds{quantile="0.5"} 0.1',
      's_seconds{quantile="0.99"} 0.2',
      's_seconds_sum 3',
      's_seconds_count 20',
      '# HELP h A histogram',
      '# TYPE h histogram',
      'h_bucket{le="1"} 2',
      'h_bucket{le="4"} 5',
      'h_bucket{le="+Inf"} 6',
      'h_sum 9',
      'h_count 6',
      '',
    ].join('\n'),
  );
});

async function* bytes(parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield new TextEncoder().encode(p);
}

async function events(parts: string[]): Promise<string[]> {
  const out: string[] = [];
  for await (const d of readSse(bytes(parts))) out.push(d);
  return out;
}

test('sseEvent and readSse: events split anywhere, CRLF, multi-line data, comments, a last event without its blank line', async () => {
  assert.equal(sseEvent({ a: 1 }), 'data: {"a":1}\n\n');
  assert.equal(sseEvent('two\nlines'), 'data: two\ndata: lines\n\n');
  const stream = sseEvent({ text: 'é' }) + sseEvent('two\nlines') + sseEvent(SSE_DONE);
  // Split at every byte boundary, even inside the two bytes of é.
  const enc = new TextEncoder().encode(stream);
  const one = async function* (): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < enc.length; i++) yield enc.subarray(i, i + 1);
  };
  const got: string[] = [];
  for await (const d of readSse(one())) got.push(d);
  assert.deepEqual(got, ['{"text":"é"}', 'two\nlines', SSE_DONE]);
  assert.deepEqual(await events([': comment\r\n', 'event: x\r\ndata: a\r', '\n\r\n', 'data:b\n', 'id: 3\n\n', 'data: c']), ['a', 'b', 'c']);
  assert.deepEqual(await events(['\n\n', 'retry: 5\n\n']), []);
  // A CRLF split between chunks is one line end, not two (which would end the event early).
  assert.deepEqual(await events(['data: a\r', '\ndata: b\r\n\r\n']), ['a\nb']);
});
