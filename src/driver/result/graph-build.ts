/**
 * Building a graph node by node (`cuGraphAdd*Node`, `cuGraphAddDependencies_v2`, clone, removal):
 * what lowering a `ComputeGraph` and `Graph.add…Node` call. Each node's parameters are encoded in
 * one place (`encode*`), which the exec setters (exec-update.ts) share. Lowering adds nodes without
 * dependencies and then the edges, one call per distinct edge data (`byEdgeData` says why), so the
 * driver graph gets exactly the model's edge set.
 */
import { driverSymbol, onLibrariesReset, type DriverApi } from '../sys.js';
import { check, cudaError } from './check.js';
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
import { MAILBOX, mailboxOf, nativeAddon, settle, type HotAddon } from '../hot.js';
import { kernelNodeBlock } from './kernel-node-block.js';

/** A kernel node's launch: the function, its shape, and the packed argument array's address. */
export interface KernelNodeInput {
  readonly func: bigint;
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedMem: number;
  /** Address of the `void *kernelParams[]` array (0n for a kernel without parameters); the driver copies the values. */
  readonly kernelParams: bigint;
}

/** The `CUDA_KERNEL_NODE_PARAMS_v2` bytes of a launch (what adding a node and updating one in an exec take). */
export function encodeKernelParams(p: KernelNodeInput): Uint8Array {
  return encodeKernelParamsInto(new Uint8Array(K.size), p);
}

/**
 * One block for the kernel parameters of a call that reads them before it returns (adding a node:
 * the driver copies them), so adding many nodes allocates nothing per node.
 */
const kernelScratch = new Uint8Array(K.size);
const kernelScratchView = new DataView(kernelScratch.buffer);

/** Writes the `CUDA_KERNEL_NODE_PARAMS_v2` bytes of `p` into `buf` (72 bytes; the unused fields zero). */
function encodeKernelParamsInto(buf: Uint8Array, p: KernelNodeInput, view?: DataView): Uint8Array {
  const v = view ?? new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  v.setBigUint64(K.extra, 0n, true);
  v.setBigUint64(K.kern, 0n, true);
  v.setBigUint64(K.ctx, 0n, true);
  v.setBigUint64(K.func, p.func, true);
  v.setUint32(K.gridDimX, p.grid[0], true);
  v.setUint32(K.gridDimY, p.grid[1], true);
  v.setUint32(K.gridDimZ, p.grid[2], true);
  v.setUint32(K.blockDimX, p.block[0], true);
  v.setUint32(K.blockDimY, p.block[1], true);
  v.setUint32(K.blockDimZ, p.block[2], true);
  v.setUint32(K.sharedMemBytes, p.sharedMem, true);
  v.setBigUint64(K.kernelParams, p.kernelParams, true);
  return buf;
}

/** Dependencies of a node being added: its handles, or null for none. */
export type Deps = BigUint64Array | null;

/**
 * Adds a kernel node after `deps` (`cuGraphAddKernelNode_v2`): through the addon's mailbox where it
 * is loaded (about 90 ns a call less than koffi on the host: bench:host), else through koffi.
 */
export function addKernelNode(op: string, graph: bigint, p: KernelNodeInput, deps: Deps = null): bigint {
  const n = deps?.length ?? 0;
  if (n > 1) return addKernelNodeAfterMany(op, graph, p, deps!);
  const h = addKernelNodeKey(op, graph, p, n === 0 ? null : deps![0]!);
  return typeof h === 'number' ? BigInt(h) : h;
}

/** koffi's `cuGraphAddKernelNode_v2`, resolved once per loaded driver (it waits for nothing: no gate to pass). */
let koffiAdd: DriverApi['cuGraphAddKernelNode_v2'] | null = null;
onLibrariesReset(() => {
  koffiAdd = null;
});

/** `cuGraphAddKernelNode_v2` as koffi calls it; a driver without it throws here, on either path. */
function addSymbol(op: string): DriverApi['cuGraphAddKernelNode_v2'] {
  return (koffiAdd ??= driverSymbol(op, 'cuGraphAddKernelNode_v2'));
}

/** The dependency of a one-dependency call on koffi (koffi reads it during the call only). */
const oneDep = new BigUint64Array(1);
const TWO_32 = 0x100000000;
/** Handles below 2^53 are kept as numbers (exactly); the high word of such a handle is below this. */
const EXACT_HIGH = 0x200000;

