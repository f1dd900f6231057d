import { requireOneOf } from '../../util/validate.js';
import { CU_STREAM_CAPTURE_MODE } from '../../driver/layouts.js';

/**
 * Which calls may invalidate a capture (`CUstreamCaptureMode`):
 * - `global`: an unsafe call (a synchronous copy, `cuMemAlloc`, a sync of the capturing stream)
 *   from any thread while this capture is active invalidates it.
 * - `threadLocal` (the default of every capture entry point): only unsafe calls from the capturing
 *   thread count.
 * - `relaxed`: unsafe calls are not tracked (calls that truly conflict still fail).
 */
export const CaptureMode = {
  Global: 'global',
  ThreadLocal: 'threadLocal',
  Relaxed: 'relaxed',
} as const;

/** One of `'global'`, `'threadLocal'`, `'relaxed'`. */
export type CaptureMode = (typeof CaptureMode)[keyof typeof CaptureMode];

const MODES = [CaptureMode.Global, CaptureMode.ThreadLocal, CaptureMode.Relaxed] as const;

/**
 * The mode of a capture that names none, for every entry point (`StreamGraphCapture.begin`, the
 * guard, `captureGraph`, `makeGraphed`): the guard seed's default. In a Node process the JS thread is
 * the one that captures, and other threads are the runtime's own: koffi's workers running
 * `synchronizeAsync()` waits, NCCL's proxy threads. Under `'global'` such a wait for another stream,
 * made while a capture is active, would invalidate the capture; under `'threadLocal'` it cannot,
 * and every unsafe call from the JS thread is still caught.
 */
export const DEFAULT_CAPTURE_MODE: CaptureMode = CaptureMode.ThreadLocal;

/** Checks a mode. @throws InvalidArgumentError naming `op`. */
export function requireCaptureMode(op: string, mode: unknown): CaptureMode {
  return requireOneOf(op, 'mode', mode, MODES);
}

/** The driver's `CUstreamCaptureMode` value. */
export function driverCaptureMode(mode: CaptureMode): number {
  return mode === 'global'
    ? CU_STREAM_CAPTURE_MODE.GLOBAL
    : mode === 'threadLocal'
      ? CU_STREAM_CAPTURE_MODE.THREAD_LOCAL
      : CU_STREAM_CAPTURE_MODE.RELAXED;
}
