/** Stream capture and graphs (`cuStream*Capture*`, `cuGraph*`). */
import { driverSymbol, hasDriverSymbol } from '../sys.js';
import { nativeAddon, mailboxOf, settle, settleMailbox, koffiGraphLaunch, MAILBOX, type HotAddon } from '../hot.js';
import { gate, passGate } from '../host-gate.js';
import { check, cudaError } from './check.js';
import {
  KERNEL_NODE_PARAMS as K,
  MEMSET_NODE_PARAMS as M,
  MEMCPY3D as C,
  EXEC_UPDATE_RESULT_INFO as U,
  GRAPH_INSTANTIATE_PARAMS as I,
  GRAPH_EDGE_DATA,
  MEM_ALLOC_NODE_PARAMS as A,
  MEM_POOL_PROPS as P,
  MEM_LOCATION as L,
  CUDA_GRAPH_INSTANTIATE_FLAG,
  CUDA_GRAPH_INSTANTIATE_RESULT,
} from '../layouts.js';
import { u64, i32, takeHandle } from './scratch.js';

/** Starts capturing `stream` in `mode` (`cuStreamBeginCapture_v2`). */
export function streamBeginCapture(op: string, stream: bigint, mode: number): void {
  check(driverSymbol(op, 'cuStreamBeginCapture_v2')(stream, mode), op, 'cuStreamBeginCapture_v2');
}

/**
 * Ends capture on `stream` (`cuStreamEndCapture`). Returns the CUresult and the graph (0n when
 * none) rather than throwing: the caller names the first illegal call when the code is 901.
 */
export function streamEndCapture(op: string, stream: bigint): { code: number; graph: bigint } {
  u64[0] = 0n;
  const code = driverSymbol(op, 'cuStreamEndCapture')(stream, u64);
  return { code, graph: takeHandle() };
}

/** The stream's `CUstreamCaptureStatus` (`cuStreamIsCapturing`): 0 none, 1 active, 2 invalidated. */
export function streamIsCapturing(op: string, stream: bigint): number {
  check(driverSymbol(op, 'cuStreamIsCapturing')(stream, i32), op, 'cuStreamIsCapturing');
  return i32[0]!;
}

/** Creates an empty graph (`cuGraphCreate`). */
export function graphCreate(op: string): bigint {
  check(driverSymbol(op, 'cuGraphCreate')(u64, 0), op, 'cuGraphCreate');
  return takeHandle();
}

/** Destroys a graph (`cuGraphDestroy`); returns the CUresult for the cleanup path. */
export function graphDestroy(op: string, graph: bigint): number {
  return driverSymbol(op, 'cuGraphDestroy')(graph);
}

/** Number of nodes (`cuGraphGetNodes` with a null array). */
export function graphNodeCount(op: string, graph: bigint): number {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphGetNodes')(graph, null, u64), op, 'cuGraphGetNodes');
  return Number(u64[0]!);
}

/** The node handles, in the driver's order (`cuGraphGetNodes`). */
export function graphNodes(op: string, graph: bigint): bigint[] {
  const n = graphNodeCount(op, graph);
  if (n === 0) return [];
  const nodes = new BigUint64Array(n);
  const count = new BigUint64Array([BigInt(n)]);
  check(driverSymbol(op, 'cuGraphGetNodes')(graph, nodes, count), op, 'cuGraphGetNodes');
  return Array.from(nodes.subarray(0, Number(count[0]!)));
}

/** One dependency edge as the driver lists it: the two node handles and the edge's data. */
export interface DriverEdge {
  readonly from: bigint;
  readonly to: bigint;
  /** `CUgraphEdgeData.from_port` (`CU_GRAPH_KERNEL_NODE_PORT_*`). */
  readonly fromPort: number;
  /** `CUgraphEdgeData.type` (`CUgraphDependencyType`). */
  readonly type: number;
}

/**
 * The dependency edges with their data (`cuGraphGetEdges_v2`; the driver refuses a query without
 * the data array when an edge carries non-default data).
 */
export function graphEdges(op: string, graph: bigint): DriverEdge[] {
  const get = driverSymbol(op, 'cuGraphGetEdges_v2');
  const count = new BigUint64Array(1);
  check(get(graph, null, null, null, count), op, 'cuGraphGetEdges_v2');
  const n = Number(count[0]!);
  if (n === 0) return [];
  const from = new BigUint64Array(n);
  const to = new BigUint64Array(n);
  const data = new Uint8Array(n * GRAPH_EDGE_DATA.size);
  check(get(graph, from, to, data, count), op, 'cuGraphGetEdges_v2');
  const out: DriverEdge[] = [];
  for (let i = 0; i < Number(count[0]!); i++) {
    const d = i * GRAPH_EDGE_DATA.size;
    out.push({ from: from[i]!, to: to[i]!, fromPort: data[d + GRAPH_EDGE_DATA.from_port]!, type: data[d + GRAPH_EDGE_DATA.type]! });
  }
  return out;
}

