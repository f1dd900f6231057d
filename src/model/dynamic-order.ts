/**
 * Adding an edge by hand without ever making a cycle, cheaply.
 *
 * Why: `addEdge(u, v)` must refuse an edge that would close a cycle (v already reaches u). A
 * search from v on every call costs O(n) per edge, so building a graph edge by edge could cost
 * O(n·m). Instead the store keeps `ord`, a topological numbering (every edge goes from a lower ord
 * to a higher one), with the Pearce–Kelly algorithm ("A dynamic topological sort algorithm for
 * directed acyclic graphs", JEA 2006):
 *
 * - if ord[u] < ord[v] the edge agrees with the numbering and cannot close a cycle: O(1). This is
 *   every edge of a capture and every edge added from an older node to a newer one;
 * - otherwise only the nodes with ord between ord[v] and ord[u] can lie on a cycle: search forward
 *   from v inside that window (finding u means a cycle), backward from u inside it, and renumber
 *   just those nodes so that u's ancestors come before v's descendants.
 *
 * Pearce–Kelly is fast when most edges agree with the numbering, but edges added in a random
 * order can make each search cover much of the graph (100,000 random edges: over a minute). So
 * many edges at once (`ComputeGraph.addEdges`, `fromJSON`) go through `addEdges`: append them all,
 * then one Kahn pass (O(n + m)) either finds a cycle — and the batch is undone — or gives the new
 * numbering.
 */
import type { GraphStore } from './graph-store.js';

/** What `DynamicOrder.addEdge` did: added the edge, found it already there, or refused a cycle. */
export type AddEdgeResult = 'added' | 'duplicate' | 'cycle';

/**
 * What `DynamicOrder.addEdges` did: `added[i]` tells whether pair i was new (false: a duplicate);
 * or the batch closed a cycle — `index` is the last pair of the batch on it, `cycle` its nodes in order
 * (cycle[0] → cycle[1] → … → cycle[0]) — and nothing was added.
 */
export type AddEdgesResult = { ok: true; added: boolean[] } | { ok: false; index: number; cycle: number[] };

/** Keeps a store's topological numbering valid as edges are added (one per `ComputeGraph`). */
export class DynamicOrder {
  // Visit marks, allocated on the first edge that disagrees with the numbering.
  private mark: Uint32Array = new Uint32Array(0);
  private stamp = 0;

  /**
   * Adds u → v to `store` unless it is a duplicate or would close a cycle (self-loops included).
   * On 'duplicate' and 'cycle' the store is unchanged.
   */
  addEdge(store: GraphStore, u: number, v: number): AddEdgeResult {
    if (u === v) return 'cycle';
    if (store.hasEdge(u, v)) return 'duplicate';
    if (store.ordOf(u) < store.ordOf(v)) {
      store.appendEdge(u, v);
      return 'added';
    }
    const ord = store.materializeOrd();
    const lb = ord[v]!;
    const ub = ord[u]!;
    if (this.mark.length < store.n) this.mark = new Uint32Array(Math.max(store.n, this.mark.length * 2));
    if (this.stamp >= 0xffff_fff0) {
      this.mark.fill(0);
      this.stamp = 0;
    }
    const fwd = ++this.stamp;
    const bwd = ++this.stamp;
    const mark = this.mark;

    // Forward from v, staying below ub: reaching u means v already reaches u.
    const deltaF: number[] = [v];
    mark[v] = fwd;
    for (let i = 0; i < deltaF.length; i++) {
      const w = deltaF[i]!;
      for (let e = store.firstOut[w]!; e !== 0; e = store.nextOut[e]!) {
        const x = store.to[e]!;
        if (x === u) return 'cycle';
        if (mark[x] !== fwd && ord[x]! < ub) {
          mark[x] = fwd;
          deltaF.push(x);
        }
      }
    }
    // Backward from u, staying above lb.
    const deltaB: number[] = [u];
    mark[u] = bwd;
    for (let i = 0; i < deltaB.length; i++) {
      const w = deltaB[i]!;
      for (let e = store.firstIn[w]!; e !== 0; e = store.nextIn[e]!) {
        const x = store.from[e]!;
        if (mark[x] !== bwd && ord[x]! > lb) {
          mark[x] = bwd;
          deltaB.push(x);
        }
      }
    }
    // Renumber: the same pool of ord values, u's ancestors first, then v's descendants, each
    // group keeping its relative order.
    const byOrd = (a: number, b: number): number => ord[a]! - ord[b]!;
    deltaB.sort(byOrd);
    deltaF.sort(byOrd);
    const nodes = deltaB.concat(deltaF);
    const pool = nodes.map((x) => ord[x]!).sort((a, b) => a - b);
    for (let i = 0; i < nodes.length; i++) ord[nodes[i]!] = pool[i]!;
    store.appendEdge(u, v);
    return 'added';
  }

