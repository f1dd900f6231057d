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
  const { firstOut, nextOut, to } = store;
  const indeg = new Uint32Array(n);
  for (let e = 1; e <= store.m; e++) indeg[to[e]!]!++;
  const queue = new Uint32Array(n);
  let tail = 0;
  for (let v = 0; v < n; v++) if (indeg[v] === 0) queue[tail++] = v;
  const scratch: number[] = [];
  for (let head = 0; head < tail; head++) {
    const u = queue[head]!;
    const first = firstOut[u]!;
    if (first === 0) continue;
    if (nextOut[first] === 0) {
      // One successor: the common case in a capture, no sorting needed.
      const x = to[first]!;
      if (--indeg[x]! === 0) queue[tail++] = x;
      continue;
    }
    // Out-lists prepend, so a capture's lists come newest first: read them backwards.
    scratch.length = 0;
    let descending = true;
    for (let e = first; e !== 0; e = nextOut[e]!) {
      const x = to[e]!;
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
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut[e]!) {
      const x = store.to[e]!;
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
    for (let e = store.firstIn[v]!; e !== 0; e = store.nextIn[e]!) {
      const p = store.from[e]!;
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
