/**
 * The graph as the reachability search reads it (internal: reach-labels.ts builds it,
 * reach-search.ts reads it): nodes renumbered by level, a chain cover with each chain's exits and
 * entries, and only the edges between chains.
 *
 * Why level-major positions. The search sweeps forward from a in increasing position and backward
 * from b in decreasing position. Numbered by level (longest path from a source) first, a sweep's
 * front is a level, and "level(x) ≥ L" is one comparison of positions (`x ≥ levelStart[L]`), so
 * the search can settle edges into the other side's front from the position alone
 * (reach-search.ts). Within a level the store's topological order is kept; every edge still goes
 * from a lower position to a higher one (its head is a level deeper).
 *
 * Why chains, exits and entries. Consecutive nodes of a chain are joined by an edge, so a node
 * reaches the rest of its chain, and edges within a chain say nothing more: the lists keep only
 * the edges between chains. A node with no such edge out (most ops of a capture, whose one
 * successor is the next op of their stream) reaches nothing else, so a forward sweep that reaches
 * it goes on to the chain's next *exit* (a node with an edge to another chain); backward, to the
 * previous *entry* (a node with an edge from another chain).
 *
 * Why heads. The search's cost is cache and TLB misses (a random read from an array of 24 MB
 * costs about twice one from an array of 4 MB on the machine measured), so what it reads of a
 * node sits together: `fhead[3p …]` is p's forward head — the offset of its successors on other
 * chains in `out` (ascending; p + 1's offset ends them), its next exit (EXIT set when p is one),
 * its chain word — and `bhead[3p …]` the backward one: offset of its predecessors on other chains
 * in `into`, previous entry (ENTRY set when p is one), chain word. A node found across an edge is
 * settled from its head alone (one read), an exit's successors are one more. 24 bytes a node, 8
 * an edge between chains, 4 a node for the renumbering unless it is the identity. A capture of
 * many streams keeps about one edge in twenty.
 */
import type { GraphStore } from './graph-store.js';

/** No position: no exit after, or entry before, on the chain. */
export const NONE_POS = 0x7fff_ffff;
// The flags are a head word's sign bit, and the heads are Int32Arrays, so that every word the
// search reads is an int32: V8 reads a Uint32Array word of 2^31 or more as a double, and code
// it compiled while the words it met were smaller is thrown away at the first one ("lost
// precision"), which happened as each new graph's first queries met a flag in a new place.
/** Set in a forward head's link when the node is an exit (the sign bit). */
export const EXIT = -0x8000_0000;
/** Set in a backward head's link when the node is an entry (the sign bit). */
export const ENTRY = -0x8000_0000;
/** Set in a head's chain word when the chain is plain (see `makeHeads`): the word is negative. */
export const PLAIN = -0x8000_0000;
/** Words per node in a head: edge offset, link, chain word. */
export const HEAD = 3;

/** A chain cover by node id: consecutive nodes of a chain are joined by an edge (reachability.ts makes one). */
export interface ChainCover {
  readonly chainOf: Uint32Array;
  readonly posOf: Uint32Array;
}

/** The renumbered graph (see the file comment). */
export interface ReachLayout {
  /** Node id → position; null when they are equal. */
  readonly pos: Uint32Array | null;
  /** First position of each level; `levelStart[levels]` = n. */
  readonly levelStart: Uint32Array;
  /** Chains in the cover. */
  readonly chains: number;
  /** Forward heads, HEAD words per position, n + 1 of them (the last holds only the end offset). */
  readonly fhead: Int32Array;
  /** Successors on other chains: p's at `out[fhead[3p] … fhead[3p + 3])`. */
  readonly out: Uint32Array;
  /** Backward heads, as `fhead`. */
  readonly bhead: Int32Array;
  /** Predecessors on other chains: p's at `into[bhead[3p] … bhead[3p + 3])`. */
  readonly into: Uint32Array;
}

