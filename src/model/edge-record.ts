/**
 * The layout of one edge in a store's edge array (graph-store.ts): four uint32 side by side.
 *
 * Why one record, not four columns: walking a node's out-list reads an edge's target and the next
 * edge of the list, walking an in-list its source and the next edge; on a large graph each edge
 * read is a cache miss, and with one column per field each step waited for two (a miss in `to`,
 * another in `nextOut`). A 16-byte record, aligned to 16 bytes, never straddles a 64-byte cache
 * line, so one miss brings every field of the edge, for both directions, at the same 16 bytes an
 * edge the columns cost. The price is paid by whole-graph scans of one field (in-degree counts,
 * the binary writer's id columns), which read four times the bytes, but in order, where reading
 * ahead hides it.
 *
 * Edge e's fields are at `EDGE_STRIDE * e + E_*`; edges are numbered from 1, so record 0 is unused.
 */

/** uint32 slots per edge. */
export const EDGE_STRIDE = 4;
/** The edge's source node. */
export const E_FROM = 0;
/** The edge's target node. */
export const E_TO = 1;
/** The next edge of the source's out-list, 0 if none. */
export const E_NEXT_OUT = 2;
/** The next edge of the target's in-list, 0 if none. */
export const E_NEXT_IN = 3;

/** One field of edges 1..m as a column of its own (edge e at index e − 1), for writers. */
export function edgeField(edges: Uint32Array, m: number, field: number): Uint32Array {
  const out = new Uint32Array(m);
  for (let e = 1; e <= m; e++) out[e - 1] = edges[EDGE_STRIDE * e + field]!;
  return out;
}
