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

/** A block of `bytes` bytes of C memory that never moves, with a view of it; free it with `freeHostBlock`. */
export function allocHostBlock(bytes: number): { address: bigint; view: DataView } {
  const k = koffi();
  const address = k.alloc('uint8_t', bytes) as bigint;
  return { address, view: new DataView(k.view(address, bytes)) };
}

/** Frees a block from `allocHostBlock`. */
export function freeHostBlock(address: bigint): void {
  koffi().free(address);
}
