import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { arg, KernelArgValue, InvalidArgumentError } from '../../../src/index.js';
import { normalizeArg, writeArg } from '../../../src/cuda/kernel/arg.js';
import { parseDim3, checkConfig } from '../../../src/cuda/kernel/launch-config.js';
import { packArgs, packScratch, packScratchBytes, packedSize } from '../../../src/cuda/kernel/packed-args.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const noBuffer = () => {
  throw new Error('no buffer arguments in these tests');
};

function refuses(fn: () => unknown, op: string, pattern?: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && (!pattern || pattern.test(e.message)));
}

test('arg.* make typed values with the C size', () => {
  assert.deepEqual(
    [arg.i32(-5), arg.u32(7), arg.i64(-(2n ** 40n)), arg.u64(2n ** 63n), arg.f32(1.5), arg.f64(2.25), arg.ptr(0x1000n)].map(
      (a) => [a.type, a.size, a.value],
    ),
    [
      ['i32', 4, -5],
      ['u32', 4, 7],
      ['i64', 8, -(2n ** 40n)],
      ['u64', 8, 2n ** 63n],
      ['f32', 4, 1.5],
      ['f64', 8, 2.25],
      ['ptr', 8, 0x1000n],
    ],
  );
  assert.equal(arg.i64(12).value, 12n, 'a safe integer becomes a bigint for 64-bit types');
  assert.ok(Object.isFrozen(arg.i32(1)));
  assert.ok(Number.isNaN(arg.f32(NaN).value as number), 'NaN is an IEEE value a kernel may be passed');
  assert.equal(arg.f64(-Infinity).value, -Infinity);
});

test('arg.* refuse values outside the C type, naming the factory', () => {
  refuses(() => arg.i32(2 ** 31), 'arg.i32', /out of range/);
  refuses(() => arg.i32(1.5), 'arg.i32');
  refuses(() => arg.i32(NaN), 'arg.i32');
  refuses(() => arg.u32(-1), 'arg.u32');
  refuses(() => arg.u32(2 ** 32), 'arg.u32');
  refuses(() => arg.i64(2n ** 63n), 'arg.i64');
  refuses(() => arg.i64(2 ** 60), 'arg.i64', /safe integer/);
  refuses(() => arg.u64(-1n), 'arg.u64');
  refuses(() => arg.ptr(-1n), 'arg.ptr');
  refuses(() => arg.f32('1' as unknown as number), 'arg.f32');
  refuses(() => arg.f64(1n as unknown as number), 'arg.f64');
});

test('plain numbers as kernel arguments are refused with the reason', () => {
  refuses(() => normalizeArg('Kernel.launch', 2, 5), 'Kernel.launch', /args\[2\].*C type must be explicit/);
  refuses(() => normalizeArg('Kernel.launch', 0, 5n), 'Kernel.launch', /plain numbers/);
  refuses(() => normalizeArg('Kernel.launch', 0, { type: 'i32', value: 1 }), 'Kernel.launch', /arg\.\*\(\) value/);
  const v = arg.i32(3);
  assert.equal(normalizeArg('op', 0, v), v);
});

test('writeArg stores each type little-endian as the GPU reads it (property)', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      fc.double(),
      (i, u, l, ul, d) => {
        const view = new DataView(new ArrayBuffer(8));
        writeArg(view, 0, arg.i32(i), noBuffer);
        assert.equal(view.getInt32(0, true), i);
        writeArg(view, 0, arg.u32(u), noBuffer);
        assert.equal(view.getUint32(0, true), u);
        writeArg(view, 0, arg.i64(l), noBuffer);
        assert.equal(view.getBigInt64(0, true), l);
        writeArg(view, 0, arg.u64(ul), noBuffer);
        assert.equal(view.getBigUint64(0, true), ul);
        writeArg(view, 0, arg.f64(d), noBuffer);
        assert.ok(Object.is(view.getFloat64(0, true), d));
        writeArg(view, 0, arg.f32(d), noBuffer);
        assert.ok(Object.is(view.getFloat32(0, true), Math.fround(d)));
      },
    ),
  );
});

test('packArgs lays out kernelParams: pointer i points at slot i holding argument i', () => {
  const args = [arg.f32(2.5), arg.ptr(0xdead_beefn), arg.i32(-7), arg.u64(2n ** 60n)];
  const packed = packArgs(args, noBuffer);
  try {
    assert.equal(packed.view.byteLength, packedSize(4));
    for (let i = 0; i < args.length; i++) {
      const slot = BigInt(koffi.decode(packed.address, i * 8, 'uint64_t'));
      assert.equal(slot, packed.address + BigInt(packed.slotOffset(i)));
    }
    assert.equal(koffi.decode(koffi.decode(packed.address, 0, 'uint64_t'), 'float'), 2.5);
    assert.equal(BigInt(koffi.decode(koffi.decode(packed.address, 8, 'uint64_t'), 'uint64_t')), 0xdead_beefn);
    assert.equal(koffi.decode(koffi.decode(packed.address, 16, 'uint64_t'), 'int32_t'), -7);
    assert.equal(BigInt(koffi.decode(koffi.decode(packed.address, 24, 'uint64_t'), 'uint64_t')), 2n ** 60n);
    // Rewriting a slot in place is what setArg does: the pointer array is untouched.
    writeArg(packed.view, packed.slotOffset(2), arg.i32(42), noBuffer);
    assert.equal(koffi.decode(koffi.decode(packed.address, 16, 'uint64_t'), 'int32_t'), 42);
  } finally {
    packed.free();
    packed.free(); // idempotent
  }
  assert.equal(packArgs([], noBuffer).address, 0n, 'no arguments: a null kernelParams');
});

