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
 * (`addEdge`), and read by traversals. Each edge is four integers (from, to, next-out, next-in),
 * kept as two pairs, (to, next-out) and (from, next-in), so that a step along either list reads one
 * cache line, not two (edge-pairs.ts); each node holds the heads of its two lists, so adding an edge
 * is O(1) with no per-node arrays.
 * Edges are numbered from 1 so that 0 means "none" and fresh (zeroed) arrays need no filling.
 * Lists prepend; readers that promise ascending ids sort (`sortSmall` is O(k) on the reversed
 * lists a capture makes).
 *
 * `order` is a topological order kept valid on every edge (see dynamic-order.ts): edges always go
 * from a node earlier in it to a later one. A capture only adds edges into its newest node, so its
 * ids already are such an order: `order` stays null (meaning id order) until an edge added by hand
 * goes from a newer node to an older one. Readers get it as `ord`, a dense numbering built from
 * the list when they ask after it moved.
 *
 * Finding an edge (`findEdge`) walks two lists until walking has cost about as much as hashing
 * every edge would; then an edge set (edge-set.ts) answers in O(1) from there on.
 */
import {
  KIND_CHILD,
  KIND_CONDITIONAL,
  KIND_EMPTY,
  KIND_EVENT_RECORD,
  KIND_EVENT_WAIT,
  KIND_HOST,
  KIND_KERNEL,
  KIND_MEM_ALLOC,
  KIND_MEM_FREE,
  KIND_MEMCPY,
  KIND_MEMSET,
  type Dim3Tuple,
  type GraphNode,
} from './node.js';
import { decodeMemcpyDir, DIR_P2P, type MemcpyDir } from './memcpy-dir.js';
import { PLAIN_EDGE } from './edge-data.js';
import { OrderList } from './order-list.js';
import { EdgeSet } from './edge-set.js';
import type { CaptureEvent, NodeId, StreamId } from './ids.js';
import type { ComputeGraph } from './compute-graph.js';
import type { ConditionalHandleRecord, ConditionalType } from './conditional.js';

/** A conditional node's parameters, kept in the `conditionals` side map (bodies are read-only copies). */
export interface ConditionalParams {
  readonly type: ConditionalType;
  readonly handle: ConditionalHandleRecord;
  readonly estimate: number;
  readonly bodies: readonly ComputeGraph[];
}

/**
 * Number of uint32 parameter slots per node, written by the `set*` methods:
 *
 * - kernel: grid x, block x, sharedMem, function name (interned);
 * - memcpy: direction code, size (low word, high word);
 * - memset: value, size (low word, high word), elementSize;
 * - hostCallback: –, –, –, label (interned);
 * - eventRecord, eventWait: event id;
 * - memAlloc: device, size (low word, high word);
 * - memFree: the allocation node's id + 1 (0: memory allocated outside the graph).
 *
 * A child graph's graph lives in the `children` side map, a conditional node's parameters in the
 * `conditionals` one (both kinds are rare and hold graphs, which no column can).
 *
 * Four slots, not the nine a full launch configuration takes: nearly every kernel is
 * one-dimensional and nearly every copy is not peer-to-peer, so the rare y/z dimensions and peer
 * devices live in small side maps, and a node costs 16 bytes of parameters instead of 36.
 */
const PARAM_STRIDE = 4;
const SIZE_LO = 1;
const TEXT = 3;

const INITIAL_NODES = 64;
const INITIAL_EDGES = 64;
const TWO_32 = 2 ** 32;
/** Steps `findEdge` may walk on any graph before it builds the edge set (small graphs never do). */
const EDGE_SET_MIN_STEPS = 4096;

function grown<T extends Uint8Array | Int32Array | Uint32Array | Float64Array>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a.subarray(0, Math.min(a.length, length)) as never);
  return b;
}

/** The columns of one graph (see the file comment). Internal: used by ComputeGraph and StreamCapture. */
export class GraphStore {
  /** Number of nodes. */
  n = 0;
  /** Number of edges; edges are numbered 1..m. */
  m = 0;
  /** Bumped on every change, so derived indexes (reachability, order) know they are stale. */
  version = 0;
  /**
   * The factor the columns grow by when full. A capture's store grows by 4 until `shrinkToFit`:
   * growing copies the columns into fresh memory, and first touching fresh pages is most of what
   * growing costs (doubling, about a third of a 10M-op capture's CPU time was the kernel's, mostly
   * page faults). A larger step makes fewer copies (the untouched end of a fresh array costs no
   * pages), and `shrinkToFit` cuts the excess at the end; a graph built by hand has no such end, so
   * it doubles.
   */
  growth = 2;

