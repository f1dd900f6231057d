/**
 * Waits for GPU work that leave the event loop free (`stream.synchronizeAsync()`,
 * `event.synchronizeAsync()`), at about a blocking wait's cost.
 *
 * With the addon, a wait is an event, in two phases:
 *   - young: for `keepAwakeMs` after a wait began, the event loop is kept turning with
 *     `setImmediate` instead of sleeping, and each turn polls the young waits' events itself
 *     (`cuEventQuery` through the addon). A wait ends within a turn of the GPU work, and every other
 *     callback runs meanwhile, as a blocking wait spins, but without blocking.
 *   - old: a wait that outlives that (or one beyond `YOUNG_LIMIT` young waits) is handed to the
 *     addon's completion thread (native/completion.c): one thread per environment polls every
 *     pending wait's event and hands the finished ones back in one batch, waking the loop. A
 *     thousand waits are a thousand entries of one list, not a thousand threads.
 * Why not the thread alone: its hand-back must wake a JS thread asleep in the loop's poll, and the
 * kernel's wake-up costs about 7 µs on the H200's host, more than the rest of the wait (bench:await
 * measures both). A wait that lasts longer than the window pays it once, against far more.
 *
 * Without the addon (or where it cannot bind the driver's functions) there is no thread to hand a
 * wait to, so a wait stays young longer, `YOUNG_MS_WITHOUT_ADDON`, polled through koffi, and is
 * then polled by one timer of the event loop every millisecond (Node's timers count whole ones),
 * for all such waits at once: a wait of that age ends at most a sixteenth of its time late (the
 * completion thread's sleeps are as long). Not a blocking `cuEventSynchronize` on one of libuv's worker threads, as it
 * once was: four waits held the pool's four threads, and every file read, DNS lookup or zlib call of
 * the process queued behind them; a worker thread blocked in the driver kept `process.exit()` and
 * `worker.terminate()` from returning until the GPU work ended; and koffi refuses more than a few
 * hundred asynchronous calls at once, so a thousand waits threw.
 *
 * A stream wait records an event of this module's pool on the stream and waits for that event, so
 * it means the work submitted before the call, whatever is submitted after it (a plain
 * `cuStreamSynchronize` on another thread would also wait for that later work). Except while a JS
 * host function is in flight: a record is one more operation queued behind it (the host-call gate
 * counts those, host-gate.ts), and the wait is what lets the host function run, so it must never
 * be refused; then the wait polls the stream itself (`cuStreamQuery`, on the completion thread or
 * the timer), which enqueues nothing and also covers work submitted after it.
 */
import { driverSymbol, onLibrariesReset } from '../sys.js';
import { bindNativeSymbol, nativeAddon, type HotAddon } from '../hot.js';
import { gate } from '../host-gate.js';
import { cudaError } from './check.js';
import { eventCreate, eventDestroy } from './event.js';

/** `CU_EVENT_DISABLE_TIMING`: a wait's event needs no timestamps, and records faster without. */
const DISABLE_TIMING = 2;
const CUDA_ERROR_NOT_READY = 600;
const CUDA_ERROR_NOT_INITIALIZED = 3;
/** The completion thread polls without sleeping for this long after the last wait began or ended. */
const SPIN_NS = 100_000;
/** Its longest sleep between polls of a long wait. */
const MAX_SLEEP_NS = 1_000_000;
/** Idle wait events kept per context for reuse; more are destroyed when their wait ends. */
const POOL_LIMIT = 64;
/** Young waits polled by the event loop at most; more are old at once (a turn polls each). */
const YOUNG_LIMIT = 16;
/** How long a wait stays young, keeping the event loop from sleeping (see the file comment). */
let keepAwakeMs = 0.25;
/** How often the timer polls the old waits without the addon (Node's timers count whole milliseconds). */
const POLL_MS = 1;
/**
 * How long a wait stays young without the addon (when `keepAwakeMs` > 0): the timer's millisecond
 * is a sixteenth of that, the completion thread's bound on lateness.
 */
