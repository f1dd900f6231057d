/**
 * The hot calls (prepared and one-off kernel launches, graph launches) on both bindings: the
 * Node-API addon and koffi. `npm run test:gpu` runs every GPU test on the binding the environment
 * selects (the device run does it twice, once with CUDAGRAPH_NATIVE=0); these tests also switch
 * binding inside one process and check that both compute the same and fail the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, Module, Stream, StreamGraphCapture, CudaError, arg } from '../../src/index.js';
import { nativeStatus } from '../../src/driver/hot.js';
import { gpuSuite, fixturePtx, readU32, bindings, onBinding } from './gpu.js';

const koffiForced = /^(0|false|off|no)$/i.test((process.env['CUDAGRAPH_NATIVE'] ?? '').trim());
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';


gpuSuite('hot calls: Node-API addon and koffi', () => {
  test('the binding is the one the environment asks for', () => {
    const st = nativeStatus();
    if (koffiForced) assert.equal(st.active, false, st.reason);
    else if (linuxX64) assert.equal(st.active, true, `the prebuilt addon should load here: ${st.reason}`);
  });

  test('prepared, one-off and graph launches compute the same on both bindings', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.load(d, fixturePtx());
    const fill = m.function('fill_u32');
    const n = 1000;
    using buf = DeviceBuffer.alloc(d, 4 * n);
    let v = 0x100;
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using p = fill.prepare({ grid: Math.ceil(n / 128), block: 128, args: [buf, arg.u32(++v), arg.i32(n)] });
        p.launch(s);
        s.synchronize();
        assert.ok(readU32(buf).every((x) => x === v), `${name}: prepared launch`);
        fill.launch(s, { grid: Math.ceil(n / 128), block: 128, args: [buf, arg.u32(++v), arg.i32(n)] });
        s.synchronize();
        assert.ok(readU32(buf).every((x) => x === v), `${name}: one-off launch`);
        const before = v;
        p.setArg(1, arg.u32(++v));
        using cap = StreamGraphCapture.begin(s, 'global');
        for (let i = 0; i < 50; i++) p.launch(s);
        using exec = cap.end();
        assert.equal(exec.nodeCount, 50);
        assert.ok(readU32(buf).every((x) => x === before), `${name}: captured launches do not run`);
        exec.launch(s);
        exec.launch(s);
        s.synchronize();
        assert.ok(readU32(buf).every((x) => x === v), `${name}: graph launch`);
        assert.equal(exec.launchCount, 2);
      });
    }
  });

  test('a launch the driver refuses is the same CudaError on both bindings', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.load(d, fixturePtx());
    using buf = DeviceBuffer.alloc(d, 4 * 4096);
    const codes: number[] = [];
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        // 2048 threads a block is over the hardware limit (1024): the driver refuses the launch
        // (CUDA_ERROR_INVALID_VALUE expected), non-sticky.
        using p = m.function('fill_u32').prepare({ grid: 1, block: 2048, args: [buf, arg.u32(1), arg.i32(4096)] });
        assert.throws(
          () => p.launch(s),
          (e: unknown) =>
            e instanceof CudaError &&
            e.code > 0 &&
            codes.push(e.code) > 0 &&
            e.operation === 'PreparedLaunch.launch' &&
            e.driverCall === 'cuLaunchKernel' &&
            e.message.startsWith(`PreparedLaunch.launch: ${e.errorName} (${e.code})`),
          name,
        );
        s.synchronize();
      });
    }
    assert.ok(codes.every((c) => c === codes[0]), `the same code on every binding: ${codes.join(', ')}`);
  });

  test('a launch that breaks a capture is recorded with its JS stack on both bindings', () => {
    const d = Device.get(0);
    using m = Module.load(d, fixturePtx());
    const n = 256;
    using buf = DeviceBuffer.alloc(d, 4 * n);
    const legacy = Stream.wrap(d, 0n);
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using blocking = d.createStream({ nonBlocking: false });
        using p = m.function('fill_u32').prepare({ grid: 2, block: 128, args: [buf, arg.u32(7), arg.i32(n)] });
        const cap = StreamGraphCapture.begin(blocking, 'global');
        try {
          p.launch(blocking);
          // The legacy stream synchronizes with every blocking stream, so work on it while a
          // blocking stream captures would depend on the capture: the driver refuses it (906).
          assert.throws(() => p.launch(legacy), (e: unknown) => e instanceof CudaError && e.code >= 900 && e.code <= 908, name);
          const first = cap.firstFailure;
          assert.equal(first?.operation, 'PreparedLaunch.launch', name);
          assert.equal(first?.error.driverCall, 'cuLaunchKernel', name);
          assert.ok((first?.error.stack ?? '').includes('native.test'), `${name}: ${first?.error.stack}`);
        } finally {
          cap.dispose();
        }
        // The stream is usable again.
        p.setArg(1, arg.u32(8));
        p.launch(blocking);
        blocking.synchronize();
        assert.ok(readU32(buf).every((x) => x === 8), name);
      });
    }
  });
});