/** All successors by position, each list ascending: `adj[start[p] … start[p + 1])`. */
export interface Successors {
  readonly start: Uint32Array;
  readonly adj: Uint32Array;
}

/**
 * Builds the layout of `store` as it is now (`cover` is used when given, else a greedy one is
 * made), with every node's successors and its level by position, for labels that need them.
 */
export function buildLayout(store: GraphStore, cover?: ChainCover): { layout: ReachLayout; all: Successors; level: Uint32Array } {
  const n = store.n;
  const { firstIn, ins } = store;
  const ord = store.ord;
  const byOrd = new Uint32Array(n);
  if (ord === null) for (let v = 0; v < n; v++) byOrd[v] = v;
  else for (let v = 0; v < n; v++) byOrd[ord[v]!] = v;

  // One walk over the store's predecessor lists (linked lists, the costly part) in its order:
  // each node's predecessors as ids in one array, and the levels (every predecessor comes first).
  const predStart = new Uint32Array(n + 1);
  const pred = new Uint32Array(store.m);
  const level = new Uint32Array(n);
  let levels = n > 0 ? 1 : 0;
  let m = 0;
  for (let q = 0; q < n; q++) {
    const v = byOrd[q]!;
    let lv = 0;
    for (let e = firstIn[v]!; e !== 0; e = ins[2 * e + 1]!) {
      const u = ins[2 * e]!;
      pred[m++] = u;
      if (level[u]! >= lv) lv = level[u]! + 1;
    }
    predStart[q + 1] = m;
    level[v] = lv;
    if (lv >= levels) levels = lv + 1;
  }
  // Positions by level, the store's order within one.
  const levelStart = new Uint32Array(levels + 1);
  for (let v = 0; v < n; v++) levelStart[level[v]! + 1]!++;
  for (let l = 0; l < levels; l++) levelStart[l + 1]! += levelStart[l]!;
  const pos = new Uint32Array(n);
  const next = levelStart.slice(0, levels);
  const storeAt = new Uint32Array(n); // position → the node's index in the store's order
  let identity = true;
  for (let q = 0; q < n; q++) {
    const v = byOrd[q]!;
    const p = next[level[v]!]!++;
    pos[v] = p;
    storeAt[p] = q;
    if (p !== v) identity = false;
  }
  const lv = new Uint32Array(n);
  for (let p = 0; p < n; p++) lv[p] = level[byOrd[storeAt[p]!]!]!;

  // Successor lists by position, each ascending: targets in ascending position, each appended to
  // its sources' lists.
  const start = new Uint32Array(n + 1);
  for (let i = 0; i < m; i++) start[pos[pred[i]!]! + 1]!++;
  for (let p = 0; p < n; p++) start[p + 1]! += start[p]!;
  const adj = new Uint32Array(m);
  const fill = start.slice(0, n);
  for (let t = 0; t < n; t++) {
    const q = storeAt[t]!;
    for (let i = predStart[q]!; i < predStart[q + 1]!; i++) adj[fill[pos[pred[i]!]!]!++] = t;
  }

  const chain = new Uint32Array(n);
  const chains = cover ? copyCover(n, byOrd, storeAt, cover, chain) : greedyCover(n, storeAt, predStart, pred, pos, chain);
  const heads = makeHeads(n, chains, start, adj, chain);
  return { layout: { pos: identity ? null : pos, levelStart, chains, ...heads }, all: { start, adj }, level: lv };
}

/** Writes `cover`'s chain of each position into `chain`; returns the number of chains. */
function copyCover(n: number, byOrd: Uint32Array, storeAt: Uint32Array, cover: ChainCover, chain: Uint32Array): number {
  let chains = 0;
  for (let p = 0; p < n; p++) {
    const c = cover.chainOf[byOrd[storeAt[p]!]!]!;
    chain[p] = c;
    if (c >= chains) chains = c + 1;
  }
  return chains;
}

