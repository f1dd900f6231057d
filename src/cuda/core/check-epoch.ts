/**
 * The check epoch: a counter bumped by every event that can make a check passed earlier fail now
 * (a resource disposed or collected, a cleanup or host-function error kept for the next call).
 * The per-call hot paths (`PreparedLaunch.launch`, `GraphExec.launch`) run their full checks once,
 * remember the epoch and the stream they passed with, and skip the checks while both are unchanged:
 * two compares instead of a dozen property loads and a loop a call (bench:host measures it).
 * A call whose checks would fail therefore always takes the full path and fails as before.
 *
 * The counter is process-wide (driver/process-state.ts), shared by every loaded copy of cudagraph.
 */
import { processState } from '../../driver/result/index.js';

/** The epoch. `value` changes whenever an earlier check may no longer hold. */
export const checkEpoch: { value: number } = processState.epoch;

/** An earlier check may no longer hold: the next hot call runs its full checks. */
export function invalidateChecks(): void {
  checkEpoch.value++;
}
