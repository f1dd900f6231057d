/**
 * The layout of a store's edges (graph-store.ts): two arrays of uint32 pairs, one per direction.
 *
 * - `outs`: edge e's target at [2e], the next edge of its source's out-list at [2e + 1];
 * - `ins`: edge e's source at [2e], the next edge of its target's in-list at [2e + 1]
 *
 * (0: no next edge; edges are numbered from 1, so pair 0 is unused).
 *
 * Why pairs, not one column per field: a step along an out-list reads an edge's target and the
 * next edge, a step along an in-list its source and the next edge. On a large graph each edge read
 * is a cache miss, and with four columns (from, to, next-out, next-in) each step touched two cache
 * lines; an aligned 8-byte pair never straddles one, so a step touches one, at the same 16 bytes
 * an edge. Why not one 16-byte record holding both directions: a walk in one direction would then
 * carry the other direction's half in every line it reads, so walks over edges that lie near each
 * other (a capture's, the reachability index's pass over every in-list) read twice the lines; by
 * direction, they read what the columns did.
 */

/** Edges 1..m's far ends from `pairs` (`outs` or `ins`) as a column of their own (edge e at e − 1), for writers. */
export function pairEnds(pairs: Uint32Array, m: number): Uint32Array {
  const out = new Uint32Array(m);
  for (let e = 1; e <= m; e++) out[e - 1] = pairs[2 * e]!;
  return out;
}
