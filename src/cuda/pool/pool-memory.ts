/**
 * The CUDA side of a `CapturePool`: a memory pool (`cuMemPoolCreate`), a private stream that
 * orders the pool's allocations and frees, and an event for fences. It outlives its
 * `CapturePool` until the last allocation made from it has come back.
 */
import { CudaError } from '../../errors/cuda-error.js';
import { mempool as mp, memory as mem, stream as st, event as ev, graph as gr, device as dev } from '../../driver/result/index.js';
import { CU, CU_MEMPOOL_ATTR, CU_STREAM_CAPTURE_MODE } from '../../driver/layouts.js';
import { makeCurrent } from '../core/context.js';
import { keepFailure, keepCleanupError, freeWhenSafe } from '../core/lifetime.js';
import type { Device } from '../device/device.js';
import type { Stream } from '../device/stream.js';

/**
 * Runs `fn` with the calling thread's capture mode relaxed (`cuThreadExchangeStreamCaptureMode`),
 * then restores it. The CUDA 13.0 driver counts even pool queries (`cuMemPoolGetAttribute`) as
 * unsafe during a capture (900, seen on the H200), and the pool's own calls must not invalidate a
 * capture in progress on this thread.
 */
function relaxed<T>(op: string, fn: () => T): T {
  const previous = gr.exchangeCaptureMode(op, CU_STREAM_CAPTURE_MODE.RELAXED);
  try {
    return fn();
  } finally {
    gr.exchangeCaptureMode(op, previous);
  }
}

/** @internal The memory of one `CapturePool`. */
export class PoolMemory {
  readonly device: Device;
  readonly #ctx: bigint;
  readonly #pool: bigint;
  readonly #stream: bigint;
  readonly #event: bigint;
  #outstanding = 0;
  /** Bytes given back by `share` that graphs still use, and whether any ever was. */
  #sharedBytes = 0;
  #shared = false;
  #retired = false;
  #destroyed = false;
  /** Streams that graphs holding this pool were launched on since the last fence. */
  readonly #launchStreams = new Set<Stream>();

