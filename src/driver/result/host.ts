/**
 * What the driver reaches in the JS process: JS functions it calls (host functions, through one
 * koffi callback) and host memory it reads and writes (argument blocks that never move, the
 * addresses of pinned views). The object layer uses these, never koffi itself.
 */
import { koffi, registerHostFunction } from '../sys.js';

/**
 * Registers `fn` as a C `CUhostFn` and returns its function pointer (for `cuLaunchHostFunc` and
 * host nodes). The driver calls it on one of its threads; koffi runs it on the JS thread, blocking
 * the driver's thread until it has run. Never unregistered: register one trampoline per process.
 */
export function hostCallback(fn: (userData: bigint | null) => void): bigint {
  return registerHostFunction(fn);
}

/** The address of the first byte of `view` (its memory must not move: a `SharedArrayBuffer`'s does not). */
export function hostAddress(view: ArrayBufferView): bigint {
  return koffi().address(view) as bigint;
}

/**
 * The whole 8-byte words of `view` as a `BigUint64Array` over the same memory (`view` starts
 * 8-byte aligned, as the argument blocks and the driver's structs do): a store into it costs about
 * 2 ns, a `DataView.setBigUint64` about 17 on Node 20. cudagraph's platforms (x64, arm64) are
 * little-endian, so both write the same bytes.
 */
export function u64Words(view: ArrayBufferView): BigUint64Array {
  return new BigUint64Array(view.buffer, view.byteOffset, view.byteLength >>> 3);
}

/** A block of `bytes` bytes of C memory that never moves, with a view of it; free it with `freeHostBlock`. */
export function allocHostBlock(bytes: number): { address: bigint; view: DataView } {
  const k = koffi();
  const address = k.alloc('uint8_t', bytes) as bigint;
  return { address, view: new DataView(k.view(address, bytes)) };
}

/** A copy of the `bytes` bytes of C memory at `address` (memory the driver owns and says is readable). */
export function readHostBytes(address: bigint, bytes: number): Uint8Array {
  return bytes === 0 ? new Uint8Array(0) : new Uint8Array(koffi().view(address, bytes)).slice();
}

/**
 * The values a `void *kernelParams[]` array points at: one copy per parameter, `sizes[i]` bytes
 * of the value at `kernelParams[i]` (the array of a kernel node the driver returned, or one of
 * cudagraph's argument blocks).
 */
export function readKernelArgs(kernelParams: bigint, sizes: readonly number[]): Uint8Array[] {
  const n = sizes.length;
  if (n === 0) return [];
  const pointers = new DataView(readHostBytes(kernelParams, 8 * n).buffer);
  return sizes.map((size, i) => readHostBytes(pointers.getBigUint64(8 * i, true), size));
}

/** Frees a block from `allocHostBlock`. */
export function freeHostBlock(address: bigint): void {
  koffi().free(address);
}
