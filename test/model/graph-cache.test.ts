/**
 * `ModelGraphCache`: the model's cache of recorded graphs, with GraphCache's keys, buckets and
 * least-recently-used eviction; checked by hand and, for the eviction order, against a simple
 * reference with fast-check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ComputeGraph, GraphError, InvalidArgumentError, ModelGraphCache, type StreamCapture, type StreamId } from '../../src/index.js';
import { refused } from '../support/refused.js';

/** A cache recording one kernel per key (grid = the key, or its first element), and the keys recorded. */
function cacheOf(options: Record<string, unknown> = {}) {
  const recorded: unknown[] = [];
  const cache = new ModelGraphCache({
    record: (cap: StreamCapture, s: StreamId, key: unknown) => {
      recorded.push(key);
      const n = Number(Array.isArray(key) ? key[0] : key);
      cap.recordKernel(s, 'step', Number.isFinite(n) && n >= 1 ? n : 1, 128, 0);
    },
    ...options,
  });
  return { cache, recorded };
}

test('one recorded graph per bucket, replayed from the cache after; overflow refused or recorded and not kept', () => {
  const { cache, recorded } = cacheOf({ buckets: [8, 16, 32] });
  const a = cache.graph(5);
  assert.deepEqual([a.key, a.hit, a.eager], [8, false, false]);
  const first = a.graph.nodes()[0]!;
  assert.equal(first.kind === 'kernel' ? first.grid[0] : null, 8, 'recorded for the bucket');
  const b = cache.graph(8);
  assert.equal(b.graph, a.graph);
  assert.equal(b.hit, true);
  cache.graph(17);
  assert.deepEqual(recorded, [8, 32]);
  assert.deepEqual(cache.stats, { hits: 1, misses: 2, recordings: 2, evictions: 0, eager: 0, graphs: 2 });
  assert.throws(() => cache.graph(33), (e: unknown) => e instanceof InvalidArgumentError && /^ModelGraphCache\.graph: key 33 is above the largest bucket \(32\)/.test((e as Error).message));
  const eager = cacheOf({ buckets: [8], overflow: 'eager' });
  const e = eager.cache.graph(9);
  assert.deepEqual([e.key, e.eager, eager.cache.stats.graphs], [9, true, 0]);
  assert.deepEqual(cache.prepare([1, 16, 30]), [8, 16, 32]);
  assert.deepEqual(recorded, [8, 32, 16]);
  // What the cache holds round-trips through the graph file format.
  for (const [key, graph] of cache.entries()) {
    assert.equal(ComputeGraph.fromJSON(JSON.stringify(graph.toJSON())).nodeCount(), graph.nodeCount(), String(key));
  }
});

test('bad input is refused; a recording that throws, or leaves a stream unjoined, caches nothing', () => {
  const bad = (options: unknown, pattern: RegExp): void =>
    assert.throws(() => new ModelGraphCache(options as never), (e: unknown) => e instanceof InvalidArgumentError && /^ModelGraphCache: /.test((e as Error).message) && pattern.test((e as Error).message));
  bad(undefined, /options \{ record \} are required/);
  bad({ record: 1 }, /record must be a function/);
  bad({ record: () => {}, buckets: [2, 2] }, /buckets must ascend/);
  bad({ record: () => {}, overflow: 'no' }, /overflow/);
  bad({ record: () => {}, maxGraphs: 1.5 }, /maxGraphs/);
  bad({ record: () => {}, pool: true }, /unknown option 'pool'/);
  const { cache } = cacheOf();
  for (const key of [NaN, {}, [], [1, 2, 3, 4, 5, 6, 7, 8, 9], undefined]) {
    assert.throws(() => cache.graph(key as never), (e: unknown) => e instanceof InvalidArgumentError && /^ModelGraphCache\.graph: key must be a finite number, a string, or an array/.test((e as Error).message));
  }
  const mine = new Error('mine');
  const throwing = new ModelGraphCache({ record: () => { throw mine; } });
  assert.throws(() => throwing.graph(1), (e: unknown) => e === mine);
  const unjoined = new ModelGraphCache({
    record: (cap, s) => {
      const side = 1 as StreamId;
      cap.beginCapture(side);
      cap.recordKernel(side, 'stray', 1, 32, 0);
      cap.recordKernel(s, 'main', 1, 32, 0);
    },
  });
  assert.throws(() => unjoined.graph(1));
  assert.deepEqual([throwing.stats.graphs, unjoined.stats.graphs], [0, 0]);
});

