/**
 * The storage behind `ComputeGraph` and `StreamCapture` (internal: not exported from the package).
 *
 * Why columns: a capture of a million ops must cost well under 200 bytes a node and record millions
 * of ops a second. One JS object per node (plus an array per adjacency list) costs several hundred
 * bytes and keeps the garbage collector busy, so nodes live column-wise in growable typed arrays,
 * indexed by node id; names are interned (kernel names repeat), and node records are built only
 * when asked for (`readNode`).
 *
 * Why linked edge lists ("forward star"): edges are added one at a time, by a capture and by hand
 * (`addEdge`), and read by traversals. Each edge is four integers (from, to, next-out, next-in) and
 * each node holds the heads of its two lists, so adding an edge is O(1) with no per-node arrays.
 * Out-lists append at the tail (they stay in insertion order, which is ascending for captures);
 * in-lists prepend.
 *
 * `ord` is a topological numbering kept valid on every edge (see dynamic-order.ts): edges always go
 * from a lower `ord` to a higher one. A capture only adds edges into its newest node, so there
 * `ord[i] = i` and keeping it costs nothing.
 */
import {
  KIND_EMPTY,
  KIND_HOST,
  KIND_KERNEL,
  KIND_MEMCPY,
  KIND_MEMSET,
  NODE_KINDS,
  type Dim3,
  type GraphNode,
} from './node.js';
import { decodeMemcpyDir } from './memcpy-dir.js';
import type { NodeId, StreamId } from './ids.js';

/** Number of uint32 parameter slots per node (a kernel needs grid[3], block[3], sharedMem). */
export const PARAM_STRIDE = 7;

const INITIAL_NODES = 64;
const INITIAL_EDGES = 64;

function grown<T extends Uint8Array | Int32Array | Uint32Array | Float64Array>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a.subarray(0, Math.min(a.length, length)) as never);
  return b;
}

export class GraphStore {
  /** Number of nodes. */
  n = 0;
  /** Number of edges. */
  m = 0;
  /** Bumped on every change, so derived indexes (reachability, order) know they are stale. */
  version = 0;

  // Node columns, indexed by node id.
  kind = new Uint8Array(INITIAL_NODES);
  /** Stream slot (index into `streamIds`), or −1 for none. */
  slot = new Int32Array(INITIAL_NODES);
  /** Interned display name. */
  name = new Uint32Array(INITIAL_NODES);
  /** Interned kernel function name or host-callback label (unused for other kinds). */
  text = new Uint32Array(INITIAL_NODES);
  /** PARAM_STRIDE slots per node: kernel grid xyz, block xyz, sharedMem; memcpy dir, srcDev, dstDev; memset value, elementSize. */
  param = new Uint32Array(INITIAL_NODES * PARAM_STRIDE);
  /** Byte count of a memcpy or memset (a double holds any safe integer). */
  size = new Float64Array(INITIAL_NODES);
  /** Per-node cost; null while every cost is the default 1 (most graphs never set one). */
  cost: Float64Array | null = null;
  /** Head of the out-edge list, −1 if none. */
  firstOut = new Int32Array(INITIAL_NODES);
  /** Tail of the out-edge list, −1 if none. */
  lastOut = new Int32Array(INITIAL_NODES);
  /** Head of the in-edge list, −1 if none. */
  firstIn = new Int32Array(INITIAL_NODES);
  /** Topological numbering: every edge goes from a lower ord to a higher one. */
  ord = new Uint32Array(INITIAL_NODES);

  // Edge columns, indexed by edge number (insertion order).
  from = new Uint32Array(INITIAL_EDGES);
  to = new Uint32Array(INITIAL_EDGES);
  nextOut = new Int32Array(INITIAL_EDGES);
  nextIn = new Int32Array(INITIAL_EDGES);

  // Interned strings.
  strings: string[] = [];
  stringIndex = new Map<string, number>();

  // Streams: a node stores a slot; slot → stream id, and how many nodes each slot holds.
  streamIds: number[] = [];
  slotOf = new Map<number, number>();
  slotCount: number[] = [];

  /** Interns `s`, returning its index. */
  intern(s: string): number {
    let i = this.stringIndex.get(s);
    if (i === undefined) {
      i = this.strings.length;
      this.strings.push(s);
      this.stringIndex.set(s, i);
    }
    return i;
  }

  /** The slot of stream id `stream`, registering it if new. */
  streamSlot(stream: number): number {
    let s = this.slotOf.get(stream);
    if (s === undefined) {
      s = this.streamIds.length;
      this.streamIds.push(stream);
      this.slotCount.push(0);
      this.slotOf.set(stream, s);
    }
    return s;
  }

  private growNodes(): void {
    const cap = this.kind.length * 2;
    this.kind = grown(this.kind, cap);
    this.slot = grown(this.slot, cap);
    this.name = grown(this.name, cap);
    this.text = grown(this.text, cap);
    this.param = grown(this.param, cap * PARAM_STRIDE);
    this.size = grown(this.size, cap);
    if (this.cost) {
      const c = grown(this.cost, cap);
      c.fill(1, this.n);
      this.cost = c;
    }
    this.firstOut = grown(this.firstOut, cap);
    this.lastOut = grown(this.lastOut, cap);
    this.firstIn = grown(this.firstIn, cap);
    this.ord = grown(this.ord, cap);
  }

  private growEdges(): void {
    const cap = this.from.length * 2;
    this.from = grown(this.from, cap);
    this.to = grown(this.to, cap);
    this.nextOut = grown(this.nextOut, cap);
    this.nextIn = grown(this.nextIn, cap);
  }

