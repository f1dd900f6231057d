import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { assertInstance, requireInt } from '../../util/validate.js';
import { memory as mem, host } from '../../driver/result/index.js';
import { CU } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure, surfaceCleanupErrors } from '../core/lifetime.js';
import { registerPinned } from './host-memory.js';
import type { Device } from '../device/device.js';
import { brands, registerBrand } from '../core/brands.js';

const PAGE = 4096;

/**
 * Page-locked (pinned) host memory: copies to and from it are truly asynchronous, and it is the
 * only host memory a capture may copy from or to (the graph keeps it alive).
 *
 * The memory is a JS `SharedArrayBuffer` registered with the driver (`cuMemHostRegister`), not
 * driver-allocated memory wrapped in a view. Two properties follow, both needed for safety:
 * - it cannot be detached: a `SharedArrayBuffer` cannot be transferred (`structuredClone(x,
 *   { transfer })` and `postMessage` refuse it), so memory the driver writes can never come to
 *   belong to another buffer while the pages are registered and captured copies replay into them;
 * - after `dispose()` the pages are unpinned but every view handed out stays valid JS memory, so a
 *   stale view can never touch freed memory.
 * Views are over shared memory: APIs that refuse shared views (`TextDecoder.decode`) need a copy.
 *
 * The pages are also mapped into the devices' address space (zero-copy): a kernel given the
 * buffer as an argument (`args: [host]`, `arg.ptr(host)`; `devicePtr` is the address) reads and
 * writes them itself, over the bus, with no copy in the stream. A few bytes in or out a step (a
 * decode step's token ids) cost a bus round trip inside a kernel instead of a copy's own node.
 * Keep the host's writes and the GPU's apart in time (write, launch, await, read).
 *
 * @example
 * using host = PinnedHostBuffer.alloc(device, 4 * n);
 * const f = host.asFloat32();
 * buf.copyToHostAsync(s, f); await s.synchronizeAsync(); console.log(f[0]);
 */
export class PinnedHostBuffer {
  /** Size in bytes. */
  readonly byteLength: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #bytes: Uint8Array<SharedArrayBuffer>;
  readonly #ptr: bigint;
  /** The device-mapped address, asked of the driver on first use (0n: not yet). */
  #devicePtr = 0n;
  readonly #device: Device;

  /** @internal Use `PinnedHostBuffer.alloc`. */
  constructor(key: typeof INTERNAL, byteLength: number, device: Device) {
    if (key !== INTERNAL) throw privateConstructorError('PinnedHostBuffer', 'PinnedHostBuffer.alloc()');
    const op = 'PinnedHostBuffer.alloc';
    // Register whole pages: allocate a page more and start at the first page boundary. Shared
    // memory, because an ArrayBuffer could be detached (transferred) under the driver.
    const span = Math.ceil(byteLength / PAGE) * PAGE;
    let backing: SharedArrayBuffer;
    try {
      backing = new SharedArrayBuffer(span + PAGE);
    } catch (e) {
      // The host has not the memory (a RangeError from the engine): what the driver's host allocation would say.
      throw new CudaError({ code: 2, operation: op, detail: `the host could not allocate ${byteLength} bytes of memory to pin (${e instanceof Error ? e.message : String(e)})`, cause: e });
    }
    const base = host.hostAddress(new Uint8Array(backing));
    const skip = Number((BigInt(PAGE) - (base % BigInt(PAGE))) % BigInt(PAGE));
    const ptr = base + BigInt(skip);
    makeCurrent(op, device.context);
    // Mapped too, so that kernels may use the pages (devicePtr): registering with DEVICEMAP costs
    // nothing when no kernel does, and a device that cannot map host memory fails only then.
    mem.hostRegister(op, ptr, span, CU.MEMHOSTREGISTER_PORTABLE | CU.MEMHOSTREGISTER_DEVICEMAP);
    this.byteLength = byteLength;
    this.#ptr = ptr;
    this.#device = device;
    this.#bytes = new Uint8Array(backing, skip, byteLength);
    const ctx = device.context;
    // The cleanup closure holds `backing`, so the pages stay allocated until they are unpinned.
    // cuMemHostUnregister waits for the GPU: deferred while a JS host call is in flight.
    this[LIFETIME] = new Lifetime(
      `PinnedHostBuffer (${byteLength} bytes)`,
      this,
      () => {
        void backing;
        makeCurrent('PinnedHostBuffer.dispose', ctx);
        keepFailure(mem.hostUnregister('PinnedHostBuffer.dispose', ptr), 'PinnedHostBuffer.dispose', 'cuMemHostUnregister');
      },
      { waits: true },
    );
    registerPinned(backing, this[LIFETIME]);
  }