/**
 * `addKernelNode` of the hot path (`graph.addKernelNode`): at most one dependency, given as a
 * handle key (a number where exact, as `CudaNode` keeps it), and the new node's handle returned the
 * same way, so that adding a node makes no BigInt. The parameters of a frozen launch encoded last
 * time are not encoded again.
 */
export function addKernelNodeKey(op: string, graph: bigint, p: KernelNodeInput, dep: number | bigint | null): number | bigint {
  const add = koffiAdd ?? addSymbol(op);
  const hot = nativeAddon();
  if (hot === null) {
    if (dep !== null) oneDep[0] = typeof dep === 'number' ? BigInt(dep) : dep;
    return koffiAddKernelNode(op, add, graph, encodeKernelParamsInto(kernelScratch, p, kernelScratchView), dep === null ? null : oneDep);
  }
  const b = kernelNodeBlock(1);
  // A frozen launch cannot have changed since it was encoded (the memo of a checked configuration
  // hands out one); only a frozen one is remembered, so the check runs on a new launch alone.
  if (b.encoded !== p) {
    encodeKernelParamsInto(b.bytes, p, b.view);
    b.encoded = Object.isFrozen(p) ? p : null;
  }
  if (dep !== null) {
    if (typeof dep === 'number') {
      const hi = Math.floor(dep / TWO_32);
      b.words[0] = dep - hi * TWO_32;
      b.words[1] = hi;
    } else b.handles[0] = dep;
  }
  const box = mailboxOf(hot);
  box.u64[MAILBOX.GRAPH] = graph;
  box.u64[MAILBOX.PARAMS] = b.params;
  box.u64[MAILBOX.DEPS] = b.deps;
  box.u32[MAILBOX.COUNT] = dep === null ? 0 : 1;
  hot.addKernelNodeFromMailbox();
  if (box.i32[MAILBOX.RESULT] === 0) {
    const hi = box.u32[MAILBOX.NODE_HI]!;
    return hi < EXACT_HIGH ? box.u32[MAILBOX.NODE_LO]! + hi * TWO_32 : box.u64[MAILBOX.NODE]!;
  }
  return addKernelNodeFailed(op, hot, add, graph, b.bytes, dep === null ? null : b.handles.subarray(0, 1));
}

/** `addKernelNode` after more than one node. */
function addKernelNodeAfterMany(op: string, graph: bigint, p: KernelNodeInput, deps: BigUint64Array): bigint {
  const add = koffiAdd ?? addSymbol(op);
  const hot = nativeAddon();
  if (hot === null) return koffiAddKernelNode(op, add, graph, encodeKernelParamsInto(kernelScratch, p, kernelScratchView), deps);
  const n = deps.length;
  const b = kernelNodeBlock(n);
  if (b.encoded !== p) {
    encodeKernelParamsInto(b.bytes, p, b.view);
    b.encoded = Object.isFrozen(p) ? p : null;
  }
  b.handles.set(deps);
  const box = mailboxOf(hot);
  box.u64[MAILBOX.GRAPH] = graph;
  box.u64[MAILBOX.PARAMS] = b.params;
  box.u64[MAILBOX.DEPS] = b.deps;
  box.u32[MAILBOX.COUNT] = n;
  hot.addKernelNodeFromMailbox();
  if (box.i32[MAILBOX.RESULT] === 0) return box.u64[MAILBOX.NODE]!;
  return addKernelNodeFailed(op, hot, add, graph, b.bytes, b.handles.subarray(0, n));
}

/** `addKernelNode` through koffi, with the parameters encoded. */
function koffiAddKernelNode(op: string, add: DriverApi['cuGraphAddKernelNode_v2'], graph: bigint, params: Uint8Array, deps: Deps): bigint {
  u64[0] = 0n;
  check(add(u64, graph, deps, deps?.length ?? 0, params), op, 'cuGraphAddKernelNode_v2');
  return takeHandle();
}

