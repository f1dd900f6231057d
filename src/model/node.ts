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
 *   graphs built by hand and in graphs read back from the driver.
 *
 * Events are not nodes: in a capture they only carry dependencies between streams.
 */
import type { MemcpyDir } from './memcpy-dir.js';
import type { NodeId, StreamId } from './ids.js';

/** The kinds of node, as the strings used in records, specs and JSON. */
export type NodeKind = 'kernel' | 'memcpy' | 'memset' | 'hostCallback' | 'empty';

/** Every node kind, in the order of their storage codes. */
export const NODE_KINDS: readonly NodeKind[] = ['kernel', 'memcpy', 'memset', 'hostCallback', 'empty'];

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

/** A node record; switch on `kind` to reach the kind's fields. */
export type GraphNode = KernelNode | MemcpyNode | MemsetNode | HostCallbackNode | EmptyNode;

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

/** What `ComputeGraph.addNode` takes. */
export type NodeSpec = KernelNodeSpec | MemcpyNodeSpec | MemsetNodeSpec | HostCallbackNodeSpec | EmptyNodeSpec;

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
