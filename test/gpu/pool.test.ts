import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  Module,
  StreamGraphCapture,
  GraphCaptureGuard,
  CapturePool,
  captureGraph,
  graphPoolHandle,
  capturePoolForHandle,
  releaseGraphPoolHandle,
  arg,
  CaptureStatus,
  CaptureStateError,
  CudaError,
  DisposedError,
  type CapturedGraph,
} from '../../src/index.js';
import { mempool as mp, memory as mem } from '../../src/driver/result/index.js';
import { activeCaptureCount } from '../../src/cuda/core/capture-hooks.js';
import { gpuSuite } from './gpu.js';
import { GUARD_KERNELS, zeroed, u32, allEqual, MiB } from './guard-helpers.js';

const N = 4096;
const launch1d = { grid: Math.ceil(N / 256), block: 256 } as const;

gpuSuite('CapturePool on the device', () => {
  test('observed CUDA 13 behaviour: cuMemAllocFromPoolAsync on a capturing stream records an allocation node; the pool itself stays empty', () => {
    const d = Device.get(0);
    const s = d.stream();
    using pool = new CapturePool({ device: d });
    assert.equal(pool.device, d);
    const h = pool.memPoolHandle;
    assert.ok(typeof h === 'bigint' && h !== 0n);
    const cap = StreamGraphCapture.begin(s, 'threadLocal');
    let types: string[];
    let used = -1;
    try {
      const ptr = mp.memAllocFromPoolAsync('probe', 4 * MiB, h, s.handle);
      mem.memsetAsync('probe', 1, ptr, 7, 4 * MiB, s.handle);
      mem.memFreeAsync('probe', ptr, s.handle);
      using graph = cap.endGraph();
      used = pool.usedBytes;
      types = graph.readBack().nodes.map((n) => n.type).sort();
    } finally {
      cap.dispose();
    }
    console.log(`# observed: cuMemAllocFromPoolAsync under capture -> nodes [${types.join(', ')}], pool used ${used} bytes, reserved ${pool.reservedBytes} bytes`);
    assert.deepEqual(types, ['memAlloc', 'memFree', 'memset']);
    assert.equal(used, 0, 'the allocation belongs to the graph, not to the pool');
    assert.equal(pool.reservedBytes, 0);
  });

  test('allocAsync in a pooled capture takes real memory from the pool (no allocation node); two graphs share the pool; memory returns when the last holder goes', () => {
    const d = Device.get(0);
    const s = d.stream();
    using out1 = zeroed(s, N);
    using out2 = zeroed(s, N);
    const BIG = 16 * MiB; // large enough to show in the device's free memory
    const copy = { byteLength: 4 * N };
    d.synchronize();
    const free0 = d.memoryInfo().free;
    const pool = new CapturePool();
    let tmp: DeviceBuffer;
    let g1: CapturedGraph;
    {
      using guard = GraphCaptureGuard.beginWithPool(s, pool);
      assert.equal(guard.pool, pool);
      tmp = DeviceBuffer.allocAsync(s, BIG);
      assert.equal(pool.bufferCount, 1, 'the pool keeps what it allocated');
      tmp.memsetAsync(s, 9, { elementSize: 4 });
      out1.copyFromDeviceAsync(s, tmp, copy);
      assert.ok(pool.usedBytes >= BIG, 'the pool can be queried during the capture');
      assert.equal(guard.status(), CaptureStatus.Active, 'the query did not invalidate the capture (CUDA 13 counts it as unsafe; the pool relaxes the thread for it)');
      g1 = guard.finish();
    }
    assert.equal(g1.hasPool, true);
    assert.equal(g1.pool, pool);
    assert.equal(g1.poolBufferCount, 1);
    assert.equal(pool.holderCount, 1, 'the graph holds the pool');
    const nodes = g1.graph.readBack().nodes;
    assert.deepEqual(nodes.map((n) => n.type).sort(), ['memcpy', 'memset'], 'no memAlloc node: the memory is the pool’s');
    assert.equal(nodes.find((n) => n.type === 'memset')?.memset?.dst, tmp.ptr, 'the graph replays into the pool buffer’s fixed address');
    const used1 = pool.usedBytes;
    assert.ok(used1 >= BIG, `usedBytes ${used1}`);
    assert.ok(pool.reservedBytes >= used1);
    // A second graph captured with the first graph's pool.
    let tmp2: DeviceBuffer;
    let g2: CapturedGraph;
    {
      using guard = GraphCaptureGuard.beginWithPool(s, g1.pool!);
      tmp2 = DeviceBuffer.allocAsync(s, BIG);
      tmp2.memsetAsync(s, 11, { elementSize: 4 });
      out2.copyFromDeviceAsync(s, tmp2, copy);
      tmp2.freeAsync(s); // for pool memory: lets go of it; the pool and the graph keep it
      g2 = guard.finish();
    }
    assert.equal(pool.bufferCount, 2);
    assert.equal(pool.holderCount, 2);
    assert.ok(pool.usedBytes >= used1 + BIG);
    assert.ok(free0 - d.memoryInfo().free >= 2 * BIG - 2 * MiB, 'the pool took its memory from the device');
    for (let i = 0; i < 3; i++) {
      g1.launch();
      g2.launch();
    }
    s.synchronize();
    assert.equal(allEqual(u32(out1), 9), true);
    assert.equal(allEqual(u32(out2), 11), true);
    assert.equal(tmp2.disposed, true);
    // Let go in any order: the memory comes back only when no holder is left.
    tmp.dispose();
    pool.dispose(); // the creator lets go; the graphs still hold the pool
    assert.equal(pool.released, false);
    g1.dispose();
    pool.trim();
    assert.ok(pool.usedBytes >= 2 * BIG, 'g2 still holds the pool, which keeps both buffers');
    g2.dispose();
    assert.equal(pool.released, true, 'the last graph let go');
    assert.equal(pool.memPoolHandle, null, 'the CUDA pool is destroyed once its last allocation came back');
    d.synchronize();
    const drift = d.memoryInfo().free - free0;
    assert.ok(Math.abs(drift) <= 2 * MiB, `the device got the pool's memory back (free memory differs by ${drift} bytes)`);
    assert.equal(activeCaptureCount(), 0);
  });

  test('the seed: buffers recorded into the pool are counted, and freed only when the last holder goes (device memory shows it)', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, GUARD_KERNELS);
    const a = zeroed(s, N);
    const pool = new CapturePool();
    let graph: CapturedGraph;
    {
      using guard = GraphCaptureGuard.beginWithPool(s, pool);
      m.function('add_u32').launch(s, { ...launch1d, args: [a, arg.u32(2), arg.i32(N)] });
      graph = guard.finish();
    }
    const sentinel = DeviceBuffer.alloc(d, 256 * MiB);
    assert.equal(pool.recordBuffer(a), 0);
    assert.equal(pool.recordBuffer(sentinel), 1);
    assert.equal(graph.poolBufferCount, 2);
    graph.launch();
    graph.launch();
    graph.launch();
    assert.equal(graph.numReplays, 3);
    s.synchronize();
    assert.equal(allEqual(u32(a), 6), true);
    a.dispose();
    sentinel.dispose(); // donated: the pool holds them
    const free0 = d.memoryInfo().free;
    graph.dispose(); // the pool is still held by its creator
    assert.ok(d.memoryInfo().free - free0 < 64 * MiB, 'the sentinel is not freed while the pool lives');
    assert.equal(pool.released, false);
    pool.dispose(); // the last holder
    assert.equal(pool.released, true);
    const gained = d.memoryInfo().free - free0;
    assert.ok(gained >= 255 * MiB, `the sentinel was freed with the pool (free memory grew by ${(gained / MiB).toFixed(1)} MiB)`);
    assert.throws(() => GraphCaptureGuard.beginWithPool(s, pool), (e: unknown) => e instanceof DisposedError && /CapturePool/.test(e.message), 'a pool used after release');
  });

  test('a failed pooled capture releases what it allocated: pool and device memory return to where they were', () => {
    const d = Device.get(0);
    const s = d.stream();
    const pool = new CapturePool();
    GraphCaptureGuard.beginWithPool(s, pool).dispose(); // creates the pool's memory before measuring
    s.synchronize();
    const before = { free: d.memoryInfo().free, used: pool.usedBytes, reserved: pool.reservedBytes, count: pool.bufferCount };
    let kept: DeviceBuffer | null = null;
    const failure = new Error('failed mid-capture');
    assert.throws(() => {
      using guard = GraphCaptureGuard.beginWithPool(s, pool);
      kept = DeviceBuffer.allocAsync(s, 64 * MiB);
      kept.memsetAsync(s, 1);
      assert.ok(pool.usedBytes >= 64 * MiB, 'allocated from the pool');
      void guard;
      throw failure;
    }, (e: unknown) => e === failure);
    assert.equal(kept!.disposed, true, 'the failed capture disposed the buffer it allocated');
    assert.equal(pool.bufferCount, before.count);
    // Invalidated instead of thrown: finish() fails with 901 and releases the same way.
    let kept2: DeviceBuffer | null = null;
    assert.throws(
      () =>
        captureGraph(
          s,
          (st) => {
            kept2 = DeviceBuffer.allocAsync(st, 32 * MiB);
            assert.throws(() => st.synchronize(), CudaError);
          },
          { pool },
        ),
      (e: unknown) => e instanceof CudaError && e.code === 901,
    );
    assert.equal(kept2!.disposed, true);
    pool.trim();
    s.synchronize();
    const after = { free: d.memoryInfo().free, used: pool.usedBytes, reserved: pool.reservedBytes, count: pool.bufferCount };
    console.log(`# failed pooled captures: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
    assert.equal(after.used, before.used);
    assert.equal(after.reserved, before.reserved);
    assert.equal(after.count, before.count);
    assert.ok(Math.abs(after.free - before.free) <= 2 * MiB, `device free memory changed by ${after.free - before.free} bytes`);
    // A failed capture's graph allocation (no pool) is released too, without a cleanup error later.
    let nodeBuffer: DeviceBuffer | null = null;
    assert.throws(() => {
      using guard = GraphCaptureGuard.begin(s);
      nodeBuffer = DeviceBuffer.allocAsync(s, 16 * MiB);
      void guard;
      throw failure;
    }, (e: unknown) => e === failure);
    assert.equal(nodeBuffer!.disposed, true);
    assert.doesNotThrow(() => d.memoryInfo(), 'no failed free is reported later');
    pool.dispose();
    assert.equal(pool.released, true);
  });

  test('releaseThreshold keeps freed pool memory reserved for reuse; trim() gives it back', () => {
    const d = Device.get(0);
    const s = d.stream();
    using pool = new CapturePool({ device: d, releaseThreshold: 64 * MiB });
    const failure = new Error('discard');
    for (let i = 0; i < 2; i++) {
      assert.throws(() => {
        using guard = GraphCaptureGuard.beginWithPool(s, pool);
        DeviceBuffer.allocAsync(s, 32 * MiB);
        void guard;
        throw failure;
      }, (e: unknown) => e === failure);
    }
    d.synchronize();
    assert.equal(pool.usedBytes, 0, 'the failed captures gave their memory back to the pool');
    assert.ok(pool.reservedBytes >= 32 * MiB, `the pool keeps it for reuse (reserved ${pool.reservedBytes})`);
    pool.trim();
    assert.equal(pool.reservedBytes, 0, 'trim() gives it back to the driver');
  });

  test('a sealed pool refuses captures and allocations; unseal() allows them again', () => {
    const d = Device.get(0);
    const s = d.stream();
    using out = zeroed(s, N);
    using pool = new CapturePool();
    pool.seal();
    assert.throws(
      () => GraphCaptureGuard.beginWithPool(s, pool),
      (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_POOL_SEALED' && e.message.startsWith('GraphCaptureGuard.beginWithPool: CapturePool #'),
    );
    pool.unseal();
    {
      using guard = GraphCaptureGuard.beginWithPool(s, pool);
      pool.seal(); // sealed while capturing: no new allocations
      assert.throws(() => DeviceBuffer.allocAsync(s, 1024), (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_POOL_SEALED');
      pool.unseal();
      const b = DeviceBuffer.allocAsync(s, 4 * N);
      b.memsetAsync(s, 3, { elementSize: 4 });
      out.copyFromDeviceAsync(s, b);
      using g = guard.finish();
      g.launch();
    }
    s.synchronize();
    assert.equal(allEqual(u32(out), 3), true);
  });

  test('graph pool handles on the device: captures share a pool by handle; a released handle leaves graphs their pool', () => {
    const d = Device.get(0);
    const s = d.stream();
    using out = zeroed(s, N);
    const h = graphPoolHandle();
    const pool = capturePoolForHandle(h)!;
    const g1 = captureGraph(s, (st) => {
      const b = DeviceBuffer.allocAsync(st, 4 * N);
      b.memsetAsync(st, 21, { elementSize: 4 });
      out.copyFromDeviceAsync(st, b);
    }, { pool: capturePoolForHandle(h)! });
    releaseGraphPoolHandle(h);
    assert.equal(capturePoolForHandle(h), undefined);
    assert.equal(pool.released, false, 'the graph keeps the pool');
    const g2 = captureGraph(s, (st) => out.memsetAsync(st, 0), { pool: g1.pool! });
    g2.launch();
    g1.launch();
    s.synchronize();
    assert.equal(allEqual(u32(out), 21), true);
    g1.dispose();
    g2.dispose();
    assert.equal(pool.released, true);
    assert.throws(() => GraphCaptureGuard.beginWithPool(s, pool), DisposedError);
  });
});
