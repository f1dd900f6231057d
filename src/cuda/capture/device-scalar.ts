import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe, requireInt, requireOneOf, assertInstance } from '../../util/validate.js';
import { INTERNAL } from '../core/internal.js';
import type { Stream } from '../device/stream.js';
import { DeviceBuffer } from '../memory/device-buffer.js';
import { KernelArgValue, writeArg } from '../kernel/arg.js';

// The C type of a DeviceScalar is the model's ScalarType: one list of kernel scalar types.
import type { ScalarType } from '../../model/builder.js';
import { brands } from '../core/brands.js';

const TYPES: readonly ScalarType[] = ['i32', 'u32', 'i64', 'u64', 'f32', 'f64'];
const SIZE: { readonly [T in ScalarType]: 4 | 8 } = { i32: 4, u32: 4, i64: 8, u64: 8, f32: 4, f64: 8 };

/** Checks `value` (called `name` in messages) for a scalar of `type`; returns it as stored (a bigint for 64-bit integers). */
export function checkScalar(op: string, type: ScalarType, value: unknown, name = 'value'): number | bigint {
  switch (type) {
    case 'i32':
      return requireInt(op, name, value, -(2 ** 31), 2 ** 31 - 1);
    case 'u32':
      return requireInt(op, name, value, 0, 2 ** 32 - 1);
    case 'i64':
    case 'u64': {
      let v: bigint;
      if (typeof value === 'bigint') v = value;
      else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
      else throw new InvalidArgumentError(op, name, `${name} must be a safe integer or a bigint, got ${describe(value)}`);
      const [min, max] = type === 'i64' ? [-(2n ** 63n), 2n ** 63n - 1n] : [0n, 2n ** 64n - 1n];
      if (v < min || v > max) throw new InvalidArgumentError(op, name, `${name} ${v} is out of range ${min}..${max} for ${type}`);
      return v;
    }
    case 'f32':
    case 'f64':
      // NaN and ±Infinity are ordinary IEEE values a kernel may want, as for arg.f32/arg.f64.
      if (typeof value !== 'number') throw new InvalidArgumentError(op, name, `${name} must be a number, got ${describe(value)}`);
      return value;
  }
}

/**
 * A value that changes between replays of a graph without a new capture: one element in device
 * memory that kernels read through a pointer (`scalar.buffer`, or `scalar.arg`). The graph records
 * the address, so `set(value)` on the graph's stream before `launch()` changes what the next
 * replay reads (the copy is ordered before the launch on that stream; replays queued earlier read
 * the earlier value).
 *
 * @example
 * using step = DeviceScalar.create(s, 'u32', 0);
 * const graph = captureGraph(s, (s) => kernel.launch(s, { grid, block, args: [step.buffer, out] }));
 * for (let i = 0; i < 10; i++) { step.set(i); graph.launch(); }
 */
export class DeviceScalar {
  /** The C type of the value. */
  readonly type: ScalarType;
  /** The stream `set` copies on by default (use the graph's stream). */
  readonly stream: Stream;
  /** The device memory holding the value (`type`'s size in bytes): pass it as the kernel argument. */
  readonly buffer: DeviceBuffer;
  readonly #staging = new DataView(new ArrayBuffer(8));
  #value: number | bigint;

  /** @internal Use `DeviceScalar.create`. */
  constructor(key: typeof INTERNAL, stream: Stream, type: ScalarType, buffer: DeviceBuffer, value: number | bigint) {
    if (key !== INTERNAL) throw privateConstructorError('DeviceScalar', 'DeviceScalar.create(stream, type, value)');
    this.stream = stream;
    this.type = type;
    this.buffer = buffer;
    this.#value = value;
  }

  /**
   * Allocates the scalar on `stream`'s device and copies `initial` into it, ordered on `stream`.
   * Create scalars before the capture: allocating during one is not capture-safe.
   * @throws InvalidArgumentError for a bad type or value, or a capturing stream; DisposedError for a disposed stream.
   */
  static create(stream: Stream, type: ScalarType, initial: number | bigint): DeviceScalar {
    const op = 'DeviceScalar.create';
    assertInstance(op, 'stream', stream, brands.Stream);
    const t = requireOneOf(op, 'type', type, TYPES);
    const v = checkScalar(op, t, initial);
    stream.handleFor(op);
    if (stream.isCapturing) {
      throw new InvalidArgumentError(op, 'stream', 'the stream is capturing: create DeviceScalars before the capture (allocation is not capture-safe)');
    }
    const buffer = DeviceBuffer.alloc(stream.device, SIZE[t]);
    const scalar = new DeviceScalar(INTERNAL, stream, t, buffer, v);
    try {
      scalar.#copy(stream, v);
    } catch (e) {
      buffer.dispose();
      throw e;
    }
    return scalar;
  }

  /** The value last set (what replays launched after that `set` read). */
  get value(): number | bigint {
    return this.#value;
  }

  /** The scalar's address as a kernel argument (`arg.ptr(scalar.buffer)`). */
  get arg(): KernelArgValue {
    return new KernelArgValue('ptr', 0n, this.buffer);
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this.buffer.disposed;
  }

  /**
   * Copies `value` into the scalar, ordered on `stream` (default: `this.stream`): graph launches
   * queued after this call on that stream read it. Returns at once (the driver stages the bytes).
   * @throws InvalidArgumentError for a bad value, a stream of another device or a capturing stream
   *   (inside a capture the copy would become part of the graph); DisposedError after dispose, or
   *   for a disposed stream.
   */
  set(value: number | bigint, stream?: Stream): void {
    const op = 'DeviceScalar.set';
    const s = stream === undefined ? this.stream : stream;
    assertInstance(op, 'stream', s, brands.Stream);
    const v = checkScalar(op, this.type, value);
    this.buffer.ptrFor(op);
    s.handleFor(op);
    if (s.device !== this.buffer.device) {
      throw new InvalidArgumentError(op, 'stream', `the stream is on ${s.device}; the scalar's memory on ${this.buffer.device}`);
    }
    if (s.isCapturing) {
      throw new InvalidArgumentError(
        op,
        'stream',
        'the stream is capturing: set a DeviceScalar before launching the graph, not inside a capture (the copy would be recorded into the graph)',
      );
    }
    this.#copy(s, v);
    this.#value = v;
  }

  #copy(stream: Stream, v: number | bigint): void {
    writeArg(this.#staging, 0, new KernelArgValue(this.type, v, null), () => 0n);
    this.buffer.copyFromHostAsync(stream, new Uint8Array(this.#staging.buffer, 0, SIZE[this.type]));
  }

  /** Frees the scalar's memory (a graph using it keeps it alive until the graph goes). Idempotent. */
  dispose(): void {
    this.buffer.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
