/**
 * The host-call gate: the one place that keeps a driver call from deadlocking the process while a
 * JS host function is in flight.
 *
 * Why: the driver runs a host function (`cuLaunchHostFunc`, a graph's host node) on one of its own
 * threads; for a JS function, koffi hands the call to the JS thread and blocks that driver thread
 * until the JS event loop has run it. Until then the stream cannot get past it. A driver call made
 * on the JS thread that waits for the GPU to get past it therefore never returns: the JS thread
 * waits for the GPU, the GPU for the host function, the host function for the JS thread.
 *
 * Every driver entry point cudagraph binds is classified in `DRIVER_WAITS` (sys.ts), from
 * measurements on the CUDA 13.0 driver (test/gpu/fixtures/host-block-probe.c, docs/driver.md):
 * - `'gpu'`: the call can wait for GPU work (synchronizations, `cuMemFree`, `cuModuleLoadDataEx`,
 *   `cuModuleUnload`, `cuMemHostUnregister`, synchronous and pageable copies). While a host call is
 *   in flight it is refused with `HostCallbackError` `ERR_HOST_CALL_PENDING`, which names the
 *   pending host functions; frees are not refused but deferred (cuda/lifetime.ts).
 * - `'queue'`: the call enqueues work (launches, memsets, copies, records, waits). The driver
 *   queues about a thousand operations per stream (1021 measured on an H200); a stream blocked by a
 *   host function fills up, and the next enqueue blocks the JS thread for ever. While a host call
 *   is in flight these calls are counted, and refused once `QUEUE_LIMIT` were submitted.
 * - `'none'`: returns without waiting for the GPU (queries, creation, destroys of streams, events,
 *   graphs and execs, which the driver completes asynchronously).
 *
 * The count is process-wide (`processState.gate`), not per stream: a host call pending on one
 * stream can hold up others (through events, or streams sharing a hardware queue), so only "no JS
 * host call in flight anywhere" makes a wait safe.
 */
import { HostCallbackError } from '../errors/host-callback-error.js';
import { processState } from './process-state.js';

/** How a driver call behaves while a host function blocks a stream (see the file comment). */
export type HostWait = 'none' | 'gpu' | 'queue';

/**
 * Operations that may be submitted while a JS host call is in flight, counted from the moment the
 * first one was submitted. Below the driver's per-stream queue (1021 entries on CUDA 13.0, H200;
 * the GPU test checks the margin), so that no enqueue can block behind a host call.
 */
export const QUEUE_LIMIT = 1000;

/**
 * Bytes that may be copied from pageable (ordinary JS) memory to the device while a JS host call is
 * in flight, counted from the moment the first one was submitted; each copy counts at least
 * `STAGED_MIN` bytes. The driver stages such copies in a buffer of its own and returns; once the
 * buffer is full it waits for the GPU (on an H200, CUDA 13.0: 1 MiB copies returned at once, 4 MiB
 * ones waited, and 969 copies of 4 KiB fit; the GPU test measures it again). A quarter of that.
 */
export const STAGED_LIMIT = 1 << 20;
const STAGED_MIN = 1024;

/** The gate's state, shared by every copy of cudagraph in the process. */
export const gate = processState.gate;

/** True while a JS host call is in flight (submitted and not yet finished). */
export function gateClosed(): boolean {
  return gate.calls !== 0;
}

/** `n` JS host calls were submitted to the GPU. */
export function hostCallsSubmitted(n: number): void {
  if (n <= 0) return;
  gate.pending += n;
  gate.calls += n;
}

/** A JS host call starts running on the JS thread (it was pending). */
export function hostCallStarted(): void {
  // Clamped: a graph launched behind cudagraph's back runs host calls nobody counted.
  if (gate.pending > 0) {
    gate.pending--;
    gate.calls--;
  }
  gate.running++;
  gate.calls++;
}

/**
 * A JS host call has returned. When it was the last one in flight, the gate opens: the queue count
 * restarts and the open listeners run (deferred frees are scheduled there).
 */
export function hostCallFinished(): void {
  if (gate.running > 0) {
    gate.running--;
    gate.calls--;
  }
  if (gate.calls === 0) opened();
}

/** The last host call in flight is gone: the counts restart and the open listeners run. */
function opened(): void {
  gate.queued = 0;
  gate.staged = 0;
  for (const listener of gate.openListeners) listener();
}

/**
 * Forgets host calls that will never run (the context hit a sticky error, after which the driver
 * runs no more work). Opens the gate as `hostCallFinished` does.
 */