/** The mailbox call did not succeed: bind on first use and add again (koffi where it cannot be bound); throws what stands. */
function addKernelNodeFailed(op: string, hot: HotAddon, add: DriverApi['cuGraphAddKernelNode_v2'], graph: bigint, params: Uint8Array, deps: Deps): bigint {
  const box = mailboxOf(hot);
  let handle = 0n;
  const again = (): number => {
    hot.addKernelNodeFromMailbox();
    handle = box.u64[MAILBOX.NODE]!;
    return box.i32[MAILBOX.RESULT]!;
  };
  const rc = settle(op, hot, 'cuGraphAddKernelNode_v2', box.i32[MAILBOX.RESULT]!, again, () => {
    handle = koffiAddKernelNode(op, add, graph, params, deps);
    return 0;
  });
  if (rc !== 0) throw cudaError(rc, op, 'cuGraphAddKernelNode_v2');
  return handle;
}

/**
 * Many kernel nodes for one call of `addKernelNodes`: each distinct launch once, and per node the
 * launch it runs and its dependencies (entries `depStart[i]` to `depStart[i + 1] - 1`: a node of
 * this batch where `depIndex[k] >= 0`, else the graph's node `depHandle[k]`).
 */
export interface KernelNodeBatch {
  readonly launches: readonly KernelNodeInput[];
  readonly launchOf: Uint32Array;
  readonly depStart: Uint32Array;
  readonly depIndex: Int32Array;
  readonly depHandle: BigUint64Array;
  /** Where the handles go (as long as `launchOf`); default: a new array. */
  readonly out?: BigUint64Array;
}

/**
 * Adds the nodes of `batch` in order (`cuGraphAddKernelNode_v2` each), returning their handles
 * (`batch.out` where given).
 * Where the addon is loaded, the loop runs in C: one Node-API call for the batch, the driver calls
 * back to back as a C program makes them. All or nothing: when a call fails, the nodes added
 * before it are removed (`cuGraphDestroyNode`, which takes their edges too) and the error thrown.
 */
export function addKernelNodes(op: string, graph: bigint, batch: KernelNodeBatch): BigUint64Array {
  const n = batch.launchOf.length;
  const out = batch.out ?? new BigUint64Array(n);
  if (out.length !== n) throw new Error(`${op}: internal error: ${out.length} handle slots for ${n} nodes`);
  if (n === 0) return out;
  const blocks = new Uint8Array(K.size * batch.launches.length);
  batch.launches.forEach((p, i) => encodeKernelParamsInto(blocks.subarray(i * K.size, (i + 1) * K.size), p));
  // Resolves the symbol (a driver without it throws here) and passes the host-call gate once.
  const add = driverSymbol(op, 'cuGraphAddKernelNode_v2');
  const done = new Uint32Array(1);
  const koffiLoop = (): number => {
    let deps = new BigUint64Array(8);
    for (let i = 0; i < n; i++) {
      const first = batch.depStart[i]!;
      const count = batch.depStart[i + 1]! - first;
      if (count > deps.length) deps = new BigUint64Array(count);
      for (let k = 0; k < count; k++) {
        const j = batch.depIndex[first + k]!;
        deps[k] = j >= 0 ? out[j]! : batch.depHandle[first + k]!;
      }
      const at = batch.launchOf[i]! * K.size;
      u64[0] = 0n;
      const rc = add(u64, graph, count === 0 ? null : deps, count, blocks.subarray(at, at + K.size));
      if (rc !== 0) return rc;
      out[i] = takeHandle();
      done[0] = i + 1;
    }
    return 0;
  };
  const hot = nativeAddon();
  let rc: number;
  if (hot === null) rc = koffiLoop();
  else {
    const call = (): number => hot.addKernelNodes(graph, blocks, batch.launchOf, batch.depStart, batch.depIndex, batch.depHandle, out, done);
    rc = settle(op, hot, 'cuGraphAddKernelNode_v2', call(), call, koffiLoop);
    if (rc === hot.BAD_ID) throw new Error(`${op}: internal error: the addon refused the batch's arrays`);
  }
  if (rc !== 0) {
    // All or nothing: remove what went in, newest first (best effort: the first error stands).
    const destroy = driverSymbol(op, 'cuGraphDestroyNode');
    for (let i = done[0]! - 1; i >= 0; i--) destroy(out[i]!);
    throw cudaError(rc, op, 'cuGraphAddKernelNode_v2');
  }
  return out;
}

/** One side of a 1-D copy: host memory (an address) or device memory. */
export interface CopyEnd {
  readonly host: boolean;
  readonly address: bigint;
}

