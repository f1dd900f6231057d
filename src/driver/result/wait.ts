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

/** The completion thread's batch: [id, CUresult, id, CUresult, …]. Never throws. */
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
