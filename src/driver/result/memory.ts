/** Device and host memory: allocation, memset and copies (`cuMem*`). */
import { driverSymbol, type DriverApi, type HostPtr } from '../sys.js';
import { check, cudaError } from './check.js';
import { u64, i32 } from './scratch.js';
import { gate, passGate, admitPageableCopy, pageableCopied } from '../host-gate.js';

/** Allocates device memory (`cuMemAlloc_v2`). */
export function memAlloc(op: string, bytes: number): bigint {
  check(driverSymbol(op, 'cuMemAlloc_v2')(u64, bytes), op, 'cuMemAlloc_v2');
  return u64[0]!;
}

/** Frees device memory (`cuMemFree_v2`); returns the CUresult for the cleanup path. */
export function memFree(op: string, ptr: bigint): number {
  return driverSymbol(op, 'cuMemFree_v2')(ptr);
}

/** Allocates stream-ordered device memory (`cuMemAllocAsync`). */
export function memAllocAsync(op: string, bytes: number, stream: bigint): bigint {
  check(driverSymbol(op, 'cuMemAllocAsync')(u64, bytes, stream), op, 'cuMemAllocAsync');
  return u64[0]!;
}

/** Frees stream-ordered (`cuMemFreeAsync`). */
export function memFreeAsync(op: string, ptr: bigint, stream: bigint): number {
  return driverSymbol(op, 'cuMemFreeAsync')(ptr, stream);
}

let d8: DriverApi['cuMemsetD8Async'] | null = null;
let d16: DriverApi['cuMemsetD16Async'] | null = null;
let d32: DriverApi['cuMemsetD32Async'] | null = null;

/** Sets `count` elements of `elementSize` bytes at `dst` to `value` (`cuMemsetD8/D16/D32Async`). */
export function memsetAsync(
  op: string,
  elementSize: 1 | 2 | 4,
  dst: bigint,
  value: number,
  count: number,
  stream: bigint,
): void {
  // The functions are cached after the first call, so this call passes the host-call gate itself.
  if (gate.calls !== 0) passGate(op, 'cuMemsetD8Async', 'queue');
  if (elementSize === 1) {
    const rc = (d8 ??= driverSymbol(op, 'cuMemsetD8Async'))(dst, value, count, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuMemsetD8Async');
  } else if (elementSize === 2) {
    const rc = (d16 ??= driverSymbol(op, 'cuMemsetD16Async'))(dst, value, count, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuMemsetD16Async');
  } else {
    const rc = (d32 ??= driverSymbol(op, 'cuMemsetD32Async'))(dst, value, count, stream);
    if (rc !== 0) throw cudaError(rc, op, 'cuMemsetD32Async');
  }
}

/**
 * Host → device, ordered on `stream` (`cuMemcpyHtoDAsync_v2`). From pageable memory (`pinned`
 * false) the driver stages the bytes and waits for the GPU once its staging memory is full: the
 * host-call gate lets such copies through only while they fit (`passPageableCopy`).
 */
export function copyHtoDAsync(op: string, dst: bigint, src: HostPtr, bytes: number, stream: bigint, pinned: boolean): void {
  if (!pinned && gate.calls !== 0) admitPageableCopy(op, 'cuMemcpyHtoDAsync_v2 (from pageable memory)', bytes);
  check(driverSymbol(op, 'cuMemcpyHtoDAsync_v2')(dst, src, bytes, stream), op, 'cuMemcpyHtoDAsync_v2');
  if (!pinned) pageableCopied(bytes);
}

/**
 * Device → host, ordered on `stream` (`cuMemcpyDtoHAsync_v2`). Into pageable memory (`pinned`
 * false) the driver returns only once the copy is done, a wait for the GPU: the call passes the
 * host-call gate as such.
 */
export function copyDtoHAsync(op: string, dst: HostPtr, src: bigint, bytes: number, stream: bigint, pinned: boolean): void {
  if (!pinned && gate.calls !== 0) passGate(op, 'cuMemcpyDtoHAsync_v2 (into pageable memory)', 'gpu');
  check(driverSymbol(op, 'cuMemcpyDtoHAsync_v2')(dst, src, bytes, stream), op, 'cuMemcpyDtoHAsync_v2');
}

/** Device → device, ordered on `stream` (`cuMemcpyDtoDAsync_v2`). */
export function copyDtoDAsync(op: string, dst: bigint, src: bigint, bytes: number, stream: bigint): void {
  check(driverSymbol(op, 'cuMemcpyDtoDAsync_v2')(dst, src, bytes, stream), op, 'cuMemcpyDtoDAsync_v2');
}

/** Host → device, synchronous, on the legacy stream (`cuMemcpyHtoD_v2`). */
export function copyHtoD(op: string, dst: bigint, src: HostPtr, bytes: number): void {
  check(driverSymbol(op, 'cuMemcpyHtoD_v2')(dst, src, bytes), op, 'cuMemcpyHtoD_v2');
}

/** Device → host, synchronous, on the legacy stream (`cuMemcpyDtoH_v2`). */
export function copyDtoH(op: string, dst: HostPtr, src: bigint, bytes: number): void {
  check(driverSymbol(op, 'cuMemcpyDtoH_v2')(dst, src, bytes), op, 'cuMemcpyDtoH_v2');
}

/** Page-locks host memory the caller owns (`cuMemHostRegister_v2`). */
export function hostRegister(op: string, ptr: bigint, bytes: number, flags: number): void {
  check(driverSymbol(op, 'cuMemHostRegister_v2')(ptr, bytes, flags), op, 'cuMemHostRegister_v2');
}

/** The address kernels use for registered, device-mapped host memory at `ptr` (`cuMemHostGetDevicePointer_v2`). */
export function hostDevicePointer(op: string, ptr: bigint): bigint {
  check(driverSymbol(op, 'cuMemHostGetDevicePointer_v2')(u64, ptr, 0), op, 'cuMemHostGetDevicePointer_v2');
  return u64[0]!;
}

/** Undoes `hostRegister` (`cuMemHostUnregister`); returns the CUresult for the cleanup path. */
export function hostUnregister(op: string, ptr: bigint): number {
  return driverSymbol(op, 'cuMemHostUnregister')(ptr);
}

/** The `CUmemorytype` of an address (`cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)`), or 0 if unknown. */
export function pointerMemoryType(op: string, ptr: bigint): number {
  i32[0] = 0;
  const rc = driverSymbol(op, 'cuPointerGetAttribute')(i32, 2, ptr);
  return rc === 0 ? i32[0]! : 0;
}
