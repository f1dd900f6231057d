import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe, requireInstance, requireInt, requireOptions, requireSize } from '../../util/validate.js';
import { memory as mem } from '../../driver/result/index.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure, surfaceCleanupErrors } from '../core/lifetime.js';
import { requireView, requirePinnedForCapture, pinnedLifetimeOf } from './host-memory.js';
import type { Device } from '../device/device.js';
import type { Stream } from '../device/stream.js';
import { brands, registerBrand } from '../core/brands.js';

/** Options of `memsetAsync`. */
export interface MemsetOptions {
  /** Bytes per element: 1, 2 or 4 (`cuMemsetD8/D16/D32Async`). Default 1. */
  readonly elementSize?: 1 | 2 | 4;
  /** Number of elements. Default: as many as fit after `offset`. */
  readonly count?: number;
  /** Byte offset into the buffer, a multiple of `elementSize`. Default 0. */
  readonly offset?: number;
}

/** Options of host copies. */
export interface HostCopyOptions {
  /** Byte offset into the device buffer. Default 0. */
  readonly offset?: number;
  /** Bytes to copy. Default: the host view's byteLength. */
  readonly byteLength?: number;
}

/** Options of `copyFromDeviceAsync`. */
export interface DeviceCopyOptions {
  /** Byte offset into the source buffer. Default 0. */
  readonly srcOffset?: number;
  /** Byte offset into this buffer. Default 0. */
  readonly dstOffset?: number;
  /** Bytes to copy. Default: all of the source after `srcOffset`. */
  readonly byteLength?: number;
}

function requireStream(op: string, stream: unknown): Stream {
  return requireInstance(op, 'stream', stream, brands.Stream);
}

/**
 * Device memory. `alloc` (`cuMemAlloc`) or `allocAsync` (stream-ordered, `cuMemAllocAsync`);
 * freed by `dispose()` (or `freeAsync`). A captured graph that uses the buffer keeps it alive:
 * `dispose()` then only releases the program's claim and the memory is freed with the graph.
 *
 * @example
 * using buf = DeviceBuffer.alloc(device, 4 * n);
 * buf.copyFromHostAsync(s, new Float32Array(n).fill(1));
 * buf.memsetAsync(s, 0, { elementSize: 4 });
 */
export class DeviceBuffer {
  /** The device the memory lives on. */
  readonly device: Device;
  /** Size in bytes. */
  readonly byteLength: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #ptr: bigint;

  readonly #pooled: boolean;

  /**
   * @internal Use `DeviceBuffer.alloc` or `DeviceBuffer.allocAsync`. `release`, when given,
   * returns the memory instead of `cuMemFree` (memory from a `CapturePool`: back to its pool);
   * it must not reference this object.
   */
  constructor(key: typeof INTERNAL, device: Device, byteLength: number, ptr: bigint, release?: () => void) {
    if (key !== INTERNAL) throw privateConstructorError('DeviceBuffer', 'DeviceBuffer.alloc() or DeviceBuffer.allocAsync()');
    this.device = device;
    this.byteLength = byteLength;
    this.#ptr = ptr;
    this.#pooled = release !== undefined;
    const ctx = device.context;
    // Both frees can wait for the GPU (cuMemFree synchronizes; a pool's release may fence and
    // synchronize): they are deferred while a JS host call is in flight.
    this[LIFETIME] = new Lifetime(
      `DeviceBuffer 0x${ptr.toString(16)} (${byteLength} bytes${release ? ', from a CapturePool' : ''})`,
      this,
      release ??
        (() => {
          makeCurrent('DeviceBuffer.dispose', ctx);
          keepFailure(mem.memFree('DeviceBuffer.dispose', ptr), 'DeviceBuffer.dispose', 'cuMemFree_v2');
        }),
      { waits: true },
    );
  }