/** One side of a pitched copy: where its first byte is, and its layout (bytes per row, rows per slice). */
export interface PitchedEnd extends CopyEnd {
  readonly pitch: number;
  readonly height: number;
}

/** A copy of `depth` slices of `height` rows of `width` bytes (`CUDA_MEMCPY3D`). */
export interface CopyShape {
  readonly src: PitchedEnd;
  readonly dst: PitchedEnd;
  readonly width: number;
  readonly height: number;
  readonly depth: number;
}

/** The shape of a 1-D copy of `bytes` bytes: one row of one slice, pitches equal to the width. */
export function linearCopy(src: CopyEnd, dst: CopyEnd, bytes: number): CopyShape {
  return { src: { ...src, pitch: bytes, height: 1 }, dst: { ...dst, pitch: bytes, height: 1 }, width: bytes, height: 1, depth: 1 };
}

/** The `CUDA_MEMCPY3D` bytes of a copy (memory types host or device; unified addressing resolves peers). */
export function encodeCopy(c: CopyShape): Uint8Array {
  const buf = new Uint8Array(C.size);
  const v = new DataView(buf.buffer);
  const kind = (e: CopyEnd): number => (e.host ? CU_MEMORYTYPE.HOST : CU_MEMORYTYPE.DEVICE);
  v.setInt32(C.srcMemoryType, kind(c.src), true);
  v.setBigUint64(c.src.host ? C.srcHost : C.srcDevice, c.src.address, true);
  v.setInt32(C.dstMemoryType, kind(c.dst), true);
  v.setBigUint64(c.dst.host ? C.dstHost : C.dstDevice, c.dst.address, true);
  v.setBigUint64(C.srcPitch, BigInt(c.src.pitch), true);
  v.setBigUint64(C.srcHeight, BigInt(c.src.height), true);
  v.setBigUint64(C.dstPitch, BigInt(c.dst.pitch), true);
  v.setBigUint64(C.dstHeight, BigInt(c.dst.height), true);
  v.setBigUint64(C.WidthInBytes, BigInt(c.width), true);
  v.setBigUint64(C.Height, BigInt(c.height), true);
  v.setBigUint64(C.Depth, BigInt(c.depth), true);
  return buf;
}

/** Adds a copy after `deps` (`cuGraphAddMemcpyNode`). */
export function addCopyNode(op: string, graph: bigint, copy: CopyShape, ctx: bigint, deps: Deps = null): bigint {
  const buf = encodeCopy(copy);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemcpyNode')(u64, graph, deps, deps?.length ?? 0, buf, ctx), op, 'cuGraphAddMemcpyNode');
  return takeHandle();
}

/** Adds a 1-D copy of `bytes` bytes (`cuGraphAddMemcpyNode` with a `CUDA_MEMCPY3D` of height and depth 1). */
export function addMemcpyNode(op: string, graph: bigint, src: CopyEnd, dst: CopyEnd, bytes: number, ctx: bigint): bigint {
  return addCopyNode(op, graph, linearCopy(src, dst, bytes), ctx);
}

/** A fill of `height` rows of `width` elements of `elementSize` bytes, rows `pitch` bytes apart (`CUDA_MEMSET_NODE_PARAMS`). */
export interface FillShape {
  readonly dst: bigint;
  readonly value: number;
  readonly elementSize: 1 | 2 | 4;
  readonly width: number;
  readonly height: number;
  /** Bytes between rows (ignored by the driver for one row). */
  readonly pitch: number;
}

/** The `CUDA_MEMSET_NODE_PARAMS` bytes of a fill. */
export function encodeFill(f: FillShape): Uint8Array {
  const buf = new Uint8Array(M.size);
  const v = new DataView(buf.buffer);
  v.setBigUint64(M.dst, f.dst, true);
  v.setBigUint64(M.pitch, BigInt(f.pitch), true);
  v.setUint32(M.value, f.value >>> 0, true);
  v.setUint32(M.elementSize, f.elementSize, true);
  v.setBigUint64(M.width, BigInt(f.width), true);
  v.setBigUint64(M.height, BigInt(f.height), true);
  return buf;
}

