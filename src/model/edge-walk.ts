/**
 * Walking a store's edges one node at a time, with their data codes, for the writers that emit
 * a graph in pieces (graph-json-stream.ts, dot-stream.ts): a callback over every edge cannot stop
 * between two nodes, and a generator must.
 */
import { PLAIN_EDGE } from './edge-data.js';
import type { GraphStore } from './graph-store.js';

/** Scratch space for `outEdges`: reused from node to node, so the walk allocates nothing per edge. */
export interface OutEdges {
  /** The node's successors, ascending. */
  readonly to: number[];
  /** `codes[i]`: the data code of the edge to `to[i]` (edge-data.ts). */
  readonly codes: number[];
  /** Successor → edge number of the node's out-list, for graphs that hold edge data. */
  readonly numbers: Map<number, number>;
}

/** Fresh scratch space for `outEdges`. */
export function outEdgeScratch(): OutEdges {
  return { to: [], codes: [], numbers: new Map() };
}

/**
 * Fills `out` with the edges leaving `u`, sorted by target, and their data codes. O(out-degree):
 * a graph without edge data reads no codes; one with them looks each up through a map of the
 * out-list by target, never by searching.
 */
export function outEdges(store: GraphStore, u: number, out: OutEdges): void {
  store.successors(u, out.to);
  out.codes.length = out.to.length;
  if (store.edgeCodes.size === 0) {
    out.codes.fill(PLAIN_EDGE);
    return;
  }
  out.numbers.clear();
  for (let e = store.firstOut[u]!; e !== 0; e = store.nextOut(e)) out.numbers.set(store.edgeTo(e), e);
  for (let i = 0; i < out.to.length; i++) out.codes[i] = store.edgeCodeOf(out.numbers.get(out.to[i]!)!);
}
