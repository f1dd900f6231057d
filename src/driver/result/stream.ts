/** Streams (`cuStream*`). */
import { driverSymbol } from '../sys.js';
import { check, cudaError } from './check.js';
import { u64, takeHandle } from './scratch.js';

const CUDA_ERROR_NOT_READY = 600;

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

/** Makes future work on `stream` wait for `event`'s last record (`cuStreamWaitEvent`). */
export function streamWaitEvent(op: string, stream: bigint, event: bigint, flags = 0): void {
  check(driverSymbol(op, 'cuStreamWaitEvent')(stream, event, flags), op, 'cuStreamWaitEvent');
}
