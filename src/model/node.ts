/**
 * Node records of a `ComputeGraph`, and the specs `addNode` takes.
 *
 * A record is a plain object, built fresh by `graph.node(id)` / `graph.nodes()` from the graph's
 * columns: changing it does not change the graph. Its `kind` is one of
 *
 * - `'kernel'`: a kernel launch (`functionName`, `grid`, `block` as [x, y, z], `sharedMem` bytes);
 * - `'memcpy'`: a copy (`dir`, `sizeBytes`);
 * - `'memset'`: a fill (`sizeBytes`, `value`, `elementSize` 1, 2 or 4 bytes);
 * - `'hostCallback'`: a host function (`label`);
 * - `'empty'`: no work, only dependencies: CUDA's empty node, used as a barrier or join point in
 *   graphs built by hand and in graphs read back from the driver;
 * - `'eventRecord'` / `'eventWait'`: records or waits on an event (`event`), CUDA's event record
 *   and event wait nodes: how a graph signals work outside it, or waits for it;
 * - `'childGraph'`: a whole graph run as one node (`graph`, a read-only copy taken when the node
 *   was added, as `cuGraphAddChildGraphNode` clones its child);
 * - `'memAlloc'` / `'memFree'`: graph memory, CUDA's allocation node (`sizeBytes` on `device`) and
 *   free node (`alloc`: the allocation node it frees, or null for memory allocated outside the graph);
 * - `'conditional'`: control flow on the GPU (`type` 'if', 'while' or 'switch', its `bodies`, read-only
 *   copies as a child graph's `graph` is, its condition's `handle` and the trip `estimate`; see
 *   conditional.ts).
 *
 * In a capture, events between capturing streams are not nodes: they only carry dependencies.
 */
import type { MemcpyDir } from './memcpy-dir.js';
import type { CaptureEvent, NodeId, StreamId } from './ids.js';
import type { ComputeGraph } from './compute-graph.js';
import type { ConditionalHandleRecord, ConditionalHandleSpec, ConditionalType } from './conditional.js';

/** The kinds of node, as the strings used in records, specs and JSON. */
export type NodeKind =
  | 'kernel'
  | 'memcpy'
  | 'memset'
  | 'hostCallback'
  | 'empty'
  | 'eventRecord'
  | 'eventWait'
  | 'childGraph'
  | 'memAlloc'
  | 'memFree'
  | 'conditional';

/** Every node kind, in the order of their storage codes. */
export const NODE_KINDS: readonly NodeKind[] = [
  'kernel',
  'memcpy',
  'memset',
  'hostCallback',
  'empty',
  'eventRecord',
  'eventWait',
  'childGraph',
  'memAlloc',
  'memFree',
  'conditional',
];

/** The kinds the first graph document format (version 1) knows. */
export const NODE_KINDS_V1: readonly NodeKind[] = ['kernel', 'memcpy', 'memset', 'hostCallback', 'empty'];

/** Storage code of `'kernel'` (a kind is its index in NODE_KINDS, kept in a Uint8Array column). */
export const KIND_KERNEL = 0;
/** Storage code of `'memcpy'`. */
export const KIND_MEMCPY = 1;
/** Storage code of `'memset'`. */
export const KIND_MEMSET = 2;
/** Storage code of `'hostCallback'`. */
export const KIND_HOST = 3;
/** Storage code of `'empty'`. */
export const KIND_EMPTY = 4;
/** Storage code of `'eventRecord'`. */
export const KIND_EVENT_RECORD = 5;
/** Storage code of `'eventWait'`. */
export const KIND_EVENT_WAIT = 6;
/** Storage code of `'childGraph'`. */
export const KIND_CHILD = 7;
/** Storage code of `'memAlloc'`. */
export const KIND_MEM_ALLOC = 8;
/** Storage code of `'memFree'`. */
export const KIND_MEM_FREE = 9;
/** Storage code of `'conditional'`. */
export const KIND_CONDITIONAL = 10;

