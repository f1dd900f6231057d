/**
 * What the object layer tells an active capture, and the registry of active captures. The
 * capture record (`capture/stream-graph-capture.ts`) implements `CaptureSink`; streams hold the sink they record into
 * (`stream[CAPTURE]`), so a launch, copy or memset on a capturing stream registers the buffers and
 * modules it touches and the graph keeps them alive.
 */
import type { CudaError } from '../../errors/cuda-error.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import { setCaptureErrorListener } from '../../driver/result/index.js';
import { deferCleanups, resumeCleanups, type Lifetime } from './lifetime.js';

/** An active capture, as the object layer sees it. */
export interface CaptureSink {
  /** Keeps `life` alive as long as the graph this capture produces (idempotent per resource). */
  retain(life: Lifetime): void;
  /** A stream-capture error (900–908) occurred while this capture was active; the first is kept. */
  noteError(error: CudaError): void;
  /** `stream` joined this capture by waiting on an event recorded in it. */
  join(stream: object): void;
  /**
   * Serves `DeviceBuffer.allocAsync` on a stream of this capture: a capture bound to a
   * `CapturePool` returns memory from the pool (not a graph allocation node); null lets the
   * stream record an allocation node as usual.
   */
  allocate(op: string, stream: object, byteLength: number): DeviceBuffer | null;
  /** `life` is a graph allocation this capture recorded: released with the capture if it fails. */
  allocated(life: Lifetime): void;
}

const active = new Set<CaptureSink>();

/** Tells every active capture about a stream-capture error the binding made (900–908). */
function noteCaptureError(error: CudaError): void {
  for (const sink of active) sink.noteError(error);
}

let listening = false;

/**
 * Registers a capture that has begun: errors are reported to it and frees are deferred. The
 * binding's listener is installed here, by the first capture, not as a side effect of loading
 * this module.
 */
export function captureStarted(sink: CaptureSink): void {
  if (active.has(sink)) return;
  if (!listening) {
    setCaptureErrorListener(noteCaptureError);
    listening = true;
  }
  active.add(sink);
  deferCleanups();
}

/** Unregisters a capture that has ended (idempotent); the last one runs the deferred frees. */
export function captureEnded(sink: CaptureSink): void {
  if (!active.delete(sink)) return;
  resumeCleanups();
}

/** Number of captures active now. */
export function activeCaptureCount(): number {
  return active.size;
}
