/**
 * Errors thrown by JS host functions the GPU ran (`HostFunction`, host nodes of graphs). A host
 * function cannot report failure to the driver, so what it throws is kept here and thrown by the
 * next checked call (`Lifetime.assertAlive`) or the `synchronizeAsync()` promise.
 *
 * How many host calls are in flight, and which driver calls must not be made meanwhile, is the
 * host-call gate's business (driver/host-gate.ts), shared by every copy of cudagraph; the errors
 * are each copy's own (they belong to that copy's host functions).
 */
import { HostCallbackError } from '../../errors/host-callback-error.js';
import { invalidateChecks } from '../core/check-epoch.js';

/** State read on hot paths: plain fields, no calls. */
export const hostCallState = {
  /** True while errors thrown by host functions wait to be reported. */
  errorPending: false,
};

const kept: Array<{ label: string; error: unknown }> = [];

/** Keeps `error`, thrown by host function `label`, for the next checked call. */
export function keepHostCallbackError(label: string, error: unknown): void {
  kept.push({ label, error });
  hostCallState.errorPending = true;
  invalidateChecks();
}

/**
 * The error `surfaceHostCallbackErrors` would throw (consumed), or null when none is kept: for
 * calls that must finish what they started before they report it (`StreamGraphCapture.end`).
 */
export function takeHostCallbackError(op: string): HostCallbackError | null {
  if (!hostCallState.errorPending) return null;
  const all = kept.splice(0);
  hostCallState.errorPending = false;
  const first = all[0]!;
  const what = first.error instanceof Error ? first.error.message : String(first.error);
  const more = all.length > 1 ? ` (and ${all.length - 1} more)` : '';
  return new HostCallbackError(
    op,
    'ERR_HOST_CALLBACK_FAILED',
    `the host function '${first.label}' threw while the GPU ran it${more}: ${what}. It is reported here because ` +
      'a host function cannot return an error to the driver; the GPU work after it ran regardless.',
    all.map((k) => k.error),
  );
}

/**
 * Throws, once, the errors host functions threw since the last report.
 * @throws HostCallbackError `ERR_HOST_CALLBACK_FAILED` whose `cause` is the first error.
 */
export function surfaceHostCallbackErrors(op: string): void {
  const error = takeHostCallbackError(op);
  if (error !== null) throw error;
}
