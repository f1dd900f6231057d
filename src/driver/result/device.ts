/** Devices, primary contexts and device memory information. */
import { driverSymbol } from '../sys.js';
import { check, cudaError } from './check.js';
import { u64, u64b, i32, i32b, takeHandle } from './scratch.js';

/** Number of CUDA devices (`cuDeviceGetCount`). */
export function deviceCount(op: string): number {
  check(driverSymbol(op, 'cuDeviceGetCount')(i32), op, 'cuDeviceGetCount');
  return i32[0]!;
}

/** The `CUdevice` of an ordinal (`cuDeviceGet`). */
export function deviceGet(op: string, ordinal: number): number {
  check(driverSymbol(op, 'cuDeviceGet')(i32, ordinal), op, 'cuDeviceGet');
  return i32[0]!;
}

/** The device's name (`cuDeviceGetName`). */
export function deviceName(op: string, dev: number): string {
  const buf = new Uint8Array(256);
  check(driverSymbol(op, 'cuDeviceGetName')(buf, buf.length, dev), op, 'cuDeviceGetName');
  const end = buf.indexOf(0);
  return new TextDecoder().decode(buf.subarray(0, end < 0 ? buf.length : end));
}

/** One `CUdevice_attribute` (`cuDeviceGetAttribute`). */
export function deviceAttribute(op: string, attribute: number, dev: number): number {
  check(driverSymbol(op, 'cuDeviceGetAttribute')(i32, attribute, dev), op, 'cuDeviceGetAttribute');
  return i32[0]!;
}

/** Total device memory in bytes (`cuDeviceTotalMem_v2`). */
export function deviceTotalMem(op: string, dev: number): number {
  check(driverSymbol(op, 'cuDeviceTotalMem_v2')(u64, dev), op, 'cuDeviceTotalMem_v2');
  return Number(u64[0]!);
}

/** Retains the device's primary context (`cuDevicePrimaryCtxRetain`). */
export function primaryCtxRetain(op: string, dev: number): bigint {
  check(driverSymbol(op, 'cuDevicePrimaryCtxRetain')(u64, dev), op, 'cuDevicePrimaryCtxRetain');
  return takeHandle();
}

/** Makes `ctx` current on the calling thread (`cuCtxSetCurrent`). */
export function ctxSetCurrent(op: string, ctx: bigint | null): void {
  check(driverSymbol(op, 'cuCtxSetCurrent')(ctx), op, 'cuCtxSetCurrent');
}

/** The calling thread's current context, or 0n (`cuCtxGetCurrent`). */
export function ctxGetCurrent(op: string): bigint {
  check(driverSymbol(op, 'cuCtxGetCurrent')(u64), op, 'cuCtxGetCurrent');
  return takeHandle();
}

/** Waits for all work of the current context (`cuCtxSynchronize`). */
export function ctxSynchronize(op: string): void {
  check(driverSymbol(op, 'cuCtxSynchronize')(), op, 'cuCtxSynchronize');
}

/** The current context's stream priority range: `least` (usually 0) and `greatest` (negative). */
export function ctxStreamPriorityRange(op: string): { least: number; greatest: number } {
  check(driverSymbol(op, 'cuCtxGetStreamPriorityRange')(i32, i32b), op, 'cuCtxGetStreamPriorityRange');
  return { least: i32[0]!, greatest: i32b[0]! };
}

/** Free and total memory of the current context's device (`cuMemGetInfo_v2`). */
export function memGetInfo(op: string): { free: number; total: number } {
  const rc = driverSymbol(op, 'cuMemGetInfo_v2')(u64, u64b);
  if (rc !== 0) throw cudaError(rc, op, 'cuMemGetInfo_v2');
  return { free: Number(u64[0]!), total: Number(u64b[0]!) };
}

/** A graph-memory attribute of device `dev` in bytes (`cuDeviceGetGraphMemAttribute`, a `cuuint64_t`). */
export function graphMemAttribute(op: string, dev: number, attr: number): number {
  const out = new BigUint64Array(1);
  check(driverSymbol(op, 'cuDeviceGetGraphMemAttribute')(dev, attr, out), op, 'cuDeviceGetGraphMemAttribute');
  return Number(out[0]!);
}

/** Resets a high-water mark (`USED_HIGH` or `RESERVED_HIGH`) to zero (`cuDeviceSetGraphMemAttribute`). */
export function resetGraphMemHigh(op: string, dev: number, attr: number): void {
  const zero = new BigUint64Array(1);
  check(driverSymbol(op, 'cuDeviceSetGraphMemAttribute')(dev, attr, zero), op, 'cuDeviceSetGraphMemAttribute');
}

/** Returns graph memory no launch uses to the OS (`cuDeviceGraphMemTrim`). */
export function graphMemTrim(op: string, dev: number): void {
  check(driverSymbol(op, 'cuDeviceGraphMemTrim')(dev), op, 'cuDeviceGraphMemTrim');
}
