/**
 * The capture status of a stream, shared by the CPU model (`StreamCapture.status`) and the
 * driver (`StreamGraphCapture.captureStatus`, `GraphCaptureGuard.status`).
 *
 * - `None`: the stream is not capturing.
 * - `Active`: work submitted to the stream is being recorded.
 * - `Invalidated`: an illegal operation broke the capture; it must still be ended, and ending it fails.
 */
export const CaptureStatus = {
  None: 'None',
  Active: 'Active',
  Invalidated: 'Invalidated',
} as const;

/** One of `CaptureStatus.None`, `CaptureStatus.Active`, `CaptureStatus.Invalidated`. */
export type CaptureStatus = (typeof CaptureStatus)[keyof typeof CaptureStatus];
