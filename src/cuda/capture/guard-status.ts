import { CaptureStatus } from '../../model/capture-status.js';
import type { CaptureFailure } from './stream-graph-capture.js';

/** What `GraphCaptureGuard.statusReport()` says. */
export interface GuardStatusReport {
  /** The driver's status of the guard's stream (`cuStreamIsCapturing`). */
  readonly status: CaptureStatus;
  /** True when the status is what the guard expects: `Active` while it captures, `None` once it has ended. */
  readonly expected: boolean;
  /** Why the stream is in this state, in words; for an unexpected status, the likely cause and what to do. */
  readonly explanation: string;
  /** The first illegal call made through cudagraph during the capture (with its JS stack), or null. */
  readonly firstFailure: CaptureFailure | null;
}

/** The usual causes of an invalidated capture, for messages. */
export const INVALIDATION_CAUSES =
  'the usual causes are a forbidden allocation (cuMemAlloc: DeviceBuffer.alloc; use DeviceBuffer.allocAsync ' +
  'or allocate before the capture), a synchronization (stream, event or device synchronize, a synchronous copy ' +
  'that waits for the capturing stream), or a host copy into memory that is not pinned; made by another ' +
  'library, on the legacy NULL stream, or from another thread while a global-mode capture was active';

/**
 * Explains a stream's capture status as seen by a guard (pure: no driver call).
 * @param capturing whether the guard still owns an active capture (not finished, not disposed).
 */
export function explainCaptureStatus(
  status: CaptureStatus,
  capturing: boolean,
  firstFailure: CaptureFailure | null,
): GuardStatusReport {
  const first =
    firstFailure !== null
      ? `The first illegal call made through cudagraph was ${firstFailure.operation}, which failed with ` +
        `${firstFailure.error.errorName} (${firstFailure.error.code}). Its stack:\n${firstFailure.error.stack ?? '(no stack)'}`
      : null;
  if (capturing) {
    if (status === CaptureStatus.Active) {
      return { status, expected: true, explanation: 'The stream is capturing: work submitted to it is recorded, not run.', firstFailure };
    }
    if (status === CaptureStatus.Invalidated) {
      const why = first ?? `No call made through cudagraph failed; ${INVALIDATION_CAUSES}.`;
      return {
        status,
        expected: false,
        explanation:
          `The capture was invalidated by an operation that is illegal while a stream captures. ${why}\n` +
          'finish() will throw CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901); leaving the scope (dispose) discards the capture and the stream is usable again.',
        firstFailure,
      };
    }
    return {
      status,
      expected: false,
      explanation:
        'The stream is no longer capturing although this guard has not ended its capture: something ended it ' +
        'behind the guard (cuStreamEndCapture called outside cudagraph, e.g. by another library on the same stream). ' +
        `The recorded work is lost.${first !== null ? `\n${first}` : ''}`,
      firstFailure,
    };
  }
  if (status === CaptureStatus.None) {
    return { status, expected: true, explanation: "The guard's capture has ended and the stream runs work eagerly.", firstFailure };
  }
  return {
    status,
    expected: false,
    explanation:
      status === CaptureStatus.Active
        ? "The guard's capture has ended, but the stream is capturing again: another capture began on it."
        : "The guard's capture has ended, but another capture on the stream was invalidated and must still be ended.",
    firstFailure,
  };
}