const YOUNG_MS_WITHOUT_ADDON = 16;

interface PendingWait {
  readonly op: string;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** The event waited for (a pool event for a stream wait), or 0n for a stream-query wait. */
  readonly event: bigint;
  /** The stream of a stream-query wait, else 0n. */
  readonly stream: bigint;
  /** The addon that polls this wait, or null: koffi's calls, from the event loop. */
  readonly hot: HotAddon | null;
  /** Whether `event` is the pool's (returned when the wait ends). */
  readonly pooled: boolean;
  readonly ctx: bigint;
  /** The driver call whose failure a rejection names. */
  readonly call: 'cuEventQuery' | 'cuStreamQuery';
  /** `performance.now()` when the wait began (young waits). */
  readonly born: number;
  /** How long (ms) it stays young: `keepAwakeMs`, longer without the addon. */
  readonly window: number;
}

/** Every wait not ended yet, by id; the young ones also in `young`, the old ones with the thread or in `old`. */
const pending = new Map<number, PendingWait>();
const young: { id: number; wait: PendingWait }[] = [];
/** Old waits without the addon, polled by `pollOld`'s timer. */
const old: { id: number; wait: PendingWait }[] = [];
let oldTimer: ReturnType<typeof setTimeout> | null = null;
let nextId = 1;
/** The addon whose completion thread this module started, or null. */
let started: HotAddon | null = null;
/** Idle wait events, by context. */
const pools = new Map<bigint, bigint[]>();

/** Whether the wait's driver functions are bound into the addon for the library loaded now. */
let bound = false;