  /**
   * Adds the edges `from[i] → to[i]` (ids already checked), skipping duplicates, or none of them
   * if they would close a cycle. O(k) when every new edge agrees with the numbering, else
   * O(n + m) for one Kahn pass.
   */
  addEdges(store: GraphStore, from: readonly number[], to: readonly number[]): AddEdgesResult {
    for (let i = 0; i < from.length; i++) if (from[i] === to[i]) return { ok: false, index: i, cycle: [from[i]!] };
    const before = store.m;
    const added: boolean[] = new Array<boolean>(from.length);
    let agrees = true;
    for (let i = 0; i < from.length; i++) {
      const u = from[i]!;
      const v = to[i]!;
      added[i] = !store.hasEdge(u, v);
      if (!added[i]) continue;
      if (store.ordOf(u) > store.ordOf(v)) agrees = false;
      store.appendEdge(u, v);
    }
    if (agrees) return { ok: true, added };

    // Kahn over the whole graph: it either orders every node or leaves a cycle behind.
    const n = store.n;
    const indeg = new Uint32Array(n);
    for (let e = 1; e <= store.m; e++) indeg[store.to[e]!]!++;
    const queue = new Uint32Array(n);
    let tail = 0;
    for (let v = 0; v < n; v++) if (indeg[v] === 0) queue[tail++] = v;
    for (let head = 0; head < tail; head++) {
      for (let e = store.firstOut[queue[head]!]!; e !== 0; e = store.nextOut[e]!) {
        const x = store.to[e]!;
        if (--indeg[x]! === 0) queue[tail++] = x;
      }
    }
    if (tail === n) {
      const ord = store.materializeOrd();
      for (let i = 0; i < n; i++) ord[queue[i]!] = i;
      store.version++;
      return { ok: true, added };
    }

    // A node Kahn never reached has a predecessor it never reached either: walking back along
    // those must revisit a node, and the walk between the two visits is a cycle.
    const step = new Map<number, number>();
    let x = 0;
    while (indeg[x] === 0) x++;
    while (!step.has(x)) {
      let p = -1;
      for (let e = store.firstIn[x]!; e !== 0 && p < 0; e = store.nextIn[e]!) if (indeg[store.from[e]!]! > 0) p = store.from[e]!;
      step.set(x, p);
      x = p;
    }
    const cycle: number[] = [x];
    for (let y = step.get(x)!; y !== x; y = step.get(y)!) cycle.push(y);
    cycle.reverse(); // the walk went backwards
    // The graph was acyclic before the batch, so one of the cycle's edges is new: report the last
    // one in the batch, the edge that closes the cycle when the batch is read in order.
    const onCycle = new Set(cycle.map((c, i) => `${c}>${cycle[(i + 1) % cycle.length]}`));
    let index = -1;
    for (let i = from.length - 1; i >= 0 && index < 0; i--) if (added[i] && onCycle.has(`${from[i]}>${to[i]}`)) index = i;
    while (store.m > before) store.popEdge();
    // Rotate so the cycle starts at the reported edge.
    const start = cycle.indexOf(from[index]!);
    return { ok: false, index, cycle: cycle.slice(start).concat(cycle.slice(0, start)) };
  }
}