/** The event an event record node records (`cuGraphEventRecordNodeGetEvent`). */
export function eventRecordNodeEvent(op: string, node: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphEventRecordNodeGetEvent')(node, u64), op, 'cuGraphEventRecordNodeGetEvent');
  return takeHandle();
}

/** The event an event wait node waits on (`cuGraphEventWaitNodeGetEvent`). */
export function eventWaitNodeEvent(op: string, node: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphEventWaitNodeGetEvent')(node, u64), op, 'cuGraphEventWaitNodeGetEvent');
  return takeHandle();
}

/** The graph a child graph node runs (`cuGraphChildGraphNodeGetGraph`): owned by the node, never to be destroyed. */
export function childGraphNodeGraph(op: string, node: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphChildGraphNodeGetGraph')(node, u64), op, 'cuGraphChildGraphNodeGetGraph');
  return takeHandle();
}

/** An allocation node's size, device and address (`cuGraphMemAllocNodeGetParams`). */
export function memAllocNodeParams(op: string, node: bigint): { bytesize: number; device: number; dptr: bigint } {
  const buf = new Uint8Array(A.size);
  check(driverSymbol(op, 'cuGraphMemAllocNodeGetParams')(node, buf), op, 'cuGraphMemAllocNodeGetParams');
  const v = new DataView(buf.buffer);
  return {
    bytesize: Number(v.getBigUint64(A.bytesize, true)),
    device: v.getInt32(A.poolProps + P.location + L.id, true),
    dptr: v.getBigUint64(A.dptr, true),
  };
}

/** The address a free node frees (`cuGraphMemFreeNodeGetParams`). */
export function memFreeNodeParams(op: string, node: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphMemFreeNodeGetParams')(node, u64), op, 'cuGraphMemFreeNodeGetParams');
  return u64[0]!;
}

/** The `CUgraphNodeType` of a node (`cuGraphNodeGetType`). */
export function graphNodeType(op: string, node: bigint): number {
  check(driverSymbol(op, 'cuGraphNodeGetType')(node, i32), op, 'cuGraphNodeGetType');
  return i32[0]!;
}

/** The id tools (Nsight, CUPTI) use for a node (`cuGraphNodeGetToolsId`, CUDA 13.1+). */
export function nodeToolsId(op: string, node: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphNodeGetToolsId')(node, u64), op, 'cuGraphNodeGetToolsId');
  return takeHandle();
}

/** A node's id within its graph, the one `cuGraphDebugDotPrint` prints (`cuGraphNodeGetLocalId`, CUDA 13.1+). */
export function nodeLocalId(op: string, node: bigint): number {
  check(driverSymbol(op, 'cuGraphNodeGetLocalId')(node, i32), op, 'cuGraphNodeGetLocalId');
  return i32[0]! >>> 0;
}

/** A kernel node's parameters as the driver's bytes (`CUDA_KERNEL_NODE_PARAMS_v2`, from `cuGraphKernelNodeGetParams_v2`). */
export function kernelNodeParamBytes(op: string, node: bigint): Uint8Array {
  const buf = new Uint8Array(K.size);
  check(driverSymbol(op, 'cuGraphKernelNodeGetParams_v2')(node, buf), op, 'cuGraphKernelNodeGetParams_v2');
  return buf;
}

/** A kernel node's parameters (`cuGraphKernelNodeGetParams_v2`). */
export function kernelNodeParams(
  op: string,
  node: bigint,
): { func: bigint; kern: bigint; grid: [number, number, number]; block: [number, number, number]; sharedMem: number } {
  const buf = new Uint8Array(K.size);
  check(driverSymbol(op, 'cuGraphKernelNodeGetParams_v2')(node, buf), op, 'cuGraphKernelNodeGetParams_v2');
  const v = new DataView(buf.buffer);
  return {
    func: v.getBigUint64(K.func, true),
    kern: v.getBigUint64(K.kern, true),
    grid: [v.getUint32(K.gridDimX, true), v.getUint32(K.gridDimY, true), v.getUint32(K.gridDimZ, true)],
    block: [v.getUint32(K.blockDimX, true), v.getUint32(K.blockDimY, true), v.getUint32(K.blockDimZ, true)],
    sharedMem: v.getUint32(K.sharedMemBytes, true),
  };
}

