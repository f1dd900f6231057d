/**
 * Updating one node of an executable graph in place (`cuGraphExec*NodeSetParams`,
 * `cuGraphExecEvent*NodeSetEvent`): the exec's later launches run the new parameters; launches
 * already queued and the template node are not changed. The parameters are encoded as for adding
 * the node (graph-build.ts), so one layout serves both.
 */
import { driverSymbol } from '../sys.js';
import { check, cudaError } from './check.js';
import { MAILBOX, mailboxOf, nativeAddon, settleMailbox } from '../hot.js';
import { kernelNodeBlock } from './kernel-node-block.js';
import { KERNEL_NODE_PARAMS as K } from '../layouts.js';
import { encodeCopy, encodeFill, encodeHost, encodeKernelParams, type CopyShape, type FillShape, type KernelNodeInput } from './graph-build.js';

/** A kernel node's function, launch shape and arguments (`cuGraphExecKernelNodeSetParams_v2`). */
export function setKernel(op: string, exec: bigint, node: bigint, p: KernelNodeInput): void {
  setKernelBytes(op, exec, node, encodeKernelParams(p));
}

/**
 * `setKernel` with the `CUDA_KERNEL_NODE_PARAMS_v2` bytes already encoded: through the addon's
 * mailbox where it is loaded (the bytes copied into C memory; about 30 ns a call less than koffi
 * on the host: bench:host), else through koffi.
 */
export function setKernelBytes(op: string, exec: bigint, node: bigint, params: Uint8Array): void {
  setParams(op, exec, node, params, null);
}

/**
 * `setKernelBytes`; `kernelParams` non-null when only the argument pointer (and `extra`, zero)
 * changed in `params` since the last call with the same `params` array: the block then keeps its
 * copy and takes the pointer alone.
 */
function setParams(op: string, exec: bigint, node: bigint, params: Uint8Array, kernelParams: bigint | null): void {
  // Resolves the symbol (a driver without it throws here) and passes the host-call gate, on both paths.
  const set = driverSymbol(op, 'cuGraphExecKernelNodeSetParams_v2');
  const hot = nativeAddon();
  if (hot === null) {
    check(set(exec, node, params), op, 'cuGraphExecKernelNodeSetParams_v2');
    return;
  }
  const b = kernelNodeBlock(0);
  if (kernelParams !== null && b.encoded === params) {
    b.paramWords[K.kernelParams / 8] = kernelParams;
    b.paramWords[K.extra / 8] = 0n;
  } else {
    b.bytes.set(params);
    // Kept only for an argument update, whose next call with these bytes changes the pointer alone.
    b.encoded = kernelParams !== null ? params : null;
  }
  const box = mailboxOf(hot);
  box.u64[MAILBOX.EXEC] = exec;
  box.u64[MAILBOX.NODE] = node;
  box.u64[MAILBOX.PARAMS] = b.params;
  hot.execKernelParamsFromMailbox();
  if (box.i32[MAILBOX.RESULT] === 0) return;
  // Bind on first use and call again (koffi where it cannot be bound); throw what stands.
  const rc = settleMailbox(op, hot, 'cuGraphExecKernelNodeSetParams_v2', () => hot.execKernelParamsFromMailbox(), () => set(exec, node, params));
  if (rc !== 0) throw cudaError(rc, op, 'cuGraphExecKernelNodeSetParams_v2');
}

/**
 * New arguments for a kernel node, the rest of its launch kept: `params` are the node's current
 * bytes (`words` the same memory as 64-bit words), whose argument pointer becomes `kernelParams`
 * (the driver copies the values during the call).
 */
export function setKernelArgs(op: string, exec: bigint, node: bigint, params: Uint8Array, words: BigUint64Array, kernelParams: bigint): void {
  words[K.kernelParams / 8] = kernelParams;
  words[K.extra / 8] = 0n;
  setParams(op, exec, node, params, kernelParams);
}

/** A copy node's addresses and size (`cuGraphExecMemcpyNodeSetParams`; 1-D copies only, same contexts). */
export function setCopy(op: string, exec: bigint, node: bigint, copy: CopyShape, ctx: bigint): void {
  check(driverSymbol(op, 'cuGraphExecMemcpyNodeSetParams')(exec, node, encodeCopy(copy), ctx), op, 'cuGraphExecMemcpyNodeSetParams');
}

/** A fill node's destination and value (`cuGraphExecMemsetNodeSetParams`). */
export function setFill(op: string, exec: bigint, node: bigint, fill: FillShape, ctx: bigint): void {
  check(driverSymbol(op, 'cuGraphExecMemsetNodeSetParams')(exec, node, encodeFill(fill), ctx), op, 'cuGraphExecMemsetNodeSetParams');
}

/** A host node's function and data (`cuGraphExecHostNodeSetParams`). */
export function setHost(op: string, exec: bigint, node: bigint, fn: bigint, userData: bigint): void {
  check(driverSymbol(op, 'cuGraphExecHostNodeSetParams')(exec, node, encodeHost(fn, userData)), op, 'cuGraphExecHostNodeSetParams');
}

/** A child graph node's graph: same topology, parameters from `child` (`cuGraphExecChildGraphNodeSetParams`). */
export function setChildGraph(op: string, exec: bigint, node: bigint, child: bigint): void {
  check(driverSymbol(op, 'cuGraphExecChildGraphNodeSetParams')(exec, node, child), op, 'cuGraphExecChildGraphNodeSetParams');
}

/** The event an event record node records (`cuGraphExecEventRecordNodeSetEvent`). */
export function setRecordEvent(op: string, exec: bigint, node: bigint, event: bigint): void {
  check(driverSymbol(op, 'cuGraphExecEventRecordNodeSetEvent')(exec, node, event), op, 'cuGraphExecEventRecordNodeSetEvent');
}

/** The event an event wait node waits on (`cuGraphExecEventWaitNodeSetEvent`). */
export function setWaitEvent(op: string, exec: bigint, node: bigint, event: bigint): void {
  check(driverSymbol(op, 'cuGraphExecEventWaitNodeSetEvent')(exec, node, event), op, 'cuGraphExecEventWaitNodeSetEvent');
}
