import { CudaError } from '../../errors/cuda-error.js';
import { privateConstructorError } from '../../errors/base.js';
import { requireInt, requireOptions, requireBoolean } from '../../util/validate.js';
import { init, device as dev } from '../../driver/result/index.js';
import { CU, CU_GRAPH_MEM_ATTR } from '../../driver/layouts.js';
import { INTERNAL } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { surfaceCleanupErrors } from '../core/lifetime.js';
import { Stream, type StreamOptions } from './stream.js';
import { Event, type EventOptions } from './event.js';
import { surfaceHostCallbackErrors } from '../host/host-calls.js';
import { registerBrand } from '../core/brands.js';

const CUDA_ERROR_NO_DEVICE = 100;

/**
 * A CUDA device and its primary context (retained once, made current for the JS thread). One
 * object per ordinal, alive for the whole process: get it with `Device.get(ordinal)`.
 *
 * @example
 * const gpu = Device.get(0);
 * console.log(gpu.name, gpu.computeCapability, gpu.memoryInfo());
 * const s = gpu.stream();           // the device's capture-ready stream
 */
export class Device {
  static readonly #devices = new Map<number, Device>();

  /** The device ordinal, 0..Device.count()−1. */
  readonly ordinal: number;
  /** The driver's `CUdevice` value. */
  readonly handle: number;
  /** The product name, e.g. `NVIDIA H200`. */
  readonly name: string;
  /** The compute capability, e.g. `{ major: 9, minor: 0 }`. */
  readonly computeCapability: { readonly major: number; readonly minor: number };
  /** Total device memory in bytes. */
  readonly totalMemory: number;
  /** Number of streaming multiprocessors. */
  readonly multiprocessorCount: number;
  /** The primary context's handle (`CUcontext`). */
  readonly context: bigint;
  #defaultStream: Stream | null = null;
  #priorityRange: { least: number; greatest: number } | null = null;

  /** @internal Use `Device.get(ordinal)`. */
  constructor(key: typeof INTERNAL, ordinal: number, op = 'Device.get') {
    if (key !== INTERNAL) throw privateConstructorError('Device', 'Device.get(ordinal)');
    this.ordinal = ordinal;
    this.handle = dev.deviceGet(op, ordinal);
    this.name = dev.deviceName(op, this.handle);
    this.computeCapability = Object.freeze({
      major: dev.deviceAttribute(op, CU.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, this.handle),
      minor: dev.deviceAttribute(op, CU.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, this.handle),
    });
    this.multiprocessorCount = dev.deviceAttribute(op, CU.DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, this.handle);
    this.totalMemory = dev.deviceTotalMem(op, this.handle);
    this.context = dev.primaryCtxRetain(op, this.handle);
  }

  /**
   * Number of CUDA devices; 0 when a driver is installed but sees no GPU.
   * @throws CudaError 3 `CUDA_ERROR_NOT_INITIALIZED` when no driver library loads (the message
   *   lists every path tried and what to check).
   */
  static count(): number {
    return Device.countFor('Device.count');
  }

  /** @internal True for a Device this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Device {
    return typeof value === 'object' && value !== null && #priorityRange in value;
  }

  static {
    registerBrand('Device', Device);
  }

  /** @internal `count` for a caller that names its own operation in errors. */
  static countFor(op: string): number {
    surfaceCleanupErrors(op);
    try {
      init.init(op);
    } catch (e) {
      if (e instanceof CudaError && e.code === CUDA_ERROR_NO_DEVICE) return 0;
      throw e;
    }
    return dev.deviceCount(op);
  }

  /**
   * The device `ordinal` (the same object on every call), its primary context retained and made
   * current for the calling thread.
   * @throws InvalidArgumentError unless 0 ≤ ordinal < Device.count(); CudaError from the driver.
   */
  static get(ordinal = 0): Device {
    return Device.getFor('Device.get', ordinal);
  }

  /** @internal `get` for a caller that names its own operation in errors (`PinnedHostBuffer.alloc`, …). */
  static getFor(op: string, ordinal = 0): Device {
    surfaceCleanupErrors(op);
    const cached = Device.#devices.get(ordinal);
    if (cached !== undefined) {
      makeCurrent(op, cached.context);
      return cached;
    }
    requireInt(op, 'ordinal', ordinal, 0, 1 << 16);
    const n = Device.countFor(op);
    requireInt(op, 'ordinal', ordinal, 0, Math.max(0, n - 1));
    if (n === 0) throw new CudaError({ code: CUDA_ERROR_NO_DEVICE, operation: op, driverCall: 'cuDeviceGetCount' });
    const device = new Device(INTERNAL, ordinal, op);
    Device.#devices.set(ordinal, device);
    makeCurrent(op, device.context);
    return device;
  }

  /**
   * The CUDA version the installed driver supports, e.g. 13000 for 13.0 (`cuDriverGetVersion`).
   * @throws CudaError 3 when no driver library loads.
   */
  static driverVersion(): number {
    const op = 'Device.driverVersion';
    surfaceCleanupErrors(op);
    return init.driverVersion(op);
  }