test('the one-off scratch block is reused and grows', () => {
  const a = packScratch([arg.i32(1)], noBuffer);
  const b = packScratch([arg.i32(2), arg.i32(3)], noBuffer);
  assert.equal(a, b, 'the same block serves consecutive launches');
  assert.equal(koffi.decode(koffi.decode(b, 8, 'uint64_t'), 'int32_t'), 3);
  const many = Array.from({ length: 100 }, (_, i) => arg.i32(i));
  const c = packScratch(many, noBuffer);
  assert.equal(koffi.decode(koffi.decode(c, 99 * 8, 'uint64_t'), 'int32_t'), 99);
});

test('the scratch block keeps its pointer array between calls of one count, and lays it again for another count or after byte values', () => {
  // Argument i of the block at `at`: read through pointer i, as the driver reads it.
  const value = (at: bigint, i: number): number => koffi.decode(koffi.decode(at, i * 8, 'uint64_t'), 'int32_t');
  const three = (k: number) => [arg.i32(k), arg.i32(k + 1), arg.i32(k + 2)];
  let at = packScratch(three(10), noBuffer);
  at = packScratch(three(20), noBuffer);
  assert.deepEqual([value(at, 0), value(at, 1), value(at, 2)], [20, 21, 22], 'same count: the values rewritten behind the same pointers');
  at = packScratch([arg.i32(7), arg.i32(8)], noBuffer);
  assert.deepEqual([value(at, 0), value(at, 1)], [7, 8], 'two arguments: the pointers of a two-argument block');
  const bytes = (k: number): Uint8Array => new Uint8Array(new Int32Array([k]).buffer);
  at = packScratchBytes([bytes(1), bytes(2)]);
  assert.deepEqual([value(at, 0), value(at, 1)], [1, 2]);
  // A 16-byte value moves the layout of packScratchBytes away from packScratch's.
  at = packScratchBytes([bytes(3), new Uint8Array(16)]);
  at = packScratch([arg.i32(5), arg.i32(6)], noBuffer);
  assert.deepEqual([value(at, 0), value(at, 1)], [5, 6], 'after byte values: the pointers laid again');
});

test('grid and block dimensions: a number or 1–3 positive u32s', () => {
  assert.deepEqual(parseDim3('op', 'grid', 4), [4, 1, 1]);
  assert.deepEqual(parseDim3('op', 'grid', [4, 2]), [4, 2, 1]);
  assert.deepEqual(parseDim3('op', 'grid', [4, 2, 3]), [4, 2, 3]);
  for (const bad of [0, -1, 1.5, NaN, Infinity, [], [1, 2, 3, 4], [0], '4', null, undefined, 2 ** 32]) {
    refuses(() => parseDim3('Kernel.launch', 'grid', bad), 'Kernel.launch');
  }
  // A hole is refused, not taken for 1.
  refuses(() => parseDim3('Kernel.launch', 'grid', [4, , 2]), 'Kernel.launch', /grid\[1\] must be an integer in 1\.\.4294967295, got undefined/);
});

test('a launch config is checked against the kernel parameter sizes the driver reports', () => {
  const ok = checkConfig('Kernel.prepare', 'axpy', { grid: 2, block: [32], args: [arg.f32(1), arg.ptr(8n), arg.i32(3)] }, [4, 8, 4]);
  assert.deepEqual([ok.grid, ok.block, ok.sharedMem, ok.args.length], [[2, 1, 1], [32, 1, 1], 0, 3]);
  refuses(
    () => checkConfig('Kernel.prepare', 'axpy', { grid: 1, block: 1, args: [arg.f32(1)] }, [4, 8, 4]),
    'Kernel.prepare',
    /'axpy' takes 3 parameter\(s\) \(sizes 4, 8, 4\), got 1/,
  );
  refuses(
    () => checkConfig('Kernel.prepare', 'axpy', { grid: 1, block: 1, args: [arg.f64(1), arg.ptr(8n), arg.i32(3)] }, [4, 8, 4]),
    'Kernel.prepare',
    /args\[0\] is f64 \(8 bytes\) but parameter 0 of 'axpy' is 4 bytes/,
  );
  refuses(() => checkConfig('Kernel.launch', 'k', { grid: 1, block: 1, args: [], extra: 1 }, null), 'Kernel.launch', /unknown option 'extra'/);
  refuses(() => checkConfig('Kernel.launch', 'k', { grid: 1, block: 1, sharedMem: -1, args: [] }, null), 'Kernel.launch');
  refuses(() => checkConfig('Kernel.launch', 'k', { grid: 1, block: 1, args: 'x' }, null), 'Kernel.launch', /args must be an array/);
  // A hole in the arguments is refused as the undefined it reads as (it used to escape as a TypeError).
  refuses(() => checkConfig('Kernel.launch', 'k', { grid: 1, block: 1, args: [arg.i32(1), , arg.i32(3)] }, null), 'Kernel.launch', /args\[1\] must be a DeviceBuffer, a PinnedHostBuffer or an arg\.\*\(\) value, got undefined/);
  refuses(() => checkConfig('Kernel.launch', 'k', { grid: 1, block: 1, args: new Array(2) }, null), 'Kernel.launch', /args\[0\] must be/);
  refuses(() => checkConfig('Kernel.launch', 'k', undefined, null), 'Kernel.launch', /required/);
  // Without the driver's sizes (older drivers), any count passes to the driver.
  assert.equal(checkConfig('op', 'k', { grid: 1, block: 1, args: [arg.i32(1)] }, null).args.length, 1);
});

test('KernelArgValue is the only accepted non-buffer argument type', () => {
  assert.ok(arg.u32(1) instanceof KernelArgValue);
  assert.equal(String(arg.i32(5)), 'i32(5)');
});