  /** @internal True for a DeviceBuffer this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is DeviceBuffer {
    return typeof value === 'object' && value !== null && #ptr in value;
  }

  static {
    registerBrand('DeviceBuffer', DeviceBuffer);
  }

  /**
   * Allocates `byteLength` bytes (≥ 1) on `device` (`cuMemAlloc_v2`). Contents are undefined.
   * @throws InvalidArgumentError for a bad size; CudaError (e.g. 2 out of memory).
   */
  static alloc(device: Device, byteLength: number): DeviceBuffer {
    const op = 'DeviceBuffer.alloc';
    requireInstance(op, 'device', device, brands.Device);
    requireInt(op, 'byteLength', byteLength, 1, Number.MAX_SAFE_INTEGER);
    surfaceCleanupErrors(op);
    makeCurrent(op, device.context);
    return new DeviceBuffer(INTERNAL, device, byteLength, mem.memAlloc(op, byteLength));
  }

  /**
   * Allocates `byteLength` bytes ordered on `stream` (`cuMemAllocAsync`): usable by work queued
   * after this call on the stream. During a capture this records a graph allocation node, except
   * in a capture bound to a `CapturePool` (`GraphCaptureGuard.beginWithPool`), where the memory
   * comes from the pool and its address stays fixed for every replay. A capture that fails
   * releases what it allocated: the buffer is then disposed.
   */
  static allocAsync(stream: Stream, byteLength: number): DeviceBuffer {
    const op = 'DeviceBuffer.allocAsync';
    requireStream(op, stream);
    requireInt(op, 'byteLength', byteLength, 1, Number.MAX_SAFE_INTEGER);
    const h = stream.handleFor(op);
    const sink = stream[CAPTURE];
    if (sink !== null) {
      const pooled = sink.allocate(op, stream, byteLength);
      if (pooled !== null) return pooled;
    }
    makeCurrent(op, stream.device.context);
    const buffer = new DeviceBuffer(INTERNAL, stream.device, byteLength, mem.memAllocAsync(op, byteLength, h));
    if (sink !== null) sink.allocated(buffer[LIFETIME]);
    return buffer;
  }

  /** The device address. @throws DisposedError after dispose. */
  get ptr(): bigint {
    this[LIFETIME].assertAlive('DeviceBuffer.ptr');
    return this.#ptr;
  }

  /** True after `dispose()` or `freeAsync()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /** @internal The address for `op`, after the disposed check. */
  ptrFor(op: string): bigint {
    this[LIFETIME].assertAlive(op);
    return this.#ptr;
  }

  /**
   * @internal The address with no disposed check, for a holder (an exec that was given the buffer)
   * whose hold keeps the memory allocated after the owner disposed it.
   */
  ptrHeld(): bigint {
    return this.#ptr;
  }