onLibrariesReset(() => {
  // The pooled events, and the addresses bound into the addon, belong to the library just forgotten.
  pools.clear();
  bound = false;
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

/** Ends wait `id` with CUresult `rc` (when it is still pending). Never throws. */
function settle(id: number, rc: number): void {
  const w = pending.get(id);
  if (w === undefined) return;
  pending.delete(id);
  if (w.pooled) returnEvent(w.ctx, w.event);
  if (rc === 0) w.resolve();
  else w.reject(cudaError(rc, w.op, w.call));
}

/** The completion thread's batch: [id, CUresult, id, CUresult, …]. Never throws. */
function onComplete(done: readonly number[]): void {
  for (let i = 0; i < done.length; i += 2) settle(done[i]!, done[i + 1]!);
}

/** The addon with its completion thread running and its functions bound, or null (use koffi). */
function waiter(op: string): HotAddon | null {
  const hot = nativeAddon();
  if (hot === null) return null;
  if (!bound || started !== hot) {
    // Once per library (bindNativeSymbol remembers each outcome; this saves the lookups per wait).
    if (!bindNativeSymbol(op, hot, 'cuEventQuery') || !bindNativeSymbol(op, hot, 'cuEventRecord') || !bindNativeSymbol(op, hot, 'cuStreamQuery')) return null;
    bindNativeSymbol(op, hot, 'cuCtxSetCurrent');
    bound = true;
  }
  if (started !== hot) {
    hot.waiterStart(onComplete, SPIN_NS, MAX_SLEEP_NS);
    started = hot;
  }
  return hot;
}

let awake = false;

/** Asks whether wait `w` is done: 0, CUDA_ERROR_NOT_READY, or the failure of its work. Never throws. */
function query(w: PendingWait): number {
  if (w.hot !== null) return w.hot.eventQuery(w.event);
  try {
    return w.event !== 0n ? driverSymbol(w.op, 'cuEventQuery')(w.event) : driverSymbol(w.op, 'cuStreamQuery')(w.stream);
  } catch {
    // The library was forgotten (or lost the symbol) meanwhile: its work cannot be asked about any more.
    return CUDA_ERROR_NOT_INITIALIZED;
  }
}

/** Makes wait `id` old: handed to the completion thread, or without the addon, to the timer. */
function ageOut(id: number, w: PendingWait): void {
  if (w.hot !== null) {
    const rc = w.event !== 0n ? w.hot.waitEvent(id, w.ctx, w.event, 0n) : w.hot.waitStream(id, w.ctx, w.stream);
    // Only an unbound function answers otherwise, and `waiter` bound them: end the wait rather than lose it.
    if (rc !== 0) settle(id, rc);
    return;
  }
  old.push({ id, wait: w });
  oldTimer ??= setTimeout(pollOld, POLL_MS);
}

/** The timer of the old waits without the addon: polls each, and comes back while any is left. */
function pollOld(): void {
  oldTimer = null;
  let kept = 0;
  for (let i = 0; i < old.length; i++) {
    const o = old[i]!;
    const rc = pending.has(o.id) ? query(o.wait) : 0;
    if (rc !== CUDA_ERROR_NOT_READY) settle(o.id, rc);
    else old[kept++] = o;
  }
  old.length = kept;
  // Referenced, as a worker's blocking wait was: a pending wait keeps the process alive.
  if (kept > 0) oldTimer = setTimeout(pollOld, POLL_MS);
}

/** One turn of the event loop while waits are young: polls them, ages the old ones out, goes on or lets the loop sleep. */
function turn(): void {
  const now = performance.now();
  let kept = 0;
  for (let i = 0; i < young.length; i++) {
    const y = young[i]!;
    const rc = pending.has(y.id) ? query(y.wait) : 0;
    if (rc !== CUDA_ERROR_NOT_READY) settle(y.id, rc);
    else if (now - y.wait.born > y.wait.window) ageOut(y.id, y.wait);
    else young[kept++] = y;
  }
  young.length = kept;
  if (kept === 0) {
    awake = false;
    return;
  }
  setImmediate(turn);
}

/** Starts wait `w`: young (polled by the event loop kept turning) or, beyond the limit or without a window, old. */
function begin(id: number, w: PendingWait): void {
  pending.set(id, w);
  if (w.window <= 0 || young.length >= YOUNG_LIMIT) {
    ageOut(id, w);
    return;
  }
  young.push({ id, wait: w });
  if (!awake) {
    awake = true;
    setImmediate(turn);
  }
}

/**
 * Sets how long (ms) a wait stays young, the event loop kept turning; 0 hands every wait to the
 * completion thread at once. Returns the value before. For bench:await's breakdown. @internal
 */
export function setKeepAwakeMs(ms: number): number {
  const before = keepAwakeMs;
  keepAwakeMs = ms;
  return before;
}

/** How long a new wait stays young: `keepAwakeMs` with the addon, longer without (none when `keepAwakeMs` is 0). */
function youngWindow(hot: HotAddon | null): number {
  return hot !== null || keepAwakeMs <= 0 ? keepAwakeMs : Math.max(keepAwakeMs, YOUNG_MS_WITHOUT_ADDON);
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
  if (stream !== 0n) {
    const rc = hot !== null ? hot.eventRecord(event, stream) : driverSymbol(op, 'cuEventRecord')(event, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuEventRecord');
  }
  const id = freshId();
  return new Promise<void>((resolve, reject) => {
    begin(id, { op, resolve, reject, event, stream: 0n, hot, pooled, ctx, call: 'cuEventQuery', born: performance.now(), window: youngWindow(hot) });
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
  const id = freshId();
  return new Promise<void>((resolve, reject) => {
    // With the addon, old at once: its young waits are polled through `eventQuery`, and it queries streams on its thread only.
    // Without, young as any other wait (koffi queries a stream as it does an event).
    const window = hot !== null ? 0 : youngWindow(null);
    begin(id, { op, resolve, reject, event: 0n, stream, hot, pooled: false, ctx, call: 'cuStreamQuery', born: performance.now(), window });
  });
}

/** Resolves when the work before `event`'s last record is done, without blocking the event loop. */
export function eventWaitAsync(op: string, ctx: bigint, event: bigint): Promise<void> {
  return waitFor(op, ctx, event, 0n, false);
}

/** Waits not ended yet: young, with the completion thread, or polled by the timer. @internal */
export function waitsPending(): number {
  return pending.size;
}
