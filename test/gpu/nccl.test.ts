/**
 * NCCL on one GPU: a single-rank communicator (both ways of making one), every collective, every
 * element type, argument checks on real objects, and a data-parallel step captured in a CUDA
 * graph that gives the eager numbers and stays right over 1,000 replays. With one rank NCCL still
 * runs its real code paths (communicator, enqueue, graph capture); what it cannot show is data
 * moving between GPUs (test/gpu/nccl-multi.test.ts).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  NcclComm,
  NcclUniqueId,
  NcclError,
  ncclGroup,
  captureMultiDevice,
  loadNccl,
  StreamGraphCapture,
  GraphCaptureGuard,
  captureGraph,
  InvalidArgumentError,
  DisposedError,
  type NcclClique,
  type Stream,
  type ElementType,
} from '../../src/index.js';
import * as nr from '../../src/nccl/result.js';
import { ncclSuite, ncclBanner, StepKernels, readF32, f16Bits, bf16Bits } from './nccl-fixtures.js';

ncclSuite('NCCL on one GPU (single-rank communicator)', () => {
  let d: Device;
  let s: Stream;
  let clique: NcclClique;
  let comm: NcclComm;
  let k: StepKernels;

  before(() => {
    console.log(`# ${ncclBanner()}`);
    d = Device.get(0);
    s = d.createStream();
    clique = NcclComm.initAll([d]);
    comm = clique.comm(0);
    k = new StepKernels(d);
  });

  after(() => {
    k?.dispose();
    clique?.dispose();
    s?.dispose();
  });

  test('the library: version ≥ 2.9 (capturable), NVLink multicast off in this process', () => {
    const info = loadNccl();
    assert.ok(info.code >= 20900, `NCCL ${info.version}`);
    assert.match(info.path, /libnccl/);
    assert.equal(process.env['NCCL_NVLS_ENABLE'], '0');
  });

  test('initAll over one device: rank 0 of 1 on device 0; initRank with a fresh unique id gives the same shape', () => {
    assert.equal(clique.size, 1);
    assert.deepEqual([comm.rank, comm.size, comm.device, comm.localRanks], [0, 1, d, 1]);
    assert.equal(comm.asyncError(), 'ncclSuccess');
    const id = NcclUniqueId.create();
    // Through hex and back, as a process boundary would carry it.
    using solo = NcclComm.initRank(0, { id: id.toHex(), rank: 0, size: 1 });
    assert.deepEqual([solo.rank, solo.size, solo.device.ordinal, solo.localRanks], [0, 1, 0, 1]);
    assert.equal(solo.toString(), 'NcclComm(rank 0 of 1, device 0)');
  });

  test('allReduce sum, max, min, prod, avg of a known vector on one rank is the vector (out of place and in place)', () => {
    const n = 1000;
    const host = Float32Array.from({ length: n }, (_, i) => i - 500.25);
    using a = DeviceBuffer.alloc(d, 4 * n);
    using b = DeviceBuffer.alloc(d, 4 * n);
    for (const op of ['sum', 'max', 'min', 'prod', 'avg'] as const) {
      a.copyFromHost(host);
      b.memsetAsync(s, 0);
      comm.allReduce(s, { send: a, recv: b, count: n, type: 'f32', op });
      s.synchronize();
      assert.deepEqual(readF32(b), host, op);
      comm.allReduce(s, { send: a, count: n, type: 'f32', op });
      s.synchronize();
      assert.deepEqual(readF32(a), host, `${op} in place`);
    }
  });

  test('every element type: f64, i32, u8, i64, f16 and bf16 bit patterns survive a single-rank allReduce', () => {
    const n = 64;
    const cases: Array<[ElementType, ArrayBufferView]> = [
      ['f64', Float64Array.from({ length: n }, (_, i) => i * 1.5 - 7)],
      ['i32', Int32Array.from({ length: n }, (_, i) => i * 1000 - 31999)],
      ['u8', Uint8Array.from({ length: n }, (_, i) => (i * 37) & 0xff)],
      ['i64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i) * 10_000_000_000n - 5n)],
      ['f16', Uint16Array.from({ length: n }, (_, i) => f16Bits(i - 32))],
      ['bf16', Uint16Array.from({ length: n }, (_, i) => bf16Bits(i - 32))],
    ];
    for (const [type, host] of cases) {
      using a = DeviceBuffer.alloc(d, host.byteLength);
      using b = DeviceBuffer.alloc(d, host.byteLength);
      a.copyFromHost(host);
      comm.allReduce(s, { send: a, recv: b, count: n, type, op: 'sum' });
      s.synchronize();
      const back = new Uint8Array(host.byteLength);
      b.copyToHost(back);
      assert.deepEqual(back, new Uint8Array(host.buffer, host.byteOffset, host.byteLength), type);
    }
  });

  test('broadcast, reduce, allGather and reduceScatter on one rank copy the data; offsets address slices', () => {
    const n = 256;
    const host = Float32Array.from({ length: 2 * n }, (_, i) => i + 0.5);
    using a = DeviceBuffer.alloc(d, 8 * n);
    using b = DeviceBuffer.alloc(d, 8 * n);
    a.copyFromHost(host);
    const run = (what: string, call: () => void, expect: Float32Array): void => {
      b.memsetAsync(s, 0);
      call();
      s.synchronize();
      assert.deepEqual(readF32(b), expect, what);
    };
    const firstHalf = new Float32Array(2 * n);
    firstHalf.set(host.subarray(0, n));
    const secondHalfAtStart = new Float32Array(2 * n);
    secondHalfAtStart.set(host.subarray(n));
    run('broadcast', () => comm.broadcast(s, { send: a, recv: b, count: n, type: 'f32', root: 0 }), firstHalf);
    run('reduce', () => comm.reduce(s, { send: a, recv: b, count: n, type: 'f32', op: 'sum', root: 0 }), firstHalf);
    run('allGather', () => comm.allGather(s, { send: a, recv: b, count: n, type: 'f32' }), firstHalf);
    run('reduceScatter', () => comm.reduceScatter(s, { send: a, recv: b, count: n, type: 'f32', op: 'max' }), firstHalf);
    run('allReduce from an offset', () => comm.allReduce(s, { send: a, recv: b, count: n, type: 'f32', op: 'sum', sendOffset: 4 * n }), secondHalfAtStart);
    // A group of two collectives launches both at its end.
    run(
      'a group',
      () =>
        ncclGroup(() => {
          comm.allReduce(s, { send: a, recv: b, count: n, type: 'f32', op: 'sum' });
          comm.allReduce(s, { send: a, recv: b, count: n, type: 'f32', op: 'sum', sendOffset: 4 * n, recvOffset: 4 * n });
        }),
      host,
    );
  });

  test('refused arguments on real objects throw before anything is enqueued', () => {
    using a = DeviceBuffer.alloc(d, 400);
    using b = DeviceBuffer.alloc(d, 400);
    a.memsetAsync(s, 0x11);
    b.memsetAsync(s, 0x22);
    s.synchronize();
    assert.throws(() => comm.allReduce(s, { send: a, recv: b, count: 101, type: 'f32', op: 'sum' }), /NcclComm\.allReduce: allReduce of count 101 × f32 needs 404 bytes of send/);
    assert.throws(() => comm.allReduce(s, { send: a, recv: b, count: 10, type: 'float' as never, op: 'sum' }), InvalidArgumentError);
    assert.throws(() => comm.allReduce(s, { send: a, recv: b, count: 10, type: 'f32', op: 'sum', extra: 1 } as never), /unknown option 'extra'/);
    assert.throws(() => comm.allReduce('s' as never, { send: a, count: 10, type: 'f32', op: 'sum' }), /NcclComm\.allReduce: stream must be a Stream/);
    assert.throws(() => comm.allReduce(s, { send: new Float32Array(10) as never, count: 10, type: 'f32', op: 'sum' }), /send must be a DeviceBuffer/);
    assert.throws(() => comm.broadcast(s, { recv: b, count: 10, type: 'f32', root: 1 }), /root must be an integer in 0\.\.0, got 1/);
    const gone = DeviceBuffer.alloc(d, 400);
    gone.dispose();
    assert.throws(() => comm.allReduce(s, { send: gone, count: 10, type: 'f32', op: 'sum' }), DisposedError);
    s.synchronize();
    assert.ok(new Uint8Array(readF32(b).buffer).every((x) => x === 0x22), 'recv untouched');
  });

  test('a captured data-parallel step gives the eager numbers, and 1,000 replays stay right', () => {
    const n = 4096;
    const init = Float32Array.from({ length: n }, (_, i) => (i % 97) - 48);
    // The step: x += 1 (the "gradient" computation), y = allReduce_sum(x), z = 2·y (the "update").
    const step = (st: Stream, x: DeviceBuffer, y: DeviceBuffer, z: DeviceBuffer): void => {
      k.add(st, x, 1, n);
      comm.allReduce(st, { send: x, recv: y, count: n, type: 'f32', op: 'sum' });
      k.scale(st, y, z, 2, n);
    };
    const buffers = (): DeviceBuffer[] => {
      const [x, y, z] = [0, 1, 2].map(() => DeviceBuffer.alloc(d, 4 * n));
      x!.copyFromHost(init);
      y!.memsetAsync(s, 0);
      z!.memsetAsync(s, 0);
      s.synchronize();
      return [x!, y!, z!];
    };
    const [ex, ey, ez] = buffers();
    const [gx, gy, gz] = buffers();
    try {
      for (let i = 0; i < 3; i++) step(s, ex!, ey!, ez!);
      s.synchronize();
      let exec;
      {
        using cap = StreamGraphCapture.begin(s, 'global');
        step(s, gx!, gy!, gz!);
        exec = cap.end();
      }
      using graph = exec;
      assert.deepEqual(readF32(gz!), new Float32Array(n), 'capture records; nothing ran yet');
      try {
        const rb = graph.graph.readBack();
        console.log(`# captured single-rank step: ${rb.nodes.length} nodes: ${rb.nodes.map((x) => x.kernel?.name ?? x.type).join(', ')}`);
      } catch (e) {
        console.log(`# readBack of the NCCL graph failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      assert.ok(graph.nodeCount >= 2);
      for (let i = 0; i < 3; i++) graph.launch(s);
      s.synchronize();
      assert.deepEqual(readF32(gz!), readF32(ez!), 'graph = eager after 3 steps');
      assert.deepEqual(readF32(gx!), readF32(ex!));
      // The graph holds the communicator: disposing it now defers the destroy, replays keep working,
      // and abort is refused while the graph lives.
      for (let i = 0; i < 997; i++) graph.launch(s);
      s.synchronize();
      const expect = init.map((v) => 2 * (v + 1000));
      assert.deepEqual(readF32(gz!), expect, '1,000 replays');
      assert.throws(() => comm.abort(), /captured graph\(s\) hold this communicator/);
    } finally {
      for (const b of [ex, ey, ez, gx, gy, gz]) b!.dispose();
    }
  });

  test('collectives capture through GraphCaptureGuard and captureGraph too, and their replays compute the step', () => {
    const n = 1024;
    const init = Float32Array.from({ length: n }, (_, i) => i - 300);
    const [x, y, z] = [0, 1, 2].map(() => DeviceBuffer.alloc(d, 4 * n));
    try {
      const reset = (): void => {
        x!.copyFromHost(init);
        s.synchronize();
      };
      const step = (): void => {
        k.add(s, x!, 1, n);
        comm.allReduce(s, { send: x!, recv: y!, count: n, type: 'f32', op: 'sum' });
        comm.broadcast(s, { send: y!, recv: z!, count: n, type: 'f32', root: 0 });
      };
      step(); // eager warm-up: NCCL sets up outside the capture
      s.synchronize();
      reset();
      let viaGuard;
      {
        using guard = GraphCaptureGuard.begin(s);
        step();
        viaGuard = guard.finish();
      }
      using g1 = viaGuard;
      using g2 = captureGraph(s, step);
      for (let i = 0; i < 5; i++) g1.launch();
      for (let i = 0; i < 5; i++) g2.launch();
      s.synchronize();
      assert.equal(g1.numReplays, 5);
      assert.deepEqual(readF32(z!), init.map((v) => v + 10), 'ten replays of x += 1, then y = allReduce(x), z = broadcast(y)');
    } finally {
      for (const b of [x, y, z]) b!.dispose();
    }
  });

  test('a communicator disposed while a graph holds it is destroyed only with the graph', () => {
    const n = 256;
    const own = NcclComm.initAll([d]).comm(0);
    using x = DeviceBuffer.alloc(d, 4 * n);
    using y = DeviceBuffer.alloc(d, 4 * n);
    x.copyFromHost(new Float32Array(n).fill(3));
    own.allReduce(s, { send: x, recv: y, count: n, type: 'f32', op: 'sum' }); // eager warm-up
    s.synchronize();
    let exec;
    {
      using cap = StreamGraphCapture.begin(s);
      k.add(s, x, 1, n);
      own.allReduce(s, { send: x, recv: y, count: n, type: 'f32', op: 'sum' });
      exec = cap.end();
    }
    own.dispose();
    assert.equal(own.disposed, true);
    assert.throws(() => own.allReduce(s, { send: x, count: n, type: 'f32', op: 'sum' }), DisposedError);
    for (let i = 0; i < 5; i++) exec.launch(s);
    s.synchronize();
    assert.ok(readF32(y).every((v) => v === 8), 'the graph still runs on the communicator it holds');
    exec.dispose(); // frees the graph, then the communicator
  });

  test('captureMultiDevice over one device: one graph, launched and disposed together', () => {
    const n = 512;
    using x = DeviceBuffer.alloc(d, 4 * n);
    using y = DeviceBuffer.alloc(d, 4 * n);
    x.copyFromHost(new Float32Array(n));
    using step = captureMultiDevice([s], (st) => {
      k.add(st[0]!, x, 2, n);
      clique.allReduce(st, () => ({ send: x, recv: y, count: n, type: 'f32', op: 'sum' }));
    });
    assert.equal(step.execs.length, 1);
    for (let i = 0; i < 10; i++) step.launch();
    step.synchronize();
    assert.equal(step.launchCount, 10);
    assert.ok(readF32(y).every((v) => v === 20));
    assert.match(step.toString(), /^MultiDeviceGraphExec\(1 devices, nodes \d+\)$/);
  });

  test('a step that throws mid-capture abandons every capture and leaves the stream usable', () => {
    using x = DeviceBuffer.alloc(d, 64);
    const boom = new Error('boom');
    assert.throws(
      () =>
        captureMultiDevice([s], (st) => {
          k.add(st[0]!, x, 1, 16);
          throw boom;
        }),
      (e: unknown) => e === boom,
    );
    assert.equal(s.isCapturing, false);
    x.memsetAsync(s, 0);
    comm.allReduce(s, { send: x, count: 16, type: 'f32', op: 'sum' });
    s.synchronize();
  });

  test('a call NCCL refuses is an NcclError with NCCL\'s result name, description and last-error text', () => {
    // cudagraph's own checks refuse a bad type, so the raw call is made: datatype 99 does not exist.
    const spare = NcclComm.initAll([d]).comm(0);
    using x = DeviceBuffer.alloc(d, 64);
    let error: unknown;
    try {
      nr.collective('test', { kind: 'allReduce', send: x.ptr, recv: x.ptr, count: 16, datatype: 99, op: 0, root: 0, comm: spare.handle, stream: s.handle });
    } catch (e) {
      error = e;
    }
    spare.dispose();
    assert.ok(error instanceof NcclError, String(error));
    console.log(`# NCCL's error for datatype 99: ${error.message.replace(/\n/g, ' | ')}`);
    assert.equal(error.code, 'ncclInvalidArgument');
    assert.equal(error.result, 4);
    assert.equal(error.ncclCall, 'ncclAllReduce');
    assert.match(error.description, /invalid argument/);
  });
});
