/**
 * Building a graph node by node (`cuGraphAdd*Node`, `cuGraphAddDependencies_v2`): what lowering a
 * `ComputeGraph` calls. Nodes are added without dependencies and every edge is added afterwards in
 * one `cuGraphAddDependencies_v2` call, so the driver graph gets exactly the model's edge set.
 */
import { driverSymbol } from '../sys.js';
import { check } from './check.js';
import {
  KERNEL_NODE_PARAMS as K,
  MEMSET_NODE_PARAMS as M,
  MEMCPY3D as C,
  HOST_NODE_PARAMS as H,
  GRAPH_EDGE_DATA as E,
  MEM_ALLOC_NODE_PARAMS as A,
  MEM_POOL_PROPS as P,
  MEM_LOCATION as L,
  CU_MEMORYTYPE,
  CU,
} from '../layouts.js';
import { takeHandle, u64 } from './scratch.js';

/** A kernel node's launch: the function, its shape, and the packed argument array's address. */
export interface KernelNodeInput {
  readonly func: bigint;
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedMem: number;
  /** Address of the `void *kernelParams[]` array (0n for a kernel without parameters); the driver copies the values. */
  readonly kernelParams: bigint;
}

/** Adds a kernel node with no dependencies (`cuGraphAddKernelNode_v2`). */
export function addKernelNode(op: string, graph: bigint, p: KernelNodeInput): bigint {
  const buf = new Uint8Array(K.size);
  const v = new DataView(buf.buffer);
  v.setBigUint64(K.func, p.func, true);
  v.setUint32(K.gridDimX, p.grid[0], true);
  v.setUint32(K.gridDimY, p.grid[1], true);
  v.setUint32(K.gridDimZ, p.grid[2], true);
  v.setUint32(K.blockDimX, p.block[0], true);
  v.setUint32(K.blockDimY, p.block[1], true);
  v.setUint32(K.blockDimZ, p.block[2], true);
  v.setUint32(K.sharedMemBytes, p.sharedMem, true);
  v.setBigUint64(K.kernelParams, p.kernelParams, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddKernelNode_v2')(u64, graph, null, 0, buf), op, 'cuGraphAddKernelNode_v2');
  return takeHandle();
}

/** One side of a 1-D copy: host memory (an address) or device memory. */
export interface CopyEnd {
  readonly host: boolean;
  readonly address: bigint;
}

/** Adds a 1-D copy of `bytes` bytes (`cuGraphAddMemcpyNode` with a `CUDA_MEMCPY3D` of height and depth 1). */
export function addMemcpyNode(op: string, graph: bigint, src: CopyEnd, dst: CopyEnd, bytes: number, ctx: bigint): bigint {
  const buf = new Uint8Array(C.size);
  const v = new DataView(buf.buffer);
  const kind = (e: CopyEnd): number => (e.host ? CU_MEMORYTYPE.HOST : CU_MEMORYTYPE.DEVICE);
  v.setInt32(C.srcMemoryType, kind(src), true);
  v.setBigUint64(src.host ? C.srcHost : C.srcDevice, src.address, true);
  v.setInt32(C.dstMemoryType, kind(dst), true);
  v.setBigUint64(dst.host ? C.dstHost : C.dstDevice, dst.address, true);
  // A 1-D copy is one row of one slice; pitches equal to the width keep the driver's checks happy.
  v.setBigUint64(C.srcPitch, BigInt(bytes), true);
  v.setBigUint64(C.srcHeight, 1n, true);
  v.setBigUint64(C.dstPitch, BigInt(bytes), true);
  v.setBigUint64(C.dstHeight, 1n, true);
  v.setBigUint64(C.WidthInBytes, BigInt(bytes), true);
  v.setBigUint64(C.Height, 1n, true);
  v.setBigUint64(C.Depth, 1n, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemcpyNode')(u64, graph, null, 0, buf, ctx), op, 'cuGraphAddMemcpyNode');
  return takeHandle();
}

/** Adds a 1-D fill of `count` elements of `elementSize` bytes (`cuGraphAddMemsetNode`). */
export function addMemsetNode(
  op: string,
  graph: bigint,
  dst: bigint,
  value: number,
  elementSize: 1 | 2 | 4,
  count: number,
  ctx: bigint,
): bigint {
  const buf = new Uint8Array(M.size);
  const v = new DataView(buf.buffer);
  v.setBigUint64(M.dst, dst, true);
  v.setBigUint64(M.pitch, 0n, true);
  v.setUint32(M.value, value >>> 0, true);
  v.setUint32(M.elementSize, elementSize, true);
  v.setBigUint64(M.width, BigInt(count), true);
  v.setBigUint64(M.height, 1n, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemsetNode')(u64, graph, null, 0, buf, ctx), op, 'cuGraphAddMemsetNode');
  return takeHandle();
}

/** Adds a host-function node calling `fn(userData)` (`cuGraphAddHostNode`). */
export function addHostNode(op: string, graph: bigint, fn: bigint, userData: bigint): bigint {
  const buf = new Uint8Array(H.size);
  const v = new DataView(buf.buffer);
  v.setBigUint64(H.fn, fn, true);
  v.setBigUint64(H.userData, userData, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddHostNode')(u64, graph, null, 0, buf), op, 'cuGraphAddHostNode');
  return takeHandle();
}

/** Adds an empty node (`cuGraphAddEmptyNode`): no work, only dependencies. */
export function addEmptyNode(op: string, graph: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEmptyNode')(u64, graph, null, 0), op, 'cuGraphAddEmptyNode');
  return takeHandle();
}

/**
 * Adds the edges `from[i] → to[i]` in one call (`cuGraphAddDependencies_v2`). `data` holds each
 * edge's `[fromPort, type]` (`CUgraphEdgeData`), or is null when every edge is a default one.
 */
export function addDependencies(
  op: string,
  graph: bigint,
  from: BigUint64Array,
  to: BigUint64Array,
  data: ReadonlyArray<readonly [fromPort: number, type: number]> | null = null,
): void {
  if (from.length === 0) return;
  let edgeData: Uint8Array | null = null;
  if (data !== null) {
    edgeData = new Uint8Array(from.length * E.size);
    data.forEach(([port, type], i) => {
      edgeData![i * E.size + E.from_port] = port;
      edgeData![i * E.size + E.type] = type;
    });
  }
  check(driverSymbol(op, 'cuGraphAddDependencies_v2')(graph, from, to, edgeData, from.length), op, 'cuGraphAddDependencies_v2');
}

/** Adds an event record node recording `event` (`cuGraphAddEventRecordNode`). */
export function addEventRecordNode(op: string, graph: bigint, event: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEventRecordNode')(u64, graph, null, 0, event), op, 'cuGraphAddEventRecordNode');
  return takeHandle();
}

/** Adds an event wait node waiting on `event` (`cuGraphAddEventWaitNode`). */
export function addEventWaitNode(op: string, graph: bigint, event: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEventWaitNode')(u64, graph, null, 0, event), op, 'cuGraphAddEventWaitNode');
  return takeHandle();
}

/** Adds a child graph node running a clone of `child` (`cuGraphAddChildGraphNode`; `child` stays the caller's). */
export function addChildGraphNode(op: string, graph: bigint, child: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddChildGraphNode')(u64, graph, null, 0, child), op, 'cuGraphAddChildGraphNode');
  return takeHandle();
}

/**
 * Adds an allocation node of `bytes` bytes on device `device` (`cuGraphAddMemAllocNode`, pinned
 * device memory, no peer access). Returns the node and the address the driver fixed for it.
 */
export function addMemAllocNode(op: string, graph: bigint, bytes: number, device: number): { node: bigint; dptr: bigint } {
  const buf = new Uint8Array(A.size);
  const v = new DataView(buf.buffer);
  v.setInt32(A.poolProps + P.allocType, CU.MEM_ALLOCATION_TYPE_PINNED, true);
  v.setInt32(A.poolProps + P.location + L.type, CU.MEM_LOCATION_TYPE_DEVICE, true);
  v.setInt32(A.poolProps + P.location + L.id, device, true);
  v.setBigUint64(A.bytesize, BigInt(bytes), true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemAllocNode')(u64, graph, null, 0, buf), op, 'cuGraphAddMemAllocNode');
  const node = takeHandle();
  return { node, dptr: v.getBigUint64(A.dptr, true) };
}

/** Adds a free node freeing `dptr`, an address an allocation node returned (`cuGraphAddMemFreeNode`). */
export function addMemFreeNode(op: string, graph: bigint, dptr: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemFreeNode')(u64, graph, null, 0, dptr), op, 'cuGraphAddMemFreeNode');
  return takeHandle();
}

/** A host node's function pointer and user data (`cuGraphHostNodeGetParams`). */
export function hostNodeParams(op: string, node: bigint): { fn: bigint; userData: bigint } {
  const buf = new Uint8Array(H.size);
  check(driverSymbol(op, 'cuGraphHostNodeGetParams')(node, buf), op, 'cuGraphHostNodeGetParams');
  const v = new DataView(buf.buffer);
  return { fn: v.getBigUint64(H.fn, true), userData: v.getBigUint64(H.userData, true) };
}

/** Enqueues a host function on a stream (`cuLaunchHostFunc`); captured as a host node during a capture. */
export function launchHostFunc(op: string, stream: bigint, fn: bigint, userData: bigint): void {
  check(driverSymbol(op, 'cuLaunchHostFunc')(stream, fn, userData), op, 'cuLaunchHostFunc');
}