/** Adds a fill after `deps` (`cuGraphAddMemsetNode`). */
export function addFillNode(op: string, graph: bigint, fill: FillShape, ctx: bigint, deps: Deps = null): bigint {
  const buf = encodeFill(fill);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemsetNode')(u64, graph, deps, deps?.length ?? 0, buf, ctx), op, 'cuGraphAddMemsetNode');
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
  return addFillNode(op, graph, { dst, value, elementSize, width: count, height: 1, pitch: 0 }, ctx);
}

/** The `CUDA_HOST_NODE_PARAMS` bytes of a host call. */
export function encodeHost(fn: bigint, userData: bigint): Uint8Array {
  const buf = new Uint8Array(H.size);
  const v = new DataView(buf.buffer);
  v.setBigUint64(H.fn, fn, true);
  v.setBigUint64(H.userData, userData, true);
  return buf;
}

/** Adds a host-function node calling `fn(userData)` (`cuGraphAddHostNode`). */
export function addHostNode(op: string, graph: bigint, fn: bigint, userData: bigint, deps: Deps = null): bigint {
  const buf = encodeHost(fn, userData);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddHostNode')(u64, graph, deps, deps?.length ?? 0, buf), op, 'cuGraphAddHostNode');
  return takeHandle();
}

/** Adds an empty node (`cuGraphAddEmptyNode`): no work, only dependencies. */
export function addEmptyNode(op: string, graph: bigint, deps: Deps = null): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEmptyNode')(u64, graph, deps, deps?.length ?? 0), op, 'cuGraphAddEmptyNode');
  return takeHandle();
}

/** The `CUgraphEdgeData` array of `data` (`[fromPort, type]` per edge). */
function encodeEdges(data: ReadonlyArray<readonly [fromPort: number, type: number]>): Uint8Array {
  const out = new Uint8Array(data.length * E.size);
  data.forEach(([port, type], i) => {
    out[i * E.size + E.from_port] = port;
    out[i * E.size + E.type] = type;
  });
  return out;
}

/**
 * Calls `call` (`cuGraphAddDependencies_v2` or `cuGraphRemoveDependencies_v2`) once per distinct
 * edge data: the CUDA 13.0 driver (580) applies the first `CUgraphEdgeData` of a call to every
 * edge of it (measured: a programmatic, a plain and a launch-order edge added in one call all read
 * back programmatic; added in three calls, each reads back as given). Default edges go in one call.
 */
function byEdgeData(
  from: BigUint64Array,
  to: BigUint64Array,
  data: ReadonlyArray<readonly [fromPort: number, type: number]> | null,
  call: (from: BigUint64Array, to: BigUint64Array, edgeData: Uint8Array | null, n: number) => number,
  undo: (from: BigUint64Array, to: BigUint64Array, edgeData: Uint8Array | null, n: number) => number,
): number {
  if (data === null) return call(from, to, null, from.length);
  const groups = new Map<number, number[]>();
  data.forEach(([port, type], i) => {
    const key = port * 256 + type;
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = []));
    g.push(i);
  });
  const done: Array<[BigUint64Array, BigUint64Array, Uint8Array | null, number]> = [];
  for (const [key, edges] of groups) {
    const f = BigUint64Array.from(edges, (i) => from[i]!);
    const t = BigUint64Array.from(edges, (i) => to[i]!);
    const e = key === 0 ? null : encodeEdges(edges.map(() => [Math.floor(key / 256), key % 256] as const));
    const rc = call(f, t, e, edges.length);
    if (rc !== 0) {
      // All or nothing: take back the calls that went through (best effort: the first error stands).
      for (const d of done) undo(...d);
      return rc;
    }
    done.push([f, t, e, edges.length]);
  }
  return 0;
}

/**
 * Adds the edges `from[i] → to[i]` (`cuGraphAddDependencies_v2`, one call per distinct edge data;
 * when one fails, the edges the others added are removed again). `data` holds each edge's
 * `[fromPort, type]` (`CUgraphEdgeData`), or is null when every edge is a default one.
 */
export function addDependencies(
  op: string,
  graph: bigint,
  from: BigUint64Array,
  to: BigUint64Array,
  data: ReadonlyArray<readonly [fromPort: number, type: number]> | null = null,
): void {
  if (from.length === 0) return;
  const add = driverSymbol(op, 'cuGraphAddDependencies_v2');
  const remove = (f: BigUint64Array, t: BigUint64Array, e: Uint8Array | null, n: number): number =>
    driverSymbol(op, 'cuGraphRemoveDependencies_v2')(graph, f, t, e, n);
  check(byEdgeData(from, to, data, (f, t, e, n) => add(graph, f, t, e, n), remove), op, 'cuGraphAddDependencies_v2');
}