/** How deep child graphs and conditional bodies may nest (a graph holding a child holding a body … is this many levels). */
export const MAX_GRAPH_DEPTH = 64;

/**
 * The most nodes one graph's child graphs and conditional bodies may hold in all, nested ones
 * counted. Read-only children
 * are shared, so without a bound a few nodes could stand for an exponentially large graph (three
 * children of three children … twelve deep is half a million nodes) that every walk then expands.
 */
export const MAX_CHILD_NODES = 1 << 20;

/**
 * A launch dimension as a node record holds it: always [x, y, z]. (Named apart from the object
 * layer's `Dim3`, the input form `n | [x] | [x, y] | [x, y, z]`, which `DimInput` matches.)
 */
export type Dim3Tuple = readonly [x: number, y: number, z: number];

/** What a spec may give for a dimension: `n` (meaning [n, 1, 1]), [x], [x, y] or [x, y, z]. */
export type DimInput = number | readonly [number] | readonly [number, number] | readonly [number, number, number];

/** Fields every node record has. */
export interface NodeBase {
  readonly id: NodeId;
  /** A display name; captured nodes carry the name given to `record*` (a kernel's function name). */
  readonly name: string;
  /** The stream the node was recorded on; `null` for a node built by hand without one. */
  readonly stream: StreamId | null;
  /** The node's cost for critical-path analysis (any unit; default 1). */
  readonly cost: number;
}

/** A kernel launch. */
export interface KernelNode extends NodeBase {
  readonly kind: 'kernel';
  /** The kernel function to launch (the name a module exports). */
  readonly functionName: string;
  readonly grid: Dim3Tuple;
  readonly block: Dim3Tuple;
  /** Dynamic shared memory per block, in bytes. */
  readonly sharedMem: number;
}

/** A memory copy. */
export interface MemcpyNode extends NodeBase {
  readonly kind: 'memcpy';
  readonly dir: MemcpyDir;
  readonly sizeBytes: number;
}

/** A memory fill: `sizeBytes / elementSize` elements set to `value`. */
export interface MemsetNode extends NodeBase {
  readonly kind: 'memset';
  readonly sizeBytes: number;
  readonly value: number;
  readonly elementSize: 1 | 2 | 4;
}

/** A host function call. */
export interface HostCallbackNode extends NodeBase {
  readonly kind: 'hostCallback';
  readonly label: string;
}

/** A node that does no work: a barrier / join point. */
export interface EmptyNode extends NodeBase {
  readonly kind: 'empty';
}

/** Records an event: work waiting on the event (in this graph or outside it) waits for this node's predecessors. */
export interface EventRecordNode extends NodeBase {
  readonly kind: 'eventRecord';
  readonly event: CaptureEvent;
}

/** Waits on an event: the node's successors run after the event's last record. */
export interface EventWaitNode extends NodeBase {
  readonly kind: 'eventWait';
  readonly event: CaptureEvent;
}

/**
 * A child graph: `graph` runs as one node. It is a read-only copy, taken when the node was added
 * (changing it is refused; `graph.clone()` gives an editable copy).
 */
export interface ChildGraphNode extends NodeBase {
  readonly kind: 'childGraph';
  readonly graph: ComputeGraph;
}

/** Allocates `sizeBytes` of graph memory on `device`; the memory is valid from this node on. */
export interface MemAllocNode extends NodeBase {
  readonly kind: 'memAlloc';
  readonly sizeBytes: number;
  readonly device: number;
}

/** Frees graph memory: the allocation of node `alloc`, or (`null`) memory allocated outside this graph. */
export interface MemFreeNode extends NodeBase {
  readonly kind: 'memFree';
  readonly alloc: NodeId | null;
}

/**
 * A conditional node: runs its `bodies` as its `type` says, on the value of its condition
 * (`handle`), which kernels set on the GPU (see conditional.ts). Each body is a read-only copy, as a
 * child graph's `graph` is. Named apart from the driver layer's `ConditionalNode`, a node of a real
 * graph.
 */
