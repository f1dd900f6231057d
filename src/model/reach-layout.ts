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
 * from a lower position to a higher one (its far end is a level deeper).
 *
 * Why chains, exits and entries. Consecutive nodes of a chain are joined by an edge, so a node
 * reaches the rest of its chain, and edges within a chain say nothing more: the lists keep only
 * the edges between chains. A node with no such edge out (most ops of a capture, whose one
 * successor is the next op of their stream) reaches nothing else, so a forward sweep that reaches
 * it goes on to the chain's next *exit* (a node with an edge to another chain); backward, to the
 * previous *entry* (a node with an edge from another chain).
 *
 * Why records. The search's cost is cache and TLB misses (a random read from an array of 24 MB
 * costs about twice one from an array of 4 MB on the machine measured; two dependent random reads
 * a node, a head and then its edges, cost about 2.3 times one read of a 16-byte record), so what
 * it reads of a node sits in one aligned 16-byte record, one cache line: `frec[4p …]` is p's
 * forward record — its next exit (EXIT set when p is one), its chain word, then its successors on
 * other chains (ascending) when it has one or two (one is stored twice; the search takes a node
 * found twice once), or else the complement of where they start further on in `frec` (after the
 * records) and where they end — and `brec[4p …]` the backward one: previous entry (ENTRY set when
 * p is one), chain word, predecessors on other chains. Most nodes of a layered or random graph have
 * one or two edges to other chains a direction, so a node taken is one read; a node found across
 * an edge is settled from its record alone. 32 bytes a node, 8 an edge between chains for the
 * nodes with three or more, 4 a node for the renumbering unless it is the identity. A capture of
 * many streams keeps about one edge in twenty.
 */
import type { GraphStore } from './graph-store.js';

/** No position: no exit after, or entry before, on the chain. */
export const NONE_POS = 0x7fff_ffff;
// The flags are a record word's sign bit, and the records are Int32Arrays, so that every word the
// search reads is an int32: V8 reads a Uint32Array word of 2^31 or more as a double, and code
// it compiled while the words it met were smaller is thrown away at the first one ("lost
// precision"), which happened as each new graph's first queries met a flag in a new place.
/** Set in a forward record's link when the node is an exit (the sign bit). */
export const EXIT = -0x8000_0000;
/** Set in a backward record's link when the node is an entry (the sign bit). */
export const ENTRY = -0x8000_0000;
/** Set in a record's chain word when the chain is plain (see `makeHeads`): the word is negative. */
export const PLAIN = -0x8000_0000;
/** Words per node in a record: link, chain word, then two edges or where the edges lie (see `edgeStart`). */
export const REC = 4;

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
  /** Forward records, REC words per position, then the successor lists too long for a record (see the file comment). */
  readonly frec: Int32Array;
  /** Backward records, as `frec` (predecessors on other chains). */
  readonly brec: Int32Array;
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
  const { fhead, out, bhead, into } = makeHeads(n, chains, start, adj, chain);
  const frec = packRecords(n, fhead, out);
  const brec = packRecords(n, bhead, into);
  return { layout: { pos: identity ? null : pos, levelStart, chains, frec, brec }, all: { start, adj }, level: lv };
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

/** Words a node in the heads `makeHeads` builds first: edge offset, link, chain word. */
const HEAD = 3;

/**
 * The forward and backward heads and edge lists from all successors by position: per position,
 * the offset of its edges to other chains (p + 1's ends them), its link and its chain word, as the
 * records will hold them (`packRecords`).
 */
function makeHeads(n: number, chains: number, start: Uint32Array, adj: Uint32Array, chain: Uint32Array): { fhead: Int32Array; out: Uint32Array; bhead: Int32Array; into: Uint32Array } {
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

/**
 * The records (see the file comment) from heads of HEAD words and their edge lists: a node with
 * one or two edges holds them (one twice), one with more holds the complement of where its list
 * starts after the records and where it ends.
 */
function packRecords(n: number, head: Int32Array, edges: Uint32Array): Int32Array {
  let long = 0;
  for (let p = 0; p < n; p++) {
    const c = head[HEAD * (p + 1)]! - head[HEAD * p]!;
    if (c > 2) long += c;
  }
  const rec = new Int32Array(REC * n + long);
  let at = REC * n;
  for (let p = 0; p < n; p++) {
    const r = REC * p;
    const first = head[HEAD * p]!;
    const c = head[HEAD * (p + 1)]! - first;
    rec[r] = head[HEAD * p + 1]!;
    rec[r + 1] = head[HEAD * p + 2]!;
    if (c > 2) {
      rec[r + 2] = ~at;
      for (let i = 0; i < c; i++) rec[at++] = edges[first + i]!;
      rec[r + 3] = at;
    } else if (c > 0) {
      rec[r + 2] = edges[first]!;
      rec[r + 3] = edges[first + c - 1]!;
    }
  }
  return rec;
}

/**
 * Where the edges of the record at r start in `rec` (they end at `edgeEnd`).
 * (Two functions, not one returning a pair, so that nothing is allocated.) The record must be an
 * exit's (forward) or an entry's (backward).
 */
export function edgeStart(rec: Int32Array, r: number): number {
  const a = rec[r + 2]!;
  return a < 0 ? ~a : r + 2;
}

/** Where the edges of the record at r end in `rec` (see `edgeStart`). */
export function edgeEnd(rec: Int32Array, r: number): number {
  return rec[r + 2]! < 0 ? rec[r + 3]! : r + 4;
}