/** A memset node's parameters (`cuGraphMemsetNodeGetParams`). */
export function memsetNodeParams(
  op: string,
  node: bigint,
): { dst: bigint; value: number; elementSize: number; width: number; height: number; pitch: number } {
  const buf = new Uint8Array(M.size);
  check(driverSymbol(op, 'cuGraphMemsetNodeGetParams')(node, buf), op, 'cuGraphMemsetNodeGetParams');
  const v = new DataView(buf.buffer);
  return {
    dst: v.getBigUint64(M.dst, true),
    pitch: Number(v.getBigUint64(M.pitch, true)),
    value: v.getUint32(M.value, true),
    elementSize: v.getUint32(M.elementSize, true),
    width: Number(v.getBigUint64(M.width, true)),
    height: Number(v.getBigUint64(M.height, true)),
  };
}

/** A memcpy node's parameters (`cuGraphMemcpyNodeGetParams`). */
export function memcpyNodeParams(
  op: string,
  node: bigint,
): {
  srcMemoryType: number;
  dstMemoryType: number;
  src: bigint;
  dst: bigint;
  width: number;
  height: number;
  depth: number;
} {
  const buf = new Uint8Array(C.size);
  check(driverSymbol(op, 'cuGraphMemcpyNodeGetParams')(node, buf), op, 'cuGraphMemcpyNodeGetParams');
  const v = new DataView(buf.buffer);
  const srcMemoryType = v.getInt32(C.srcMemoryType, true);
  const dstMemoryType = v.getInt32(C.dstMemoryType, true);
  // Host memory is named by srcHost/dstHost, everything else (device, unified) by srcDevice/dstDevice.
  return {
    srcMemoryType,
    dstMemoryType,
    src: v.getBigUint64(srcMemoryType === 1 ? C.srcHost : C.srcDevice, true),
    dst: v.getBigUint64(dstMemoryType === 1 ? C.dstHost : C.dstDevice, true),
    width: Number(v.getBigUint64(C.WidthInBytes, true)),
    height: Number(v.getBigUint64(C.Height, true)),
    depth: Number(v.getBigUint64(C.Depth, true)),
  };
}

/**
 * Instantiates a graph with `cuGraphInstantiateWithFlags` (the fast path). A failure is diagnosed
 * by a second attempt through `cuGraphInstantiateWithParams` (CUDA 12.0+), whose `result_out` and
 * error node name the reason and the node. The UPLOAD flag needs `WithParams` and an upload stream.
 * @param describeNode names a failing node for the message (its index and kind).
 */
export function graphInstantiate(
  op: string,
  graph: bigint,
  flags: number,
  uploadStream: bigint | null,
  describeNode: (node: bigint) => string,
): bigint {
  const withParams = hasDriverSymbol('cuGraphInstantiateWithParams');
  if (uploadStream === null || !withParams) {
    const f = BigInt(flags & ~CUDA_GRAPH_INSTANTIATE_FLAG.UPLOAD);
    u64[0] = 0n;
    const rc = driverSymbol(op, 'cuGraphInstantiateWithFlags')(u64, graph, f);
    if (rc === 0) {
      const exec = takeHandle();
      if (uploadStream !== null) graphUpload(op, exec, uploadStream);
      return exec;
    }
    if (!withParams) throw cudaError(rc, op, 'cuGraphInstantiateWithFlags');
  }
  const params = new Uint8Array(I.size);
  const v = new DataView(params.buffer);
  v.setBigUint64(I.flags, BigInt(flags), true);
  v.setBigUint64(I.hUploadStream, uploadStream ?? 0n, true);
  u64[0] = 0n;
  const rc = driverSymbol(op, 'cuGraphInstantiateWithParams')(u64, graph, params);
  if (rc !== 0) {
    const result = v.getInt32(I.result_out, true);
    const errNode = v.getBigUint64(I.hErrNode_out, true);
    const reason = CUDA_GRAPH_INSTANTIATE_RESULT[result] ?? `CUgraphInstantiateResult ${result}`;
    const where = errNode !== 0n ? `; failing node: ${describeNode(errNode)}` : '';
    throw cudaError(rc, op, 'cuGraphInstantiateWithParams', `instantiation result: ${reason}${where}`, {
      reason,
    });
  }
  return takeHandle();
}

/**
 * Sets the calling thread's capture mode and returns the previous one
 * (`cuThreadExchangeStreamCaptureMode`): `RELAXED` lets this thread make calls that are unsafe
 * during a capture (its own allocation bookkeeping) without invalidating captures in progress.
 */
export function exchangeCaptureMode(op: string, mode: number): number {
  i32[0] = mode;
  check(driverSymbol(op, 'cuThreadExchangeStreamCaptureMode')(i32), op, 'cuThreadExchangeStreamCaptureMode');
  return i32[0]!;
}

/** Destroys an executable graph (`cuGraphExecDestroy`); returns the CUresult for the cleanup path. */
export function graphExecDestroy(op: string, exec: bigint): number {
  return driverSymbol(op, 'cuGraphExecDestroy')(exec);
}

/**
 * Launches an executable graph on `stream` (`cuGraphLaunch`): the replay hot path, through the
 * Node-API addon's mailbox when it is loaded (`../hot.ts`), else through koffi.
 */