  /**
   * @throws CudaError 801 when the device has no memory-pool support; CudaError from the driver.
   */
  constructor(op: string, device: Device, releaseThreshold: bigint) {
    this.device = device;
    this.#ctx = device.context;
    makeCurrent(op, this.#ctx);
    const { pool, stream, event } = relaxed(op, () => PoolMemory.#create(op, device, releaseThreshold));
    this.#pool = pool;
    this.#stream = stream;
    this.#event = event;
  }

  static #create(op: string, device: Device, releaseThreshold: bigint): { pool: bigint; stream: bigint; event: bigint } {
    if (dev.deviceAttribute(op, CU.DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device.handle) === 0) {
      throw new CudaError({
        code: 801,
        operation: op,
        detail: `${device} does not support stream-ordered memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0), which a CapturePool needs`,
      });
    }
    const pool = mp.memPoolCreate(op, device.ordinal);
    let stream = 0n;
    try {
      if (releaseThreshold > 0n) mp.memPoolSetAttribute(op, pool, CU_MEMPOOL_ATTR.RELEASE_THRESHOLD, releaseThreshold);
      stream = st.streamCreate(op, CU.STREAM_NON_BLOCKING, 0);
      return { pool, stream, event: ev.eventCreate(op, CU.EVENT_DISABLE_TIMING) };
    } catch (e) {
      if (stream !== 0n) st.streamDestroy(op, stream);
      mp.memPoolDestroy(op, pool);
      throw e;
    }
  }

  /** The `CUmemoryPool` handle. */
  get handle(): bigint {
    return this.#pool;
  }

  /** Allocations not yet returned. */
  get outstanding(): number {
    return this.#outstanding;
  }

  /** True once the memory pool has been destroyed. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  /**
   * Allocates `byteLength` bytes from the pool, ready for use by any stream when this returns.
   * Called during a capture: the allocation is made on the pool's own stream, so it is a real
   * allocation of the pool, not an allocation node of the capture (which `cuMemAllocFromPoolAsync`
   * on a capturing stream would record, owned by the graph and not by the pool). The thread's
   * capture mode is relaxed for these calls so they cannot invalidate the capture in progress.
   */
  allocate(op: string, byteLength: number): bigint {
    makeCurrent(op, this.#ctx);
    const ptr = relaxed(op, () => {
      const p = mp.memAllocFromPoolAsync(op, byteLength, this.#pool, this.#stream);
      try {
        // The graph reads the memory at its first launch, on another stream: the allocation
        // (which may reuse memory whose free waits behind a fence) must be complete by then.
        st.streamSynchronize(op, this.#stream);
      } catch (e) {
        mem.memFreeAsync(op, p, this.#stream);
        throw e;
      }
      return p;
    });
    this.#outstanding++;
    return ptr;
  }

  /** A graph holding this pool was launched on `stream`: frees wait for its work there. */
  noteLaunch(stream: Stream): void {
    this.#launchStreams.add(stream);
  }

  /**
   * Returns an allocation to the pool, ordered after the work of every stream a graph of the
   * pool was launched on. Runs from a buffer's cleanup, which never runs during a capture (frees
   * wait for captures to end), so the fence cannot join one. Never throws: failures are kept.
   */
  free(ptr: bigint): void {
    const op = 'CapturePool.release';
    try {
      makeCurrent(op, this.#ctx);
      this.#fence(op);
      keepFailure(mem.memFreeAsync(op, ptr, this.#stream), op, 'cuMemFreeAsync');
    } catch (e) {
      keepCleanupError(e);
    }
    this.#outstanding--;
    if (this.#retired && this.#outstanding === 0) this.#destroy(op);
  }

  #fence(op: string): void {
    if (this.#launchStreams.size === 0) return;
    let synchronize = false;
    for (const s of this.#launchStreams) {
      if (s.disposed) {
        // Its handle may be gone; only waiting for the whole context covers its work.
        synchronize = true;
        continue;
      }
      ev.eventRecord(op, this.#event, s.handleUnchecked());
      st.streamWaitEvent(op, this.#stream, this.#event);
    }
    this.#launchStreams.clear();
    if (synchronize) dev.ctxSynchronize(op);
  }

  /**
   * Gives allocation `ptr` (`bytes` long) back to the pool while a graph still uses it (a
   * one-stream pool's shared memory): freed as `free` frees, once frees may run; `unshare` when
   * the graphs let go. The pool must keep what it reserved meanwhile (its release threshold).
   */
  share(ptr: bigint, bytes: number): void {
    this.#sharedBytes += bytes;
    this.#shared = true;
    freeWhenSafe(() => this.free(ptr));
  }

  /** The graphs that used `bytes` of shared memory let go of it. */
  unshare(bytes: number): void {
    this.#sharedBytes -= bytes;
  }

  /** Bytes given back by `share` that graphs still use. */
  get sharedBytes(): number {
    return this.#sharedBytes;
  }

  /** Bytes of the pool's memory in use (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`). */
  usedBytes(op: string): number {
    makeCurrent(op, this.#ctx);
    return Number(relaxed(op, () => mp.memPoolAttribute(op, this.#pool, CU_MEMPOOL_ATTR.USED_MEM_CURRENT)));
  }

  /** Bytes the pool holds from the driver (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`). */
  reservedBytes(op: string): number {
    makeCurrent(op, this.#ctx);
    return Number(relaxed(op, () => mp.memPoolAttribute(op, this.#pool, CU_MEMPOOL_ATTR.RESERVED_MEM_CURRENT)));
  }

  /**
   * Waits for the pool's pending frees (and the graph work they are fenced behind), then gives
   * reserved memory back to the driver down to `minBytesToKeep` (`cuMemPoolTrimTo`).
   */
  trim(op: string, minBytesToKeep: number): void {
    makeCurrent(op, this.#ctx);
    relaxed(op, () => {
      // Shared memory went back before its graphs' launches, which may still run (from graphs
      // disposed since): the trim waits for them as the frees of other memory do.
      if (this.#shared) this.#fence(op);
      st.streamSynchronize(op, this.#stream);
      mp.memPoolTrimTo(op, this.#pool, minBytesToKeep);
    });
  }

  /** The pool's owner let go: destroy it once the last allocation is back. Never throws. */
  retire(): void {
    this.#retired = true;
    if (this.#outstanding === 0) this.#destroy('CapturePool.release');
  }

  #destroy(op: string): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    try {
      makeCurrent(op, this.#ctx);
      // Wait for the pending frees (and the graph work they are fenced behind) and give the
      // memory back now, so the device has it when the pool is gone: destroying a pool with
      // pending frees would release its memory only whenever the driver gets to it. This runs
      // from a cleanup, which never runs during a capture, so the wait is legal.
      try {
        // Shared memory went back to the pool before its graphs' launches: wait for those too.
        if (this.#shared) this.#fence(op);
        st.streamSynchronize(op, this.#stream);
        mp.memPoolTrimTo(op, this.#pool, 0);
      } catch (e) {
        keepCleanupError(e);
      }
      keepFailure(mp.memPoolDestroy(op, this.#pool), op, 'cuMemPoolDestroy');
      keepFailure(ev.eventDestroy(op, this.#event), op, 'cuEventDestroy_v2');
      keepFailure(st.streamDestroy(op, this.#stream), op, 'cuStreamDestroy_v2');
    } catch (e) {
      keepCleanupError(e);
    }
  }
}
