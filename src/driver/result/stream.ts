/** Streams (`cuStream*`). */
import { driverSymbol, driverSymbolAsync } from '../sys.js';
import { check, cudaError } from './check.js';
import { u64, takeHandle } from './scratch.js';

const CUDA_ERROR_NOT_READY = 600;
const CUDA_ERROR_INVALID_CONTEXT = 201;

/** Creates a stream (`cuStreamCreateWithPriority`). */
export function streamCreate(op: string, flags: number, priority: number): bigint {
  check(driverSymbol(op, 'cuStreamCreateWithPriority')(u64, flags, priority), op, 'cuStreamCreateWithPriority');
  return takeHandle();
}

/** Destroys a stream (`cuStreamDestroy_v2`); returns the CUresult for the cleanup path to keep. */
export function streamDestroy(op: string, stream: bigint): number {
  return driverSymbol(op, 'cuStreamDestroy_v2')(stream);
}

/** Blocks the calling thread until the stream's work is done (`cuStreamSynchronize`). */
export function streamSynchronize(op: string, stream: bigint): void {
  check(driverSymbol(op, 'cuStreamSynchronize')(stream), op, 'cuStreamSynchronize');
}

/** True when all the stream's work is done, false while some is pending (`cuStreamQuery`). */
export function streamQuery(op: string, stream: bigint): boolean {
  const rc = driverSymbol(op, 'cuStreamQuery')(stream);
  if (rc === 0) return true;
  if (rc === CUDA_ERROR_NOT_READY) return false;
  throw cudaError(rc, op, 'cuStreamQuery');
}

/**
 * Runs a blocking wait (`cuStreamSynchronize` / `cuEventSynchronize`) on a koffi worker thread and
 * resolves when it returns, so the event loop keeps running (the waits' path without the addon,
 * `wait.ts`). A driver that refuses the call there
 * (no current context on that thread) is polled with `query` from the event loop instead.
 */
export function waitOnWorker(
  op: string,
  call: 'cuStreamSynchronize' | 'cuEventSynchronize',
  handle: bigint,
  query: () => boolean,
): Promise<void> {
  const wait = driverSymbolAsync(op, call);
  return new Promise<void>((resolve, reject) => {
    wait(handle, (err: unknown, rc: number) => {
      if (err) reject(err);
      else if (rc === 0) resolve();
      else if (rc === CUDA_ERROR_INVALID_CONTEXT) pollUntilDone(query, resolve, reject);
      else reject(cudaError(rc, op, call));
    });
  });
}

/** Polls `done` from the event loop: at once, then with back-off up to 1 ms. */
export function pollUntilDone(done: () => boolean, resolve: () => void, reject: (e: unknown) => void, delay = 0): void {
  try {
    if (done()) {
      resolve();
      return;
    }
  } catch (e) {
    reject(e);
    return;
  }
  setTimeout(() => pollUntilDone(done, resolve, reject, Math.min(1, delay + 0.1)), delay);
}

/** Makes future work on `stream` wait for `event`'s last record (`cuStreamWaitEvent`). */
export function streamWaitEvent(op: string, stream: bigint, event: bigint, flags = 0): void {
  check(driverSymbol(op, 'cuStreamWaitEvent')(stream, event, flags), op, 'cuStreamWaitEvent');
}
