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
 */
import { type GraphStore } from './graph-store.js';

/** What `DynamicOrder.addEdge` did: added the edge, found it already there, or refused a cycle. */
export type AddEdgeResult = 'added' | 'duplicate' | 'cycle';

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
}
