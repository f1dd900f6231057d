/**
 * An open-addressing hash set of a store's edges, keyed by (from, to), holding edge numbers
 * (internal: GraphStore builds it when list walks grow costly).
 *
 * Why: without it, finding the edge u → v walks u's out-list and v's in-list, which costs the
 * smaller degree; on a dense graph (a 2,000-node complete DAG) that is a thousand steps a lookup,
 * and every `addEdge` looks up its edge. The set stores only edge numbers (4 bytes a slot, at most
 * half the slots used) and reads the ends from the store's edge pairs, so it costs 8–16 bytes an
 * edge — which is why a store builds it only once walking has cost as much as building it would
 * (graph-store.ts), and a capture, which never looks up edges this way, never pays for it.
 *
 * Linear probing; no deletions (a store drops the set when it removes an edge and builds it again
 * when it is needed).
 */

/** Hash of the pair (u, v): two multiplicative hashes mixed, good enough for linear probing. */
function hashPair(u: number, v: number): number {
  let h = Math.imul(u, 0x9e3779b1) ^ Math.imul(v ^ 0x7f4a7c15, 0x85ebca77);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return (h ^ (h >>> 12)) >>> 0;
}

/** The edge set (see the file comment). */
export class EdgeSet {
  private slots: Uint32Array;
  private mask: number;
  private size = 0;

  /** A set of the edges 1..m of a store's `ins` and `outs` (edge-pairs.ts). */
  constructor(ins: Uint32Array, outs: Uint32Array, m: number) {
    let cap = 16;
    while (cap < 2 * (m + 1)) cap *= 2;
    this.slots = new Uint32Array(cap);
    this.mask = cap - 1;
    for (let e = 1; e <= m; e++) this.add(ins, outs, e);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.slots.byteLength;
  }

  /** The number of the edge u → v, or 0 if there is none. */
  find(ins: Uint32Array, outs: Uint32Array, u: number, v: number): number {
    const slots = this.slots;
    const mask = this.mask;
    for (let i = hashPair(u, v) & mask; ; i = (i + 1) & mask) {
      const e = slots[i]!;
      if (e === 0) return 0;
      if (ins[2 * e] === u && outs[2 * e] === v) return e;
    }
  }

  /** Adds edge number e (new: not in the set), growing the table past half full. */
  add(ins: Uint32Array, outs: Uint32Array, e: number): void {
    if (2 * (this.size + 1) > this.slots.length) this.rehash(ins, outs);
    const slots = this.slots;
    const mask = this.mask;
    let i = hashPair(ins[2 * e]!, outs[2 * e]!) & mask;
    while (slots[i] !== 0) i = (i + 1) & mask;
    slots[i] = e;
    this.size++;
  }

  private rehash(ins: Uint32Array, outs: Uint32Array): void {
    const old = this.slots;
    this.slots = new Uint32Array(old.length * 2);
    this.mask = this.slots.length - 1;
    this.size = 0;
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.add(ins, outs, old[i]!);
  }
}