export interface ConditionalNodeRecord extends NodeBase {
  readonly kind: 'conditional';
  readonly type: ConditionalType;
  readonly handle: ConditionalHandleRecord;
  /**
   * How often the bodies are expected to run: a while loop's trip count, or for 'if' and 'switch'
   * the chance (0..1) that a body runs. The default `cost` is `estimate` times the largest body's
   * critical path.
   */
  readonly estimate: number;
  /** 'if': [then] or [then, else]; 'while': [body]; 'switch': one body per case value. */
  readonly bodies: readonly ComputeGraph[];
}

/** A node record; switch on `kind` to reach the kind's fields. */
export type GraphNode =
  | KernelNode
  | MemcpyNode
  | MemsetNode
  | HostCallbackNode
  | EmptyNode
  | EventRecordNode
  | EventWaitNode
  | ChildGraphNode
  | MemAllocNode
  | MemFreeNode
  | ConditionalNodeRecord;

/** Fields every spec may give. */
export interface NodeSpecBase {
  /** Display name; defaults to the kernel's function name, the callback's label, or the kind. */
  readonly name?: string;
  /** The stream the node belongs to, if any (it gives the node its DOT cluster). */
  readonly stream?: StreamId | null;
  /** Cost for critical-path analysis, a finite number ≥ 0; default 1. */
  readonly cost?: number;
}

/**
 * A kernel node. Limits are CUDA's (every compute capability): grid x 1..2^31−1, y and z
 * 1..65535; block x and y 1..1024, z 1..64, x·y·z ≤ 1024; sharedMem 0..2^32−1.
 */
export interface KernelNodeSpec extends NodeSpecBase {
  readonly kind: 'kernel';
  readonly functionName: string;
  readonly grid: DimInput;
  readonly block: DimInput;
  /** Default 0. */
  readonly sharedMem?: number;
}

/** A copy node; `sizeBytes` is an integer in 0..Number.MAX_SAFE_INTEGER. */
export interface MemcpyNodeSpec extends NodeSpecBase {
  readonly kind: 'memcpy';
  readonly dir: MemcpyDir;
  readonly sizeBytes: number;
}

/**
 * A fill node. `elementSize` (default 1) is 1, 2 or 4; `value` fits in that many bytes;
 * `sizeBytes` is a multiple of `elementSize`.
 */
export interface MemsetNodeSpec extends NodeSpecBase {
  readonly kind: 'memset';
  readonly sizeBytes: number;
  readonly value: number;
  readonly elementSize?: 1 | 2 | 4;
}

/** A host callback node. */
export interface HostCallbackNodeSpec extends NodeSpecBase {
  readonly kind: 'hostCallback';
  readonly label: string;
}

/** An empty (barrier) node. */
export interface EmptyNodeSpec extends NodeSpecBase {
  readonly kind: 'empty';
}

/** An event record node; `event` is an integer in 0..2^32−1. */
export interface EventRecordNodeSpec extends NodeSpecBase {
  readonly kind: 'eventRecord';
  readonly event: number;
}

/** An event wait node; `event` is an integer in 0..2^32−1. */
export interface EventWaitNodeSpec extends NodeSpecBase {
  readonly kind: 'eventWait';
  readonly event: number;
}

/**
 * A child graph node. `graph` is copied (later changes to it do not reach this node). As CUDA
 * does, a graph holding allocation or free nodes cannot be a child. The default `cost` is the
 * child's critical path (by its own nodes' costs), so schedules see the child's length.
 */
export interface ChildGraphNodeSpec extends NodeSpecBase {
  readonly kind: 'childGraph';
  readonly graph: ComputeGraph;
}

/** An allocation node: `sizeBytes` an integer ≥ 1; `device` (default 0) an integer in 0..2^32−1. */
export interface MemAllocNodeSpec extends NodeSpecBase {
  readonly kind: 'memAlloc';
  readonly sizeBytes: number;
  readonly device?: number;
}