test('refused recordings name the cache call and count nothing: an async record, a promise, the key it records, its own end, unjoined work', async () => {
  refused(() => new ModelGraphCache({ record: async () => {} }), InvalidArgumentError, 'ModelGraphCache', /record is an async function: a recording must be synchronous/);
  const rejections: unknown[] = [];
  const onRejection = (e: unknown): void => void rejections.push(e);
  process.on('unhandledRejection', onRejection);
  try {
    // A record that returns a promise went on recording into the capture the cache had ended: the
    // graph was cached half-recorded, and the rest threw as an unhandled rejection.
    const later = new ModelGraphCache({
      record: (cap, s) => {
        cap.recordKernel(s, 'before', 1, 32, 0);
        return (async () => {
          await null;
          cap.recordKernel(s, 'after', 1, 32, 0);
        })() as unknown as void;
      },
    });
    refused(() => later.graph(1), InvalidArgumentError, 'ModelGraphCache.graph', /record returned a promise for key 1/);
    refused(() => later.prepare([2]), InvalidArgumentError, 'ModelGraphCache.prepare', /record returned a promise for key 2/);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(rejections, []);
    assert.deepEqual(later.stats, { hits: 0, misses: 0, recordings: 0, evictions: 0, eager: 0, graphs: 0 });
  } finally {
    process.off('unhandledRejection', onRejection);
  }
  // Asking for the key being recorded recursed until the stack overflowed; another key is fine.
  const nested: ModelGraphCache<number> = new ModelGraphCache<number>({
    record: (cap, s, key) => {
      if (key > 1) cap.recordChildGraph(s, nested.graph(key === 3 ? 3 : key - 1).graph);
      else cap.recordKernel(s, 'leaf', 1, 32, 0);
    },
  });
  refused(() => nested.graph(3), GraphError, 'ModelGraphCache.graph', /key 3 is being recorded: its record function asked the cache for the key it is recording/);
  assert.equal(nested.graph(2).graph.nodeCount(), 1);
  assert.deepEqual(nested.entries().map(([k]) => k), [1, 2]);
  const selfEnded = new ModelGraphCache({ record: (cap, s) => void cap.endCapture(s) });
  refused(() => selfEnded.graph('x'), GraphError, 'ModelGraphCache.graph', /record ended its own capture of key "x"; the cache ends it when record returns/);
  const unjoined = new ModelGraphCache({
    record: (cap, s) => {
      const side = 1 as StreamId;
      cap.recordEvent(s, 0 as never);
      cap.waitEvent(side, 0 as never);
      cap.recordKernel(side, 'stray', 1, 32, 0);
    },
  });
  refused(() => unjoined.graph([4, 'f16']), GraphError, 'ModelGraphCache.graph', /^ModelGraphCache\.graph: key \[4, "f16"\]: stream 1 has work not joined back into stream 0/);
  assert.deepEqual([selfEnded.stats.misses, unjoined.stats.misses, unjoined.stats.recordings], [0, 0, 0], 'a failed recording is no miss');
});

test('keys, prepare lists and buckets with holes are refused by index; a tuple key is the caller\'s no more', () => {
  const { cache, recorded } = cacheOf();
  // `every`, `map` and `forEach` skip holes: [1, , 2] ran as [1, null, 2], and prepare recorded the keys before the hole.
  refused(() => cache.graph([1, , 2] as never), InvalidArgumentError, 'ModelGraphCache.graph', /key must be a finite number, a string, or an array of 1 to 8 of them/);
  refused(() => cache.prepare([1, , 2] as never), InvalidArgumentError, 'ModelGraphCache.prepare', /keys\[1\] must be a finite number/);
  assert.deepEqual([recorded, cache.stats.recordings], [[], 0]);
  refused(() => new ModelGraphCache({ record: () => {}, buckets: [1, , 3] as never }), InvalidArgumentError, 'ModelGraphCache', /buckets\[1\] must be an integer in 1\.\./);
  const key = ['prefill', 8];
  const entry = cache.graph(key);
  key[0] = 'decode';
  assert.deepEqual(cache.entries().map(([k]) => k), [['prefill', 8]], 'the cache keeps the key its graph was recorded for');
  assert.deepEqual(entry.key, ['prefill', 8]);
  assert.equal(cache.graph(['prefill', 8]).hit, true);
  assert.deepEqual(recorded, [['prefill', 8]]);
});

test('eviction keeps the most recently used graphs, as a reference LRU does', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.array(fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constantFrom('a', 'b')), { maxLength: 40 }), (max, keys) => {
      const { cache, recorded } = cacheOf({ maxGraphs: max });
      const ref: string[] = [];
      let misses = 0;
      for (const k of keys) {
        const text = typeof k === 'number' ? `n${k}` : `s${k}`;
        const at = ref.indexOf(text);
        if (at >= 0) ref.splice(at, 1);
        else misses++;
        ref.push(text);
        if (ref.length > max) ref.shift();
        cache.graph(k);
      }
      assert.deepEqual(cache.entries().map(([k]) => (typeof k === 'number' ? `n${k}` : `s${String(k)}`)), ref);
      assert.equal(recorded.length, misses);
      assert.equal(cache.stats.hits + cache.stats.misses, keys.length);
    }),
    { numRuns: 300 },
  );
});
