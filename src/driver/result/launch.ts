/**
 * Kernel launch (`cuLaunchKernel`): the hot path. The caller passes an argument block it packed
 * once (an array of pointers to argument slots). The call goes through the Node-API addon when it
 * is loaded, else through koffi (`../hot.ts` owns both, the binding and the fallback); both give
 * the same results and the same errors. A sequence of prepared launches (`prepareSequence`) is
 * submitted by one addon call, which loops `cuLaunchKernel` in C, or by a JS loop on koffi.
 */
import { nativeAddon, mailboxOf, settle, koffiLaunchKernel, MAILBOX, type HotAddon, type LaunchShape, type Mailbox } from '../hot.js';
import { cudaError } from './check.js';
import { gate, passGate } from '../host-gate.js';

/** Launches `fn` on `stream` with the packed parameter array at address `params` (one-off launches). */
export function launchKernel(op: string, ...call: [...LaunchShape, stream: bigint, params: bigint]): void {
  if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue');
  const hot = nativeAddon();
  let rc: number;
  if (hot === null) rc = koffiLaunchKernel(op)(...call, null);
  else {
    rc = hot.launchKernel(...call);
    if (rc === hot.NOT_BOUND) rc = settle(op, hot, 'cuLaunchKernel', rc, () => hot.launchKernel(...call), () => koffiLaunchKernel(op)(...call, null));
  }
  if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
}

/**
 * A kernel launch whose function, shape and argument block are fixed: `launch(op, stream)` is one
 * `cuLaunchKernel`. Made by `prepareLaunch`; `release()` once the argument block is freed.
 */
export interface KernelCall {
  /** Launches on `stream`. @throws CudaError when the driver refuses the launch. */
  launch(op: string, stream: bigint): void;
  /**
   * Launches on `stream` and returns the CUresult (0: launched) instead of throwing it; a missing
   * driver or symbol still throws, as `launch` does.
   */
  tryLaunch(op: string, stream: bigint): number;
  /** `tryLaunch` for a caller that has passed the host-call gate for this launch already (a sequence). */
  rawLaunch(op: string, stream: bigint): number;
  /** The launch's id in addon `hot`, or -1 when it is not registered there (a koffi launch). */
  idIn(hot: HotAddon): number;
  /** Forgets the launch (idempotent); `launch` must not be called afterwards. */
  release(): void;
}

/** The koffi form: the arguments are kept in JS and passed on every call. */
class KoffiKernelCall implements KernelCall {
  constructor(
    private readonly fn: bigint,
    private readonly grid: readonly [number, number, number],
    private readonly block: readonly [number, number, number],
    private readonly sharedMem: number,
    private readonly params: bigint,
  ) {}

  launch(op: string, stream: bigint): void {
    const rc = this.tryLaunch(op, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
  }

  tryLaunch(op: string, stream: bigint): number {
    if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue');
    return this.rawLaunch(op, stream);
  }

  rawLaunch(op: string, stream: bigint): number {
    const g = this.grid;
    const b = this.block;
    // Spelled out, not spread from a tuple: this is the koffi fallback's hot path, and a spread
    // would build an array on every launch.
    return koffiLaunchKernel(op)(this.fn, g[0], g[1], g[2], b[0], b[1], b[2], this.sharedMem, stream, this.params, null);
  }

  idIn(_hot: HotAddon): number {
    return -1;
  }

  release(): void {}
}

/**
 * The addon form: the launch is registered in the addon once, and a call passes its id and the
 * stream (registering saves about 50 ns a call over passing the ten arguments; docs/ffi-decision.md).
 */
class NativeKernelCall implements KernelCall {
  #id: number;
  readonly #box: Mailbox;

  constructor(
    private readonly hot: HotAddon,
    private readonly fallback: KoffiKernelCall,
    fn: bigint,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedMem: number,
    params: bigint,
  ) {
    this.#box = mailboxOf(hot);
    this.#id = hot.register(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMem, params);
  }

  launch(op: string, stream: bigint): void {
    if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue');
    const rc = this.rawLaunch(op, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
  }

  tryLaunch(op: string, stream: bigint): number {
    if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue');
    return this.rawLaunch(op, stream);
  }

  rawLaunch(op: string, stream: bigint): number {
    const rc = this.#mailboxLaunch(stream);
    return rc === 0 ? 0 : this.#settle(op, stream, rc);
  }

  /** The mailbox form of `hot.launch(id, stream)`: no Node-API arguments, no result value. */
  #mailboxLaunch(stream: bigint): number {
    const box = this.#box;
    box.u32[MAILBOX.ID] = this.#id;
    box.u64[MAILBOX.STREAM] = stream;
    this.hot.launchFromMailbox();
    return box.i32[MAILBOX.RESULT]!;
  }

  /** Not a success: bind on first use and launch again (koffi where it cannot be bound); the CUresult that stands. */
  #settle(op: string, stream: bigint, rc: number): number {
    rc = settle(op, this.hot, 'cuLaunchKernel', rc, () => this.#mailboxLaunch(stream), () => this.fallback.rawLaunch(op, stream));
    if (rc === this.hot.BAD_ID) throw new Error(`${op}: internal error: launch ${this.#id} is not registered in the native addon`);
    return rc;
  }