  // Node columns, indexed by node id.
  kind = new Uint8Array(INITIAL_NODES);
  /** Stream slot (index into `streamIds`), or −1 for none. */
  slot = new Int32Array(INITIAL_NODES);
  /** Interned display name. */
  name = new Uint32Array(INITIAL_NODES);
  /** PARAM_STRIDE slots per node (see PARAM_STRIDE). */
  param = new Uint32Array(INITIAL_NODES * PARAM_STRIDE);
  /** A kernel's [grid y, grid z, block y, block z], for the kernels where one is not 1. */
  dims = new Map<number, readonly number[]>();
  /** A peer-to-peer copy's [srcDevice, dstDevice]. */
  peers = new Map<number, readonly number[]>();
  /** A child graph node's graph (a read-only copy). */
  children = new Map<number, ComputeGraph>();
  /** A conditional node's parameters. */
  conditionals = new Map<number, ConditionalParams>();
  /** Conditional handle id → the conditional node of this graph it serves (one node per handle). */
  handleNodes = new Map<number, number>();
  /** The id a conditional node's handle gets when its spec leaves it out: one more than the largest so far. */
  nextHandle = 0;
  /** Allocation node id → the free node of this graph that frees it. */
  freedBy = new Map<number, number>();
  /** How deep child graphs and bodies nest in this graph: 1 without them, else 1 + the deepest one's. */
  depth = 1;
  /** The nodes this graph's child graphs and bodies hold in all, nested ones counted (see MAX_CHILD_NODES). */
  childNodes = 0;
  /** Per-node cost; null while every cost is the default 1 (most graphs never set one). */
  cost: Float64Array | null = null;
  /** First edge of the out-list, 0 if none. */
  firstOut = new Uint32Array(INITIAL_NODES);
  /** First edge of the in-list, 0 if none. */
  firstIn = new Uint32Array(INITIAL_NODES);
  /** Topological order (every edge goes from an earlier node to a later one); null means id order. */
  order: OrderList | null = null;
  // The dense numbering `ord` last built from `order`, and the list's move count it was built at.
  private dense: Uint32Array | null = null;
  private denseAt = -1;
  /** The edges by (from, to), once walking lists has cost as much as building it (`findEdge`). */
  private edgeSet: EdgeSet | null = null;
  /** List steps `findEdge` has walked since the edge set was last dropped. */
  private walked = 0;

  // Edges, as pairs indexed by edge number 1..m (pair 0 unused; edge-pairs.ts).
  /** Edge e's target at [2e], the next edge of its source's out-list at [2e + 1]. */
  outs = new Uint32Array(2 * INITIAL_EDGES);
  /** Edge e's source at [2e], the next edge of its target's in-list at [2e + 1]. */
  ins = new Uint32Array(2 * INITIAL_EDGES);
  /** Edge number → its data code (edge-data.ts), for the edges that are not plain. */
  edgeCodes = new Map<number, number>();

  // Interned strings.
  strings: string[] = [];
  stringIndex = new Map<string, number>();

  // Streams: a node stores a slot; slot → stream id, and how many nodes each slot holds.
  streamIds: number[] = [];
  slotCount: number[] = [];
  private slotOf = new Map<number, number>();
  /** slot + 1 for stream ids below 256 (0: none): the common ids skip the Map on every record. */
  private smallSlot = new Int32Array(256);

