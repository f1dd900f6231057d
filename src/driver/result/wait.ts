/**
 * Waits for GPU work that leave the event loop free (`stream.synchronizeAsync()`,
 * `event.synchronizeAsync()`), at about a blocking wait's cost.
 *
 * With the addon, a wait is an event handed to the addon's completion thread (native/completion.c):
 * one thread per environment polls every pending wait's event and hands the finished ones back in
 * one batch, so a wait ends within a few microseconds of the GPU work and a thousand waits are a
 * thousand entries of one list, not a thousand threads. Without the addon (or where it cannot bind
 * the driver's functions), each wait is a blocking `cuEventSynchronize` on one of koffi's worker
 * threads: correct, about 12 µs slower per wait.
 *
 * The hand-back: the completion thread queues the finished waits. If the JS thread is asleep in the
 * event loop's poll, the thread wakes it through a thread-safe function, and the kernel's wake-up
 * costs about 7 µs on the H200's host, more than the rest of the wait together (bench:await). So
 * for a short while after a wait began (`keepAwakeMs`), the loop is kept turning with
 * `setImmediate` instead of sleeping, and drains the queue itself on every turn (a counter read
 * while it is empty): a wait ends within a turn of the GPU work, and every other callback runs
 * meanwhile, as a blocking wait spins, but without blocking. Waits that last longer let the loop
 * sleep, and pay the wake-up once.
 *
 * A stream wait records an event of this module's pool on the stream and waits for that event, so
 * it means the work submitted before the call, whatever is submitted after it (a plain
 * `cuStreamSynchronize` on another thread would also wait for that later work). Except while a JS
 * host function is in flight: a record is one more operation queued behind it (the host-call gate
 * counts those, host-gate.ts), and the wait is what lets the host function run, so it must never
 * be refused; then the wait polls the stream itself (`cuStreamQuery`), which enqueues nothing and
 * also covers work submitted after it.
 */
import { driverSymbol } from '../sys.js';
import { bindNativeSymbol, nativeAddon, type HotAddon } from '../hot.js';
import { onLibrariesReset } from '../sys.js';
import { gate } from '../host-gate.js';
import { check, cudaError } from './check.js';
import { eventCreate, eventDestroy, eventQuery } from './event.js';
import { streamQuery, waitOnWorker } from './stream.js';

/** `CU_EVENT_DISABLE_TIMING`: a wait's event needs no timestamps, and records faster without. */
const DISABLE_TIMING = 2;
/** The completion thread polls without sleeping for this long after the last wait began or ended. */
const SPIN_NS = 100_000;
/** Its longest sleep between polls of a long wait. */
const MAX_SLEEP_NS = 1_000_000;
/** Idle wait events kept per context for reuse; more are destroyed when their wait ends. */
const POOL_LIMIT = 64;
/** How long after the latest wait began the event loop is kept from sleeping (see the file comment). */
let keepAwakeMs = 0.25;

interface PendingWait {
  readonly op: string;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** The pool event recorded for a stream wait (returned when the wait ends), or 0n. */
  readonly event: bigint;
  readonly ctx: bigint;
  /** The driver call whose failure a rejection names. */
  readonly call: 'cuEventQuery' | 'cuStreamQuery';
}

const pending = new Map<number, PendingWait>();
let nextId = 1;
/** The addon whose completion thread this module started, or null. */
let started: HotAddon | null = null;
/** Idle wait events, by context. */
const pools = new Map<bigint, bigint[]>();

onLibrariesReset(() => {
  // The pooled events belong to the library just forgotten.
  pools.clear();
});

function takeEvent(op: string, ctx: bigint): bigint {
  const pool = pools.get(ctx);
  return pool !== undefined && pool.length > 0 ? pool.pop()! : eventCreate(op, DISABLE_TIMING);
}

function returnEvent(ctx: bigint, event: bigint): void {
  let pool = pools.get(ctx);
  if (pool === undefined) pools.set(ctx, (pool = []));
  if (pool.length < POOL_LIMIT) pool.push(event);
  else eventDestroy('wait', event);
}

/** Finished waits, drained from the completion thread's queue: [id, CUresult, id, CUresult, …]. Never throws. */
function onComplete(done: readonly number[]): void {
  for (let i = 0; i < done.length; i += 2) {
    const id = done[i]!;
    const rc = done[i + 1]!;
    const w = pending.get(id);
    if (w === undefined) continue;
    pending.delete(id);
    if (w.event !== 0n) returnEvent(w.ctx, w.event);
    if (rc === 0) w.resolve();
    else w.reject(cudaError(rc, w.op, w.call));
  }
}

