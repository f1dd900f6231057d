import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  Module,
  arg,
  nvrtcVersion,
  CudaError,
  NvrtcError,
  InvalidArgumentError,
  DisposedError,
} from '../../src/index.js';
import { gpuSuite, fixturePtx, fixtureCubin, NVRTC_SOURCE, readU32 } from './gpu.js';

gpuSuite('Module and kernels', () => {
  test('PTX text and an sm_90 cubin load, and their kernels run', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using buf = DeviceBuffer.alloc(d, 4 * 1000);
    using ptx = Module.load(d, fixturePtx());
    assert.equal(ptx.kind, 'ptx');
    ptx.function('fill_u32').launch(s, { grid: 4, block: 256, args: [buf, arg.u32(0xc0ffee), arg.i32(1000)] });
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 0xc0ffee));
    const cc = d.computeCapability;
    if (cc.major === 9 && cc.minor === 0) {
      using cubin = Module.load(d, fixtureCubin());
      assert.equal(cubin.kind, 'cubin');
      cubin.function('fill_u32').launch(s, { grid: [4], block: [256], args: [arg.ptr(buf), arg.u32(7), arg.i32(1000)] });
      s.synchronize();
      assert.ok(readU32(buf).every((v) => v === 7));
    }
  });

  test('a missing kernel is CUDA_ERROR_NOT_FOUND; a bad PTX fails with the JIT log', () => {
    const d = Device.get(0);
    using m = Module.load(d, fixturePtx());
    assert.throws(
      () => m.function('no_such_kernel'),
      (e: unknown) => e instanceof CudaError && e.code === 500 && /no kernel named 'no_such_kernel'/.test(e.message),
    );
    assert.throws(
      () => Module.load(d, '.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry broken() { this is not ptx; }'),
      (e: unknown) => e instanceof CudaError && e.message.startsWith('Module.load: ') && e.driverCall === 'cuModuleLoadDataEx',
    );
  });

  test('the kernel parameter sizes come from the driver and launches are checked against them', () => {
    const d = Device.get(0);
    using m = Module.load(d, fixturePtx());
    const fill = m.function('fill_u32');
    assert.equal(m.function('fill_u32'), fill, 'one Kernel object per name');
    assert.deepEqual(fill.paramSizes, [8, 4, 4]);
    using s = d.createStream();
    using buf = DeviceBuffer.alloc(d, 64);
    assert.throws(
      () => fill.launch(s, { grid: 1, block: 1, args: [buf, arg.u32(1)] }),
      (e: unknown) => e instanceof InvalidArgumentError && /takes 3 parameter/.test(e.message),
    );
    assert.throws(
      () => fill.prepare({ grid: 1, block: 1, args: [buf, arg.u64(1), arg.i32(16)] }),
      (e: unknown) => e instanceof InvalidArgumentError && /args\[1\] is u64 \(8 bytes\) but parameter 1 of 'fill_u32' is 4 bytes/.test(e.message),
    );
    assert.throws(() => fill.launch(s, { grid: 1, block: 1, args: [buf, 1, arg.i32(16)] as never }), /C type must be explicit/);
  });

  test('NVRTC compiles CUDA C++ with arguments; C++ name expressions; compile errors carry the log', () => {
    const d = Device.get(0);
    const v = nvrtcVersion();
    assert.ok(v.major >= 11, JSON.stringify(v));
    using m = Module.compile(d, NVRTC_SOURCE, { names: ['scale<float>'] });
    assert.equal(m.kind, 'cubin');
    const n = 1000;
    using s = d.createStream();
    using x = DeviceBuffer.alloc(d, 4 * n);
    using y = DeviceBuffer.alloc(d, 4 * n);
    x.copyFromHost(Float32Array.from({ length: n }, (_, i) => i));
    y.copyFromHost(new Float32Array(n).fill(1));
    m.function('axpy').launch(s, { grid: Math.ceil(n / 256), block: 256, args: [arg.f32(2), x, y, arg.i32(n)] });
    m.function('scale<float>').launch(s, { grid: 4, block: 256, args: [y, arg.f32(0.5), arg.i32(n)] });
    s.synchronize();
    const out = new Float32Array(n);
    y.copyToHost(out);
    assert.ok(out.every((val, i) => val === (2 * i + 1) * 0.5), `y[10] = ${out[10]}`);
    using ptx = Module.compile(d, NVRTC_SOURCE, { output: 'ptx' });
    assert.equal(ptx.kind, 'ptx');
    assert.throws(
      () => Module.compile(d, 'extern "C" __global__ void bad() { undefined_thing(); }', { name: 'bad.cu' }),
      (e: unknown) =>
        e instanceof NvrtcError && e.code === 'NVRTC_ERROR_COMPILATION' && /bad\.cu/.test(e.log) && /undefined_thing/.test(e.log) && e.message.startsWith('Module.compile: NVRTC_ERROR_COMPILATION'),
    );
  });

  test('a prepared launch reuses its packed arguments; setArg rewrites one in place', () => {
    const d = Device.get(0);
    using m = Module.load(d, fixturePtx());
    using s = d.createStream();
    using counter = DeviceBuffer.alloc(d, 4);
    counter.memsetAsync(s, 0);
    using inc = m.function('add_one').prepare({ grid: 1, block: 32, args: [counter] });
    for (let i = 0; i < 1000; i++) inc.launch(s);
    s.synchronize();
    assert.equal(readU32(counter)[0], 1000);
    using buf = DeviceBuffer.alloc(d, 4 * 256);
    using fill = m.function('fill_u32').prepare({ grid: 1, block: 256, args: [buf, arg.u32(1), arg.i32(256)] });
    fill.launch(s);
    fill.setArg(1, arg.u32(2));
    fill.launch(s);
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 2));
    assert.throws(() => fill.setArg(1, arg.f64(1)), InvalidArgumentError);
    assert.throws(() => fill.setArg(3, arg.u32(1)), InvalidArgumentError);
    // A prepared launch refuses to run with a disposed argument buffer (its memory is still held).
    const tmp = DeviceBuffer.alloc(d, 4 * 256);
    using fill2 = m.function('fill_u32').prepare({ grid: 1, block: 256, args: [tmp, arg.u32(1), arg.i32(256)] });
    tmp.dispose();
    assert.throws(() => fill2.launch(s), (e: unknown) => e instanceof DisposedError && /DeviceBuffer/.test(e.message));
    fill2.setArg(0, buf);
    fill2.launch(s);
    s.synchronize();
    assert.ok(readU32(buf).every((v) => v === 1));
  });

  test('a disposed module refuses its kernels', () => {
    const d = Device.get(0);
    const m = Module.load(d, fixturePtx());
    const k = m.function('empty_kernel');
    m.dispose();
    using s = d.createStream();
    assert.throws(() => k.launch(s, { grid: 1, block: 1, args: [] }), (e: unknown) => e instanceof DisposedError && e.message.startsWith('Kernel.launch:'));
  });
});
