/**
 * The argument block `cuLaunchKernel` reads: N pointers, then N 8-byte slots, in one allocation
 * that never moves (`host.allocHostBlock`). `kernelParams[i]` points at slot i. Packing happens once per
 * `PreparedLaunch`; a launch passes the block's address and nothing is rebuilt (measured on the H200: a
 * rebuilt argument array costs about 2.5 µs a call).
 */
import { host } from '../../driver/result/index.js';
import { writeArg, type KernelArgValue } from './arg.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';

const SLOT = 8;

/** A packed argument block. */
export interface PackedArgs {
  /** Address of the pointer array (0n when there are no arguments). */
  readonly address: bigint;
  /** Writable view of the whole block. */
  readonly view: DataView;
  /** Byte offset of slot i in `view`. */
  slotOffset(i: number): number;
  /** Frees the block. */
  free(): void;
}

/** Bytes a block for `n` arguments needs. */
export function packedSize(n: number): number {
  return n * 2 * SLOT;
}

/** Lays the pointer array of `n` arguments out in the block at `address`. */
function layPointers(view: DataView, address: bigint, n: number): void {
  for (let i = 0; i < n; i++) view.setBigUint64(i * SLOT, address + BigInt(n * SLOT + i * SLOT), true);
}

/** Allocates and fills a block for `args`. */
export function packArgs(args: readonly KernelArgValue[], ptrOf: (b: DeviceBuffer) => bigint): PackedArgs {
  const n = args.length;
  if (n === 0) {
    return { address: 0n, view: new DataView(new ArrayBuffer(0)), slotOffset: () => 0, free: () => {} };
  }
  const { address, view } = host.allocHostBlock(packedSize(n));
  layPointers(view, address, n);
  args.forEach((a, i) => writeArg(view, n * SLOT + i * SLOT, a, ptrOf));
  let freed = false;
  return {
    address,
    view,
    slotOffset: (i) => n * SLOT + i * SLOT,
    free: () => {
      if (!freed) {
        freed = true;
        host.freeHostBlock(address);
      }
    },
  };
}

/**
 * One reusable block for one-off launches (`kernel.launch`): the driver copies the argument
 * values during `cuLaunchKernel`, so the block may be rewritten for the next launch. Grows as needed.
 */
let scratch: { address: bigint; view: DataView; capacity: number } | null = null;

/** Fills the shared scratch block with `args` and returns its address. */
export function packScratch(args: readonly KernelArgValue[], ptrOf: (b: DeviceBuffer) => bigint): bigint {
  const n = args.length;
  if (n === 0) return 0n;
  const need = packedSize(n);
  if (scratch === null || scratch.capacity < need) {
    if (scratch !== null) host.freeHostBlock(scratch.address);
    const capacity = Math.max(need, 64 * SLOT);
    scratch = { ...host.allocHostBlock(capacity), capacity };
  }
  layPointers(scratch.view, scratch.address, n);
  args.forEach((a, i) => writeArg(scratch!.view, n * SLOT + i * SLOT, a, ptrOf));
  return scratch.address;
}
