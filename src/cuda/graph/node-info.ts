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
}

/** A graph read back from the driver: its nodes and its real dependency edges. */
export interface GraphReadBack {
  readonly nodes: readonly CapturedNodeInfo[];
  /** `[from, to]`: `to` runs after `from` (indices into `nodes`). */
  readonly edges: ReadonlyArray<readonly [number, number]>;
}
