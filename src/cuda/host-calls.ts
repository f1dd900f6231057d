/**
 * Book-keeping of JS host functions run by the GPU (`HostFunction`, host nodes of graphs): how
 * many calls are submitted but not yet run, and the errors they threw.
 *
 * Why: the driver runs a host function on one of its threads; koffi hands the call to the JS
 * thread and blocks that driver thread until the JS event loop has run it. A synchronous wait on
 * the JS thread (`cuStreamSynchronize`, …) for work that includes a pending host call therefore
 * never returns (measured on the device, docs/driver.md). The synchronous waits ask
 * `assertNoPendingHostCalls` first and refuse with a clear error instead of hanging; the awaitable
 * waits are always safe. A host function cannot report failure to the driver, so what it throws
 * is kept here and thrown by the next checked call (`Lifetime.assertAlive`) or the
 * `synchronizeAsync()` promise.
 *
 * The count is global, not per stream: a host call pending on one stream can gate another stream
 * through events, so only "no JS host call pending anywhere" makes a synchronous wait safe.
 */
import { HostCallbackError } from '../errors/host-callback-error.js';
import { invalidateChecks } from './check-epoch.js';

/** State read on hot paths: plain fields, no calls. */
export const hostCallState = {
  /** Host calls submitted (eager launches, graph launches × host nodes) and not yet run. */
  pending: 0,
  /** True while errors thrown by host functions wait to be reported. */
  errorPending: false,
};

const kept: Array<{ label: string; error: unknown }> = [];

/** `n` JS host calls were submitted to the GPU. */
export function hostCallsSubmitted(n: number): void {
  hostCallState.pending += n;
}

/** One JS host call has started running on the JS thread. */
export function hostCallStarted(): void {
  // Clamped: a graph launched behind cudagraph's back runs host calls nobody counted.
  if (hostCallState.pending > 0) hostCallState.pending--;
}

/** Keeps `error`, thrown by host function `label`, for the next checked call. */
export function keepHostCallbackError(label: string, error: unknown): void {
  kept.push({ label, error });
  hostCallState.errorPending = true;
  invalidateChecks();
}

/**
 * Refuses a synchronous wait while JS host calls are pending.
 * @throws HostCallbackError `ERR_HOST_CALL_PENDING`.
 */
export function assertNoPendingHostCalls(op: string): void {
  const n = hostCallState.pending;
  if (n === 0) return;
  throw new HostCallbackError(
    op,
    'ERR_HOST_CALL_PENDING',
    `${n} JS host function call${n === 1 ? ' is' : 's are'} still pending on the GPU. A synchronous wait would ` +
      'deadlock: the driver thread running a host function waits for the JS thread, which would be blocked ' +
      'waiting for the GPU. Use `await stream.synchronizeAsync()` (or `event.synchronizeAsync()`) instead.',
  );
}

/**
 * Throws, once, the errors host functions threw since the last report.
 * @throws HostCallbackError `ERR_HOST_CALLBACK_FAILED` whose `cause` is the first error.
 */
export function surfaceHostCallbackErrors(op: string): void {
  if (!hostCallState.errorPending) return;
  const all = kept.splice(0);
  hostCallState.errorPending = false;
  const first = all[0]!;
  const what = first.error instanceof Error ? first.error.message : String(first.error);
  const more = all.length > 1 ? ` (and ${all.length - 1} more)` : '';
  throw new HostCallbackError(
    op,
    'ERR_HOST_CALLBACK_FAILED',
    `the host function '${first.label}' threw while the GPU ran it${more}: ${what}. It is reported here because ` +
      'a host function cannot return an error to the driver; the GPU work after it ran regardless.',
    all.map((k) => k.error),
  );
}
