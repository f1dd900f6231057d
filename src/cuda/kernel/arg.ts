/**
 * Typed kernel arguments. A kernel's parameters are C values of fixed size, so every argument
 * says its C type (`arg.f32(2)`, `arg.i32(n)`): a plain JS number is refused, since guessing
 * between int, float and double would silently pass the wrong bits. A `DeviceBuffer` stands for
 * its device address, a `PinnedHostBuffer` for the address at which kernels reach its pages
 * (zero-copy: a kernel reads and writes the host memory itself, over the bus).
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe } from '../../util/validate.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import type { ScalarType } from '../../model/element-type.js';
import { brands, registerBrand } from '../core/brands.js';

/** The C type of a kernel argument: a device pointer, or one of the model's scalar types. */
export type ArgType = 'ptr' | ScalarType;

const SIZES: { readonly [T in ArgType]: 4 | 8 } = { ptr: 8, i32: 4, u32: 4, i64: 8, u64: 8, f32: 4, f64: 8 };
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const U64_MAX = 2n ** 64n - 1n;

/**
 * Memory a `ptr` argument may stand for: device memory, or pinned host memory (its device-mapped
 * address). A launch, a capture and an exec hold it as they hold a buffer: a graph whose kernel
 * is given a `PinnedHostBuffer` keeps the pages pinned until the graph is disposed.
 */
export type ArgBuffer = DeviceBuffer | PinnedHostBuffer;

/** A kernel argument with its C type. Made by the `arg.*` functions; immutable. */
export class KernelArgValue {
  /** Size in bytes of the C type. */
  readonly size: 4 | 8;
  /** The brand: only values this constructor checked are packed. */
  readonly #checked = true;

  /**
   * @internal Use `arg.*`, which check the value. Called directly, the constructor checks that the
   * parts fit together, so a hand-made value can never make packing write the wrong bytes.
   */
  constructor(
    /** The C type. */
    readonly type: ArgType,
    /** The value (a bigint for 64-bit integers and raw pointers). */
    readonly value: number | bigint,
    /** The buffer whose address this is (`arg.ptr(buffer)`), or null. */
    readonly buffer: ArgBuffer | null,
  ) {
    const op = 'new KernelArgValue';
    if (typeof type !== 'string' || !Object.hasOwn(SIZES, type)) {
      throw new InvalidArgumentError(op, 'type', `type must be one of ${Object.keys(SIZES).join(', ')}, got ${describe(type)}`);
    }
    const wantsBigint = type === 'ptr' || type === 'i64' || type === 'u64';
    if (wantsBigint ? typeof value !== 'bigint' : typeof value !== 'number') {
      throw new InvalidArgumentError(op, 'value', `a ${type} value must be a ${wantsBigint ? 'bigint' : 'number'}, got ${describe(value)}; use arg.${type}()`);
    }
    if (buffer !== null && (type !== 'ptr' || !isArgBuffer(buffer))) {
      throw new InvalidArgumentError(op, 'buffer', `buffer must be null or, for a ptr, a DeviceBuffer or a PinnedHostBuffer, got ${describe(buffer)}`);
    }
    this.size = SIZES[type];
    Object.freeze(this);
  }

