/**
 * The C memory of the mailbox forms of the two kernel node calls (`hot.addKernelNodeFromMailbox`,
 * `hot.execKernelParamsFromMailbox`): the addon passes addresses to the driver, so a node's
 * parameters and dependencies must lie in memory that does not move, not in a JS array. One block
 * serves every call: the driver reads it during the call only, and JS makes one call at a time.
 */
import { KERNEL_NODE_PARAMS as K } from '../layouts.js';
import { allocHostBlock, freeHostBlock, u64Words } from './host.js';

/** A `CUDA_KERNEL_NODE_PARAMS_v2`, then room for `capacity` node handles. */
export interface KernelNodeBlock {
  /** Address of the parameters. */
  readonly params: bigint;
  /** The parameters' bytes, a view of them, and the same bytes as 64-bit words. */
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly paramWords: BigUint64Array;
  /** Address of the dependency handles, and the handles. */
  readonly deps: bigint;
  readonly handles: BigUint64Array;
  /** The same memory as 32-bit words (a handle kept as a number is written as its two halves: no BigInt). */
  readonly words: Uint32Array;
  readonly capacity: number;
  /**
   * The frozen launch whose parameters `bytes` hold now, or null: adding many nodes with one
   * checked configuration (the usual loop, which hands the same frozen launch object each time)
   * encodes it once. Only a frozen launch is kept here (one that may change is encoded every time);
   * whoever writes `bytes` otherwise sets it to null. An exec's argument update keeps here the
   * parameter bytes it copied (an exec kernel's own `Uint8Array`, never a launch), so that the next
   * update of the same node writes only the argument pointer (exec-update.ts).
   */
  encoded: object | null;
}

let block: KernelNodeBlock | null = null;

/** The block, with room for at least `deps` dependency handles. */
export function kernelNodeBlock(deps: number): KernelNodeBlock {
  if (block !== null && block.capacity >= deps) return block;
  if (block !== null) freeHostBlock(block.params);
  block = null;
  const capacity = Math.max(deps, 16);
  // K.size (72) keeps the handles after the parameters 8-byte aligned.
  const { address, view } = allocHostBlock(K.size + 8 * capacity);
  const bytes = new Uint8Array(view.buffer, view.byteOffset, K.size);
  block = {
    params: address,
    bytes,
    view: new DataView(view.buffer, view.byteOffset, K.size),
    paramWords: u64Words(bytes),
    deps: address + BigInt(K.size),
    handles: new BigUint64Array(view.buffer, view.byteOffset + K.size, capacity),
    words: new Uint32Array(view.buffer, view.byteOffset + K.size, 2 * capacity),
    capacity,
    encoded: null,
  };
  return block;
}
