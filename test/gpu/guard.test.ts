import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  Module,
  Stream,
  StreamGraphCapture,
  GraphCaptureGuard,
  CapturedGraph,
  CapturePool,
  DeviceScalar,
  captureGraph,
  makeGraphed,
  arg,
  CaptureStatus,
  CaptureStateError,
  CudaError,
  DisposedError,
  InvalidArgumentError,
} from '../../src/index.js';
import { observeDriverSymbols } from '../../src/driver/sys.js';
import { graph as gr } from '../../src/driver/result/index.js';
import { activeCaptureCount } from '../../src/cuda/core/capture-hooks.js';
import { deferredCleanupCount } from '../../src/cuda/core/lifetime.js';
import { gpuSuite, fixturePtx } from './gpu.js';
import { GUARD_KERNELS, zeroed, u32, allEqual } from './guard-helpers.js';

const N = 1024;
const launch1d = { grid: Math.ceil(N / 256), block: 256 } as const;

/** Nothing left behind: no capture active, no free waiting, the stream runs eager work. */
function assertClean(s: Stream): void {
  assert.equal(activeCaptureCount(), 0, 'no capture is left active');
  assert.equal(deferredCleanupCount(), 0, 'no free is left waiting for a capture');
  assert.equal(s.isCapturing, false);
}

