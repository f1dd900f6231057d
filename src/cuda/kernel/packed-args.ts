/**
 * The argument block `cuLaunchKernel` reads: N pointers, then N 8-byte slots, in one allocation
 * that never moves (`host.allocHostBlock`). `kernelParams[i]` points at slot i. Packing happens once per
 * `PreparedLaunch`; a launch passes the block's address and nothing is rebuilt (measured on the H200: a
 * rebuilt argument array costs about 2.5 µs a call).
 */
import { host } from '../../driver/result/index.js';
import { writeArg, type ArgBuffer, type KernelArgValue } from './arg.js';

const SLOT = 8;

/** A packed argument block. */
export interface PackedArgs {
  /** Address of the pointer array (0n when there are no arguments). */
  readonly address: bigint;
  /** Writable view of the whole block. */
  readonly view: DataView;
  /** The whole block as 64-bit words (for `writeArg`: every slot starts at a multiple of 8). */
  readonly words: BigUint64Array;
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
export function packArgs(args: readonly KernelArgValue[], ptrOf: (b: ArgBuffer) => bigint): PackedArgs {
  const n = args.length;
  if (n === 0) {
    return { address: 0n, view: new DataView(new ArrayBuffer(0)), words: new BigUint64Array(0), slotOffset: () => 0, free: () => {} };
  }
  const { address, view } = host.allocHostBlock(packedSize(n));
  const words = host.u64Words(view);
  layPointers(view, address, n);
  args.forEach((a, i) => writeArg(view, n * SLOT + i * SLOT, a, ptrOf, words));
  let freed = false;
  return {
    address,
    view,
    words,
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
/**
 * `laidFor`: the argument count whose pointer array the block holds now (-1: none), so that calls
 * with as many arguments as the last (the usual loop) write only the values: laying the pointers
 * costs a BigInt sum per argument, about as much as the rest of packing.
 */
let scratch: { address: bigint; view: DataView; words: BigUint64Array; capacity: number; laidFor: number } | null = null;

/** The scratch block, grown to at least `need` bytes. */
function scratchOf(need: number): { address: bigint; view: DataView; words: BigUint64Array; capacity: number; laidFor: number } {
  if (scratch === null || scratch.capacity < need) {
    if (scratch !== null) host.freeHostBlock(scratch.address);
    const capacity = Math.max(need, 64 * SLOT);
    const block = host.allocHostBlock(capacity);
    scratch = { ...block, words: host.u64Words(block.view), capacity, laidFor: -1 };
  }
  return scratch;
}

/** Fills the shared scratch block with `args` and returns its address. */
export function packScratch(args: readonly KernelArgValue[], ptrOf: (b: ArgBuffer) => bigint): bigint {
  const n = args.length;
  if (n === 0) return 0n;
  const s = scratchOf(packedSize(n));
  if (s.laidFor !== n) {
    layPointers(s.view, s.address, n);
    s.laidFor = n;
  }
  for (let i = 0; i < n; i++) writeArg(s.view, n * SLOT + i * SLOT, args[i]!, ptrOf, s.words);
  return s.address;
}

/**
 * Fills the shared scratch block with arguments given as their bytes (a kernel node's current
 * values, one of them replaced) and returns its address. A value of more than 8 bytes (a struct
 * parameter of a kernel cudagraph did not launch) gets its own 16-byte aligned room.
 */
export function packScratchBytes(values: readonly Uint8Array[]): bigint {
  const n = values.length;
  if (n === 0) return 0n;
  const offsets: number[] = [];
  let end = n * SLOT;
  for (const v of values) {
    if (v.length > SLOT) end = Math.ceil(end / 16) * 16;
    offsets.push(end);
    end += Math.max(SLOT, Math.ceil(v.length / SLOT) * SLOT);
  }
  const s = scratchOf(end);
  // Its own pointer layout: the next `packScratch` lays its pointers again.
  s.laidFor = -1;
  const bytes = new Uint8Array(s.view.buffer, s.view.byteOffset, end);
  values.forEach((v, i) => {
    s.view.setBigUint64(i * SLOT, s.address + BigInt(offsets[i]!), true);
    bytes.set(v, offsets[i]!);
  });
  return s.address;
}
