import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  PinnedHostBuffer,
  Module,
  Graph,
  StreamGraphCapture,
  CaptureStatus,
  arg,
  CudaError,
  InvalidArgumentError,
  type Stream,
} from '../../src/index.js';
import { gpuSuite, fixturePtx, NVRTC_SOURCE, readU32 } from './gpu.js';

const MAGIC = 0xcafef00d;

function zeroed(s: Stream, n: number): DeviceBuffer {
  const b = DeviceBuffer.alloc(s.device, 4 * n);
  b.memsetAsync(s, 0);
  s.synchronize();
  return b;
}

gpuSuite('StreamGraphCapture → GraphExec', () => {
  test('the seed round trip: a captured memset does not run until launch, then fills every element', () => {
    const d = Device.get(0);
    const s = d.stream();
    const n = 4096;
    using buf = zeroed(s, n);
    using cap = StreamGraphCapture.begin(s, 'global');
    assert.equal(cap.isActive(), true);
    assert.equal(cap.captureStatus(), CaptureStatus.Active);
    assert.equal(s.isCapturing, true);
    buf.memsetAsync(s, MAGIC, { elementSize: 4 });
    using exec = cap.end();
    assert.equal(cap.isActive(), false);
    assert.equal(cap.captureStatus(), CaptureStatus.None);
    assert.equal(s.isCapturing, false);
    assert.ok(exec.nodeCount >= 1);
    assert.ok(readU32(buf).every((v) => v === 0), 'capture records, it does not execute');
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === MAGIC));
    const { nodes, edges } = exec.graph.readBack();
    assert.equal(nodes.length, 1);
    assert.equal(edges.length, 0);
    assert.deepEqual(
      { type: nodes[0]!.type, value: nodes[0]!.memset?.value, elementSize: nodes[0]!.memset?.elementSize, bytes: nodes[0]!.memset?.byteLength, dst: nodes[0]!.memset?.dst },
      { type: 'memset', value: MAGIC, elementSize: 4, bytes: 4 * n, dst: buf.ptr },
    );
    assert.match(exec.graph.debugDot(), /digraph/);
  });

  test('repeated launches replay the work each time; a launch on another stream works too', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.load(d, fixturePtx());
    using counter = zeroed(s, 1);
    using inc = m.function('add_one').prepare({ grid: 1, block: 32, args: [counter] });
    let exec;
    {
      using cap = StreamGraphCapture.begin(s);
      inc.launch(s);
      inc.launch(s);
      exec = cap.end();
    }
    assert.equal(exec.nodeCount, 2);
    for (let i = 0; i < 10; i++) exec.launch();
    s.synchronize();
    assert.equal(readU32(counter)[0], 20);
    assert.equal(exec.launchCount, 10);
    using other = d.createStream();
    exec.launch(other);
    other.synchronize();
    assert.equal(readU32(counter)[0], 22);
    const k = exec.graph.readBack();
    assert.deepEqual(k.nodes.map((x) => [x.type, x.kernel?.name, x.kernel?.block]), [
      ['kernel', 'add_one', [32, 1, 1]],
      ['kernel', 'add_one', [32, 1, 1]],
    ]);
    assert.deepEqual(k.edges, [[0, 1]]);
    exec.dispose();
  });

  test('a captured fork/join reads back as a diamond with the real edges, and computes the right numbers', () => {
    const d = Device.get(0);
    const s = d.stream();
    using side = d.createStream();
    using m = Module.compile(d, NVRTC_SOURCE);
    const n = 1024;
    using a = zeroed(s, n);
    using b = zeroed(s, n);
    using out = zeroed(s, n);
    // Create the fork/join marker events before capturing.
    side.join(s);
    s.join(side);
    s.synchronize();
    using cap = StreamGraphCapture.begin(s, 'global');
    a.memsetAsync(s, 5, { elementSize: 4 }); // 0: memset on the origin
    b.copyFromDeviceAsync(s, a); // 1: copy a -> b, after the memset
    side.join(s); // fork: side joins the capture
    assert.equal(side.isCapturing, true);
    m.function('branch_a').launch(side, { grid: 4, block: 256, args: [a, arg.i32(n)] }); // 2
    m.function('branch_b').launch(s, { grid: 4, block: 256, args: [b, arg.i32(n)] }); // 3
    s.join(side); // join
    m.function('join_sum').launch(s, { grid: 4, block: 256, args: [a, b, out, arg.i32(n)] }); // 4
    using exec = cap.end();
    assert.equal(side.isCapturing, false);
    const g = exec.graph.readBack();
    const name = (i: number): string => {
      const x = g.nodes[i]!;
      return x.kernel?.name ?? x.memcpy?.direction ?? x.type;
    };
    const labelled = g.edges.map(([f, t]) => `${name(f)}->${name(t)}`).sort();
    assert.deepEqual(
      labelled,
      // The fork comes after the copy, so both branches follow it.
      ['DeviceToDevice->branch_a', 'DeviceToDevice->branch_b', 'branch_a->join_sum', 'branch_b->join_sum', 'memset->DeviceToDevice'].sort(),
      JSON.stringify(g, (_k, v) => (typeof v === 'bigint' ? `0x${v.toString(16)}` : v)),
    );
    assert.equal(g.nodes.find((x) => x.type === 'memcpy')?.memcpy?.byteLength, 4 * n);
    exec.launch();
    s.synchronize();
    // a = 5*2+1 = 11, b = 5+100 = 105, out = 116.
    assert.ok(readU32(out).every((v) => v === 116), `out[0] = ${readU32(out)[0]}`);
  });

  test('an NVRTC kernel with arguments: graph replays compute the right numbers; captured arguments are fixed', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, NVRTC_SOURCE);
    const n = 2048;
    using x = DeviceBuffer.alloc(d, 4 * n);
    using y = DeviceBuffer.alloc(d, 4 * n);
    x.copyFromHost(Float32Array.from({ length: n }, (_, i) => i));
    y.copyFromHost(new Float32Array(n).fill(1));
    using axpy = m.function('axpy').prepare({ grid: Math.ceil(n / 256), block: 256, args: [arg.f32(0.5), x, y, arg.i32(n)] });
    using cap = StreamGraphCapture.begin(s, 'threadLocal');
    axpy.launch(s);
    using exec = cap.end({ flags: { upload: s } });
    axpy.setArg(0, arg.f32(100)); // after capture: the graph keeps 0.5
    for (let r = 0; r < 3; r++) exec.launch();
    s.synchronize();
    const out = new Float32Array(n);
    y.copyToHost(out);
    assert.ok(out.every((v, i) => v === 1 + 3 * 0.5 * i), `y[7] = ${out[7]}`);
    const node = exec.graph.readBack().nodes[0]!;
    assert.deepEqual(node.kernel, { name: 'axpy', grid: [8, 1, 1], block: [256, 1, 1], sharedMem: 0 });
  });

  test('a synchronous call on the capturing stream invalidates the capture: end() names that call and its stack; the stream recovers', () => {
    const d = Device.get(0);
    const s = d.stream();
    const n = 256;
    using buf = zeroed(s, n);
    using cap = StreamGraphCapture.begin(s, 'global');
    buf.memsetAsync(s, 1, { elementSize: 4 });
    let illegal: unknown = null;
    try {
      s.synchronize(); // waiting for a capturing stream is illegal: the driver invalidates the capture
    } catch (e) {
      illegal = e;
    }
    assert.ok(illegal instanceof CudaError && illegal.code >= 900 && illegal.code <= 908, String(illegal));
    assert.equal(cap.captureStatus(), CaptureStatus.Invalidated);
    assert.equal(cap.firstFailure?.operation, 'Stream.synchronize');
    assert.throws(
      () => cap.end(),
      (e: unknown) =>
        e instanceof CudaError &&
        e.code === 901 &&
        e.errorName === 'CUDA_ERROR_STREAM_CAPTURE_INVALIDATED' &&
        e.details['firstFailedOperation'] === 'Stream.synchronize' &&
        e.message.includes('Stream.synchronize') &&
        e.message.includes('capture.test') &&
        e.cause === illegal,
    );
    assert.equal(cap.isActive(), false);
    assert.equal(cap.captureStatus(), CaptureStatus.None);
    assert.throws(() => cap.end(), (e: unknown) => e instanceof CudaError && e.code === 903);
    // The stream is usable again: eager work runs and a new capture works.
    buf.memsetAsync(s, 9, { elementSize: 4 });
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 9));
    using again = StreamGraphCapture.begin(s);
    buf.memsetAsync(s, 10, { elementSize: 4 });
    using exec = again.end();
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 10));
  });

  test('an unsafe call (cuMemAlloc) in a global capture fails with 900 and invalidates it; dispose, then eager work runs', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 64);
    const cap = StreamGraphCapture.begin(s, 'global');
    try {
      buf.memsetAsync(s, 3, { elementSize: 4 });
      assert.throws(
        () => DeviceBuffer.alloc(d, 1024),
        (e: unknown) => e instanceof CudaError && e.code === 900 && e.errorName === 'CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED',
      );
      assert.equal(cap.firstFailure?.operation, 'DeviceBuffer.alloc');
      assert.equal(cap.captureStatus(), CaptureStatus.Invalidated);
    } finally {
      cap.dispose();
    }
    assert.equal(cap.isActive(), false);
    assert.equal(s.isCapturing, false);
    buf.memsetAsync(s, 4, { elementSize: 4 });
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 4), 'the stream runs eager work after the abandoned capture');
  });

  test('disposing an invalidated capture ends it, ignores the errors, and leaves the stream usable', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 64);
    const cap = StreamGraphCapture.begin(s);
    try {
      buf.memsetAsync(s, 3, { elementSize: 4 });
      assert.throws(() => s.synchronize(), (e: unknown) => e instanceof CudaError && e.code >= 900 && e.code <= 908);
      assert.equal(cap.captureStatus(), CaptureStatus.Invalidated);
    } finally {
      cap.dispose();
    }
    cap.dispose();
    assert.equal(cap.isActive(), false);
    assert.equal(s.isCapturing, false);
    buf.memsetAsync(s, 4, { elementSize: 4 });
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 4));
  });

  test('leaving a using scope by an exception abandons the capture: nothing ran, the stream is usable', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 64);
    assert.throws(() => {
      using cap = StreamGraphCapture.begin(s);
      buf.memsetAsync(s, 1, { elementSize: 4 });
      void cap;
      throw new Error('user code failed mid-capture');
    }, /user code failed/);
    assert.equal(s.isCapturing, false);
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 0), 'the abandoned work never ran');
    buf.memsetAsync(s, 2, { elementSize: 4 });
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 2));
  });

  test('refusals: a second capture on the same stream; host memory that is not pinned', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = DeviceBuffer.alloc(d, 64);
    using pinned = PinnedHostBuffer.alloc(d, 64);
    using cap = StreamGraphCapture.begin(s);
    assert.throws(() => StreamGraphCapture.begin(s), (e: unknown) => e instanceof InvalidArgumentError && /already capturing/.test(e.message));
    assert.throws(
      () => buf.copyFromHostAsync(s, new Uint8Array(64)),
      (e: unknown) => e instanceof InvalidArgumentError && /PinnedHostBuffer/.test(e.message),
    );
    pinned.bytes.fill(6);
    buf.copyFromHostAsync(s, pinned.bytes);
    using exec = cap.end();
    assert.equal(exec.graph.readBack().nodes[0]!.memcpy?.direction, 'HostToDevice');
    exec.launch();
    s.synchronize();
    assert.ok(new Uint8Array(readU32(buf).buffer).every((v) => v === 6));
  });

  test('disposing an unrelated buffer during a global capture defers its cuMemFree, so the capture survives', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 64);
    const unrelated = DeviceBuffer.alloc(d, 1 << 20);
    using cap = StreamGraphCapture.begin(s, 'global');
    buf.memsetAsync(s, 5, { elementSize: 4 });
    unrelated.dispose(); // a cuMemFree now would invalidate the capture: it waits for the end
    assert.equal(unrelated.disposed, true);
    assert.equal(cap.captureStatus(), CaptureStatus.Active);
    using exec = cap.end();
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 5));
  });

  test('relaxed mode lets an unsafe call (cuMemAlloc) through without invalidating the capture', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 64);
    using cap = StreamGraphCapture.begin(s, 'relaxed');
    buf.memsetAsync(s, 8, { elementSize: 4 });
    using extra = DeviceBuffer.alloc(d, 256); // refused in global mode (see above), allowed here
    assert.equal(extra.byteLength, 256);
    assert.equal(cap.captureStatus(), CaptureStatus.Active);
    assert.equal(cap.firstFailure, null);
    using exec = cap.end();
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 8));
  });

  test('the graph keeps the buffers it uses alive after the program disposes them', () => {
    const d = Device.get(0);
    const s = d.stream();
    const src = DeviceBuffer.alloc(d, 4096);
    using dst = zeroed(s, 1024);
    using cap = StreamGraphCapture.begin(s);
    src.memsetAsync(s, 0x77, { elementSize: 4 });
    dst.copyFromDeviceAsync(s, src);
    const exec = cap.end();
    src.dispose();
    assert.equal(src.disposed, true);
    // A fresh allocation must not reuse src's memory while the graph still holds it.
    using scratch = DeviceBuffer.alloc(d, 4096);
    scratch.memsetAsync(s, 0x11);
    exec.launch();
    s.synchronize();
    assert.ok(readU32(dst).every((v) => v === 0x77));
    exec.dispose();
    assert.throws(() => exec.launch(), /GraphExec\.launch: .* has been disposed/);
  });

  test('graph memory nodes: allocAsync and freeAsync inside the capture; instantiate flags', () => {
    const d = Device.get(0);
    const s = d.stream();
    using out = zeroed(s, 256);
    using cap = StreamGraphCapture.begin(s);
    const tmp = DeviceBuffer.allocAsync(s, 1024);
    tmp.memsetAsync(s, 0x42);
    out.copyFromDeviceAsync(s, tmp);
    tmp.freeAsync(s);
    const graph = cap.endGraph();
    const types = graph.readBack().nodes.map((x) => x.type);
    assert.deepEqual([...types].sort(), ['memAlloc', 'memFree', 'memcpy', 'memset']);
    using exec = graph.instantiate({ autoFreeOnLaunch: true }, s);
    exec.launch();
    exec.launch();
    s.synchronize();
    assert.ok(readU32(out).every((v) => v === 0x42424242));
    graph.dispose();
  });

  test('update(graph): same topology updates in place; a different topology names the reason and node', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, 256);
    using m = Module.load(d, fixturePtx());
    const capture = (fn: () => void): Graph => {
      using c = StreamGraphCapture.begin(s);
      fn();
      return c.endGraph();
    };
    using g1 = capture(() => buf.memsetAsync(s, 1, { elementSize: 4 }));
    using g2 = capture(() => buf.memsetAsync(s, 2, { elementSize: 4 }));
    using g3 = capture(() => {
      buf.memsetAsync(s, 3, { elementSize: 4 });
      buf.memsetAsync(s, 4, { elementSize: 4 });
    });
    using g4 = capture(() => m.function('fill_u32').launch(s, { grid: 1, block: 256, args: [buf, arg.u32(5), arg.i32(256)] }));
    using exec = g1.instantiate(undefined, s);
    exec.update(g2);
    assert.equal(exec.graph, g2);
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 2));
    assert.throws(
      () => exec.update(g3),
      (e: unknown) => e instanceof CudaError && e.code === 910 && e.details['reason'] === 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED',
    );
    assert.throws(
      () => exec.update(g4),
      (e: unknown) =>
        e instanceof CudaError &&
        e.code === 910 &&
        e.details['reason'] === 'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED' &&
        /#0 \(kernel 'fill_u32'\)/.test(e.message),
    );
    exec.launch();
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 2), 'a failed update leaves the exec as it was');
  });

  test('an empty graph instantiates and launches; a graph launch inside a capture is refused by the driver and recorded', () => {
    const d = Device.get(0);
    const s = d.stream();
    using empty = Graph.create(d);
    assert.equal(empty.nodeCount, 0);
    using e = empty.instantiate();
    e.launch();
    e.stream.synchronize();
    using buf = zeroed(s, 64);
    using inner = StreamGraphCapture.begin(s);
    buf.memsetAsync(s, 0x21, { elementSize: 4 });
    using innerExec = inner.end();
    // CUDA 13.0 does not capture cuGraphLaunch (900): the call fails, is recorded as the first
    // failure, and disposing the capture leaves the stream usable.
    const outer = StreamGraphCapture.begin(s);
    try {
      assert.throws(() => innerExec.launch(s), (err: unknown) => err instanceof CudaError && err.code === 900);
      assert.equal(outer.firstFailure?.operation, 'GraphExec.launch');
    } finally {
      outer.dispose();
    }
    innerExec.launch(s);
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 0x21));
  });
});