/** A greedy cover: each node extends the chain of its first predecessor that still ends one. */
function greedyCover(n: number, storeAt: Uint32Array, predStart: Uint32Array, pred: Uint32Array, pos: Uint32Array, chain: Uint32Array): number {
  let chains = 0;
  const ends = new Uint8Array(n); // 1 while p is the last node of its chain
  for (let q = 0; q < n; q++) {
    let c = -1;
    const s = storeAt[q]!;
    for (let i = predStart[s]!; i < predStart[s + 1]! && c < 0; i++) {
      const p = pos[pred[i]!]!;
      if (ends[p] === 1) {
        ends[p] = 0;
        c = chain[p]!;
      }
    }
    chain[q] = c < 0 ? chains++ : c;
    ends[q] = 1;
  }
  return chains;
}

/** The forward and backward heads and edge lists (see the file comment) from all successors by position. */
function makeHeads(n: number, chains: number, start: Uint32Array, adj: Uint32Array, chain: Uint32Array): Pick<ReachLayout, 'fhead' | 'out' | 'bhead' | 'into'> {
  const fhead = new Int32Array(HEAD * (n + 1));
  const bhead = new Int32Array(HEAD * (n + 1));
  // Counts at the next node's offset, then running sums.
  for (let p = 0; p < n; p++) {
    const c = chain[p]!;
    for (let i = start[p]!; i < start[p + 1]!; i++) {
      const q = adj[i]!;
      if (chain[q] !== c) {
        fhead[HEAD * (p + 1)]!++;
        bhead[HEAD * (q + 1)]!++;
      }
    }
  }
  for (let p = 0; p < n; p++) {
    fhead[HEAD * (p + 1)]! += fhead[HEAD * p]!;
    bhead[HEAD * (p + 1)]! += bhead[HEAD * p]!;
  }
  const out = new Uint32Array(fhead[HEAD * n]!);
  const into = new Uint32Array(bhead[HEAD * n]!);
  // Successors in ascending order as they are; predecessors appended in ascending source order.
  const fill = new Uint32Array(n);
  for (let q = 0; q < n; q++) fill[q] = bhead[HEAD * q]!;
  let o = 0;
  for (let p = 0; p < n; p++) {
    const c = chain[p]!;
    for (let i = start[p]!; i < start[p + 1]!; i++) {
      const q = adj[i]!;
      if (chain[q] !== c) {
        out[o++] = q;
        into[fill[q]!++] = p;
      }
    }
  }
  // Links: back to front the nearest exit after p, front to back the nearest entry before p.
  // A chain is plain when every node but its last is an exit and every node but its first an
  // entry (reach-search.ts needs no chain test there).
  const near = new Uint32Array(chains).fill(NONE_POS);
  const seen = new Uint8Array(chains);
  const busy = new Uint8Array(chains);
  for (let p = n - 1; p >= 0; p--) {
    const c = chain[p]!;
    const r = HEAD * p;
    const exit = fhead[r + HEAD]! > fhead[r]!;
    fhead[r + 1] = (exit ? EXIT : 0) | near[c]!;
    if (exit) near[c] = p;
    else if (seen[c] === 1) busy[c] = 1;
    seen[c] = 1;
  }
  near.fill(NONE_POS);
  seen.fill(0);
  for (let p = 0; p < n; p++) {
    const c = chain[p]!;
    const r = HEAD * p;
    const entry = bhead[r + HEAD]! > bhead[r]!;
    bhead[r + 1] = (entry ? ENTRY : 0) | near[c]!;
    if (entry) near[c] = p;
    else if (seen[c] === 1) busy[c] = 1;
    seen[c] = 1;
  }
  for (let p = 0; p < n; p++) {
    const c = chain[p]!;
    const word = busy[c] === 1 ? c : c | PLAIN;
    fhead[HEAD * p + 2] = word;
    bhead[HEAD * p + 2] = word;
  }
  return { fhead, out, bhead, into };
}
