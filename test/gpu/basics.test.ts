import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Device,
  DeviceBuffer,
  PinnedHostBuffer,
  Stream,
  Event,
  StreamGraphCapture,
  DisposedError,
  InvalidArgumentError,
  CudaError,
} from '../../src/index.js';
import { gpuSuite, readU32 } from './gpu.js';

gpuSuite('Device', () => {
  test('count, the same object per ordinal, name, capability, memory, driver version', () => {
    assert.ok(Device.count() >= 1);
    const d = Device.get(0);
    assert.equal(Device.get(), d);
    assert.equal(d.ordinal, 0);
    assert.ok(d.name.length > 0);
    assert.ok(d.computeCapability.major >= 3);
    assert.ok(d.multiprocessorCount > 0);
    assert.ok(d.totalMemory > 1e9);
    const m = d.memoryInfo();
    assert.ok(m.free > 0 && m.free <= m.total && m.total === d.totalMemory, JSON.stringify(m));
    assert.ok(Device.driverVersion() >= 10000);
    assert.match(String(d), /^Device\(0: .+, sm_\d+\)$/);
    assert.throws(() => Device.get(Device.count()), InvalidArgumentError);
    const r = d.streamPriorityRange();
    assert.ok(r.greatest <= r.least);
  });
});

gpuSuite('Stream and Event', () => {
  test('device.stream() is one capture-ready stream until disposed; createStream checks its priority', () => {
    const d = Device.get(0);
    const s = d.stream();
    assert.equal(d.stream(), s);
    assert.equal(s.nonBlocking, true);
    assert.equal(s.owned, true);
    const r = d.streamPriorityRange();
    using hi = d.createStream({ priority: r.greatest });
    assert.equal(hi.priority, r.greatest);
    assert.throws(() => d.createStream({ priority: r.greatest - 1 }), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('Device.createStream: priority'));
    assert.throws(() => d.createStream({ nonBlocking: 1 } as never), InvalidArgumentError);
    assert.equal(s.query(), true);
    s.synchronize();
  });

  test('synchronizeAsync resolves after the work without blocking the event loop', async () => {
    const d = Device.get(0);
    using s = d.createStream();
    using buf = DeviceBuffer.alloc(d, 64 << 20);
    for (let i = 0; i < 20; i++) buf.memsetAsync(s, i & 0xff);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    await s.synchronizeAsync();
    clearInterval(timer);
    assert.equal(s.query(), true);
    assert.equal(readU32(buf)[0], 0x13131313);
    assert.ok(ticks >= 0);
  });

  test('events: record, query, synchronize, elapsed time; wait orders streams; fork and join', async () => {
    const d = Device.get(0);
    using s = d.createStream();
    using start = d.createEvent({ timing: true });
    using stop = d.createEvent({ timing: true });
    using buf = DeviceBuffer.alloc(d, 16 << 20);
    start.record(s);
    buf.memsetAsync(s, 1);
    stop.record(s);
    stop.synchronize();
    assert.equal(stop.query(), true);
    assert.ok(stop.elapsedMs(start) >= 0);
    await stop.synchronizeAsync();
    using plain = d.createEvent();
    plain.record(s);
    assert.throws(() => stop.elapsedMs(plain), (e: unknown) => e instanceof InvalidArgumentError && /timing: true/.test(e.message));
    // Fork/join: the child sees the parent's work, the parent waits for the child's.
    using out = DeviceBuffer.alloc(d, 1024);
    out.memsetAsync(s, 0);
    const child = s.fork();
    out.memsetAsync(child, 0x5a);
    s.join(child);
    s.synchronize();
    assert.ok(readU32(out).every((v) => v === 0x5a5a5a5a));
    child.dispose();
    const e2 = s.record();
    assert.ok(e2 instanceof Event);
    e2.synchronize();
    e2.dispose();
  });

  test('Stream.wrap adopts the legacy NULL stream, which runs work but cannot be captured', () => {
    const d = Device.get(0);
    const legacy = Stream.wrap(d, 0n);
    assert.equal(legacy.isLegacyDefault, true);
    assert.equal(legacy.owned, false);
    using buf = DeviceBuffer.alloc(d, 256);
    buf.memsetAsync(legacy, 7);
    legacy.synchronize();
    assert.equal(readU32(buf)[0], 0x07070707);
    assert.throws(
      () => StreamGraphCapture.begin(legacy),
      (e: unknown) => e instanceof InvalidArgumentError && /legacy NULL stream cannot be captured/.test(e.message),
    );
    legacy.dispose();
  });
});

