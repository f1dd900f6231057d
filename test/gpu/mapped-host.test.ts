import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, PinnedHostBuffer, Module, StreamGraphCapture, DisposedError, arg } from '../../src/index.js';
import { gpuSuite, NVRTC_SOURCE } from './gpu.js';

// Kernels that read and write pinned host memory themselves (zero-copy), eagerly and in a graph.
gpuSuite('PinnedHostBuffer as a kernel argument (zero-copy)', () => {
  test('a kernel reads and writes the pages: passed bare or as arg.ptr, eagerly', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using m = Module.compile(d, NVRTC_SOURCE);
    using host = PinnedHostBuffer.alloc(d, 4 * 1000);
    const u = host.asUint32();
    u.forEach((_, i) => (u[i] = i));
    assert.equal(typeof host.devicePtr, 'bigint');
    assert.notEqual(host.devicePtr, 0n);
    assert.equal(host.devicePtr, host.devicePtr, 'asked of the driver once, the same after');
    const add = m.function('add_u32');
    add.launch(s, { grid: 4, block: 256, args: [host, arg.u32(5), arg.i32(1000)] });
    s.synchronize();
    assert.ok(u.every((v, i) => v === i + 5), 'the kernel added 5 to every element in host memory');
    add.launch(s, { grid: 4, block: 256, args: [arg.ptr(host), arg.u32(2), arg.i32(1000)] });
    s.synchronize();
    assert.ok(u.every((v, i) => v === i + 7));
    assert.match(String(arg.ptr(host)), /^ptr\(PinnedHostBuffer\(0x[0-9a-f]+, 4000 bytes\)\)$/);
  });

  test('a graph whose kernel is given the buffer keeps the pages pinned after the owner disposes it', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using m = Module.compile(d, NVRTC_SOURCE);
    const host = PinnedHostBuffer.alloc(d, 4 * 256);
    const u = host.asUint32();
    u.fill(10);
    const cap = StreamGraphCapture.begin(s, 'global');
    m.function('add_u32').launch(s, { grid: 1, block: 256, args: [host, arg.u32(1), arg.i32(256)] });
    using exec = cap.end();
    assert.ok(u.every((v) => v === 10), 'capture records, it does not run');
    host.dispose();
    assert.throws(() => host.devicePtr, (e: unknown) => e instanceof DisposedError && e.message.startsWith('PinnedHostBuffer.devicePtr:'));
    for (let i = 0; i < 3; i++) exec.launch(s);
    s.synchronize();
    assert.ok(u.every((v) => v === 13), 'three replays wrote into the pages the graph still holds');
  });

  test('a disposed buffer is refused as an argument, naming the call', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using m = Module.compile(d, NVRTC_SOURCE);
    const host = PinnedHostBuffer.alloc(d, 64);
    host.dispose();
    assert.throws(
      () => m.function('add_u32').launch(s, { grid: 1, block: 16, args: [host, arg.u32(1), arg.i32(16)] }),
      (e: unknown) => e instanceof DisposedError && e.message.startsWith('Kernel.launch'),
    );
  });
});
