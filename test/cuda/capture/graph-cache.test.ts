/**
 * `GraphCache` against the stand-in driver (fixtures/stand-in-driver.c: captures, instantiations
 * and graph launches that do nothing, the launches counted): a graph per key captured on first
 * use and replayed after, buckets, overflow, least-recently-used eviction, `prepare`, the counters,
 * and bad input refused with nothing cached. On the device: test/gpu/graph-cache.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DisposedError, GraphCache, InvalidArgumentError, Module, arg, type Stream } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';

const lib = loadStandIn('graph-cache');
const skip = lib === null && 'gcc is absent';
const launches = lib?.counter('graph_launches');

/** A cache whose capture function records one launch per call, and the keys it was called with. */
function cacheOf(options: Record<string, unknown> = {}) {
  const d = Device.get(0);
  const s = d.createStream();
  const k = Module.load(d, '// stand-in: any text\n').function('add2');
  const calls: unknown[] = [];
  const cache = new GraphCache({
    stream: s,
    pool: false,
    warmup: 0,
    capture: (st: Stream, key: unknown) => {
      calls.push(key);
      k.launch(st, { grid: 1, block: 32, args: [arg.i32(Number(Array.isArray(key) ? key[0] : key) || 0)] });
    },
    ...options,
  });
  return { cache, calls, s };
}

test('a graph per key: captured on first use, replayed after; buckets pad numeric keys up', { skip }, () => {
  const { cache, calls } = cacheOf({ buckets: [1, 2, 4, 8] });
  const before = launches!();
  const a = cache.launch(3);
  assert.deepEqual([a.key, a.hit, a.graph !== null], [4, false, true], 'padded to 4, captured');
  const b = cache.launch(4);
  assert.deepEqual([b.key, b.hit], [4, true], 'the same graph');
  assert.equal(b.graph, a.graph);
  cache.launch(1);
  assert.deepEqual(calls, [4, 1], 'the capture function ran once per bucket, with the bucket');
  assert.equal(launches!() - before, 3, 'every launch replayed a graph');
  assert.deepEqual(cache.keys(), [4, 1]);
  assert.equal(cache.resolve(5), 8);
  assert.equal(cache.resolve(9), null);
  assert.equal(cache.has(2), false);
  assert.equal(cache.has(3), true);
  const st = cache.stats;
  assert.deepEqual([st.hits, st.misses, st.captures, st.evictions, st.graphs, st.eager, st.poolReservedBytes], [1, 2, 2, 0, 2, 0, 0]);
  assert.ok(st.captureMs >= 0);
  // A graph the program disposed is captured again on its next use.
  a.graph!.dispose();
  const again = cache.launch(4);
  assert.deepEqual([again.hit, again.graph !== a.graph, calls.length], [false, true, 3]);
  cache.dispose();
  assert.equal(again.graph!.disposed, true, 'disposing the cache disposes its graphs');
});

test('keys: numbers, strings and small tuples, each its own; overflow refused or run eagerly; LRU eviction; prepare', { skip }, () => {
  {
    const { cache, calls } = cacheOf();
    for (const k of [1, '1', [1], [1, 'a'], 1]) cache.launch(k as never);
    assert.deepEqual(calls, [1, '1', [1], [1, 'a']], '1, "1" and [1] are different keys');
    cache.dispose();
  }
  {
    const { cache } = cacheOf({ buckets: [2, 4] });
    assert.throws(() => cache.launch(5), (e: unknown) => e instanceof InvalidArgumentError && /^GraphCache\.launch: key 5 is above the largest bucket \(4\)/.test((e as Error).message));
    assert.equal(cache.stats.graphs, 0);
    cache.dispose();
  }
  {
    const { cache, calls } = cacheOf({ buckets: [2, 4], overflow: 'eager' });
    const before = launches!();
    const r = cache.launch(7);
    assert.deepEqual([r.key, r.graph, r.hit], [7, null, false], 'ran as itself, eagerly');
    assert.deepEqual(calls, [7]);
    assert.equal(launches!(), before, 'no graph launched');
    assert.equal(cache.stats.eager, 1);
    cache.dispose();
  }
  {
    const { cache } = cacheOf({ maxGraphs: 2 });
    const first = cache.launch(1).graph!;
    cache.launch(2);
    cache.launch(1); // 1 is now the most recently used
    cache.launch(3); // evicts 2
    assert.deepEqual(cache.keys(), [1, 3]);
    assert.equal(cache.stats.evictions, 1);
    assert.equal(first.disposed, false);
    cache.dispose();
  }
  {
    const { cache, calls } = cacheOf({ buckets: [8, 16] });
    assert.deepEqual(cache.prepare([3, 9, 16]), [8, 16, 16], 'the keys run as, in the order given');
    assert.deepEqual(calls, [16, 8], 'each bucket captured once, the largest first');
    assert.equal(cache.launch(5).hit, true);
    assert.throws(() => cache.prepare([3, 17]), /GraphCache\.prepare: keys\[1\] \(17\) is above the largest bucket/);
    cache.dispose();
  }
});

