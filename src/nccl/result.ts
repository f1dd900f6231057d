/**
 * Checked NCCL calls: each takes the public operation name first (it starts the message of any
 * error), turns out-parameters into return values, and throws `NcclError` with NCCL's own texts
 * (`ncclGetErrorString`, `ncclGetLastError`) on failure. Destroy/abort return the result instead,
 * for the cleanup path that must not throw.
 */
import { NCCL_UNIQUE_ID_BYTES } from './codes.js';
import { NcclError } from './nccl-error.js';
import { ncclSymbol, type NcclHandle } from './sys.js';

const i32 = new Int32Array(1);
const u64 = new BigUint64Array(1);

/** NCCL's description of `result`, or undefined when it cannot say. */
function describeResult(result: number): string | undefined {
  try {
    return ncclSymbol('ncclGetErrorString', 'ncclGetErrorString')(result) ?? undefined;
  } catch {
    return undefined;
  }
}

/** NCCL's last-error text for `comm` (or the thread's last error for null), '' when none. */
function lastError(comm: NcclHandle): string {
  try {
    return ncclSymbol('ncclGetLastError', 'ncclGetLastError')(comm) ?? '';
  } catch {
    return ''; // before NCCL 2.13 there is no ncclGetLastError
  }
}

/** The `NcclError` for a failed call, with NCCL's own texts. */
export function ncclError(result: number, operation: string, ncclCall: string, comm: NcclHandle = null, detail?: string): NcclError {
  const description = describeResult(result);
  return new NcclError({
    result,
    operation,
    ncclCall,
    lastError: lastError(comm),
    ...(description !== undefined ? { description } : {}),
    ...(detail !== undefined ? { detail } : {}),
  });
}

/** Throws the `NcclError` for `result` unless it is `ncclSuccess`. */
export function checkNccl(result: number, operation: string, ncclCall: string, comm: NcclHandle = null): void {
  if (result !== 0) throw ncclError(result, operation, ncclCall, comm);
}

/** The NCCL version code (`ncclGetVersion`), e.g. 22703 for 2.27.3. */
export function getVersion(op: string): number {
  i32[0] = 0;
  checkNccl(ncclSymbol(op, 'ncclGetVersion')(i32), op, 'ncclGetVersion');
  return i32[0]!;
}

/** A new unique id (`ncclGetUniqueId`): 128 bytes, to be given to every rank's `ncclCommInitRank`. */
export function getUniqueId(op: string): Uint8Array {
  const id = new Uint8Array(NCCL_UNIQUE_ID_BYTES);
  checkNccl(ncclSymbol(op, 'ncclGetUniqueId')(id), op, 'ncclGetUniqueId');
  return id;
}

/** Creates this rank's communicator (`ncclCommInitRank`; blocks until every rank has joined, unless in a group). */
export function commInitRank(op: string, nranks: number, id: Uint8Array, rank: number): bigint {
  u64[0] = 0n;
  checkNccl(ncclSymbol(op, 'ncclCommInitRank')(u64, nranks, { internal: id }, rank), op, 'ncclCommInitRank');
  return u64[0]!;
}

/** Creates one communicator per device of `devices`, in one process (`ncclCommInitAll`). */
export function commInitAll(op: string, devices: readonly number[]): bigint[] {
  const comms = new BigUint64Array(devices.length);
  const list = Int32Array.from(devices);
  checkNccl(ncclSymbol(op, 'ncclCommInitAll')(comms, devices.length, list), op, 'ncclCommInitAll');
  return Array.from(comms);
}

/** Frees a communicator (`ncclCommDestroy`); returns the result for the cleanup path to keep. */
export function commDestroy(op: string, comm: bigint): number {
  return ncclSymbol(op, 'ncclCommDestroy')(comm);
}

/** Aborts a communicator's pending work and frees it (`ncclCommAbort`); returns the result. */
export function commAbort(op: string, comm: bigint): number {
  return ncclSymbol(op, 'ncclCommAbort')(comm);
}

/** The communicator's asynchronous error state (`ncclCommGetAsyncError`): 0, 7 (in progress) or an error. */
export function commAsyncError(op: string, comm: bigint): number {
  i32[0] = 0;
  checkNccl(ncclSymbol(op, 'ncclCommGetAsyncError')(comm, i32), op, 'ncclCommGetAsyncError', comm);
  return i32[0]!;
}

/** One integer query of a communicator (`ncclCommCount`, `ncclCommCuDevice`, `ncclCommUserRank`). */
export function commQuery(op: string, name: 'ncclCommCount' | 'ncclCommCuDevice' | 'ncclCommUserRank', comm: bigint): number {
  i32[0] = -1;
  checkNccl(ncclSymbol(op, name)(comm, i32), op, name, comm);
  return i32[0]!;
}

/** `ncclGroupStart`. */
export function groupStart(op: string): void {
  checkNccl(ncclSymbol(op, 'ncclGroupStart')(), op, 'ncclGroupStart');
}

/** `ncclGroupEnd`: launches every call made since the matching start. Returns the result (the caller decides). */
export function groupEnd(op: string): number {
  return ncclSymbol(op, 'ncclGroupEnd')();
}

/** The arguments of one collective, already checked and encoded. */
export interface CollectiveCall {
  readonly kind: 'allReduce' | 'broadcast' | 'reduce' | 'allGather' | 'reduceScatter';
  readonly send: bigint;
  readonly recv: bigint;
  readonly count: number;
  readonly datatype: number;
  readonly op: number;
  readonly root: number;
  readonly comm: bigint;
  readonly stream: bigint;
}

/** Enqueues one collective on its stream (`ncclAllReduce`, `ncclBroadcast`, …). */
export function collective(op: string, c: CollectiveCall): void {
  let rc: number;
  let call: string;
  switch (c.kind) {
    case 'allReduce':
      call = 'ncclAllReduce';
      rc = ncclSymbol(op, 'ncclAllReduce')(c.send, c.recv, c.count, c.datatype, c.op, c.comm, c.stream);
      break;
    case 'broadcast':
      call = 'ncclBroadcast';
      rc = ncclSymbol(op, 'ncclBroadcast')(c.send, c.recv, c.count, c.datatype, c.root, c.comm, c.stream);
      break;
    case 'reduce':
      call = 'ncclReduce';
      rc = ncclSymbol(op, 'ncclReduce')(c.send, c.recv, c.count, c.datatype, c.op, c.root, c.comm, c.stream);
      break;
    case 'allGather':
      call = 'ncclAllGather';
      rc = ncclSymbol(op, 'ncclAllGather')(c.send, c.recv, c.count, c.datatype, c.comm, c.stream);
      break;
    case 'reduceScatter':
      call = 'ncclReduceScatter';
      rc = ncclSymbol(op, 'ncclReduceScatter')(c.send, c.recv, c.count, c.datatype, c.op, c.comm, c.stream);
      break;
  }
  checkNccl(rc, op, call, c.comm);
}
