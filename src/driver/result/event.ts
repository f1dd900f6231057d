/** Events (`cuEvent*`). */
import { driverSymbol } from '../sys.js';
import { check, cudaError } from './check.js';
import { u64, f32, takeHandle } from './scratch.js';

const CUDA_ERROR_NOT_READY = 600;

/** Creates an event (`cuEventCreate`). */
export function eventCreate(op: string, flags: number): bigint {
  check(driverSymbol(op, 'cuEventCreate')(u64, flags), op, 'cuEventCreate');
  return takeHandle();
}

/** Destroys an event (`cuEventDestroy_v2`); returns the CUresult for the cleanup path. */
export function eventDestroy(op: string, event: bigint): number {
  return driverSymbol(op, 'cuEventDestroy_v2')(event);
}

/** Records the event at the current end of `stream`'s work (`cuEventRecord`). */
export function eventRecord(op: string, event: bigint, stream: bigint): void {
  check(driverSymbol(op, 'cuEventRecord')(event, stream), op, 'cuEventRecord');
}

/** Records the event with `flags` (`cuEventRecordWithFlags`; `CU_EVENT_RECORD_EXTERNAL` under capture makes an event record node). */
export function eventRecordWithFlags(op: string, event: bigint, stream: bigint, flags: number): void {
  check(driverSymbol(op, 'cuEventRecordWithFlags')(event, stream, flags), op, 'cuEventRecordWithFlags');
}

/** True when the work before the event's last record is done (`cuEventQuery`). */
export function eventQuery(op: string, event: bigint): boolean {
  const rc = driverSymbol(op, 'cuEventQuery')(event);
  if (rc === 0) return true;
  if (rc === CUDA_ERROR_NOT_READY) return false;
  throw cudaError(rc, op, 'cuEventQuery');
}

/** Blocks until the event completes (`cuEventSynchronize`). */
export function eventSynchronize(op: string, event: bigint): void {
  check(driverSymbol(op, 'cuEventSynchronize')(event), op, 'cuEventSynchronize');
}

/** Milliseconds between two recorded events (`cuEventElapsedTime_v2`). */
export function eventElapsedTime(op: string, start: bigint, end: bigint): number {
  check(driverSymbol(op, 'cuEventElapsedTime_v2')(f32, start, end), op, 'cuEventElapsedTime_v2');
  return f32[0]!;
}
