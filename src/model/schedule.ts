/**
 * Orderings and schedule figures of a graph: topological order, levels (wavefronts), critical
 * path. Internal: `ComputeGraph` exposes them as methods.
 */
import type { GraphStore } from './graph-store.js';

/** Nodes in `ord` order: some topological order, cheap to get (the store keeps `ord` valid). */
export function nodesByOrd(store: GraphStore): Uint32Array {
  const byOrd = new Uint32Array(store.n);
  const ord = store.ord;
  if (ord === null) for (let v = 0; v < store.n; v++) byOrd[v] = v;
  else for (let v = 0; v < store.n; v++) byOrd[ord[v]!] = v;
  return byOrd;
}

/**
 * Kahn's algorithm with a FIFO queue seeded by ascending id, successors taken in ascending id
 * order (the upstream's deterministic order). The result depends only on the nodes and the set of
 * edges, not on the order the edges were added, so a graph and its JSON round trip agree.
 */
export function kahnOrder(store: GraphStore): Uint32Array {
  const n = store.n;
  const { firstOut } = store;
  const indeg = new Uint32Array(n);
  for (let e = 1; e <= store.m; e++) indeg[store.edgeTo(e)]!++;
  const queue = new Uint32Array(n);
  let tail = 0;
  for (let v = 0; v < n; v++) if (indeg[v] === 0) queue[tail++] = v;
  const scratch: number[] = [];
  for (let head = 0; head < tail; head++) {
    const u = queue[head]!;
    const first = firstOut[u]!;
    if (first === 0) continue;
    if (store.nextOut(first) === 0) {
      // One successor: the common case in a capture, no sorting needed.
      const x = store.edgeTo(first);
      if (--indeg[x]! === 0) queue[tail++] = x;
      continue;
    }
    // Out-lists prepend, so a capture's lists come newest first: read them backwards.
    scratch.length = 0;
    let descending = true;
    for (let e = first; e !== 0; e = store.nextOut(e)) {
      const x = store.edgeTo(e);
      if (scratch.length > 0 && x > scratch[scratch.length - 1]!) descending = false;
      scratch.push(x);
    }
    if (descending) scratch.reverse();
    else scratch.sort((a, b) => a - b);
    for (let i = 0; i < scratch.length; i++) {
      const x = scratch[i]!;
      if (--indeg[x]! === 0) queue[tail++] = x;
    }
  }
  return queue;
}

/** A plain array copy of `ids` (faster than Array.from for large typed arrays). */
export function toIdArray(ids: Uint32Array): number[] {
  const out: number[] = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i]!;
  return out;
}

/** level[v]: the number of edges on the longest path from any source to v (sources are level 0). */
export function nodeLevels(store: GraphStore, byOrd: Uint32Array): Uint32Array {
  const level = new Uint32Array(store.n);
  for (let i = 0; i < byOrd.length; i++) {
    const v = byOrd[i]!;
    const next = level[v]! + 1;
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) {
      const x = store.edgeTo(e);
      if (level[x]! < next) level[x] = next;
    }
  }
  return level;
}

/** Groups nodes by level: result[l] lists the nodes of level l in ascending id order. */
export function groupLevels(level: Uint32Array): number[][] {
  const groups: number[][] = [];
  for (let v = 0; v < level.length; v++) {
    const l = level[v]!;
    while (groups.length <= l) groups.push([]);
    groups[l]!.push(v);
  }
  return groups;
}

/**
 * The longest path by cost: dist[v] = cost[v] + max over predecessors of dist[p]. The path runs
 * from a source to a sink (costs are ≥ 0, so any longest path extends to one); ties go to the
 * smaller id, so the answer is deterministic.
 */
export function longestPath(store: GraphStore, byOrd: Uint32Array, cost: Float64Array): { cost: number; nodes: number[] } {
  const n = store.n;
  const dist = new Float64Array(n);
  const via = new Int32Array(n).fill(-1);
  let best = -1;
  for (let i = 0; i < n; i++) {
    const v = byOrd[i]!;
    let d = 0;
    let from = -1;
    for (let e = store.firstIn[v]!; e !== 0; e = store.nextIn(e)) {
      const p = store.edgeFrom(e);
      const dp = dist[p]!;
      if (from < 0 || dp > d || (dp === d && p < from)) {
        d = dp;
        from = p;
      }
    }
    dist[v] = d + cost[v]!;
    via[v] = from;
    if (store.firstOut[v] === 0 && (best < 0 || dist[v]! > dist[best]! || (dist[v] === dist[best] && v < best))) best = v;
  }
  const nodes: number[] = [];
  for (let v = best; v >= 0; v = via[v]!) nodes.push(v);
  nodes.reverse();
  return { cost: best < 0 ? 0 : dist[best]!, nodes };
}