export function forgetPendingHostCalls(): void {
  gate.calls -= gate.pending;
  gate.pending = 0;
  if (gate.calls === 0) opened();
}

function pendingNames(): string {
  const names: string[] = [];
  for (const describe of gate.describers) {
    try {
      names.push(...describe());
    } catch {
      // A describer of another copy failed: describe what is known.
    }
  }
  const shown = names.slice(0, 3).join(', ');
  const more = names.length > 3 ? ` and ${names.length - 3} more` : '';
  return names.length === 0 ? '' : ` (${shown}${more})`;
}

function inFlight(): string {
  const n = gate.pending + gate.running;
  return `${n} JS host function call${n === 1 ? ' is' : 's are'} in flight${pendingNames()}`;
}

const WAIT_ADVICE =
  'Let the host functions run first: `await stream.synchronizeAsync()` (or `event.synchronizeAsync()`) waits ' +
  'without blocking the JS thread, then make this call.';
const INSIDE_ADVICE =
  'This call was made from inside a host function, which must not wait for the GPU: return from it and make ' +
  'the call afterwards (e.g. after `await stream.synchronizeAsync()`).';

/**
 * Lets `driverCall` (classified `kind`) through while host calls are in flight, or refuses it.
 * Called only when `gate.calls !== 0`.
 * @throws HostCallbackError `ERR_HOST_CALL_PENDING` for a call that would wait for the GPU, or an
 *   enqueue beyond `QUEUE_LIMIT`.
 */
export function passGate(op: string, driverCall: string, kind: HostWait, n = 1): void {
  if (kind === 'none' || gate.calls === 0) return;
  const advice = gate.running > 0 ? INSIDE_ADVICE : WAIT_ADVICE;
  if (kind === 'gpu') {
    throw new HostCallbackError(
      op,
      'ERR_HOST_CALL_PENDING',
      `${inFlight()}, and ${driverCall} can wait for the GPU, which waits for the JS thread to run them: it would ` +
        `never return (a deadlock). ${advice}`,
      [],
      { driverCall },
    );
  }
  if (gate.queued + n > QUEUE_LIMIT) {
    throw new HostCallbackError(
      op,
      'ERR_HOST_CALL_PENDING',
      `${inFlight()}, and ${gate.queued} operation${gate.queued === 1 ? ' was' : 's were'} submitted since; ` +
        `${n === 1 ? 'one more' : `${n} more`} would pass the ${QUEUE_LIMIT} the driver can queue behind a host function ` +
        `without blocking the JS thread, which would then wait for ever (a deadlock). Nothing was submitted. ${advice}`,
      [],
      { driverCall, queued: gate.queued, limit: QUEUE_LIMIT },
    );
  }
  gate.queued += n;
}

/**
 * Refuses a copy of `bytes` bytes from pageable memory (`cuMemcpyHtoDAsync_v2`) while host calls
 * are in flight unless the driver's staging buffer has room for it (`STAGED_LIMIT`): beyond, the
 * copy waits for the GPU. It is an enqueue otherwise (counted by the driver call's own gate pass);
 * `pageableCopied` counts its bytes once it was made. Called only when `gate.calls !== 0`.
 * @throws HostCallbackError `ERR_HOST_CALL_PENDING`.
 */
export function admitPageableCopy(op: string, driverCall: string, bytes: number): void {
  const cost = Math.max(bytes, STAGED_MIN);
  if (gate.staged + cost > STAGED_LIMIT) {
    const advice = gate.running > 0 ? INSIDE_ADVICE : WAIT_ADVICE;
    throw new HostCallbackError(
      op,
      'ERR_HOST_CALL_PENDING',
      `${inFlight()}, and ${driverCall} of ${bytes} bytes from pageable memory would pass the ${STAGED_LIMIT} bytes the ` +
        `driver can stage without waiting for the GPU (${gate.staged} staged since the host call was submitted): it would ` +
        `never return (a deadlock). Copy from a PinnedHostBuffer, or ${advice.charAt(0).toLowerCase()}${advice.slice(1)}`,
      [],
      { driverCall, staged: gate.staged, stagedLimit: STAGED_LIMIT },
    );
  }
}

/** A copy of `bytes` bytes from pageable memory was made while host calls are in flight. */
export function pageableCopied(bytes: number): void {
  if (gate.calls !== 0) gate.staged += Math.max(bytes, STAGED_MIN);
}
