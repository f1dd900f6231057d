import type { CU_GRAPH_NODE_TYPE } from '../../driver/layouts.js';
import type { MemcpyDir } from '../../model/memcpy-dir.js';

/** A graph node's kind, from `CUgraphNodeType` (`'unknown'` for a value newer than this package). */
export type GraphNodeType = (typeof CU_GRAPH_NODE_TYPE)[number] | 'unknown';

/** A kernel node's launch. */
export interface KernelNodeInfo {
  /** The kernel's name (`cuFuncGetName`; mangled for C++ kernels without `extern "C"`). */
  readonly name: string;
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedMem: number;
}

/** A copy node. */
export interface MemcpyNodeInfo {
  /** The model's `MemcpyDir` (peer-to-peer copies read back as `DeviceToDevice`), or a host-to-host copy the model has no name for. */
  readonly direction: Exclude<MemcpyDir, object> | 'HostToHost';
  /** Bytes copied (width × height × depth). */
  readonly byteLength: number;
  /** Source address (host or device). */
  readonly src: bigint;
  /** Destination address (host or device). */
  readonly dst: bigint;
}

/** A memset node. */
export interface MemsetNodeInfo {
  readonly dst: bigint;
  readonly value: number;
  /** 1, 2 or 4. */
  readonly elementSize: number;
  /** Elements per row. */
  readonly width: number;
  /** Rows. */
  readonly height: number;
  /** Bytes from one row to the next (what the driver reports; unused for one row). */
  readonly pitch: number;
  /** Bytes set (width × height × elementSize). */
  readonly byteLength: number;
}

/** A host node (`cuGraphHostNodeGetParams`). */
export interface HostNodeInfo {
  /** The C function pointer the node calls. */
  readonly fn: bigint;
  /** The pointer it passes. */
  readonly userData: bigint;
  /** The `HostFunction`'s label when the node calls one of cudagraph's, else null. */
  readonly label: string | null;
}

/** An event record or wait node's event (`cuGraphEventRecordNodeGetEvent` / `…WaitNodeGetEvent`). */
export interface EventNodeInfo {
  /** The `CUevent`. */
  readonly handle: bigint;
  /** The event's number in this read-back: 0, 1, … in the order events are first seen (the model's event id). */
  readonly number: number;
}

/** An allocation node (`cuGraphMemAllocNodeGetParams`). */
export interface MemAllocNodeInfo {
  readonly byteLength: number;
  /** The device ordinal the memory lives on. */
  readonly device: number;
  /** The address the driver fixed for the allocation. */
  readonly dptr: bigint;
}

/** A free node (`cuGraphMemFreeNodeGetParams`). */
export interface MemFreeNodeInfo {
  /** The address it frees. */
  readonly dptr: bigint;
}

/** An edge's data as the driver reports it (`CUgraphEdgeData`). */
export interface EdgeInfo {
  /** `from_port`: 0 completion, 1 programmatic (trigger), 2 launch order. */
  readonly fromPort: number;
  /** `type`: 0 default, 1 programmatic. */
  readonly type: number;
}

/** One node of a graph read back from the driver. */
export interface CapturedNodeInfo {
  /** Position in `graph.nodes()`; edges refer to nodes by it. */
  readonly index: number;
  readonly type: GraphNodeType;
  /** Present for kernel nodes. */
  readonly kernel?: KernelNodeInfo;
  /** Present for memcpy nodes. */
  readonly memcpy?: MemcpyNodeInfo;
  /** Present for memset nodes. */
  readonly memset?: MemsetNodeInfo;
  /** Present for host nodes. */
  readonly host?: HostNodeInfo;
  /** Present for event record and wait nodes. */
  readonly event?: EventNodeInfo;
  /** Present for child graph nodes: the child, read back too. */
  readonly child?: GraphReadBack;
  /**
   * Present for conditional nodes cudagraph added: the kind and each body, read back too (CUDA 13.0
   * cannot read a conditional node's parameters: those of other conditional nodes are unknown).
   */
  readonly conditional?: { readonly kind: 'if' | 'while' | 'switch'; readonly bodies: readonly GraphReadBack[] };
  /** Present for allocation nodes. */
  readonly memAlloc?: MemAllocNodeInfo;
  /** Present for free nodes. */
  readonly memFree?: MemFreeNodeInfo;
}

/** A graph read back from the driver: its nodes and its real dependency edges. */
export interface GraphReadBack {
  readonly nodes: readonly CapturedNodeInfo[];
  /** `[from, to]`: `to` runs after `from` (indices into `nodes`). */
  readonly edges: ReadonlyArray<readonly [number, number]>;
  /** Each edge's data, in the order of `edges`. */
  readonly edgeData: readonly EdgeInfo[];
}