test('bad input is refused and caches nothing; a capture that throws leaves no graph', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const bad = (options: unknown, pattern: RegExp): void =>
    assert.throws(() => new GraphCache(options as never), (e: unknown) => e instanceof InvalidArgumentError && /^GraphCache: /.test((e as Error).message) && pattern.test((e as Error).message));
  bad(undefined, /options \{ stream, capture \} are required/);
  bad({ stream: {}, capture: () => {} }, /stream/);
  bad({ stream: s, capture: 3 }, /capture must be a function/);
  bad({ stream: s, capture: () => {}, buckets: [] }, /buckets must be a non-empty array/);
  bad({ stream: s, capture: () => {}, buckets: [4, 2] }, /buckets must ascend/);
  bad({ stream: s, capture: () => {}, buckets: [0] }, /buckets\[0\]/);
  bad({ stream: s, capture: () => {}, overflow: 'grow' }, /overflow/);
  bad({ stream: s, capture: () => {}, maxGraphs: 0 }, /maxGraphs/);
  bad({ stream: s, capture: () => {}, warmup: -1 }, /warmup/);
  bad({ stream: s, capture: () => {}, size: 3 }, /unknown option 'size'/);
  bad({ stream: s, capture: () => {}, pool: 'yes' }, /pool/);
  const { cache } = cacheOf({ buckets: [4] });
  for (const key of [NaN, Infinity, {}, null, [], [1, 2, 3, 4, 5, 6, 7, 8, 9], [{}]]) {
    assert.throws(() => cache.launch(key as never), (e: unknown) => e instanceof InvalidArgumentError && /^GraphCache\.launch: key must be a finite number, a string, or an array/.test((e as Error).message), String(key));
  }
  assert.throws(() => cache.launch('a' as never), /key must be a number: the cache pads numeric keys up to its buckets/);
  assert.equal(cache.stats.graphs, 0);
  const mine = new Error('mine');
  const { cache: throwing, s: ts } = cacheOf({ capture: (_s: Stream, key: unknown) => { if (key === 2) throw mine; } });
  assert.throws(() => throwing.launch(2), (e: unknown) => e === mine, 'the capture function\'s own error');
  assert.deepEqual([throwing.stats.graphs, throwing.stats.captures, ts.isCapturing], [0, 0, false], 'nothing cached, the capture ended');
  assert.equal(throwing.launch(1).hit, false, 'the cache keeps working');
  assert.throws(() => throwing.launch(2), (e: unknown) => e === mine, 'and tries the failed key again');
  assert.deepEqual([throwing.stats.graphs, ts.isCapturing], [1, false]);
  // An async function is refused when the cache is made; a plain function that returns a Promise when it runs.
  bad({ stream: s, capture: async () => {} }, /^GraphCache: capture is an async function: a capture must be synchronous/);
  const { cache: asyncCache } = cacheOf({ capture: () => Promise.resolve() });
  assert.throws(() => asyncCache.launch(1), (e: unknown) => e instanceof InvalidArgumentError && /^GraphCache\.launch: capture returned a Promise/.test((e as Error).message));
  assert.equal(asyncCache.stats.graphs, 0);
  cache.dispose();
  assert.throws(() => cache.launch(1), DisposedError);
  assert.throws(() => cache.prepare([1]), DisposedError);
  cache.dispose();
  for (const c of [throwing, asyncCache]) c.dispose();
});