  /** Makes this device's primary context current for the JS thread (cheap when it already is). */
  makeCurrent(op = 'Device.makeCurrent'): void {
    makeCurrent(op, this.context);
  }

  /** Free and total memory of the device, in bytes (`cuMemGetInfo`). */
  memoryInfo(): { free: number; total: number } {
    const op = 'Device.memoryInfo';
    surfaceCleanupErrors(op);
    makeCurrent(op, this.context);
    return dev.memGetInfo(op);
  }

  /**
   * The device's graph memory (`cuDeviceGetGraphMemAttribute`): `used` is what graphs' allocation
   * nodes hold now (and `usedHigh` its high-water mark), `reserved` what the graph allocator has
   * taken from the device (and `reservedHigh`). `{ resetHigh: true }` then resets both marks.
   */
  graphMemory(options?: { resetHigh?: boolean }): { used: number; usedHigh: number; reserved: number; reservedHigh: number } {
    const op = 'Device.graphMemory';
    const o = requireOptions<{ resetHigh: boolean }>(op, options, ['resetHigh']);
    const reset = o.resetHigh === undefined ? false : requireBoolean(op, 'resetHigh', o.resetHigh);
    surfaceCleanupErrors(op);
    makeCurrent(op, this.context);
    const A = CU_GRAPH_MEM_ATTR;
    const out = {
      used: dev.graphMemAttribute(op, this.handle, A.USED_MEM_CURRENT),
      usedHigh: dev.graphMemAttribute(op, this.handle, A.USED_MEM_HIGH),
      reserved: dev.graphMemAttribute(op, this.handle, A.RESERVED_MEM_CURRENT),
      reservedHigh: dev.graphMemAttribute(op, this.handle, A.RESERVED_MEM_HIGH),
    };
    if (reset) {
      dev.resetGraphMemHigh(op, this.handle, A.USED_MEM_HIGH);
      dev.resetGraphMemHigh(op, this.handle, A.RESERVED_MEM_HIGH);
    }
    return out;
  }

  /**
   * Returns the graph memory no launch uses to the device (`cuDeviceGraphMemTrim`): memory of
   * graphs that are running or queued stays. Like a free, it may wait for the GPU.
   */
  trimGraphMemory(): void {
    const op = 'Device.trimGraphMemory';
    surfaceCleanupErrors(op);
    makeCurrent(op, this.context);
    dev.graphMemTrim(op, this.handle);
  }

  /**
   * The stream priority range: `greatest` (the highest priority, a negative number) to `least`
   * (usually 0). Lower numbers run first.
   */
  streamPriorityRange(): { least: number; greatest: number } {
    if (this.#priorityRange === null) {
      const op = 'Device.streamPriorityRange';
      makeCurrent(op, this.context);
      this.#priorityRange = Object.freeze(dev.ctxStreamPriorityRange(op));
    }
    return this.#priorityRange;
  }

  /**
   * The device's default capture-ready stream: non-blocking, created on first use, the same
   * object until it is disposed (then a new one is created). The legacy NULL stream is never used:
   * it cannot be captured.
   */
  stream(): Stream {
    if (this.#defaultStream === null || this.#defaultStream.disposed) {
      this.#defaultStream = this.createStream();
    }
    return this.#defaultStream;
  }

  /**
   * A new stream. `nonBlocking` (default true) means it does not synchronize with the legacy
   * NULL stream, which capture needs; `priority` is in `streamPriorityRange()` (default 0).
   * @throws InvalidArgumentError for a priority out of range or unknown options.
   */
  createStream(options?: StreamOptions): Stream {
    const op = 'Device.createStream';
    const o = requireOptions<StreamOptions>(op, options, ['priority', 'nonBlocking']);
    const nonBlocking = o.nonBlocking === undefined ? true : requireBoolean(op, 'nonBlocking', o.nonBlocking);
    let priority = 0;
    if (o.priority !== undefined) {
      const range = this.streamPriorityRange();
      priority = requireInt(op, 'priority', o.priority, range.greatest, range.least);
    }
    surfaceCleanupErrors(op);
    return new Stream(INTERNAL, this, priority, nonBlocking);
  }

  /** A new event; `timing: true` allows `elapsedMs` (off by default: cheaper to record). */
  createEvent(options?: EventOptions): Event {
    return new Event(INTERNAL, this, options);
  }

  /**
   * Blocks until all work on this device's context is done (`cuCtxSynchronize`).
   * @throws HostCallbackError `ERR_HOST_CALL_PENDING` while a JS host call is in flight (await
   *   `stream.synchronizeAsync()` instead).
   */
  synchronize(): void {
    const op = 'Device.synchronize';
    surfaceCleanupErrors(op);
    makeCurrent(op, this.context);
    dev.ctxSynchronize(op);
    surfaceHostCallbackErrors(op);
  }

  /** e.g. `Device(0: NVIDIA H200, sm_90)`. */
  toString(): string {
    return `Device(${this.ordinal}: ${this.name}, sm_${this.computeCapability.major}${this.computeCapability.minor})`;
  }
}