  /** The range `offset` (the option `name`: `offset`, `srcOffset`, `dstOffset`) + `byteLength`, checked against the buffer. */
  #range(op: string, offset: unknown, byteLength: unknown, defaultLength: number, name = 'offset'): { offset: number; byteLength: number } {
    const off = offset === undefined ? 0 : requireSize(op, name, offset);
    if (off > this.byteLength) {
      throw new InvalidArgumentError(op, name, `${name} ${off} is past the end of the ${this.byteLength}-byte buffer`);
    }
    const len = byteLength === undefined ? defaultLength : requireSize(op, 'byteLength', byteLength);
    if (off + len > this.byteLength) {
      throw new InvalidArgumentError(
        op,
        'byteLength',
        `${len} bytes at offset ${off} do not fit in the ${this.byteLength}-byte buffer`,
      );
    }
    return { offset: off, byteLength: len };
  }

  /**
   * The device range of a host copy: `offset` into this buffer, `byteLength` defaulting to what
   * both sides hold, and never more than the host view holds.
   */
  #hostRange(op: string, name: 'src' | 'dst', view: unknown, options: unknown): { offset: number; byteLength: number } {
    const v = requireView(op, name, view);
    const o = requireOptions<HostCopyOptions>(op, options, ['offset', 'byteLength']);
    const offset = o.offset === undefined ? 0 : requireSize(op, 'offset', o.offset);
    const fallback = name === 'src' ? v.byteLength : Math.min(v.byteLength, Math.max(0, this.byteLength - offset));
    const r = this.#range(op, o.offset, o.byteLength, fallback);
    if (r.byteLength > v.byteLength) {
      throw new InvalidArgumentError(op, 'byteLength', `byteLength ${r.byteLength} exceeds ${name}'s ${v.byteLength} bytes`);
    }
    return r;
  }

  /** Registers this buffer (and more) with the capture `stream` records into, if any. */
  #noteCapture(stream: Stream, ...more: Lifetime[]): void {
    const sink = stream[CAPTURE];
    if (sink === null) return;
    sink.retain(this[LIFETIME]);
    for (const l of more) sink.retain(l);
  }

  /**
   * Sets `count` elements of `elementSize` bytes to `value`, ordered on `stream`.
   * @throws InvalidArgumentError when `value` does not fit the element size or the range leaves the buffer.
   */
  memsetAsync(stream: Stream, value: number, options?: MemsetOptions): this {
    const op = 'DeviceBuffer.memsetAsync';
    this[LIFETIME].assertAlive(op);
    requireStream(op, stream);
    const o = requireOptions<MemsetOptions>(op, options, ['elementSize', 'count', 'offset']);
    const elementSize = o.elementSize ?? 1;
    if (elementSize !== 1 && elementSize !== 2 && elementSize !== 4) {
      throw new InvalidArgumentError(op, 'elementSize', `elementSize must be 1, 2 or 4, got ${describe(elementSize)}`);
    }
    const max = elementSize === 4 ? 0xffff_ffff : elementSize === 2 ? 0xffff : 0xff;
    requireInt(op, 'value', value, 0, max);
    const offset = o.offset === undefined ? 0 : requireSize(op, 'offset', o.offset);
    if (offset % elementSize !== 0 || offset > this.byteLength) {
      throw new InvalidArgumentError(op, 'offset', `offset must be a multiple of ${elementSize} within the buffer, got ${offset}`);
    }
    const count =
      o.count === undefined ? Math.floor((this.byteLength - offset) / elementSize) : requireSize(op, 'count', o.count);
    this.#range(op, offset, count * elementSize, 0);
    const h = stream.handleFor(op);
    mem.memsetAsync(op, elementSize, this.#ptr + BigInt(offset), value, count, h);
    this.#noteCapture(stream);
    return this;
  }

  /**
   * Copies host bytes into the buffer, ordered on `stream` (`cuMemcpyHtoDAsync`). Truly
   * asynchronous from a `PinnedHostBuffer`; from ordinary JS memory the driver stages the bytes
   * before returning, so the view may be reused at once. During a capture the view must lie in a
   * PinnedHostBuffer (the copy replays later).
   */
  copyFromHostAsync(stream: Stream, src: ArrayBufferView, options?: HostCopyOptions): this {
    const op = 'DeviceBuffer.copyFromHostAsync';
    this[LIFETIME].assertAlive(op);
    requireStream(op, stream);
    const r = this.#hostRange(op, 'src', src, options);
    const pinned = stream[CAPTURE] !== null ? requirePinnedForCapture(op, 'src', src) : pinnedLifetimeOf(src);
    const h = stream.handleFor(op);
    if (r.byteLength === 0) return this;
    mem.copyHtoDAsync(op, this.#ptr + BigInt(r.offset), src, r.byteLength, h, pinned !== null);
    if (pinned !== null) this.#noteCapture(stream, pinned);
    return this;
  }

  /**
   * Copies buffer bytes to host memory, ordered on `stream` (`cuMemcpyDtoHAsync`). Into a
   * `PinnedHostBuffer` the call returns at once (synchronize before reading); into ordinary JS
   * memory the driver returns only when the bytes have arrived.
   */
  copyToHostAsync(stream: Stream, dst: ArrayBufferView, options?: HostCopyOptions): this {
    const op = 'DeviceBuffer.copyToHostAsync';
    this[LIFETIME].assertAlive(op);
    requireStream(op, stream);
    const r = this.#hostRange(op, 'dst', dst, options);
    const pinned = stream[CAPTURE] !== null ? requirePinnedForCapture(op, 'dst', dst) : pinnedLifetimeOf(dst);
    const h = stream.handleFor(op);
    if (r.byteLength === 0) return this;
    mem.copyDtoHAsync(op, dst, this.#ptr + BigInt(r.offset), r.byteLength, h, pinned !== null);
    if (pinned !== null) this.#noteCapture(stream, pinned);
    return this;
  }

  /**
   * Copies host bytes into the buffer and waits (`cuMemcpyHtoD`, on the legacy NULL stream). During
   * a global-mode capture of a non-blocking stream the driver allowed it and the capture stayed
   * active (H200, CUDA 13.0; docs/driver.md); it is not captured: use `copyFromHostAsync` on the
   * capturing stream to record a copy.
   */
  copyFromHost(src: ArrayBufferView, options?: HostCopyOptions): this {
    const op = 'DeviceBuffer.copyFromHost';
    this[LIFETIME].assertAlive(op);
    const r = this.#hostRange(op, 'src', src, options);
    if (r.byteLength === 0) return this;
    makeCurrent(op, this.device.context);
    mem.copyHtoD(op, this.#ptr + BigInt(r.offset), src, r.byteLength);
    return this;
  }

  /** Copies buffer bytes into host memory and waits (`cuMemcpyDtoH`, on the legacy NULL stream). */
  copyToHost(dst: ArrayBufferView, options?: HostCopyOptions): this {
    const op = 'DeviceBuffer.copyToHost';
    this[LIFETIME].assertAlive(op);
    const r = this.#hostRange(op, 'dst', dst, options);
    if (r.byteLength === 0) return this;
    makeCurrent(op, this.device.context);
    mem.copyDtoH(op, dst, this.#ptr + BigInt(r.offset), r.byteLength);
    return this;
  }

  /** Copies from another device buffer, ordered on `stream` (`cuMemcpyDtoDAsync`). */
  copyFromDeviceAsync(stream: Stream, src: DeviceBuffer, options?: DeviceCopyOptions): this {
    const op = 'DeviceBuffer.copyFromDeviceAsync';
    this[LIFETIME].assertAlive(op);
    requireStream(op, stream);
    requireInstance(op, 'src', src, DeviceBuffer);
    const o = requireOptions<DeviceCopyOptions>(op, options, ['srcOffset', 'dstOffset', 'byteLength']);
    const srcPtr = src.ptrFor(op);
    const s = src.#range(op, o.srcOffset, o.byteLength, src.byteLength - (o.srcOffset ?? 0), 'srcOffset');
    const d = this.#range(op, o.dstOffset, s.byteLength, 0, 'dstOffset');
    const h = stream.handleFor(op);
    if (s.byteLength === 0) return this;
    mem.copyDtoDAsync(op, this.#ptr + BigInt(d.offset), srcPtr + BigInt(s.offset), s.byteLength, h);
    this.#noteCapture(stream, src[LIFETIME]);
    return this;
  }

  /**
   * Frees the memory ordered on `stream` (`cuMemFreeAsync`): work queued before still sees it.
   * On a capturing stream this records a free node (the usual end of a graph allocation made
   * with `allocAsync` in the same capture).
   * A buffer from a `CapturePool` goes back to its pool once its last holder lets go: for it,
   * `freeAsync` is `dispose()` (no free node is recorded).
   * @throws InvalidArgumentError outside a capture while a graph or prepared launch holds the
   *   buffer (use `dispose()`, which lets them free it when they are done).
   */
  freeAsync(stream: Stream): void {
    const op = 'DeviceBuffer.freeAsync';
    this[LIFETIME].assertAlive(op);
    requireStream(op, stream);
    if (this.#pooled) {
      this.dispose();
      return;
    }
    if (this[LIFETIME].holders > 0 && stream[CAPTURE] === null) {
      throw new InvalidArgumentError(
        op,
        'this',
        `the buffer is held by ${this[LIFETIME].holders} graph(s) or prepared launch(es); use dispose(), which frees it once they release it`,
      );
    }
    const h = stream.handleFor(op);
    const rc = mem.memFreeAsync(op, this.#ptr, h);
    if (rc !== 0) keepFailure(rc, op, 'cuMemFreeAsync');
    this[LIFETIME].markFreed();
  }

  /** Frees the memory (or lets its holders free it). Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `DeviceBuffer(0x${this.#ptr.toString(16)}, ${this.byteLength} bytes)`;
  }
}