  idIn(hot: HotAddon): number {
    return hot === this.hot ? this.#id : -1;
  }

  release(): void {
    if (this.#id < 0) return;
    this.hot.release(this.#id);
    this.#id = -1;
  }
}

/**
 * Fixes a launch of `fn` with the argument block at `params` (0n: no arguments), which must stay
 * valid until `release()`. Touches no driver: the driver function is resolved on the first launch,
 * as on every other call.
 */
export function prepareLaunch(
  fn: bigint,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  sharedMem: number,
  params: bigint,
): KernelCall {
  const koffiCall = new KoffiKernelCall(fn, grid, block, sharedMem, params);
  const hot = nativeAddon();
  return hot === null ? koffiCall : new NativeKernelCall(hot, koffiCall, fn, grid, block, sharedMem, params);
}

/**
 * An ordered list of prepared launches, each with its stream, fixed once: `launch(op)` submits them
 * in order and stops at the first the driver refuses. Made by `prepareSequence`.
 */
export interface SequenceCall {
  /** Number of entries. */
  readonly length: number;
  /** True when `launch` is one call into the Node-API addon, which loops `cuLaunchKernel` in C. */
  readonly native: boolean;
  /**
   * Launches the entries in order. Returns 0 when all were submitted, else the CUresult of the
   * failed entry, whose index (the number submitted before it) is then `submitted`.
   * @throws CudaError when no driver or no `cuLaunchKernel` loads (before anything is launched);
   *   HostCallbackError when a host call is in flight and the whole sequence would pass the queue limit.
   */
  launch(op: string): number;
  /** Entries submitted by the last `launch` (all of them when it returned 0). */
  readonly submitted: number;
}

/** The JS loop: one `KernelCall` a call (koffi, or the addon's per-launch call), in order. */
class LoopSequenceCall implements SequenceCall {
  readonly native = false;
  submitted = 0;

  constructor(
    private readonly calls: readonly KernelCall[],
    private readonly streams: readonly bigint[],
  ) {}

  get length(): number {
    return this.calls.length;
  }

  launch(op: string): number {
    this.submitted = 0;
    // All or nothing: the whole sequence passes the gate before its first launch.
    if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue', this.calls.length);
    return this.rawLaunch(op);
  }

  /** `launch` for a caller that has passed the host-call gate for the whole sequence. */
  rawLaunch(op: string): number {
    const calls = this.calls;
    const streams = this.streams;
    this.submitted = 0;
    for (let i = 0; i < calls.length; i++) {
      const rc = calls[i]!.rawLaunch(op, streams[i]!);
      if (rc !== 0) return rc;
      this.submitted = i + 1;
    }
    return 0;
  }
}

/**
 * The addon form: the launch ids and stream handles are packed once into typed arrays, and a
 * submission is one `launchSequence` call (the addon reads the arrays where they are on each call).
 */
class NativeSequenceCall implements SequenceCall {
  readonly native = true;
  submitted = 0;
  readonly #done = new Uint32Array(1);

  constructor(
    private readonly hot: HotAddon,
    private readonly fallback: LoopSequenceCall,
    private readonly ids: Uint32Array,
    private readonly streams: BigUint64Array,
  ) {}

  get length(): number {
    return this.ids.length;
  }

  launch(op: string): number {
    const hot = this.hot;
    // All or nothing: the whole sequence passes the gate before its first launch.
    if (gate.calls !== 0) passGate(op, 'cuLaunchKernel', 'queue', this.ids.length);
    this.submitted = 0;
    const done = this.#done;
    let rc = hot.launchSequence(this.ids, this.streams, done);
    if (rc === hot.NOT_BOUND) {
      let koffi = false;
      rc = settle(op, hot, 'cuLaunchKernel', rc, () => hot.launchSequence(this.ids, this.streams, done), () => ((koffi = true), this.fallback.rawLaunch(op)));
      if (koffi) {
        this.submitted = this.fallback.submitted;
        return rc;
      }
    }
    if (rc === hot.BAD_ID) throw new Error(`${op}: internal error: a launch of the sequence is not registered in the native addon`);
    this.submitted = done[0]!;
    return rc;
  }
}

/**
 * Fixes the sequence "launch `calls[i]` on `streams[i]`, for every i in order". Where the addon is
 * loaded and registers every call, a submission is one addon call; otherwise it is a JS loop over
 * the calls (koffi). Both submit the same launches in the same order and stop at the same entry.
 * Touches no driver. The calls must stay registered (not released) while the sequence is used.
 */
export function prepareSequence(calls: readonly KernelCall[], streams: readonly bigint[]): SequenceCall {
  if (calls.length !== streams.length) throw new RangeError(`prepareSequence: ${calls.length} calls but ${streams.length} streams`);
  const loop = new LoopSequenceCall([...calls], [...streams]);
  const hot = nativeAddon();
  if (hot === null || calls.length === 0) return loop;
  const ids = new Uint32Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const id = calls[i]!.idIn(hot);
    if (id < 0) return loop;
    ids[i] = id;
  }
  return new NativeSequenceCall(hot, loop, ids, BigUint64Array.from(streams));
}