  /**
   * Appends a node with no edges and returns its id. The caller fills the kind's parameters
   * (`param`, `size`, `text`) right after, at index `id` (the arrays have room for it).
   */
  appendNode(kind: number, slot: number, nameIndex: number): number {
    const id = this.n;
    if (id === this.kind.length) this.growNodes();
    this.kind[id] = kind;
    this.slot[id] = slot;
    this.name[id] = nameIndex;
    this.firstOut[id] = -1;
    this.lastOut[id] = -1;
    this.firstIn[id] = -1;
    this.ord[id] = id;
    if (slot >= 0) this.slotCount[slot]!++;
    this.n = id + 1;
    this.version++;
    return id;
  }

  /** Sets a node's cost (allocating the cost column the first time a cost differs from 1). */
  setCost(id: number, cost: number): void {
    if (this.cost === null) {
      if (cost === 1) return;
      this.cost = new Float64Array(this.kind.length).fill(1);
    }
    this.cost[id] = cost;
  }

  /** The cost of node `id`. */
  costOf(id: number): number {
    return this.cost === null ? 1 : this.cost[id]!;
  }

  /**
   * Adds the edge u → v with no checks: the caller guarantees both exist, the edge is new, and
   * `ord[u] < ord[v]` (no cycle).
   */
  appendEdge(u: number, v: number): void {
    const e = this.m;
    if (e === this.from.length) this.growEdges();
    this.from[e] = u;
    this.to[e] = v;
    this.nextOut[e] = -1;
    const tail = this.lastOut[u]!;
    if (tail < 0) this.firstOut[u] = e;
    else this.nextOut[tail] = e;
    this.lastOut[u] = e;
    this.nextIn[e] = this.firstIn[v]!;
    this.firstIn[v] = e;
    this.m = e + 1;
    this.version++;
  }

  /**
   * True if the edge u → v exists. Walks u's out-list and v's in-list in step and stops when
   * either ends, so the cost is the smaller degree without keeping degree counts.
   */
  hasEdge(u: number, v: number): boolean {
    let a = this.firstOut[u]!;
    let b = this.firstIn[v]!;
    while (a >= 0 && b >= 0) {
      if (this.to[a] === v || this.from[b] === u) return true;
      a = this.nextOut[a]!;
      b = this.nextIn[b]!;
    }
    return false;
  }

  /** Successor ids of `u`, ascending. */
  successors(u: number): number[] {
    const out: number[] = [];
    for (let e = this.firstOut[u]!; e >= 0; e = this.nextOut[e]!) out.push(this.to[e]!);
    return sortSmall(out);
  }

  /** Predecessor ids of `v`, ascending. */
  predecessors(v: number): number[] {
    const out: number[] = [];
    for (let e = this.firstIn[v]!; e >= 0; e = this.nextIn[e]!) out.push(this.from[e]!);
    return sortSmall(out);
  }

  /** The stream id of node `id`, or null. */
  streamOf(id: number): StreamId | null {
    const s = this.slot[id]!;
    return s < 0 ? null : (this.streamIds[s]! as StreamId);
  }

  /** Builds the record of node `id` (a fresh object each call). */
  readNode(id: number): GraphNode {
    const kind = this.kind[id]!;
    const base = {
      id: id as NodeId,
      kind: NODE_KINDS[kind]!,
      name: this.strings[this.name[id]!]!,
      stream: this.streamOf(id),
      cost: this.costOf(id),
    };
    const p = id * PARAM_STRIDE;
    const q = this.param;
    switch (kind) {
      case KIND_KERNEL:
        return {
          ...base,
          kind: 'kernel',
          functionName: this.strings[this.text[id]!]!,
          grid: [q[p]!, q[p + 1]!, q[p + 2]!] as Dim3,
          block: [q[p + 3]!, q[p + 4]!, q[p + 5]!] as Dim3,
          sharedMem: q[p + 6]!,
        };
      case KIND_MEMCPY:
        return { ...base, kind: 'memcpy', dir: decodeMemcpyDir(q[p]!, q[p + 1]!, q[p + 2]!), sizeBytes: this.size[id]! };
      case KIND_MEMSET:
        return {
          ...base,
          kind: 'memset',
          sizeBytes: this.size[id]!,
          value: q[p]!,
          elementSize: q[p + 1]! as 1 | 2 | 4,
        };
      case KIND_HOST:
        return { ...base, kind: 'hostCallback', label: this.strings[this.text[id]!]! };
      case KIND_EMPTY:
      default:
        return { ...base, kind: 'empty' };
    }
  }

  /**
   * Cuts every array to its used length. A finished capture is read far more than it grows, and
   * doubling leaves up to half of each array unused.
   */
  shrinkToFit(): void {
    const n = Math.max(this.n, 1);
    const m = Math.max(this.m, 1);
    this.kind = this.kind.slice(0, n);
    this.slot = this.slot.slice(0, n);
    this.name = this.name.slice(0, n);
    this.text = this.text.slice(0, n);
    this.param = this.param.slice(0, n * PARAM_STRIDE);
    this.size = this.size.slice(0, n);
    if (this.cost) this.cost = this.cost.slice(0, n);
    this.firstOut = this.firstOut.slice(0, n);
    this.lastOut = this.lastOut.slice(0, n);
    this.firstIn = this.firstIn.slice(0, n);
    this.ord = this.ord.slice(0, n);
    this.from = this.from.slice(0, m);
    this.to = this.to.slice(0, m);
    this.nextOut = this.nextOut.slice(0, m);
    this.nextIn = this.nextIn.slice(0, m);
  }
}

/** Sorts a short id list ascending; insertion sort is O(k) on the already-sorted lists captures make. */
export function sortSmall(a: number[]): number[] {
  if (a.length > 32) return a.sort((x, y) => x - y);
  for (let i = 1; i < a.length; i++) {
    const x = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > x) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = x;
  }
  return a;
}