  /** @internal True for a value this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is KernelArgValue {
    return typeof value === 'object' && value !== null && #checked in value;
  }

  static {
    registerBrand('KernelArgValue', KernelArgValue);
  }

  toString(): string {
    return this.buffer !== null ? `ptr(${this.buffer})` : `${this.type}(${String(this.value)})`;
  }
}

/** A kernel argument: a `DeviceBuffer` or `PinnedHostBuffer` (its address) or a typed `arg.*` value. */
export type KernelArg = ArgBuffer | KernelArgValue;

/** True for a buffer this package made that a `ptr` argument may stand for (brand checks). */
function isArgBuffer(b: unknown): b is ArgBuffer {
  return brands.DeviceBuffer.is(b) || brands.PinnedHostBuffer.is(b);
}

function intArg(op: string, type: ArgType, x: unknown, min: bigint, max: bigint): KernelArgValue {
  let v: bigint;
  if (typeof x === 'bigint') v = x;
  else if (typeof x === 'number' && Number.isSafeInteger(x)) v = BigInt(x);
  else throw new InvalidArgumentError(op, 'value', `value must be a safe integer or a bigint, got ${describe(x)}`);
  if (v < min || v > max) throw new InvalidArgumentError(op, 'value', `value ${v} is out of range ${min}..${max}`);
  return new KernelArgValue(type, type === 'i32' || type === 'u32' ? Number(v) : v, null);
}

function floatArg(op: string, type: ArgType, x: unknown): KernelArgValue {
  // NaN and ±Infinity are accepted on purpose: they are ordinary IEEE values a kernel may want
  // (e.g. -Infinity as the start of a max-reduction).
  if (typeof x !== 'number') throw new InvalidArgumentError(op, 'value', `value must be a number, got ${describe(x)}`);
  return new KernelArgValue(type, x, null);
}

/**
 * Typed kernel arguments.
 *
 * @example
 * kernel.launch(s, { grid: 64, block: 256, args: [arg.f32(2.5), x, y, arg.i32(n)] });
 */
export const arg = {
  /**
   * A device pointer: a `DeviceBuffer` (its address), a `PinnedHostBuffer` (the address kernels
   * reach its pages at), or a raw 64-bit address (held by nothing: keep its memory alive yourself).
   */
  ptr(p: ArgBuffer | bigint): KernelArgValue {
    if (isArgBuffer(p)) return bufferArg(p);
    return intArg('arg.ptr', 'ptr', p, 0n, U64_MAX);
  },
  /** A C `int` (32-bit signed). */
  i32(n: number): KernelArgValue {
    return intArg('arg.i32', 'i32', n, -(2n ** 31n), 2n ** 31n - 1n);
  },
  /** A C `unsigned int` (32-bit). */
  u32(n: number): KernelArgValue {
    return intArg('arg.u32', 'u32', n, 0n, 2n ** 32n - 1n);
  },
  /** A C `long long` (64-bit signed), from a safe integer or a bigint. */
  i64(n: number | bigint): KernelArgValue {
    return intArg('arg.i64', 'i64', n, I64_MIN, I64_MAX);
  },
  /** A C `unsigned long long` (64-bit), from a safe integer or a bigint. */
  u64(n: number | bigint): KernelArgValue {
    return intArg('arg.u64', 'u64', n, 0n, U64_MAX);
  },
  /** A C `float` (the number is rounded to single precision). */
  f32(x: number): KernelArgValue {
    return floatArg('arg.f32', 'f32', x);
  },
  /** A C `double`. */
  f64(x: number): KernelArgValue {
    return floatArg('arg.f64', 'f64', x);
  },
} as const;

/**
 * The `ptr` value of each buffer passed bare, made once: a value is immutable and names its buffer
 * (whose liveness packing checks), so one serves every call, and a call that passes buffers (an
 * exec's `setKernelArgs` in a loop) allocates none.
 */
const bufferArgs = new WeakMap<ArgBuffer, KernelArgValue>();

/** The `ptr` value of buffer `b` (brand-checked by the caller). */
function bufferArg(b: ArgBuffer): KernelArgValue {
  let v = bufferArgs.get(b);
  if (v === undefined) bufferArgs.set(b, (v = new KernelArgValue('ptr', 0n, b)));
  return v;
}

/** Checks one argument and returns it typed. @throws InvalidArgumentError naming `args[i]`. */
export function normalizeArg(op: string, index: number, a: unknown): KernelArgValue {
  if (KernelArgValue.is(a)) return a;
  if (isArgBuffer(a)) return bufferArg(a);
  const hint =
    typeof a === 'number' || typeof a === 'bigint'
      ? ': plain numbers are refused because the C type must be explicit (arg.i32(n), arg.f32(x), arg.u64(n), …)'
      : '';
  throw new InvalidArgumentError(
    op,
    `args[${index}]`,
    `args[${index}] must be a DeviceBuffer, a PinnedHostBuffer or an arg.*() value, got ${describe(a)}${hint}`,
  );
}

/**
 * Writes `a`'s bytes at `offset` of `view` (little-endian, as the GPU reads them).
 * @param ptrOf resolves a buffer argument to its address (checks it is not disposed).
 * @param words the same memory as 64-bit words (`host.u64Words`), where the caller has them and
 *   `offset` is a multiple of 8: 64-bit values are then a typed-array store, not a DataView call.
 *   A store into `BigUint64Array` wraps an i64 to its two's complement, as `setBigInt64` writes it.
 */
export function writeArg(view: DataView, offset: number, a: KernelArgValue, ptrOf: (b: ArgBuffer) => bigint, words?: BigUint64Array): void {
  switch (a.type) {
    case 'ptr': {
      const p = a.buffer !== null ? ptrOf(a.buffer) : (a.value as bigint);
      if (words !== undefined) words[offset >>> 3] = p;
      else view.setBigUint64(offset, p, true);
      return;
    }
    case 'i32':
      view.setInt32(offset, a.value as number, true);
      return;
    case 'u32':
      view.setUint32(offset, a.value as number, true);
      return;
    case 'i64':
      if (words !== undefined) words[offset >>> 3] = a.value as bigint;
      else view.setBigInt64(offset, a.value as bigint, true);
      return;
    case 'u64':
      if (words !== undefined) words[offset >>> 3] = a.value as bigint;
      else view.setBigUint64(offset, a.value as bigint, true);
      return;
    case 'f32':
      view.setFloat32(offset, a.value as number, true);
      return;
    case 'f64':
      view.setFloat64(offset, a.value as number, true);
      return;
  }
}