export function graphLaunch(op: string, exec: bigint, stream: bigint): void {
  if (gate.calls !== 0) passGate(op, 'cuGraphLaunch', 'queue');
  const hot = nativeAddon();
  const rc = hot === null ? koffiGraphLaunch(op)(exec, stream) : mailboxGraphLaunch(hot, exec, stream);
  if (rc === 0) return;
  graphLaunchFailed(op, hot, exec, stream, rc);
}

/** The mailbox form of `hot.graphLaunch(exec, stream)`: no Node-API arguments, no result value. */
function mailboxGraphLaunch(hot: HotAddon, exec: bigint, stream: bigint): number {
  const box = mailboxOf(hot);
  box.u64[MAILBOX.EXEC] = exec;
  box.u64[MAILBOX.STREAM] = stream;
  hot.graphLaunchFromMailbox();
  return box.i32[MAILBOX.RESULT]!;
}

/** Not a success: bind on first use and launch again (koffi where it cannot be bound); throws what stands. */
function graphLaunchFailed(op: string, hot: HotAddon | null, exec: bigint, stream: bigint, rc: number): void {
  if (hot !== null) rc = settle(op, hot, 'cuGraphLaunch', rc, () => mailboxGraphLaunch(hot, exec, stream), () => koffiGraphLaunch(op)(exec, stream));
  if (rc !== 0) throw cudaError(rc, op, 'cuGraphLaunch');
}

/** Uploads an executable graph's work to the device ahead of its first launch (`cuGraphUpload`). */
export function graphUpload(op: string, exec: bigint, stream: bigint): void {
  check(driverSymbol(op, 'cuGraphUpload')(exec, stream), op, 'cuGraphUpload');
}

/** What `cuGraphExecUpdate_v2` said. */
export interface ExecUpdateOutcome {
  readonly code: number;
  readonly result: number;
  readonly errorNode: bigint;
  readonly errorFromNode: bigint;
}

/** Updates `exec` in place from `graph` (`cuGraphExecUpdate_v2`); returns the code and result info. */
export function graphExecUpdate(op: string, exec: bigint, graph: bigint): ExecUpdateOutcome {
  const info = new Uint8Array(U.size);
  const code = driverSymbol(op, 'cuGraphExecUpdate_v2')(exec, graph, info);
  const v = new DataView(info.buffer);
  return {
    code,
    result: v.getInt32(U.result, true),
    errorNode: v.getBigUint64(U.errorNode, true),
    errorFromNode: v.getBigUint64(U.errorFromNode, true),
  };
}

/** Writes the graph as Graphviz DOT to `path` (`cuGraphDebugDotPrint`). */
export function graphDebugDotPrint(op: string, graph: bigint, path: string, flags: number): void {
  check(driverSymbol(op, 'cuGraphDebugDotPrint')(graph, path, flags), op, 'cuGraphDebugDotPrint');
}

/**
 * Turns node `node` of `exec`'s template on or off for later launches (`cuGraphNodeSetEnabled`):
 * through the addon's mailbox where it is loaded (a program that switches nodes per launch makes
 * it as often as it launches), else through koffi.
 */
export function nodeSetEnabled(op: string, exec: bigint, node: bigint, enabled: boolean): void {
  // Resolves the symbol (a driver without it throws here) and passes the host-call gate, on both paths.
  const set = driverSymbol(op, 'cuGraphNodeSetEnabled');
  const hot = nativeAddon();
  if (hot === null) {
    check(set(exec, node, enabled ? 1 : 0), op, 'cuGraphNodeSetEnabled');
    return;
  }
  const box = mailboxOf(hot);
  box.u64[MAILBOX.EXEC] = exec;
  box.u64[MAILBOX.NODE] = node;
  box.u32[MAILBOX.COUNT] = enabled ? 1 : 0;
  hot.nodeSetEnabledFromMailbox();
  if (box.i32[MAILBOX.RESULT] === 0) return;
  // Bind on first use and call again (koffi where it cannot be bound); throw what stands.
  const rc = settleMailbox(op, hot, 'cuGraphNodeSetEnabled', () => hot.nodeSetEnabledFromMailbox(), () => set(exec, node, enabled ? 1 : 0));
  if (rc !== 0) throw cudaError(rc, op, 'cuGraphNodeSetEnabled');
}

/** Whether node `node` of `exec`'s template runs when `exec` is launched (`cuGraphNodeGetEnabled`). */
export function nodeGetEnabled(op: string, exec: bigint, node: bigint): boolean {
  i32[0] = 0;
  check(driverSymbol(op, 'cuGraphNodeGetEnabled')(exec, node, i32), op, 'cuGraphNodeGetEnabled');
  return i32[0] !== 0;
}