/** Removes the edges `from[i] → to[i]` (`cuGraphRemoveDependencies_v2`; `data` must match each edge's; all or nothing, as adding). */
export function removeDependencies(
  op: string,
  graph: bigint,
  from: BigUint64Array,
  to: BigUint64Array,
  data: ReadonlyArray<readonly [fromPort: number, type: number]> | null = null,
): void {
  if (from.length === 0) return;
  const remove = driverSymbol(op, 'cuGraphRemoveDependencies_v2');
  const add = (f: BigUint64Array, t: BigUint64Array, e: Uint8Array | null, n: number): number => driverSymbol(op, 'cuGraphAddDependencies_v2')(graph, f, t, e, n);
  check(byEdgeData(from, to, data, (f, t, e, n) => remove(graph, f, t, e, n), add), op, 'cuGraphRemoveDependencies_v2');
}

/** A copy of `graph` (`cuGraphClone`): the caller owns it. */
export function cloneGraph(op: string, graph: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphClone')(u64, graph), op, 'cuGraphClone');
  return takeHandle();
}

/** The node of the clone `clone` that `original` became (`cuGraphNodeFindInClone`). */
export function findInClone(op: string, original: bigint, clone: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphNodeFindInClone')(u64, original, clone), op, 'cuGraphNodeFindInClone');
  return takeHandle();
}

/** Removes a node and its edges from its graph (`cuGraphDestroyNode`). */
export function destroyNode(op: string, node: bigint): void {
  check(driverSymbol(op, 'cuGraphDestroyNode')(node), op, 'cuGraphDestroyNode');
}

/** Adds an event record node recording `event` (`cuGraphAddEventRecordNode`). */
export function addEventRecordNode(op: string, graph: bigint, event: bigint, deps: Deps = null): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEventRecordNode')(u64, graph, deps, deps?.length ?? 0, event), op, 'cuGraphAddEventRecordNode');
  return takeHandle();
}

/** Adds an event wait node waiting on `event` (`cuGraphAddEventWaitNode`). */
export function addEventWaitNode(op: string, graph: bigint, event: bigint, deps: Deps = null): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddEventWaitNode')(u64, graph, deps, deps?.length ?? 0, event), op, 'cuGraphAddEventWaitNode');
  return takeHandle();
}

/** Adds a child graph node running a clone of `child` (`cuGraphAddChildGraphNode`; `child` stays the caller's). */
export function addChildGraphNode(op: string, graph: bigint, child: bigint, deps: Deps = null): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddChildGraphNode')(u64, graph, deps, deps?.length ?? 0, child), op, 'cuGraphAddChildGraphNode');
  return takeHandle();
}

/**
 * Adds an allocation node of `bytes` bytes on device `device` (`cuGraphAddMemAllocNode`, pinned
 * device memory, no peer access). Returns the node and the address the driver fixed for it.
 */
export function addMemAllocNode(op: string, graph: bigint, bytes: number, device: number, deps: Deps = null): { node: bigint; dptr: bigint } {
  const buf = new Uint8Array(A.size);
  const v = new DataView(buf.buffer);
  v.setInt32(A.poolProps + P.allocType, CU.MEM_ALLOCATION_TYPE_PINNED, true);
  v.setInt32(A.poolProps + P.location + L.type, CU.MEM_LOCATION_TYPE_DEVICE, true);
  v.setInt32(A.poolProps + P.location + L.id, device, true);
  v.setBigUint64(A.bytesize, BigInt(bytes), true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemAllocNode')(u64, graph, deps, deps?.length ?? 0, buf), op, 'cuGraphAddMemAllocNode');
  const node = takeHandle();
  return { node, dptr: v.getBigUint64(A.dptr, true) };
}

/** Adds a free node freeing `dptr`, an address an allocation node returned (`cuGraphAddMemFreeNode`). */
export function addMemFreeNode(op: string, graph: bigint, dptr: bigint, deps: Deps = null): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddMemFreeNode')(u64, graph, deps, deps?.length ?? 0, dptr), op, 'cuGraphAddMemFreeNode');
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