gpuSuite('DeviceBuffer and PinnedHostBuffer', () => {
  test('synchronous and asynchronous copies round-trip; offsets are honoured', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using a = DeviceBuffer.alloc(d, 4096);
    using b = DeviceBuffer.alloc(d, 4096);
    const src = Uint32Array.from({ length: 1024 }, (_, i) => i * 3 + 1);
    a.copyFromHost(src);
    assert.deepEqual(readU32(a), src);
    b.copyFromDeviceAsync(s, a, { srcOffset: 16, dstOffset: 0, byteLength: 64 });
    const back = new Uint32Array(16);
    b.copyToHostAsync(s, back, { byteLength: 64 });
    s.synchronize();
    assert.deepEqual(back, src.subarray(4, 20));
    const part = new Uint32Array([9, 9]);
    a.copyFromHostAsync(s, part, { offset: 8 });
    s.synchronize();
    assert.deepEqual(readU32(a).subarray(0, 4), Uint32Array.from([1, 4, 9, 9]));
  });

  test('memset with 1-, 2- and 4-byte elements, offset and count', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using buf = DeviceBuffer.alloc(d, 64);
    buf.memsetAsync(s, 0xab);
    buf.memsetAsync(s, 0x1234, { elementSize: 2, offset: 16, count: 4 });
    buf.memsetAsync(s, 0xdeadbeef, { elementSize: 4, offset: 32, count: 2 });
    s.synchronize();
    const bytes = new Uint8Array(64);
    buf.copyToHost(bytes);
    const v = new DataView(bytes.buffer);
    assert.equal(v.getUint32(0, true), 0xabababab);
    assert.equal(v.getUint16(16, true), 0x1234);
    assert.equal(v.getUint16(22, true), 0x1234);
    assert.equal(v.getUint16(24, true), 0xabab);
    assert.equal(v.getUint32(32, true), 0xdeadbeef);
    assert.equal(v.getUint32(36, true), 0xdeadbeef);
    assert.equal(v.getUint32(40, true), 0xabababab);
    for (const bad of [
      () => buf.memsetAsync(s, 256),
      () => buf.memsetAsync(s, -1),
      () => buf.memsetAsync(s, 1, { elementSize: 3 as never }),
      () => buf.memsetAsync(s, 1, { elementSize: 4, offset: 2 }),
      () => buf.memsetAsync(s, 1, { elementSize: 4, count: 17 }),
      () => buf.copyFromHost(new Uint8Array(65)),
      () => buf.copyFromHost(new Uint8Array(8), { offset: 60 }),
      () => buf.copyFromHost([1, 2] as never),
    ]) {
      assert.throws(bad, InvalidArgumentError);
    }
  });

  test('stream-ordered allocation and free', () => {
    const d = Device.get(0);
    using s = d.createStream();
    const buf = DeviceBuffer.allocAsync(s, 1 << 20);
    buf.memsetAsync(s, 3);
    const out = new Uint8Array(16);
    buf.copyToHostAsync(s, out);
    buf.freeAsync(s);
    s.synchronize();
    assert.ok(out.every((x) => x === 3));
    assert.equal(buf.disposed, true);
    assert.throws(() => buf.ptr, DisposedError);
    buf.dispose(); // already freed: harmless
  });

  test('pinned host memory: truly async copies; after dispose the views stay readable', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using dev = DeviceBuffer.alloc(d, 4096);
    const host = PinnedHostBuffer.alloc(d, 4096);
    const f = host.asFloat32();
    assert.equal(f.length, 1024);
    f.forEach((_, i) => (f[i] = i / 2));
    dev.copyFromHostAsync(s, f);
    const back = PinnedHostBuffer.alloc(d, 4096);
    dev.copyToHostAsync(s, back.bytes);
    s.synchronize();
    assert.deepEqual(back.asFloat32(), f);
    host.dispose();
    back.dispose();
    assert.throws(() => host.bytes, (e: unknown) => e instanceof DisposedError && e.message.startsWith('PinnedHostBuffer.bytes:'));
    assert.equal(f[3], 1.5, 'a view taken before dispose is still ordinary memory');
  });

  test('use after dispose throws DisposedError naming the operation; dispose is idempotent', () => {
    const d = Device.get(0);
    const s = d.createStream();
    const buf = DeviceBuffer.alloc(d, 64);
    const ev = d.createEvent();
    buf.dispose();
    buf.dispose();
    assert.throws(() => buf.memsetAsync(s, 0), (e: unknown) => e instanceof DisposedError && e.message.startsWith('DeviceBuffer.memsetAsync:'));
    assert.throws(() => buf.ptr, DisposedError);
    s.dispose();
    s.dispose();
    assert.throws(() => s.synchronize(), (e: unknown) => e instanceof DisposedError && e.message.startsWith('Stream.synchronize:'));
    ev.dispose();
    assert.throws(() => ev.query(), DisposedError);
    assert.equal(d.stream().disposed, false);
    // The device's default stream, once disposed, is replaced by a new one.
    const def = d.stream();
    def.dispose();
    assert.notEqual(d.stream(), def);
  });

  test('a driver failure is a CudaError with the driver description', () => {
    const d = Device.get(0);
    assert.throws(
      () => DeviceBuffer.alloc(d, 2 ** 52),
      (e: unknown) => e instanceof CudaError && e.code === 2 && e.errorName === 'CUDA_ERROR_OUT_OF_MEMORY' && e.message.startsWith('DeviceBuffer.alloc: CUDA_ERROR_OUT_OF_MEMORY (2)'),
    );
  });
});