gpuSuite('GraphCaptureGuard and CapturedGraph', () => {
  test('the seed: a fresh graph is not uploaded and has 0 replays; upload() once reaches the driver; each launch adds a replay', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.load(d, fixturePtx());
    using counter = zeroed(s, 1);
    using inc = m.function('add_one').prepare({ grid: 1, block: 32, args: [counter] });
    let graph: CapturedGraph;
    {
      using guard = GraphCaptureGuard.begin(s);
      assert.equal(guard.mode, 'threadLocal', 'the seed default');
      assert.equal(guard.state, 'capturing');
      assert.equal(guard.status(), CaptureStatus.Active);
      assert.equal(guard.statusReport().expected, true);
      inc.launch(s);
      graph = guard.finish();
      assert.equal(guard.state, 'finished');
      assert.equal(guard.status(), CaptureStatus.None);
      assert.equal(guard.statusReport().expected, true);
    }
    assert.ok(graph instanceof CapturedGraph);
    assert.equal(graph.isUploaded, false);
    assert.equal(graph.numReplays, 0);
    assert.equal(graph.hasPool, false);
    assert.equal(graph.pool, null);
    assert.equal(graph.poolBufferCount, 0);
    assert.equal(graph.nodeCount, 1);
    assert.equal(graph.stream, s);
    assert.equal(u32(counter)[0], 0, 'capture records, it does not run');
    let uploads = 0;
    observeDriverSymbols((name) => {
      if (name === 'cuGraphUpload') uploads++;
    });
    try {
      graph.upload();
      graph.upload();
      graph.upload(s);
    } finally {
      observeDriverSymbols(null);
    }
    assert.equal(uploads, 1, 'only the first upload() reaches the driver');
    assert.equal(graph.isUploaded, true);
    graph.launch();
    assert.equal(graph.numReplays, 1);
    graph.launch();
    assert.equal(graph.numReplays, 2);
    s.synchronize();
    assert.equal(u32(counter)[0], 2);
    using other = d.createStream();
    graph.launch(other);
    other.synchronize();
    assert.equal(graph.numReplays, 3);
    assert.equal(u32(counter)[0], 3, 'launch(stream) replays on another stream');
    // A launch the driver refuses (CUDA 13.0 does not capture graph launches) is not counted.
    const cap = StreamGraphCapture.begin(other);
    try {
      assert.throws(() => graph.launch(other), (e: unknown) => e instanceof CudaError && e.code === 900);
    } finally {
      cap.dispose();
    }
    assert.equal(graph.numReplays, 3, 'numReplays counts successful launches only');
    graph.dispose();
    graph.dispose();
    assert.equal(graph.disposed, true);
    assert.throws(() => graph.launch(), (e: unknown) => e instanceof DisposedError && e.message.startsWith('CapturedGraph.launch: '));
    assertClean(s);
  });

  test('the graph keeps alive every buffer its work was given, after the program disposed them', () => {
    const d = Device.get(0);
    const s = d.stream();
    const src = DeviceBuffer.alloc(d, 4 * N);
    using dst = zeroed(s, N);
    const graph = captureGraph(s, (st) => {
      src.memsetAsync(st, 0x5a5a5a5a, { elementSize: 4 });
      dst.copyFromDeviceAsync(st, src);
    });
    src.dispose();
    using scratch = DeviceBuffer.alloc(d, 4 * N); // must not get src's memory while the graph holds it
    scratch.memsetAsync(s, 0x11);
    graph.launch();
    s.synchronize();
    assert.equal(allEqual(u32(dst), 0x5a5a5a5a), true);
    graph.dispose();
    assertClean(s);
  });

  test('an exception mid-capture (between launches) leaves the scope as itself; the stream then computes eager work correctly', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, GUARD_KERNELS);
    using buf = zeroed(s, N);
    const add = m.function('add_u32');
    class UserFailure extends Error {}
    const thrown = new UserFailure('a kernel wrapper failed between launches');
    let caught: unknown = null;
    try {
      using guard = GraphCaptureGuard.begin(s);
      add.launch(s, { ...launch1d, args: [buf, arg.u32(7), arg.i32(N)] });
      void guard;
      throw thrown;
    } catch (e) {
      caught = e;
    }
    assert.equal(caught, thrown, 'the exception that left the scope is the one the caller sees');
    assert.equal(Object.hasOwn(thrown, 'suppressed'), false, 'no cleanup failure to attach');
    assertClean(s);
    s.synchronize();
    assert.equal(allEqual(u32(buf), 0), true, 'the abandoned capture never ran');
    add.launch(s, { ...launch1d, args: [buf, arg.u32(3), arg.i32(N)] });
    add.launch(s, { ...launch1d, args: [buf, arg.u32(4), arg.i32(N)] });
    s.synchronize();
    assert.equal(allEqual(u32(buf), 7), true, 'eager work runs and computes after the abandoned capture');
    // The same through captureGraph: the body's exception is rethrown as itself.
    const again = new TypeError('body failed');
    assert.throws(
      () =>
        captureGraph(s, (st) => {
          add.launch(st, { ...launch1d, args: [buf, arg.u32(1), arg.i32(N)] });
          throw again;
        }),
      (e: unknown) => e === again,
    );
    assertClean(s);
    const g = captureGraph(s, (st) => add.launch(st, { ...launch1d, args: [buf, arg.u32(10), arg.i32(N)] }));
    g.launch();
    s.synchronize();
    assert.equal(allEqual(u32(buf), 17), true, 'a new capture on the stream works');
    g.dispose();
  });

  test('leaving the scope with a forked stream never joined back ends the capture on both streams; both are usable', () => {
    const d = Device.get(0);
    const s = d.stream();
    using side = d.createStream();
    using a = zeroed(s, N);
    using b = zeroed(s, N);
    // Create the fork/join marker events before capturing.
    side.join(s);
    s.join(side);
    s.synchronize();
    const failure = new Error('failed with a forked stream in the capture');
    let guardSeen: GraphCaptureGuard | null = null;
    assert.throws(() => {
      using guard = GraphCaptureGuard.begin(s);
      guardSeen = guard;
      a.memsetAsync(s, 1, { elementSize: 4 });
      side.join(s); // fork: side joins the capture
      assert.equal(side.isCapturing, true);
      b.memsetAsync(side, 2, { elementSize: 4 });
      throw failure; // side is never joined back
    }, (e: unknown) => e === failure);
    assert.equal(guardSeen!.state, 'abandoned');
    assert.equal(guardSeen!.cleanupError, null, 'the capture ended cleanly on both streams');
    assert.equal(side.isCapturing, false);
    assertClean(s);
    a.memsetAsync(s, 3, { elementSize: 4 });
    b.memsetAsync(side, 4, { elementSize: 4 });
    s.synchronize();
    side.synchronize();
    assert.equal(allEqual(u32(a), 3), true);
    assert.equal(allEqual(u32(b), 4), true, 'the forked stream runs eager work again');
  });

  test('a stream disposed during the capture: leaving the scope still ends the capture (its destroy waited for it)', () => {
    const d = Device.get(0);
    const t = d.createStream();
    using buf = zeroed(t, N);
    const failure = new Error('stream disposed, then failed');
    let guardSeen: GraphCaptureGuard | null = null;
    assert.throws(() => {
      using guard = GraphCaptureGuard.begin(t);
      guardSeen = guard;
      buf.memsetAsync(t, 1, { elementSize: 4 });
      t.dispose(); // its cuStreamDestroy waits for the capture to end
      assert.throws(() => guard.status(), DisposedError);
      throw failure;
    }, (e: unknown) => e === failure);
    assert.equal(guardSeen!.cleanupError, null);
    assert.equal(activeCaptureCount(), 0);
    assert.equal(deferredCleanupCount(), 0, 'the stream was destroyed once the capture ended');
    assert.doesNotThrow(() => d.memoryInfo(), 'no cleanup failure is reported later');
    assert.equal(allEqual(u32(buf), 0), true, 'the discarded work never ran');
  });

  test('a capture invalidated by a synchronous copy: status explains it, finish() throws 901 naming that copy and its stack, the stream is usable', () => {
    const d = Device.get(0);
    // A legacy-stream synchronous copy must wait for blocking streams: with a blocking stream
    // capturing, that wait would depend on the capture, which the driver forbids.
    using blocking = d.createStream({ nonBlocking: false });
    using buf = zeroed(blocking, N);
    const host = new Uint32Array(N);
    const guard = GraphCaptureGuard.beginWithMode(blocking, 'global');
    try {
      buf.memsetAsync(blocking, 5, { elementSize: 4 });
      let illegal: unknown = null;
      try {
        buf.copyToHost(host);
      } catch (e) {
        illegal = e;
      }
      assert.ok(illegal instanceof CudaError && illegal.code >= 900 && illegal.code <= 908, `the synchronous copy failed under capture: ${String(illegal)}`);
      assert.equal(guard.firstFailure?.operation, 'DeviceBuffer.copyToHost');
      const report = guard.statusReport();
      assert.equal(report.status, CaptureStatus.Invalidated);
      assert.equal(report.expected, false);
      assert.match(report.explanation, /DeviceBuffer\.copyToHost/);
      assert.match(report.explanation, /guard\.test/, 'the stack of the illegal call');
      assert.throws(
        () => guard.finish(),
        (e: unknown) =>
          e instanceof CudaError &&
          e.code === 901 &&
          e.message.startsWith('GraphCaptureGuard.finish: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED') &&
          e.details['firstFailedOperation'] === 'DeviceBuffer.copyToHost' &&
          e.message.includes('guard.test') &&
          e.cause === illegal,
      );
      assert.equal(guard.state, 'failed');
      assert.throws(() => guard.finish(), (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_GUARD_FINISHED');
    } finally {
      guard.dispose();
    }
    assertClean(blocking);
    buf.memsetAsync(blocking, 9, { elementSize: 4 });
    blocking.synchronize();
    assert.equal(allEqual(u32(buf), 9), true, 'the stream is usable after the failed finish');
  });

  test('a capture invalidated by a synchronization: finish() names Stream.synchronize; dispose after it is a no-op', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, N);
    {
      using guard = GraphCaptureGuard.begin(s);
      buf.memsetAsync(s, 1, { elementSize: 4 });
      assert.throws(() => s.synchronize(), (e: unknown) => e instanceof CudaError && e.code >= 900 && e.code <= 908);
      assert.equal(guard.status(), CaptureStatus.Invalidated);
      assert.throws(() => guard.finish(), (e: unknown) => e instanceof CudaError && e.code === 901 && e.details['firstFailedOperation'] === 'Stream.synchronize');
    }
    assertClean(s);
    buf.memsetAsync(s, 2, { elementSize: 4 });
    s.synchronize();
    assert.equal(allEqual(u32(buf), 2), true);
  });

  test('a capture ended behind the guard: status explains the unexpected None; finish() throws ERR_CAPTURE_NOT_ACTIVE', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, N);
    using guard = GraphCaptureGuard.begin(s);
    buf.memsetAsync(s, 1, { elementSize: 4 });
    const ended = gr.streamEndCapture('another library', s.handle); // as code outside cudagraph would
    if (ended.graph !== 0n) gr.graphDestroy('another library', ended.graph);
    const report = guard.statusReport();
    assert.equal(report.status, CaptureStatus.None);
    assert.equal(report.expected, false);
    assert.match(report.explanation, /behind the guard/);
    assert.throws(
      () => guard.finish(),
      (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_CAPTURE_NOT_ACTIVE' && e.cause instanceof Error && /behind the guard/.test(e.message),
    );
    assertClean(s);
    buf.memsetAsync(s, 3, { elementSize: 4 });
    s.synchronize();
    assert.equal(allEqual(u32(buf), 3), true);
  });

  test('finish() consumes the guard; finish after dispose and dispose after finish are typed or no-ops', () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, N);
    const g1 = GraphCaptureGuard.begin(s);
    buf.memsetAsync(s, 1, { elementSize: 4 });
    using graph = g1.finish();
    assert.throws(
      () => g1.finish(),
      (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_GUARD_FINISHED' && /already finished/.test(e.message) && e.message.startsWith('GraphCaptureGuard.finish: '),
    );
    g1.dispose(); // after finish: nothing to do
    const g2 = GraphCaptureGuard.begin(s);
    g2.dispose();
    assert.equal(g2.state, 'abandoned');
    assert.equal(g2.cleanupError, null);
    assert.throws(() => g2.finish(), (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_GUARD_FINISHED' && /disposed/.test(e.message));
    // Bad flags are refused before anything ends: the guard keeps capturing.
    const g3 = GraphCaptureGuard.begin(s);
    try {
      assert.throws(() => g3.finish({ flags: { bogus: true } } as never), InvalidArgumentError);
      assert.equal(g3.state, 'capturing');
      buf.memsetAsync(s, 4, { elementSize: 4 });
      using g = g3.finish({ flags: { autoFreeOnLaunch: true } });
      g.launch();
    } finally {
      g3.dispose();
    }
    graph.launch();
    s.synchronize();
    assert.equal(allEqual(u32(buf), 1), true);
    assertClean(s);
  });

  test('a capture body that returns a Promise is refused; its capture is ended and discarded; no unhandled rejection', async () => {
    const d = Device.get(0);
    const s = d.stream();
    using buf = zeroed(s, N);
    assert.throws(
      () =>
        captureGraph(s, (st) => {
          buf.memsetAsync(st, 1, { elementSize: 4 });
          return Promise.reject(new Error('would reject later')) as never;
        }),
      (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_ASYNC_CAPTURE' && /must be synchronous/.test(e.message) && e.message.startsWith('captureGraph: '),
    );
    assertClean(s);
    assert.throws(() => captureGraph(s, (async () => {}) as never), (e: unknown) => e instanceof InvalidArgumentError && /async function/.test(e.message));
    await new Promise((r) => setTimeout(r, 20)); // an unhandled rejection would fail this test file
    s.synchronize();
    assert.equal(allEqual(u32(buf), 0), true, 'the discarded capture never ran');
  });

  test('a DeviceScalar set before each launch changes what the replay computes, without a new capture', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, GUARD_KERNELS);
    using acc = zeroed(s, N);
    using step = DeviceScalar.create(s, 'u32', 1);
    assert.equal(step.value, 1);
    using graph = captureGraph(s, (st) => m.function('add_from').launch(st, { ...launch1d, args: [acc, step.arg, arg.i32(N)] }));
    let expected = 0;
    for (const v of [1, 2, 3, 10, 100]) {
      step.set(v);
      graph.launch();
      expected += v;
    }
    s.synchronize();
    assert.equal(allEqual(u32(acc), expected), true, `sum of the values set before each replay (${expected})`);
    assert.equal(step.value, 100);
    using cap = GraphCaptureGuard.begin(s);
    assert.throws(() => step.set(5), (e: unknown) => e instanceof InvalidArgumentError && /capturing/.test(e.message));
    assert.throws(() => DeviceScalar.create(s, 'u32', 0), (e: unknown) => e instanceof InvalidArgumentError && /capturing/.test(e.message));
    cap.dispose();
    assert.throws(() => step.set(-1), InvalidArgumentError);
    using f = DeviceScalar.create(s, 'f64', 0.25);
    const out = new Float64Array(1);
    s.synchronize();
    f.buffer.copyToHost(out);
    assert.equal(out[0], 0.25);
  });

  test('setKernelArgs points a kernel node of the instantiated graph at new arguments; later replays compute them', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, GUARD_KERNELS);
    using a = zeroed(s, N);
    using b = zeroed(s, N);
    using graph = captureGraph(s, (st) => {
      a.memsetAsync(st, 0, { elementSize: 4, count: 1 }); // a memset node, not a kernel
      m.function('add_u32').launch(st, { ...launch1d, args: [a, arg.u32(1), arg.i32(N)] });
    });
    const nodes = graph.graph.readBack().nodes;
    const kernelAt = nodes.findIndex((n) => n.type === 'kernel');
    const memsetAt = nodes.findIndex((n) => n.type === 'memset');
    assert.ok(kernelAt >= 0 && memsetAt >= 0, JSON.stringify(nodes.map((n) => n.type)));
    assert.deepEqual(graph.kernelNodes(), [{ index: kernelAt, name: 'add_u32' }]);
    graph.launch(); // a += 1 (a[0] reset to 0 first)
    graph.setKernelArgs('add_u32', [b, arg.u32(5), arg.i32(N)]);
    graph.launch(); // b += 5
    graph.setKernelArgs(kernelAt, [b, arg.u32(20), arg.i32(N)]);
    graph.launch(); // b += 20
    s.synchronize();
    const av = u32(a);
    assert.equal(av[0], 0, 'the memset node still runs');
    assert.equal(allEqual(av.subarray(1), 1), true, 'replays before the swap used the captured arguments');
    assert.equal(allEqual(u32(b), 25), true, 'replays after each swap used the new arguments');
    // The graph keeps buffers given to setKernelArgs alive.
    const tmp = zeroed(s, N);
    graph.setKernelArgs('add_u32', [tmp, arg.u32(1), arg.i32(N)]);
    tmp.dispose();
    graph.launch();
    s.synchronize();
    const refused = (fn: () => void, pattern: RegExp): void =>
      assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('CapturedGraph.setKernelArgs: ') && pattern.test(e.message));
    refused(() => graph.setKernelArgs('add_u32', [b, arg.u32(1)]), /takes 3 parameter/);
    refused(() => graph.setKernelArgs('add_u32', [b, arg.f64(1), arg.i32(N)]), /args\[1\] is f64/);
    refused(() => graph.setKernelArgs('add_u32', [b, 1 as never, arg.i32(N)]), /plain numbers are refused/);
    refused(() => graph.setKernelArgs('nope', [b, arg.u32(1), arg.i32(N)]), /no kernel node runs 'nope' \(kernels in the graph: add_u32\)/);
    refused(() => graph.setKernelArgs(memsetAt, [b, arg.u32(1), arg.i32(N)]), new RegExp(`node #${memsetAt} is a 'memset' node, not a kernel node`));
    refused(() => graph.setKernelArgs(9, [b, arg.u32(1), arg.i32(N)]), /node must be an integer/);
    s.synchronize();
    assert.equal(allEqual(u32(b), 25), true, 'refused calls changed nothing');
  });

  test('makeGraphed runs fn on a side stream `warmup` times, joins it back, then captures it once', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.load(d, fixturePtx());
    using counter = zeroed(s, 1);
    using inc = m.function('add_one').prepare({ grid: 1, block: 32, args: [counter] });
    const seen: Stream[] = [];
    using graph = makeGraphed(s, (st) => {
      seen.push(st);
      inc.launch(st);
    });
    assert.equal(seen.length, 4, 'three warm-up runs (the default), one capture');
    assert.ok(seen[0] !== s && seen[0] === seen[1] && seen[1] === seen[2], 'warm-up on one side stream');
    assert.equal(seen[0]!.disposed, true, 'the side stream is disposed after the join');
    assert.equal(seen[3], s, 'captured on the given stream');
    s.synchronize();
    assert.equal(u32(counter)[0], 3, 'the warm-up work ran and was joined back into the stream');
    graph.launch();
    graph.launch();
    s.synchronize();
    assert.equal(u32(counter)[0], 5);
    let calls = 0;
    using once = makeGraphed(s, (st) => {
      calls++;
      inc.launch(st);
    }, { warmup: 0 });
    assert.equal(calls, 1);
    assert.throws(
      () =>
        makeGraphed(s, () => {
          throw new RangeError('lazy init failed');
        }),
      RangeError,
    );
    assertClean(s);
    once.launch();
    s.synchronize();
    assert.equal(u32(counter)[0], 6);
  });

  test('bad input: a disposed stream, the legacy NULL stream, a bad mode, a stream already capturing, a released or sealed pool', () => {
    const d = Device.get(0);
    const s = d.stream();
    const free0 = d.memoryInfo().free;
    const gone = d.createStream();
    gone.dispose();
    assert.throws(() => GraphCaptureGuard.begin(gone), (e: unknown) => e instanceof DisposedError && e.message.startsWith('GraphCaptureGuard.begin: '));
    const legacy = Stream.wrap(d, 0n);
    assert.throws(() => GraphCaptureGuard.begin(legacy), (e: unknown) => e instanceof InvalidArgumentError && /legacy NULL stream/.test(e.message));
    assert.throws(() => GraphCaptureGuard.beginWithMode(s, 'GLOBAL' as never), (e: unknown) => e instanceof InvalidArgumentError && /mode must be one of/.test(e.message));
    assert.throws(() => GraphCaptureGuard.beginWithPool(s, {} as never), (e: unknown) => e instanceof InvalidArgumentError && /pool must be a CapturePool/.test(e.message));
    {
      using g = GraphCaptureGuard.begin(s);
      assert.throws(() => GraphCaptureGuard.begin(s), (e: unknown) => e instanceof InvalidArgumentError && /already capturing/.test(e.message));
      assert.equal(g.state, 'capturing', 'the refused second guard changed nothing');
    }
    const released = new CapturePool();
    released.dispose();
    assert.throws(() => GraphCaptureGuard.beginWithPool(s, released), (e: unknown) => e instanceof DisposedError && /CapturePool #\d+/.test(e.message));
    const sealed = new CapturePool();
    sealed.seal();
    assert.throws(() => GraphCaptureGuard.beginWithPool(s, sealed), (e: unknown) => e instanceof CaptureStateError && e.code === 'ERR_POOL_SEALED');
    assert.equal(sealed.holderCount, 0, 'a refused begin holds nothing');
    sealed.unseal();
    GraphCaptureGuard.beginWithPool(s, sealed).dispose();
    assert.equal(sealed.holderCount, 0);
    sealed.dispose();
    assertClean(s);
    const drift = d.memoryInfo().free - free0;
    assert.ok(Math.abs(drift) <= 8 * 1024 * 1024, `no device memory left behind (free changed by ${drift} bytes)`);
  });

  test('a stream of another device is refused by a pool and by launch', { skip: Device.count() < 2 ? 'needs two GPUs; this machine has one' : false }, () => {
    const d0 = Device.get(0);
    const d1 = Device.get(1);
    const s0 = d0.stream();
    const s1 = d1.stream();
    using pool = new CapturePool({ device: d0 });
    assert.throws(() => GraphCaptureGuard.beginWithPool(s1, pool), (e: unknown) => e instanceof InvalidArgumentError && /serves one device/.test(e.message));
    d0.makeCurrent();
    using buf = zeroed(s0, N);
    using graph = captureGraph(s0, (st) => buf.memsetAsync(st, 1));
    assert.throws(() => graph.launch(s1), (e: unknown) => e instanceof InvalidArgumentError && /the graph on/.test(e.message));
    assert.equal(graph.numReplays, 0);
  });
});