  /** The slot of stream id `stream`, or −1 if it has none. */
  findSlot(stream: number): number {
    if (stream < 256) return this.smallSlot[stream]! - 1;
    const s = this.slotOf.get(stream);
    return s === undefined ? -1 : s;
  }

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
    let s = this.findSlot(stream);
    if (s < 0) {
      s = this.streamIds.length;
      this.streamIds.push(stream);
      this.slotCount.push(0);
      if (stream < 256) this.smallSlot[stream] = s + 1;
      else this.slotOf.set(stream, s);
    }
    return s;
  }

  private growNodes(): void {
    this.grownBy(this.kind.length, (cap) => {
      this.kind = grown(this.kind, cap);
      this.slot = grown(this.slot, cap);
      this.name = grown(this.name, cap);
      this.param = grown(this.param, cap * PARAM_STRIDE);
      if (this.cost) this.cost = grown(this.cost, cap).fill(1, this.n);
      this.firstOut = grown(this.firstOut, cap);
      this.firstIn = grown(this.firstIn, cap);
      if (this.order) this.order.grow(cap);
    });
  }

  private growEdges(): void {
    this.grownBy(this.outs.length / 2, (cap) => {
      this.outs = grown(this.outs, 2 * cap);
      this.ins = grown(this.ins, 2 * cap);
    });
  }

  /**
   * Calls `grow` with `length × growth`; when that is refused for memory and `growth` is above 2,
   * with `length × 2`, so the larger step of a capture never fails where doubling would not. The
   * retry also cuts back the columns the refused step had grown (`grown` copies what fits, and
   * nothing past `n` is in use), so every column of the group ends the same length.
   */
  private grownBy(length: number, grow: (cap: number) => void): void {
    if (this.growth <= 2) return grow(length * 2);
    try {
      grow(length * this.growth);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      grow(length * 2);
    }
  }

  /**
   * Appends a node with no edges and returns its id. The caller then sets the kind's parameters
   * with the matching `set*` method (the arrays have room for it, and hold zeros there).
   */
  appendNode(kind: number, slot: number, nameIndex: number): number {
    const id = this.n;
    if (id >= this.kind.length) this.growNodes();
    this.kind[id] = kind;
    this.slot[id] = slot;
    this.name[id] = nameIndex;
    // A new node has no edges: any place in the order is valid, and the end keeps ids in order.
    if (this.order) this.order.append(id);
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

  /** Sets kernel `id`'s parameters for a one-dimensional launch (the capture's hot path). */
  setKernel1D(id: number, functionName: number, gridX: number, blockX: number, sharedMem: number): void {
    const p = id * PARAM_STRIDE;
    const q = this.param;
    q[p] = gridX;
    q[p + 1] = blockX;
    q[p + 2] = sharedMem;
    q[p + TEXT] = functionName;
  }

  /** Sets kernel `id`'s parameters; grid and block are [x, y, z]. */
  setKernel(id: number, functionName: number, grid: ArrayLike<number>, block: ArrayLike<number>, sharedMem: number): void {
    this.setKernel1D(id, functionName, grid[0]!, block[0]!, sharedMem);
    if (grid[1] !== 1 || grid[2] !== 1 || block[1] !== 1 || block[2] !== 1) this.dims.set(id, [grid[1]!, grid[2]!, block[1]!, block[2]!]);
  }

  /** Sets copy `id`'s parameters (`dir`: a storage code from memcpy-dir.ts). */
  setMemcpy(id: number, dir: number, sizeBytes: number, srcDevice: number, dstDevice: number): void {
    this.param[id * PARAM_STRIDE] = dir;
    this.setSize(id, sizeBytes);
    if (dir === DIR_P2P) this.peers.set(id, [srcDevice, dstDevice]);
  }

  /** Sets fill `id`'s parameters. */
  setMemset(id: number, sizeBytes: number, value: number, elementSize: number): void {
    const p = id * PARAM_STRIDE;
    this.param[p] = value;
    this.setSize(id, sizeBytes);
    this.param[p + 3] = elementSize;
  }

  /** Sets host callback `id`'s label (interned). */
  setHost(id: number, label: number): void {
    this.param[id * PARAM_STRIDE + TEXT] = label;
  }

  /** Sets event node `id`'s event. */
  setEvent(id: number, event: number): void {
    this.param[id * PARAM_STRIDE] = event;
  }

  /** Sets allocation node `id`'s parameters. */
  setMemAlloc(id: number, sizeBytes: number, device: number): void {
    this.param[id * PARAM_STRIDE] = device;
    this.setSize(id, sizeBytes);
  }

  /** Sets free node `id`'s allocation (−1: memory allocated outside the graph). */
  setMemFree(id: number, alloc: number): void {
    this.param[id * PARAM_STRIDE] = alloc + 1;
    if (alloc >= 0) this.freedBy.set(alloc, id);
  }

  /** Sets child graph node `id`'s graph (a read-only copy) and how deep it nests. */
  setChild(id: number, graph: ComputeGraph, depth: number, expanded: number): void {
    this.children.set(id, graph);
    this.depth = Math.max(this.depth, depth + 1);
    this.childNodes += expanded;
  }

  /** Sets conditional node `id`'s parameters; `depth` is its deepest body's, `expanded` the nodes its bodies hold in all. */
  setConditional(id: number, params: ConditionalParams, depth: number, expanded: number): void {
    this.conditionals.set(id, params);
    this.handleNodes.set(params.handle.id, id);
    this.nextHandle = Math.max(this.nextHandle, params.handle.id + 1);
    this.depth = Math.max(this.depth, depth + 1);
    this.childNodes += expanded;
  }

  /** The allocation node free node `id` frees, or −1 for memory allocated outside the graph. */
  allocOf(id: number): number {
    return this.param[id * PARAM_STRIDE]! - 1;
  }

  private setSize(id: number, size: number): void {
    const p = id * PARAM_STRIDE + SIZE_LO;
    this.param[p] = size % TWO_32;
    this.param[p + 1] = Math.floor(size / TWO_32);
  }

  private sizeOf(id: number): number {
    const p = id * PARAM_STRIDE + SIZE_LO;
    return this.param[p + 1]! * TWO_32 + this.param[p]!;
  }

  /**
   * The topological numbering: node v is the ord[v]-th of the order (every edge goes from a lower
   * ord to a higher one), or null for id order. A fresh array whenever the order has moved since
   * the last call (O(n)); callers may keep it, and must not change it.
   */
  get ord(): Uint32Array | null {
    const list = this.order;
    if (list === null) return null;
    if (this.dense === null || this.denseAt !== list.moves || this.dense.length < this.n) {
      const ord = new Uint32Array(this.n);
      let i = 0;
      for (let v = list.head; v >= 0; v = list.next(v)) ord[v] = i++;
      this.dense = ord;
      this.denseAt = list.moves;
    }
    return this.dense;
  }

  /** True if node u comes before node v in the topological order. */
  before(u: number, v: number): boolean {
    return this.order === null ? u < v : this.order.before(u, v);
  }

  /** The order as a list that can change (id order until now, if there was none). */
  orderList(): OrderList {
    if (this.order === null) {
      const ids = new Uint32Array(this.n);
      for (let i = 0; i < this.n; i++) ids[i] = i;
      this.order = new OrderList(ids, this.n, this.kind.length);
    }
    return this.order;
  }

  /** Makes `byOrd[0..n)` (every node once, edges going forward) the topological order. */
  setOrder(byOrd: Uint32Array): void {
    if (this.order === null) this.order = new OrderList(byOrd, this.n, this.kind.length);
    else this.order.assign(byOrd, this.n);
    this.version++;
  }

  /**
   * Adds the edge u → v with no checks: the caller guarantees both exist, the edge is new, and
   * ord(u) < ord(v) (so no cycle).
   */
  appendEdge(u: number, v: number): void {
    const e = this.m + 1;
    if (2 * e >= this.outs.length) this.growEdges();
    const { outs, ins } = this;
    outs[2 * e] = v;
    outs[2 * e + 1] = this.firstOut[u]!;
    this.firstOut[u] = e;
    ins[2 * e] = u;
    ins[2 * e + 1] = this.firstIn[v]!;
    this.firstIn[v] = e;
    this.m = e;
    this.edgeSet?.add(ins, outs, e);
    this.version++;
  }

  /**
   * Removes the newest edge. Only valid in reverse order of `appendEdge` calls (each list
   * prepends, so the newest edge is at the head of both its lists): used to undo a refused batch.
   */
  popEdge(): void {
    const e = this.m;
    this.edgeCodes.delete(e);
    this.firstOut[this.ins[2 * e]!] = this.outs[2 * e + 1]!;
    this.firstIn[this.outs[2 * e]!] = this.ins[2 * e + 1]!;
    this.m = e - 1;
    this.dropEdgeSet();
    this.version++;
  }

  /** A sum of what `readAhead` read, kept so that the reads are not optimised away. */
  ahead = 0;

  /**
   * Reads the list heads of u and v and the first edge of each list, before an edge u → v is
   * looked up and added. Why: on a large graph each of these is a cache miss, and the lookup
   * (u's out-list, v's in-list), the search an edge against the order starts (v's out-list, u's
   * in-list) and the append (u's and v's heads) would each wait for its own, one after another;
   * read here together, they arrive together. One field of each pair brings the pair.
   */
  readAhead(u: number, v: number): void {
    const { firstOut, firstIn, outs, ins } = this;
    const a = firstOut[u]!;
    const b = firstIn[v]!;
    const c = firstOut[v]!;
    const d = firstIn[u]!;
    this.ahead = outs[2 * a]! + ins[2 * b]! + outs[2 * c]! + ins[2 * d]!;
  }

  /** The source node of edge number `e`. */
  edgeFrom(e: number): number {
    return this.ins[2 * e]!;
  }

  /** The target node of edge number `e`. */
  edgeTo(e: number): number {
    return this.outs[2 * e]!;
  }

  /** The edge after `e` in its source's out-list, 0 if none. */
  nextOut(e: number): number {
    return this.outs[2 * e + 1]!;
  }

  /** The edge after `e` in its target's in-list, 0 if none. */
  nextIn(e: number): number {
    return this.ins[2 * e + 1]!;
  }

  /** True if the edge u → v exists (see `findEdge`). */
  hasEdge(u: number, v: number): boolean {
    return this.findEdge(u, v) !== 0;
  }

  /**
   * The number of the edge u → v, or 0 if there is none. Walks u's out-list and v's in-list in
   * step and stops when either ends (the smaller degree, without keeping degree counts) until the
   * steps walked reach twice the edge count; then builds the edge set, O(m) once, and answers in
   * O(1). So lookups cost O(1) amortised on any graph, and graphs of small degrees (captures) keep
   * walking their short lists and never spend memory on the set.
   */
  findEdge(u: number, v: number): number {
    const { outs, ins } = this;
    if (this.edgeSet !== null) return this.edgeSet.find(ins, outs, u, v);
    let a = this.firstOut[u]!;
    let b = this.firstIn[v]!;
    let steps = 0;
    let found = 0;
    while (a !== 0 && b !== 0) {
      if (outs[2 * a] === v) {
        found = a;
        break;
      }
      if (ins[2 * b] === u) {
        found = b;
        break;
      }
      a = outs[2 * a + 1]!;
      b = ins[2 * b + 1]!;
      steps++;
    }
    this.walked += steps;
    if (this.walked > 2 * this.m + EDGE_SET_MIN_STEPS) this.edgeSet = new EdgeSet(ins, outs, this.m);
    return found;
  }

  /** Bytes the edge set holds (0 while there is none). */
  edgeSetBytes(): number {
    return this.edgeSet === null ? 0 : this.edgeSet.bytes;
  }

  private dropEdgeSet(): void {
    this.edgeSet = null;
    this.walked = 0;
  }

  /** The data code of edge number `e` (edge-data.ts). */
  edgeCodeOf(e: number): number {
    return this.edgeCodes.size === 0 ? PLAIN_EDGE : (this.edgeCodes.get(e) ?? PLAIN_EDGE);
  }

  /** Sets the data code of edge number `e`. */
  setEdgeCode(e: number, code: number): void {
    if (code === PLAIN_EDGE) this.edgeCodes.delete(e);
    else this.edgeCodes.set(e, code);
    this.version++;
  }

  /** Successor ids of `u`, ascending (into `out`, which is cleared first). */
  successors(u: number, out: number[] = []): number[] {
    out.length = 0;
    const outs = this.outs;
    for (let e = this.firstOut[u]!; e !== 0; e = outs[2 * e + 1]!) out.push(outs[2 * e]!);
    return sortSmall(out.reverse());
  }

  /** Predecessor ids of `v`, ascending. */
  predecessors(v: number): number[] {
    const out: number[] = [];
    const ins = this.ins;
    for (let e = this.firstIn[v]!; e !== 0; e = ins[2 * e + 1]!) out.push(ins[2 * e]!);
    return sortSmall(out.reverse());
  }

  /** The stream id of node `id`, or null. */
  streamOf(id: number): StreamId | null {
    const s = this.slot[id]!;
    return s < 0 ? null : (this.streamIds[s]! as StreamId);
  }

  /**
   * Builds the record of node `id` (a fresh object each call). Each kind's literal lists its
   * fields in one fixed order, so records of one kind share a shape (fast to build and to read).
   */
  readNode(id: number): GraphNode {
    const q = this.param;
    const p = id * PARAM_STRIDE;
    const nid = id as NodeId;
    const name = this.strings[this.name[id]!]!;
    const stream = this.streamOf(id);
    const cost = this.cost === null ? 1 : this.cost[id]!;
    switch (this.kind[id]) {
      case KIND_KERNEL: {
        const d = this.dims.get(id);
        return {
          id: nid,
          kind: 'kernel',
          name,
          stream,
          cost,
          functionName: this.strings[q[p + TEXT]!]!,
          grid: (d ? [q[p]!, d[0]!, d[1]!] : [q[p]!, 1, 1]) as Dim3Tuple,
          block: (d ? [q[p + 1]!, d[2]!, d[3]!] : [q[p + 1]!, 1, 1]) as Dim3Tuple,
          sharedMem: q[p + 2]!,
        };
      }
      case KIND_MEMCPY:
        return { id: nid, kind: 'memcpy', name, stream, cost, dir: this.dirOf(id), sizeBytes: this.sizeOf(id) };
      case KIND_MEMSET:
        return { id: nid, kind: 'memset', name, stream, cost, sizeBytes: this.sizeOf(id), value: q[p]!, elementSize: q[p + 3]! as 1 | 2 | 4 };
      case KIND_HOST:
        return { id: nid, kind: 'hostCallback', name, stream, cost, label: this.strings[q[p + TEXT]!]! };
      case KIND_EVENT_RECORD:
        return { id: nid, kind: 'eventRecord', name, stream, cost, event: q[p]! as CaptureEvent };
      case KIND_EVENT_WAIT:
        return { id: nid, kind: 'eventWait', name, stream, cost, event: q[p]! as CaptureEvent };
      case KIND_CHILD:
        return { id: nid, kind: 'childGraph', name, stream, cost, graph: this.children.get(id)! };
      case KIND_MEM_ALLOC:
        return { id: nid, kind: 'memAlloc', name, stream, cost, sizeBytes: this.sizeOf(id), device: q[p]! };
      case KIND_MEM_FREE:
        return { id: nid, kind: 'memFree', name, stream, cost, alloc: q[p] === 0 ? null : ((q[p]! - 1) as NodeId) };
      case KIND_CONDITIONAL: {
        const c = this.conditionals.get(id)!;
        // The handle is frozen and the bodies read-only; only the array is fresh, as a record must be.
        return { id: nid, kind: 'conditional', name, stream, cost, type: c.type, handle: c.handle, estimate: c.estimate, bodies: [...c.bodies] };
      }
      case KIND_EMPTY:
      default:
        return { id: nid, kind: 'empty', name, stream, cost };
    }
  }

  private dirOf(id: number): MemcpyDir {
    const code = this.param[id * PARAM_STRIDE]!;
    if (code !== DIR_P2P) return decodeMemcpyDir(code, 0, 0);
    const d = this.peers.get(id)!;
    return decodeMemcpyDir(code, d[0]!, d[1]!);
  }

  /** A copy of the store that shares nothing changeable with it (child graphs and bodies are read-only, so they are shared). */
  clone(): GraphStore {
    const c = new GraphStore();
    c.n = this.n;
    c.m = this.m;
    c.kind = this.kind.slice();
    c.slot = this.slot.slice();
    c.name = this.name.slice();
    c.param = this.param.slice();
    c.dims = new Map(this.dims);
    c.peers = new Map(this.peers);
    c.children = new Map(this.children);
    c.conditionals = new Map(this.conditionals);
    c.handleNodes = new Map(this.handleNodes);
    c.nextHandle = this.nextHandle;
    c.freedBy = new Map(this.freedBy);
    c.depth = this.depth;
    c.childNodes = this.childNodes;
    c.cost = this.cost === null ? null : this.cost.slice();
    c.firstOut = this.firstOut.slice();
    c.firstIn = this.firstIn.slice();
    c.order = this.order === null ? null : this.order.clone();
    c.outs = this.outs.slice();
    c.ins = this.ins.slice();
    c.edgeCodes = new Map(this.edgeCodes);
    c.strings = this.strings.slice();
    c.stringIndex = new Map(this.stringIndex);
    for (let s = 0; s < this.streamIds.length; s++) {
      c.streamSlot(this.streamIds[s]!);
      c.slotCount[s] = this.slotCount[s]!;
    }
    return c;
  }

  /**
   * Cuts the arrays to their used length when more than an eighth of them is unused. A finished
   * capture is read far more than it grows, and doubling can leave half of each array unused.
   */
  shrinkToFit(): void {
    const n = Math.max(this.n, 1);
    const e = this.m + 1;
    this.growth = 2;
    if (this.kind.length - n > this.kind.length / 8) {
      this.kind = this.kind.slice(0, n);
      this.slot = this.slot.slice(0, n);
      this.name = this.name.slice(0, n);
      this.param = this.param.slice(0, n * PARAM_STRIDE);
      if (this.cost) this.cost = this.cost.slice(0, n);
      this.firstOut = this.firstOut.slice(0, n);
      this.firstIn = this.firstIn.slice(0, n);
      if (this.order) this.order.grow(n);
    }
    const cap = this.outs.length / 2;
    if (cap - e > cap / 8) {
      this.outs = this.outs.slice(0, 2 * e);
      this.ins = this.ins.slice(0, 2 * e);
    }
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