/**
 * A free node. `alloc` names a `memAlloc` node of the same graph that no other free node frees
 * (CUDA refuses to free an allocation twice in one graph), or is null (the default) for memory a
 * graph or stream outside this graph allocated.
 */
export interface MemFreeNodeSpec extends NodeSpecBase {
  readonly kind: 'memFree';
  readonly alloc?: NodeId | null;
}

/**
 * A conditional node. `bodies` are copied (later changes to them do not reach this node): 1 or 2
 * for 'if' (then, else), 1 for 'while', 1..65535 for 'switch'. A body may hold only kernel, empty,
 * childGraph, memset, memcpy and conditional nodes, also inside its child graphs (CUDA's rule).
 * `handle` (see `ConditionalHandleSpec`) defaults to a fresh id of this graph; `estimate` (default 1)
 * is a finite number ≥ 0, at most 1 for 'if' and 'switch'. The default `cost` is `estimate` times the
 * largest body's critical path (by the bodies' own costs); a given `cost` replaces it, as for a
 * child graph.
 */
export interface ConditionalNodeSpec extends NodeSpecBase {
  readonly kind: 'conditional';
  readonly type: ConditionalType;
  readonly bodies: readonly ComputeGraph[];
  readonly handle?: ConditionalHandleSpec;
  readonly estimate?: number;
}

/** What `ComputeGraph.addNode` takes. */
export type NodeSpec =
  | KernelNodeSpec
  | MemcpyNodeSpec
  | MemsetNodeSpec
  | HostCallbackNodeSpec
  | EmptyNodeSpec
  | EventRecordNodeSpec
  | EventWaitNodeSpec
  | ChildGraphNodeSpec
  | MemAllocNodeSpec
  | MemFreeNodeSpec
  | ConditionalNodeSpec;

/** Whether an edge is an ordinary dependency or a programmatic one (CUDA's `CUgraphDependencyType`). */
export type EdgeKind = 'plain' | 'programmatic';

/**
 * When an edge fires, from its upstream node (CUDA's `from_port`): `'completion'` when the node
 * has finished (with its memory visible downstream), `'trigger'` when every block of the upstream
 * kernel has triggered (`cudaTriggerProgrammaticLaunchCompletion`) or exited, `'launchOrder'` when
 * every block of the upstream kernel has begun.
 */
export type EdgePort = 'completion' | 'trigger' | 'launchOrder';

/**
 * An edge's data (CUDA's `CUgraphEdgeData`). The rules are CUDA's: a port other than
 * `'completion'` leaves a kernel node; a programmatic edge joins two kernel nodes and leaves by
 * `'trigger'` or `'launchOrder'`; `'trigger'` is only for programmatic edges.
 */
export interface EdgeData {
  readonly kind: EdgeKind;
  readonly port: EdgePort;
}

/** An edge and its data, as `ComputeGraph.edgeRecords()` lists them. */
export interface GraphEdge extends EdgeData {
  readonly from: NodeId;
  readonly to: NodeId;
}

/** What `addEdge` takes for an edge's data: `kind` defaults to 'plain', `port` to the kind's usual port ('completion' / 'trigger'). */
export interface EdgeSpec {
  readonly kind?: EdgeKind;
  readonly port?: EdgePort;
}

/** CUDA's largest grid x dimension (2^31 − 1; the launch limits are the same on every compute capability since 3.0). */
export const GRID_X_MAX = 0x7fff_ffff;
/** CUDA's largest grid y or z dimension. */
export const GRID_YZ_MAX = 65535;
/** CUDA's largest block x or y dimension. */
export const BLOCK_XY_MAX = 1024;
/** CUDA's largest block z dimension. */
export const BLOCK_Z_MAX = 64;
/** CUDA's most threads per block (x·y·z). */
export const BLOCK_THREADS_MAX = 1024;