/** Per node: earliest and latest start, slack (see `nodeTimes`). */
export interface Times {
  /** The schedule's length with unlimited streams: the critical path's cost. */
  readonly length: number;
  readonly asap: Float64Array;
  readonly alap: Float64Array;
}

/**
 * ASAP/ALAP times with unlimited parallelism: `asap[v]` is the earliest a node can start (the
 * longest cost path into it), `alap[v]` the latest it can start without lengthening the schedule
 * (`length` minus the longest cost path from it, its own cost included). Slack is `alap − asap`;
 * the nodes with no slack are the critical ones. One pass forward and one backward: O(n + m).
 */
export function nodeTimes(store: GraphStore, byOrd: Uint32Array, cost: Float64Array): Times {
  const n = store.n;
  const asap = new Float64Array(n);
  let length = 0;
  for (let i = 0; i < n; i++) {
    const v = byOrd[i]!;
    const end = asap[v]! + cost[v]!;
    if (end > length) length = end;
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) {
      const x = store.edgeTo(e);
      if (asap[x]! < end) asap[x] = end;
    }
  }
  const alap = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    const v = byOrd[i]!;
    let latestEnd = length;
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) latestEnd = Math.min(latestEnd, alap[store.edgeTo(e)]!);
    alap[v] = latestEnd - cost[v]!;
  }
  return { length, asap, alap };
}

/** One node's place in a list schedule. */
export interface Placement {
  readonly stream: number;
  readonly start: number;
  readonly finish: number;
}

/**
 * Graham's list scheduling on `k` identical streams: whenever a stream is free, it takes the ready
 * node with the longest cost path to a sink (its "bottom level"; ties to the smaller id). Any list
 * schedule satisfies Graham's bound `makespan ≤ W/k + (1 − 1/k)·C` (W: total cost, C: critical
 * path), so it is within `2 − 1/k` of the optimum, which is at least `max(C, W/k)`.
 * O((n + m) log n).
 */
export function listSchedule(store: GraphStore, byOrd: Uint32Array, cost: Float64Array, k: number): { makespan: number; placement: Placement[] } {
  const n = store.n;
  // Bottom levels: the longest cost path from each node to a sink, itself included.
  const bottom = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    const v = byOrd[i]!;
    let best = 0;
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) best = Math.max(best, bottom[store.edgeTo(e)]!);
    bottom[v] = best + cost[v]!;
  }
  const indeg = new Uint32Array(n);
  for (let e = 1; e <= store.m; e++) indeg[store.edgeTo(e)]!++;
  const readyAt = new Float64Array(n);
  // Ready nodes: a max-heap by (bottom level, then smaller id).
  const ready = new Heap<number>((a, b) => bottom[a]! > bottom[b]! || (bottom[a] === bottom[b] && a < b));
  for (let v = 0; v < n; v++) if (indeg[v] === 0) ready.push(v);
  // Running nodes: a min-heap by finish time (then stream, for determinism).
  const placement: Placement[] = new Array(n);
  const running = new Heap<number>((a, b) => placement[a]!.finish < placement[b]!.finish || (placement[a]!.finish === placement[b]!.finish && a < b));
  const freeStreams: number[] = [];
  for (let s = k - 1; s >= 0; s--) freeStreams.push(s);
  let now = 0;
  let makespan = 0;
  let done = 0;
  while (done < n) {
    // Start every ready node a free stream can take now (nodes become ready only at `now`).
    while (freeStreams.length > 0 && ready.size > 0) {
      const v = ready.pop();
      const stream = freeStreams.pop()!;
      const start = Math.max(now, readyAt[v]!);
      placement[v] = { stream, start, finish: start + cost[v]! };
      running.push(v);
    }
    // Finish the earliest running node (and every node finishing at the same time).
    const first = running.pop();
    now = placement[first]!.finish;
    const finishing = [first];
    while (running.size > 0 && placement[running.peek()]!.finish === now) finishing.push(running.pop());
    for (const v of finishing) {
      done++;
      makespan = Math.max(makespan, now);
      freeStreams.push(placement[v]!.stream);
      for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) {
        const x = store.edgeTo(e);
        readyAt[x] = Math.max(readyAt[x]!, now);
        if (--indeg[x]! === 0) ready.push(x);
      }
    }
    // Keep stream numbers deterministic: the lowest free stream is taken first.
    freeStreams.sort((a, b) => b - a);
  }
  return { makespan, placement };
}

/** A binary heap; `before(a, b)` is true when `a` comes out first. */
class Heap<T> {
  readonly #a: T[] = [];
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.#a.length;
  }

  peek(): T {
    return this.#a[0]!;
  }

  push(x: T): void {
    const a = this.#a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): T {
    const a = this.#a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.before(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}
