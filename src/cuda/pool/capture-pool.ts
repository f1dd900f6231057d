import { InvalidArgumentError, DisposedError, privateConstructorError } from '../../errors/base.js';
import { describe, requireInstance, requireOptions, requireSize } from '../../util/validate.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { Lifetime, surfaceCleanupErrors } from '../core/lifetime.js';
import type { Device } from '../device/device.js';
import { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import type { Stream } from '../device/stream.js';
import { CaptureStateError } from '../capture/guard-errors.js';
import { PoolMemory } from './pool-memory.js';
import { brands, registerBrand } from '../core/brands.js';

/** Options of `new CapturePool`. */
export interface CapturePoolOptions {
  /**
   * Create the pool's CUDA memory pool on this device now. Default: at the first capture that
   * uses the pool, on its stream's device.
   */
  readonly device?: Device;
  /**
   * Bytes of freed memory the CUDA pool keeps reserved for reuse instead of giving them back to
   * the driver at the next synchronization (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`). Default 0; not
   * with `stream`, whose pool keeps all it reserved.
   */
  readonly releaseThreshold?: number;
  /**
   * Makes a one-stream pool: every capture with it is of `stream`, and its graphs launch on
   * `stream` only. So no two of them are ever in flight together, and memory a capture frees
   * (a pool buffer disposed or `freeAsync`-ed during it) goes back to the pool when that capture
   * ends, for later captures to reuse, though its graph keeps using it (PyTorch's shared graph
   * pool, made safe by the one stream). `GraphCache` makes its pool this way.
   */
  readonly stream?: Stream;
}

/** The bytes a one-stream pool keeps reserved: all (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` = UINT64_MAX), as its graphs use memory it counts as free. */
const KEEP_ALL = 2n ** 64n - 1n;

/** What the pool's release needs; referenced by its Lifetime's cleanup, never the pool object. */
interface PoolState {
  readonly records: Lifetime[];
  memory: PoolMemory | null;
}

/** A buffer a capture allocated from the pool: its address, and whether its memory went back to the pool while a graph still uses it. */
interface PooledAllocation {
  readonly ptr: bigint;
  shared: boolean;
}

let nextId = 1;

function requireResource(op: string, buffer: unknown): Lifetime {
  const life = buffer !== null && typeof buffer === 'object' ? (buffer as { [LIFETIME]?: unknown })[LIFETIME] : undefined;
  if (!(life instanceof Lifetime)) {
    throw new InvalidArgumentError(
      op,
      'buffer',
      `buffer must be a DeviceBuffer (or another cudagraph resource such as a PinnedHostBuffer), got ${describe(buffer)}`,
    );
  }
  return life;
}

/**
 * Memory and lifetimes for captured graphs: `the memory pool` of PyTorch's graphs and the
 * keep-alive list of ferrotorch's, in one object.
 *
 * - A capture begun with `GraphCaptureGuard.beginWithPool(stream, pool)` takes the memory of
 *   `DeviceBuffer.allocAsync` calls on its streams from this pool's CUDA memory pool
 *   (`cuMemPoolCreate`): real allocations with fixed addresses, not allocation nodes, that the
 *   pool keeps alive (they count in `bufferCount`). Several graphs can be captured with one pool
 *   (`graph.pool`), so their memory comes from, and goes back to, one place; `usedBytes`,
 *   `reservedBytes` and `trim()` account for it.
 * - `recordBuffer(buffer)` keeps any buffer alive with the pool, e.g. a graph's inputs donated
 *   after capture.
 * - The pool lives while anything holds it: its creator (until `dispose()`), each graph captured
 *   with it, each capture in progress, and a `graphPoolHandle()`. When the last one lets go, the
 *   pool releases its buffers (each freed once its own owner and holders let go) and its CUDA
 *   memory pool; any later use throws `DisposedError`.
 * - `seal()` forbids new captures and allocations with the pool until `unseal()`.
 * - A one-stream pool (`new CapturePool({ stream })`) captures that stream only, and its graphs
 *   launch there only; so memory a capture frees goes back to the pool when the capture ends and
 *   serves later captures while its graph keeps using it (`sharedBytes`). docs/guard.md.
 *
 * @example
 * using pool = new CapturePool();
 * let graph;
 * {
 *   using guard = GraphCaptureGuard.beginWithPool(s, pool);
 *   const tmp = DeviceBuffer.allocAsync(s, 4 * n);   // from the pool, address fixed
 *   kernel.launch(s, { grid, block, args: [x, tmp] });
 *   graph = guard.finish();                          // holds the pool
 * }
 * console.log(pool.usedBytes, pool.bufferCount);
 */
export class CapturePool {
  /** A process-unique number, for messages (`CapturePool #3`). */
  readonly id: number;
  readonly #life: Lifetime;
  readonly #state: PoolState;
  readonly #releaseThreshold: bigint;
  readonly #stream: Stream | null;
  readonly #allocations = new WeakMap<DeviceBuffer, PooledAllocation>();
  #sealed = false;
  #handle: number | null = null;
  #forgetHandle: (() => void) | null = null;

  /**
   * A new, empty, unsealed pool. Without `options.device` no driver call is made until the
   * pool is first used by a capture.
   * @throws InvalidArgumentError for unknown options, a non-Device `device`, a bad `releaseThreshold`,
   *   a non-Stream `stream` (or one given with `releaseThreshold`, or with a `device` it is not on);
   *   DisposedError for a disposed stream; CudaError when the CUDA memory pool cannot be created on `device`.
   */
  constructor(options?: CapturePoolOptions) {
    const op = 'CapturePool';
    const o = requireOptions<CapturePoolOptions>(op, options, ['device', 'releaseThreshold', 'stream']);
    if (o.device !== undefined) requireInstance(op, 'device', o.device, brands.Device);
    this.#stream = o.stream === undefined ? null : requireInstance(op, 'stream', o.stream, brands.Stream);
    if (this.#stream !== null) {
      this.#stream.handleFor(op);
      if (o.device !== undefined && o.device !== this.#stream.device) {
        throw new InvalidArgumentError(op, 'device', `the stream is on ${this.#stream.device}, the device given is ${o.device}; a pool serves one device`);
      }
      if (o.releaseThreshold !== undefined) {
        throw new InvalidArgumentError(op, 'releaseThreshold', 'a one-stream pool (stream given) keeps all the memory it reserved: its graphs go on using memory it counts as free, which the driver must not take back');
      }
    }
    this.#releaseThreshold = this.#stream !== null ? KEEP_ALL : BigInt(o.releaseThreshold === undefined ? 0 : requireSize(op, 'releaseThreshold', o.releaseThreshold));
    const state: PoolState = { records: [], memory: null };
    if (o.device !== undefined) state.memory = new PoolMemory(op, o.device, this.#releaseThreshold);
    this.#state = state;
    this.id = nextId++;
    // Retiring the memory can wait for the GPU (it synchronizes before destroying the CUDA pool,
    // which the driver cannot survive with frees still pending): deferred while a JS host call
    // is in flight.
    this.#life = new Lifetime(
      `CapturePool #${this.id}`,
      this,
      () => {
        for (const life of state.records.splice(0)) life.release();
        state.memory?.retire();
      },
      { waits: true },
    );
  }

  /** @internal True for a CapturePool this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is CapturePool {
    return typeof value === 'object' && value !== null && #state in value;
  }

  static {
    registerBrand('CapturePool', CapturePool);
  }

  /** The stream of a one-stream pool (`new CapturePool({ stream })`), or null. */
  get stream(): Stream | null {
    return this.#stream;
  }

  /**
   * Bytes a one-stream pool gave back at the end of captures while their graphs still use them:
   * free for the pool's next captures, in use by live graphs (0 for other pools). Counted in
   * `reservedBytes`, not in `usedBytes`.
   */
  get sharedBytes(): number {
    const m = this.#state.memory;
    return m === null ? 0 : m.sharedBytes;
  }

  /** The handle this pool was created for by `graphPoolHandle()`, or null. */
  get handle(): number | null {
    return this.#handle;
  }

  /** The device the pool's memory lives on; null until the pool's memory is created. */
  get device(): Device | null {
    return this.#state.memory?.device ?? null;
  }

  /** The `CUmemoryPool` handle (for interop); null until the first capture with the pool. */
  get memPoolHandle(): bigint | null {
    const m = this.#state.memory;
    return m === null || m.destroyed ? null : m.handle;
  }

  /** True while the pool refuses new captures and allocations. */
  get isSealed(): boolean {
    return this.#sealed;
  }

  /** True once the last holder let go: the pool's buffers and memory are released. */
  get released(): boolean {
    return this.#life.freed;
  }

  /** Graphs and captures in progress that hold the pool (its creator and handle not counted). */
  get holderCount(): number {
    return this.#life.holders;
  }

  /** Buffers the pool keeps alive: recorded with `recordBuffer`, or allocated from it by captures. */
  get bufferCount(): number {
    return this.#state.records.length;
  }

  /** Bytes of the pool's memory in use by buffers not yet returned (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`); 0 before the first capture. */
  get usedBytes(): number {
    const op = 'CapturePool.usedBytes';
    surfaceCleanupErrors(op);
    const m = this.#state.memory;
    return m === null || m.destroyed ? 0 : m.usedBytes(op);
  }

  /** Bytes the pool holds from the driver, used or kept for reuse (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`). */
  get reservedBytes(): number {
    const op = 'CapturePool.reservedBytes';
    surfaceCleanupErrors(op);
    const m = this.#state.memory;
    return m === null || m.destroyed ? 0 : m.reservedBytes(op);
  }

  #assertUsable(op: string): void {
    if (this.#life.freed) throw new DisposedError(op, `${this} (released when its last graph, capture or handle let go)`);
    surfaceCleanupErrors(op);
  }

  /** Refuses new captures and allocations with this pool (`beginWithPool` throws `CaptureStateError` `ERR_POOL_SEALED`). */
  seal(): void {
    this.#assertUsable('CapturePool.seal');
    this.#sealed = true;
  }

  /** Allows captures with this pool again. */
  unseal(): void {
    this.#assertUsable('CapturePool.unseal');
    this.#sealed = false;
  }

  /**
   * Keeps `buffer` alive as long as the pool: disposing your handle to it afterwards only drops
   * your claim, and the memory is freed once the pool (and every graph using the buffer) lets go.
   * @returns the buffer's index among the pool's buffers (0, 1, 2, … since the last `clearBuffers`).
   * @throws InvalidArgumentError for something that is not a cudagraph resource; DisposedError
   *   for a disposed buffer or a released pool.
   */
  recordBuffer(buffer: DeviceBuffer | PinnedHostBuffer): number {
    const op = 'CapturePool.recordBuffer';
    const life = requireResource(op, buffer);
    this.#assertUsable(op);
    if (life.disposed) throw new DisposedError(op, life.what);
    life.retain();
    return this.#state.records.push(life) - 1;
  }

  /**
   * Lets go of every buffer the pool keeps alive, now; each is freed once its owner and the graphs
   * using it let go too. The pool stays usable.
   */
  clearBuffers(): void {
    this.#assertUsable('CapturePool.clearBuffers');
    for (const life of this.#state.records.splice(0)) life.release();
  }

  /**
   * Gives memory the pool holds but does not use back to the driver, keeping at least
   * `minBytesToKeep` reserved (`cuMemPoolTrimTo`). Waits first for the pool's pending frees
   * (which wait for the graphs that used the memory).
   * @throws InvalidArgumentError for a bad size; DisposedError for a released pool;
   *   CaptureStateError `ERR_POOL_SHARED` for a one-stream pool while live graphs use memory it
   *   gave back (`sharedBytes` above 0).
   */
  trim(minBytesToKeep = 0): void {
    const op = 'CapturePool.trim';
    requireSize(op, 'minBytesToKeep', minBytesToKeep);
    this.#assertUsable(op);
    const m = this.#state.memory;
    if (m !== null && m.sharedBytes > 0) {
      // The driver takes back memory the pool counts as free, which live graphs use here.
      throw new CaptureStateError(
        op,
        'ERR_POOL_SHARED',
        `${this} is a one-stream pool whose live graphs use ${m.sharedBytes} bytes it counts as free (memory their captures gave back); trimming could unmap it under them. Dispose those graphs first`,
      );
    }
    m?.trim(op, minBytesToKeep);
  }

  /**
   * Drops the creator's claim (for a pool from `graphPoolHandle()`: releases the handle). The
   * pool lives on while a graph or capture holds it. Idempotent; never throws.
   */
  dispose(): void {
    const forget = this.#forgetHandle;
    this.#forgetHandle = null;
    if (forget !== null) forget();
    this.#life.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `CapturePool #${this.id}`;
  }

  /** @internal The registry hands this pool's creator claim to handle `handle`. */
  adoptHandle(key: typeof INTERNAL, handle: number, forget: () => void): void {
    if (key !== INTERNAL) throw privateConstructorError('CapturePool', 'new CapturePool() (adoptHandle is internal)');
    this.#handle = handle;
    this.#forgetHandle = forget;
  }

  /**
   * @internal A capture on `stream` (or the graph it makes) starts holding the pool: checks that
   * the pool is usable, unsealed and on the stream's device, and creates its memory on first use.
   * Pair with `releaseHold`.
   */
  holdFor(op: string, stream: Stream): void {
    this.#assertUsable(op);
    if (this.#stream !== null && stream !== this.#stream) {
      throw new InvalidArgumentError(
        op,
        'stream',
        `${this} is a one-stream pool of ${this.#stream}: its graphs share memory and replay on that stream only, so it captures nothing else; capture on ${this.#stream}, or use another pool`,
      );
    }
    if (this.#sealed) {
      throw new CaptureStateError(
        op,
        'ERR_POOL_SEALED',
        `${this} is sealed: a sealed pool refuses new captures and allocations; unseal() it or use another pool`,
      );
    }
    const m = this.#state.memory;
    if (m === null) {
      this.#state.memory = new PoolMemory(op, stream.device, this.#releaseThreshold);
    } else if (m.device !== stream.device) {
      throw new InvalidArgumentError(
        op,
        'stream',
        `${this}'s memory lives on ${m.device}, the stream is on ${stream.device}; a pool serves one device`,
      );
    }
    this.#life.retain();
  }

  /** @internal A graph or capture that held the pool lets go. */
  releaseHold(): void {
    this.#life.release();
  }

  /** @internal One more holder (a graph) of a pool already held (by the capture that made the graph). */
  retainHold(op: string): void {
    this.#assertUsable(op);
    this.#life.retain();
  }

  /** @internal The pool's memory, for graphs that note their launch streams. */
  get memory(): PoolMemory | null {
    return this.#state.memory;
  }

  /**
   * @internal Serves `DeviceBuffer.allocAsync` on a stream capturing with this pool: memory
   * from the CUDA pool, recorded in the pool. The buffer goes back to the pool when its owner
   * and every holder let go.
   */
  allocateFor(op: string, stream: Stream, byteLength: number): DeviceBuffer {
    this.#assertUsable(op);
    if (this.#sealed) {
      throw new CaptureStateError(op, 'ERR_POOL_SEALED', `${this} is sealed: it makes no new allocations; unseal() it first`);
    }
    const m = this.#state.memory;
    if (m === null || m.device !== stream.device) {
      throw new InvalidArgumentError(op, 'stream', `${this} has no memory on ${stream.device}`);
    }
    const ptr = m.allocate(op, byteLength);
    const a: PooledAllocation = { ptr, shared: false };
    // Memory already given back (shared) is not freed again when the graphs let go of the buffer.
    const buffer = new DeviceBuffer(INTERNAL, stream.device, byteLength, ptr, () => (a.shared ? m.unshare(byteLength) : m.free(ptr)));
    buffer[LIFETIME].retain();
    this.#state.records.push(buffer[LIFETIME]);
    this.#allocations.set(buffer, a);
    return buffer;
  }

  /**
   * @internal A capture with this one-stream pool finished with `buffers` allocated: the memory of
   * those the program disposed during the capture goes back to the pool now, for later captures,
   * while the new graph keeps using it. Safe because the pool's graphs replay on one stream, never
   * two at once; their memory is then valid from a launch until the next launch of another of the
   * pool's graphs. A no-op for other pools. Never throws (a failed free is kept).
   */
  shareFreed(buffers: readonly DeviceBuffer[]): void {
    const m = this.#state.memory;
    if (this.#stream === null || m === null) return;
    const records = this.#state.records;
    for (const buffer of buffers) {
      const life = buffer[LIFETIME];
      const a = this.#allocations.get(buffer);
      if (a === undefined || a.shared || !life.disposed || life.freed) continue;
      a.shared = true;
      m.share(a.ptr, buffer.byteLength);
      const at = records.indexOf(life);
      if (at >= 0) {
        records.splice(at, 1);
        life.release();
      }
    }
  }

  /** @internal A failed capture gives back a buffer it allocated from the pool: unrecorded and disposed. */
  forgetAllocation(buffer: DeviceBuffer): void {
    const life = buffer[LIFETIME];
    const at = this.#state.records.indexOf(life);
    if (at >= 0) {
      this.#state.records.splice(at, 1);
      life.release();
    }
    buffer.dispose();
  }
}
