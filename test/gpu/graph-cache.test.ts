/**
 * `GraphCache` on the device: a workload of batch buckets, each captured once with a pool
 * allocation inside, replayed for every size, the results equal to the same work run eagerly; the
 * memory of eight buckets in one shared pool against the largest alone (printed as
 * `graph-cache memory:` for the run log); the one-stream refusal; static inputs and outputs; scalars
 * written into the graph per call. CPU counterparts:
 * test/cuda/capture/graph-cache*.test.ts, test/cuda/pool/one-stream-pool.test.ts,
 * test/cuda/graph/kernel-arg-patch.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CapturePool, Device, DeviceBuffer, GraphCache, InvalidArgumentError, Module, PinnedHostBuffer, arg, captureGraph, type Stream } from '../../src/index.js';
import { gpuSuite } from './gpu.js';

const SOURCE = `
extern "C" __global__ void affine(float *y, const float *x, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
extern "C" __global__ void shift(float *y, const float *x, int pos, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (x[i] + (float)pos) * scale;
}`;

const BUCKETS = [32, 64, 128, 256, 512, 1024];
const MiB = 1024 * 1024;

gpuSuite('GraphCache on the device', () => {
  const d = Device.get(0);
  const m = Module.compile(d, SOURCE);
  const affine = m.function('affine');
  const shift = m.function('shift');
  const max = BUCKETS.at(-1)!;
  const x = DeviceBuffer.alloc(d, 4 * max);
  const y = DeviceBuffer.alloc(d, 4 * max);
  const input = Float32Array.from({ length: max }, (_, i) => i * 0.5 - 7);

  /** The work for a batch of `n`: a temporary from the pool (allocAsync), two kernels through it. */
  const work = (s: Stream, n: number): void => {
    const tmp = DeviceBuffer.allocAsync(s, 4 * n);
    affine.launch(s, { grid: Math.ceil(n / 128), block: 128, args: [tmp, x, arg.f32(2), arg.f32(1), arg.i32(n)] });
    affine.launch(s, { grid: Math.ceil(n / 128), block: 128, args: [y, tmp, arg.f32(0.5), arg.f32(-3), arg.i32(n)] });
    tmp.freeAsync(s);
  };

  /** `y` after `run` on `s`, from `input` in `x` and zeros in `y`. */
  const result = (s: Stream, run: () => void): Float32Array => {
    s.synchronize();
    x.copyFromHost(input);
    y.memsetAsync(s, 0);
    run();
    s.synchronize();
    const out = new Float32Array(max);
    y.copyToHost(out);
    return out;
  };

  test('six buckets: each captured once, every size\'s results equal the eager run, the pool shared', () => {
    const s = d.createStream();
    using cache = new GraphCache({ stream: s, buckets: BUCKETS, capture: work, warmup: 1 });
    for (const n of [1, 31, 32, 33, 100, 256, 300, 700, 1024, 5, 1000]) {
      let key = 0;
      const got = result(s, () => (key = cache.launch(n).key));
      const want = result(s, () => work(s, key));
      assert.deepEqual(got, want, `n = ${n} (bucket ${key})`);
      assert.equal(key, BUCKETS.find((b) => b >= n));
    }
    const st = cache.stats;
    assert.deepEqual([st.captures, st.graphs, st.misses, st.hits], [6, 6, 6, 5]);
    assert.ok(st.poolReservedBytes >= st.poolUsedBytes && st.poolUsedBytes >= 0);
    assert.ok(st.poolSharedBytes > 0, 'the graphs use scratch their captures gave back');
    s.synchronize();
    s.dispose();
  });

  test('memory: eight buckets in one shared pool reserve about what the largest alone does, far from the sum', () => {
    const UNIT = 1024 * 1024; // floats: each bucket's scratch is a multiple of 4 MiB
    const eight = [1, 2, 3, 4, 5, 6, 7, 8].map((b) => b * UNIT);
    const big = eight.at(-1)!;
    using bx = DeviceBuffer.alloc(d, 4 * big);
    using by = DeviceBuffer.alloc(d, 4 * big);
    const scratchWork = (s: Stream, n: number): void => {
      const tmp = DeviceBuffer.allocAsync(s, 4 * n);
      affine.launch(s, { grid: Math.ceil(n / 256), block: 256, args: [tmp, bx, arg.f32(2), arg.f32(1), arg.i32(n)] });
      affine.launch(s, { grid: Math.ceil(n / 256), block: 256, args: [by, tmp, arg.f32(0.5), arg.f32(-3), arg.i32(n)] });
      tmp.freeAsync(s);
    };
    /** The pool's reserved and shared bytes once the graphs of `buckets` are captured (`prepare`, or one launch each in the order given). */
    const footprint = (buckets: number[], how: 'prepare' | 'launch', check?: (cache: GraphCache<number>, s: Stream) => void): { reserved: number; shared: number } => {
      const s = d.createStream();
      const cache = new GraphCache({ stream: s, buckets, capture: scratchWork });
      if (how === 'prepare') cache.prepare(buckets);
      else for (const b of buckets) cache.launch(b);
      s.synchronize();
      const out = { reserved: cache.stats.poolReservedBytes, shared: cache.stats.poolSharedBytes };
      check?.(cache, s);
      cache.dispose();
      s.synchronize();
      s.dispose();
      return out;
    };
    const largest = footprint([big], 'prepare').reserved;
    let sumAlone = 0;
    for (const b of eight) sumAlone += footprint([b], 'prepare').reserved;
    const host = Float32Array.from({ length: big }, (_, i) => (i % 1000) * 0.25);
    const all = footprint(eight, 'prepare', (cache, s) => {
      // Graphs whose scratch overlaps replay in any order and still compute what they should.
      bx.copyFromHost(host);
      const out = new Float32Array(big);
      for (const n of [3 * UNIT, 8 * UNIT, 1 * UNIT, 6 * UNIT, 8 * UNIT, 2 * UNIT]) {
        by.memsetAsync(s, 0);
        cache.launch(n);
        s.synchronize();
        by.copyToHost(out);
        for (const i of [0, 1, n - 1, Math.floor(n / 2)]) assert.equal(out[i], 0.5 * (2 * host[i]! + 1) - 3, `n = ${n}, y[${i}]`);
        if (n < big) assert.equal(out[n], 0, `n = ${n}: nothing written past the batch`);
      }
    });
    const ascending = footprint(eight, 'launch').reserved;
    const mib = (b: number): string => (b / MiB).toFixed(1);
    console.log(
      `graph-cache memory: 8 graphs of buckets ${eight.map((b) => (4 * b) / MiB).join(', ')} MiB of scratch, pool reserved ${mib(all.reserved)} MiB after prepare ` +
        `(largest first; ${mib(all.shared)} MiB shared by live graphs); the largest alone ${mib(largest)} MiB (${(all.reserved / largest).toFixed(2)}x); ` +
        `the eight alone ${mib(sumAlone)} MiB in all (${(all.reserved / sumAlone).toFixed(2)}x); captured on demand smallest first ${mib(ascending)} MiB`,
    );
    assert.ok(largest >= 4 * big, `the largest alone reserves at least its scratch (${largest} bytes)`);
    assert.ok(all.reserved <= 1.5 * largest, `eight graphs reserve ${all.reserved} bytes, more than 1.5x the largest alone (${largest})`);
    assert.ok(all.reserved < 0.5 * sumAlone, `eight graphs reserve ${all.reserved} bytes, not far from the sum of each alone (${sumAlone})`);
  });

  test('a cache\'s graph, and a graph of a one-stream pool, refuse another stream and change nothing', () => {
    const s = d.createStream();
    const other = d.createStream();
    using cache = new GraphCache({ stream: s, buckets: BUCKETS, capture: work });
    const r = cache.launch(100);
    const before = result(s, () => {});
    const replays = r.graph!.numReplays;
    assert.throws(() => r.graph!.launch(other), (e: unknown) => e instanceof InvalidArgumentError && /^CapturedGraph\.launch: this graph launches on .* only, not on .*GraphCache/.test(e.message));
    other.synchronize();
    s.synchronize();
    const after = new Float32Array(max);
    y.copyToHost(after);
    assert.deepEqual(after, before, 'nothing ran');
    assert.equal(r.graph!.numReplays, replays);
    using pool = new CapturePool({ stream: s });
    using g = captureGraph(s, (st) => work(st, 64), { pool });
    assert.throws(() => g.launch(other), (e: unknown) => e instanceof InvalidArgumentError && /one-stream pool/.test(e.message));
    g.launch();
    s.synchronize();
    other.dispose();
  });

  test('run: inputs copied in and outputs out in the stream\'s order; results equal the eager run', () => {
    const s = d.createStream();
    using cache = new GraphCache({ stream: s, buckets: BUCKETS, capture: work });
    using pinned = PinnedHostBuffer.alloc(d, 4 * max);
    for (const n of [100, 1000, 7]) {
      const src = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 10 + n);
      const out = new Float32Array(n);
      y.memsetAsync(s, 0);
      const r = cache.run(n, { inputs: [{ src, dst: x }], outputs: [{ src: y, dst: out }, { src: y, dst: pinned.asFloat32(), byteLength: 4 * n }] });
      // Into ordinary memory the copy has arrived when run returns; into pinned memory after a synchronize.
      s.synchronize();
      const want = new Float32Array(max);
      s.synchronize();
      x.copyFromHost(src);
      y.memsetAsync(s, 0);
      work(s, r.key);
      s.synchronize();
      y.copyToHost(want);
      assert.deepEqual(out, want.subarray(0, n), `n = ${n}`);
      assert.deepEqual(pinned.asFloat32().subarray(0, n), want.subarray(0, n), `n = ${n}, pinned`);
    }
  });

  test('scalars: a position written into both kernel nodes per call, without a new capture; results equal the eager run', () => {
    const s = d.createStream();
    const step = (st: Stream, n: number, pos: number): void => {
      const tmp = DeviceBuffer.allocAsync(st, 4 * n);
      shift.launch(st, { grid: Math.ceil(n / 128), block: 128, args: [tmp, x, arg.i32(pos), arg.f32(1), arg.i32(n)] });
      shift.launch(st, { grid: Math.ceil(n / 128), block: 128, args: [y, tmp, arg.i32(pos), arg.f32(2), arg.i32(n)] });
      tmp.freeAsync(st);
    };
    using cache = new GraphCache({ stream: s, buckets: BUCKETS, capture: (st, n: number) => step(st, n, 0), scalars: { pos: { kernel: shift, index: 2, type: 'i32' } } });
    for (const [n, pos] of [[100, 3], [100, -7], [500, 100], [100, 41]] as const) {
      let key = 0;
      const got = result(s, () => (key = cache.run(n, { scalars: { pos } }).key));
      const want = result(s, () => step(s, key, pos));
      assert.deepEqual(got, want, `n = ${n}, pos = ${pos}`);
    }
    assert.equal(cache.stats.captures, 2, 'two buckets, no capture per position');
    // The same through the graph itself: the kernel's name and the argument's index.
    using g = captureGraph(s, (st) => step(st, 64, 0));
    assert.equal(g.setKernelArg('shift', 2, arg.i32(5)), 2);
    const got = result(s, () => g.launch());
    const want = result(s, () => step(s, 64, 5));
    assert.deepEqual(got, want);
  });
});