/** The addon with its completion thread running and its functions bound, or null (use koffi). */
function waiter(op: string): HotAddon | null {
  const hot = nativeAddon();
  if (hot === null) return null;
  if (!bindNativeSymbol(op, hot, 'cuEventQuery') || !bindNativeSymbol(op, hot, 'cuEventRecord') || !bindNativeSymbol(op, hot, 'cuStreamQuery')) return null;
  bindNativeSymbol(op, hot, 'cuCtxSetCurrent');
  if (started !== hot) {
    hot.waiterStart(onComplete, SPIN_NS, MAX_SLEEP_NS);
    started = hot;
  }
  return hot;
}

let awake = false;
let lastHandOver = 0;

/** One turn of the event loop while waits are young: drains, then schedules the next or lets the loop sleep. */
function turn(): void {
  const hot = started!;
  const done = hot.waitsDrain();
  if (done !== undefined) onComplete(done);
  if (pending.size === 0 || performance.now() - lastHandOver > keepAwakeMs) {
    awake = false;
    // From now on the thread wakes the loop; a wait it finished before seeing that is drained here.
    hot.waitsPolling(false);
    const late = hot.waitsDrain();
    if (late !== undefined) onComplete(late);
    return;
  }
  setImmediate(turn);
}

/** A wait was handed over: keep the event loop turning for a while (see the file comment). */
function keepAwake(hot: HotAddon): void {
  lastHandOver = performance.now();
  if (awake || keepAwakeMs <= 0) return;
  awake = true;
  hot.waitsPolling(true);
  setImmediate(turn);
}

/**
 * Sets how long (ms) the event loop is kept from sleeping after a wait began; 0 lets it sleep at
 * once. Returns the value before. For bench:await's breakdown. @internal
 */
export function setKeepAwakeMs(ms: number): number {
  const before = keepAwakeMs;
  keepAwakeMs = ms;
  return before;
}

function freshId(): number {
  do nextId = nextId >= 0xffff_ffff ? 1 : nextId + 1;
  while (pending.has(nextId));
  return nextId;
}

/**
 * Resolves when `event` (recorded on `stream` first unless `stream` is 0n) completes; rejects with
 * `CudaError` when the driver reports a failure of the work. `ctx` is the event's context.
 */
function waitFor(op: string, ctx: bigint, event: bigint, stream: bigint, pooled: boolean): Promise<void> {
  const hot = waiter(op);
  if (hot === null) {
    if (stream !== 0n) check(driverSymbol(op, 'cuEventRecord')(event, stream), op, 'cuEventRecord');
    const done = waitOnWorker(op, 'cuEventSynchronize', event, () => eventQuery(op, event));
    return pooled ? done.finally(() => returnEvent(ctx, event)) : done;
  }
  const id = freshId();
  const rc = hot.waitEvent(id, ctx, event, stream);
  if (rc !== 0) throw cudaError(rc, op, 'cuEventRecord');
  keepAwake(hot);
  return new Promise<void>((resolve, reject) => {
    pending.set(id, { op, resolve, reject, event: pooled ? event : 0n, ctx, call: 'cuEventQuery' });
  });
}

/**
 * Resolves when the work submitted to `stream` before this call is done, without blocking the
 * event loop. `ctx` is the stream's context, current on this thread.
 * @throws CudaError when the event cannot be made or recorded (the promise rejects for failures of the work).
 */
export function streamWaitAsync(op: string, ctx: bigint, stream: bigint): Promise<void> {
  if (gate.calls !== 0) return streamQueryWait(op, ctx, stream);
  const event = takeEvent(op, ctx);
  try {
    return waitFor(op, ctx, event, stream, true);
  } catch (e) {
    returnEvent(ctx, event);
    throw e;
  }
}

/** A wait for all of `stream`'s work that enqueues nothing (while a JS host call is in flight). */
function streamQueryWait(op: string, ctx: bigint, stream: bigint): Promise<void> {
  const hot = waiter(op);
  if (hot === null) return waitOnWorker(op, 'cuStreamSynchronize', stream, () => streamQuery(op, stream));
  const id = freshId();
  const rc = hot.waitStream(id, ctx, stream);
  if (rc !== 0) throw cudaError(rc, op, 'cuStreamQuery');
  keepAwake(hot);
  return new Promise<void>((resolve, reject) => {
    pending.set(id, { op, resolve, reject, event: 0n, ctx, call: 'cuStreamQuery' });
  });
}

/** Resolves when the work before `event`'s last record is done, without blocking the event loop. */
export function eventWaitAsync(op: string, ctx: bigint, event: bigint): Promise<void> {
  return waitFor(op, ctx, event, 0n, false);
}

/** Waits handed to the completion thread and not ended yet (0 without the addon). @internal */
export function waitsPending(): number {
  return pending.size;
}
