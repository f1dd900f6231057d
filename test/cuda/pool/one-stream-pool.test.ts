/**
 * One-stream `CapturePool`s (`new CapturePool({ stream })`), against the stand-in driver built with
 * events and memory pools (fixtures/stand-in-driver.c, STAND_IN_POOLS: a first-fit allocator whose
 * allocations, frees and reserved bytes a test can read): captures of that stream only, graphs that
 * launch there only, scratch memory a capture frees given back when it ends and reused by the next
 * capture (never freed twice), `trim` refused while graphs use it, and a cache of eight buckets
 * prepared largest first that reserves what the largest needs. On the device:
 * test/gpu/graph-cache.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CapturePool, CaptureStateError, Device, DeviceBuffer, GraphCache, GraphCaptureGuard, InvalidArgumentError, Module, arg, captureGraph, type Stream } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('one-stream-pool', ['STAND_IN_POOLS']);
const skip = lib === null && 'gcc is absent';
const frees = lib?.counter('pool_frees');
const trims = lib?.counter('pool_trims');
const graphLaunches = lib?.counter('graph_launches');

test('a one-stream pool captures its stream only, and its graphs launch there only', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const other = d.createStream();
  using pool = new CapturePool({ stream: s });
  assert.equal(pool.stream, s);
  assert.equal(new CapturePool().stream, null);
  refused(() => GraphCaptureGuard.beginWithPool(other, pool), InvalidArgumentError, 'GraphCaptureGuard.beginWithPool', /CapturePool #\d+ is a one-stream pool of Stream.*capture on Stream/);
  assert.equal(other.isCapturing, false);
  refused(() => new CapturePool({ stream: s, releaseThreshold: 1024 }), InvalidArgumentError, 'CapturePool', /one-stream pool \(stream given\) keeps all the memory it reserved/);
  refused(() => new CapturePool({ stream: 's' as never }), InvalidArgumentError, 'CapturePool', /stream must be a Stream/);
  const k = Module.load(d, '// stand-in\n').function('step');
  using graph = captureGraph(s, (st) => k.launch(st, { grid: 1, block: 32, args: [arg.i32(1)] }), { pool });
  assert.equal(graph.onlyStream, s);
  const before = [graphLaunches!(), graph.numReplays];
  refused(() => graph.launch(other), InvalidArgumentError, 'CapturedGraph.launch', /launches on Stream.* only, not on Stream.*one-stream pool whose graphs share memory/);
  assert.deepEqual([graphLaunches!(), graph.numReplays], before, 'the refusal changed nothing');
  graph.launch();
  graph.launch(s);
  assert.equal(graph.numReplays, 2);
});

test('scratch a capture frees goes back to a one-stream pool when it ends and serves the next capture; kept buffers stay the graph\'s; nothing is freed twice', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const k = Module.load(d, '// stand-in\n').function('step');
  const pool = new CapturePool({ stream: s });
  let scratchA = 0n;
  let kept: DeviceBuffer | null = null;
  const f0 = frees!();
  const a = captureGraph(
    s,
    (st) => {
      const tmp = DeviceBuffer.allocAsync(st, 1024);
      scratchA = tmp.ptr;
      kept = DeviceBuffer.allocAsync(st, 256);
      k.launch(st, { grid: 1, block: 32, args: [tmp, kept] });
      tmp.freeAsync(st);
    },
    { pool },
  );
  assert.equal(frees!() - f0, 1, 'the scratch went back to the pool as the capture ended');
  assert.deepEqual([pool.sharedBytes, pool.bufferCount], [1024, 1], 'shared by a live graph; the kept buffer still recorded');
  let scratchB = 0n;
  const b = captureGraph(
    s,
    (st) => {
      const tmp = DeviceBuffer.allocAsync(st, 512);
      scratchB = tmp.ptr;
      k.launch(st, { grid: 1, block: 32, args: [tmp] });
      tmp.dispose();
    },
    { pool },
  );
  assert.equal(scratchB, scratchA, 'the next capture reuses the memory the first gave back');
  assert.notEqual(kept!.ptr, scratchA);
  assert.equal(pool.sharedBytes, 1024 + 512);
  refused(() => pool.trim(), CaptureStateError, 'CapturePool.trim', /live graphs use 1536 bytes it counts as free/);
  const f1 = frees!();
  a.dispose();
  b.dispose();
  assert.equal(frees!(), f1, 'disposing the graphs frees no shared memory again');
  assert.equal(pool.sharedBytes, 0);
  kept!.dispose();
  pool.dispose();
  assert.equal(frees!(), f1 + 1, 'the kept buffer is freed once, when its owner and graph let go');

  // An ordinary pool keeps a graph's memory apart from every other graph's.
  const plain = new CapturePool();
  const f2 = frees!();
  using c = captureGraph(
    s,
    (st) => {
      const tmp = DeviceBuffer.allocAsync(st, 1024);
      k.launch(st, { grid: 1, block: 32, args: [tmp] });
      tmp.freeAsync(st);
    },
    { pool: plain },
  );
  assert.deepEqual([frees!() - f2, plain.sharedBytes], [0, 0], 'nothing given back while the graph lives');
  assert.equal(c.onlyStream, null, 'and its graph launches anywhere');
  plain.dispose();
  const t0 = trims!();
  const trimmed = new CapturePool({ stream: s });
  trimmed.trim();
  assert.equal(trims!(), t0, 'a pool with no memory yet has nothing to trim');
  trimmed.dispose();
});

test('a GraphCache of eight buckets prepared largest first reserves what the largest needs', { skip }, () => {
  const d = Device.get(0);
  const s: Stream = d.createStream();
  const k = Module.load(d, '// stand-in\n').function('step');
  const buckets = [1, 2, 3, 4, 5, 6, 7, 8];
  const work = (st: Stream, n: number): void => {
    const tmp = DeviceBuffer.allocAsync(st, n * 4096);
    k.launch(st, { grid: 1, block: 32, args: [tmp] });
    tmp.freeAsync(st);
  };
  using cache = new GraphCache({ stream: s, buckets, capture: work });
  assert.equal(cache.pool!.stream, s, 'the cache makes a one-stream pool of its stream');
  cache.prepare(buckets);
  const st = cache.stats;
  assert.equal(st.graphs, 8);
  assert.equal(st.poolReservedBytes, 8 * 4096, 'eight graphs, the memory of the largest');
  assert.equal(st.poolSharedBytes, (4096 * 8 * 9) / 2, 'each graph still uses its scratch');
  for (const n of [3, 8, 1, 5]) cache.launch(n);
  assert.equal(cache.stats.poolReservedBytes, 8 * 4096);
  refused(() => new GraphCache({ stream: s, capture: work, pool: new CapturePool({ stream: d.createStream() }) }), InvalidArgumentError, 'GraphCache', /is a one-stream pool of Stream.*the cache captures on Stream/);
});
