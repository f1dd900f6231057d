/**
 * Adding a whole graph's edges from two id columns, for the readers that load a saved graph
 * (graph-json-read.ts, graph-binary-read.ts). The ids are already known to be in range.
 *
 * Why two paths: a saved graph's edges nearly always go from a smaller id to a larger one (a
 * capture's do, and `toJSON` keeps them as they were), and then no cycle is possible and ids are a
 * valid order, so each edge is appended at once with only a duplicate check. Any other order goes
 * through the order's one batch pass (dynamic-order.ts), which finds a cycle or a new order in O(n + m).
 */
import { DynamicOrder } from './dynamic-order.js';
import type { GraphStore } from './graph-store.js';

/** Why the edges were refused: edge `index` repeats an earlier one, or closes the cycle `cycle`. */
export type EdgeColumnsProblem = { readonly index: number; readonly repeat: true } | { readonly index: number; readonly repeat: false; readonly cycle: number[] };

/**
 * Adds the edges from[i] → to[i], i < m, to `store` (edge i becomes edge number i + 1), or returns
 * the first problem, leaving the store's edges unusable (the caller drops the store).
 */
export function addEdgeColumns(store: GraphStore, from: Uint32Array, to: Uint32Array, m: number): EdgeColumnsProblem | null {
  let forward = true;
  for (let i = 0; i < m && forward; i++) if (from[i]! >= to[i]!) forward = false;
  if (forward) {
    for (let i = 0; i < m; i++) {
      if (store.hasEdge(from[i]!, to[i]!)) return { index: i, repeat: true };
      store.appendEdge(from[i]!, to[i]!);
    }
    return null;
  }
  const f = Array.from(from.subarray(0, m));
  const t = Array.from(to.subarray(0, m));
  const r = new DynamicOrder().addEdges(store, f, t);
  if (!r.ok) return { index: r.index, repeat: false, cycle: r.cycle };
  const dup = r.added.indexOf(false);
  return dup >= 0 ? { index: dup, repeat: true } : null;
}