  /**
   * Allocates `byteLength` (≥ 1) zeroed, page-locked bytes, registered with `device`'s context and
   * usable from every context. The order of the arguments is `DeviceBuffer.alloc`'s.
   * @throws InvalidArgumentError for a non-Device (also a number first: the old order) or a bad size;
   *   CudaError 2 `CUDA_ERROR_OUT_OF_MEMORY` when the host cannot allocate the memory.
   */
  static alloc(device: Device, byteLength: number): PinnedHostBuffer {
    const op = 'PinnedHostBuffer.alloc';
    if (typeof device === 'number') {
      throw new InvalidArgumentError(op, 'device', `device must be a Device, got ${device}: the order is PinnedHostBuffer.alloc(device, byteLength), as DeviceBuffer.alloc(device, byteLength)`);
    }
    assertInstance(op, 'device', device, brands.Device);
    requireInt(op, 'byteLength', byteLength, 1, 2 ** 32 * PAGE);
    surfaceCleanupErrors(op);
    return new PinnedHostBuffer(INTERNAL, byteLength, device);
  }

  /** @internal True for a PinnedHostBuffer this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is PinnedHostBuffer {
    return typeof value === 'object' && value !== null && #ptr in value;
  }

  static {
    registerBrand('PinnedHostBuffer', PinnedHostBuffer);
  }

  /** The host address of the first byte. @throws DisposedError after dispose. */
  get ptr(): bigint {
    this[LIFETIME].assertAlive('PinnedHostBuffer.ptr');
    return this.#ptr;
  }

  /**
   * The address at which kernels reach these pages (`cuMemHostGetDevicePointer`; with unified
   * addressing, on every device of the process). Passing the buffer itself as a kernel argument
   * is better: the launch, capture or exec then holds the pages pinned while it may run.
   * @throws DisposedError after dispose; CudaError when the device cannot map host memory.
   */
  get devicePtr(): bigint {
    return this.ptrFor('PinnedHostBuffer.devicePtr');
  }

  /** @internal The device-mapped address for `op` (a kernel argument), after the disposed check. */
  ptrFor(op: string): bigint {
    this[LIFETIME].assertAlive(op);
    return this.#mapped(op);
  }

  /**
   * @internal The device-mapped address with no disposed check, for a holder whose hold keeps the
   * pages pinned after the owner disposed them (as `DeviceBuffer.ptrHeld`).
   */
  ptrHeld(): bigint {
    return this.#mapped('PinnedHostBuffer.ptrHeld');
  }

  #mapped(op: string): bigint {
    if (this.#devicePtr === 0n) {
      makeCurrent(op, this.#device.context);
      this.#devicePtr = mem.hostDevicePointer(op, this.#ptr);
    }
    return this.#devicePtr;
  }

  /** The bytes, as a Uint8Array over the pinned memory. @throws DisposedError after dispose. */
  get bytes(): Uint8Array<SharedArrayBuffer> {
    this[LIFETIME].assertAlive('PinnedHostBuffer.bytes');
    return this.#bytes;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  #view<T>(op: string, make: (b: ArrayBufferLike, off: number, len: number) => T, size: number): T {
    this[LIFETIME].assertAlive(op);
    return make(this.#bytes.buffer, this.#bytes.byteOffset, Math.floor(this.byteLength / size));
  }

  /** A Float32Array over the memory (as many whole elements as fit). */
  asFloat32(): Float32Array {
    return this.#view('PinnedHostBuffer.asFloat32', (b, o, n) => new Float32Array(b, o, n), 4);
  }
  /** A Float64Array over the memory. */
  asFloat64(): Float64Array {
    return this.#view('PinnedHostBuffer.asFloat64', (b, o, n) => new Float64Array(b, o, n), 8);
  }
  /** An Int32Array over the memory. */
  asInt32(): Int32Array {
    return this.#view('PinnedHostBuffer.asInt32', (b, o, n) => new Int32Array(b, o, n), 4);
  }
  /** A Uint32Array over the memory. */
  asUint32(): Uint32Array {
    return this.#view('PinnedHostBuffer.asUint32', (b, o, n) => new Uint32Array(b, o, n), 4);
  }
  /** A Uint16Array over the memory. */
  asUint16(): Uint16Array {
    return this.#view('PinnedHostBuffer.asUint16', (b, o, n) => new Uint16Array(b, o, n), 2);
  }
  /** A BigInt64Array over the memory. */
  asBigInt64(): BigInt64Array {
    return this.#view('PinnedHostBuffer.asBigInt64', (b, o, n) => new BigInt64Array(b, o, n), 8);
  }
  /** A BigUint64Array over the memory. */
  asBigUint64(): BigUint64Array {
    return this.#view('PinnedHostBuffer.asBigUint64', (b, o, n) => new BigUint64Array(b, o, n), 8);
  }

  /**
   * Unpins the memory (views stay readable as ordinary JS memory). Idempotent; never throws.
   * A graph that copies to or from this buffer keeps it pinned until the graph is disposed.
   */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `PinnedHostBuffer(0x${this.#ptr.toString(16)}, ${this.byteLength} bytes)`;
  }
}
