/**
 * The search behind the reachability labels (internal: reach-labels.ts), for the pairs their O(1)
 * tests leave open: two sweeps toward each other over the layout of reach-layout.ts, forward from
 * a in increasing position and backward from b in decreasing position, the side with fewer nodes
 * waiting going first.
 *
 * Why this search. Its cost is memory traffic: on a million-node graph nearly every node it
 * touches is a cache miss (about 100 ns on the machine measured), so it touches few nodes, and
 * settles most edges from an array of one byte a node that stays in cache:
 *
 * - **Chains, not nodes.** A sweep covers chains of the cover: forward it keeps, per chain, the
 *   lowest position it reached (the rest of the chain is reached too) and goes on only at the
 *   chain's exits; backward, the highest position that reaches b, going on at the entries. A
 *   capture of many streams is crossed in one step per join instead of one per op, and a chain
 *   covered forward from p and backward up to q ≥ p holds a path a → b.
 * - **Found is not taken.** A node found across an edge is only marked and queued; its data is
 *   read when its turn comes, so the last nodes found before the sweeps meet cost one byte each.
 * - **Levels.** Positions are level-major, so when the backward side waits at level L at most,
 *   every node of level L or deeper on a path a → b has been found by it already (each is found
 *   from its successor on the path, deeper, so taken already). The forward side needs nothing
 *   but the mark of such a node: the backward side's, or it is on no path. Symmetrically
 *   backward. When the lowest forward level reaches the highest backward one, every node of a
 *   path a → b would be found by one side, and the path's edge from a node found forward to one
 *   found backward seen by the side that took its first end: there is no path.
 *
 * Marks (one byte a position) and chain entries are put back after each search for what it
 * touched, so a search costs what it touches, never n.
 */
import { ENTRY, EXIT, HEAD, NONE_POS, type ReachLayout } from './reach-layout.js';
import { LevelQueue } from './level-queue.js';

/** Found forward: a reaches the node. */
const FWD = 1;
/** Found backward: the node reaches b. */
const BWD = 2;
/** Queued forward as the next exit of a chain already covered (taken without the chain test). */
const FWD_CHAIN = 4;
/** Queued backward as the previous entry of a chain already covered. */
const BWD_CHAIN = 8;
const NONE = 0xffff_ffff;

/** The reusable state of the search (one per labels object). */
export class ChainSweep {
  /** Per position: FWD, BWD, FWD_CHAIN, BWD_CHAIN (see above). */
  private readonly marks: Uint8Array;
  /** Per chain: the lowest position covered forward (NONE: none) at [2c], 1 + the highest covered backward (0: none) at [2c + 1]. */
  private readonly cover: Uint32Array;
  private touchedNodes: Uint32Array = new Uint32Array(256);
  private nodeCount = 0;
  private touchedChains: Uint32Array = new Uint32Array(256);
  private chainCount = 0;
  private readonly fwd = new LevelQueue();
  // Complements: the highest position first.
  private readonly bwd = new LevelQueue();

  constructor(private readonly g: ReachLayout) {
    this.marks = new Uint8Array(g.level.length);
    this.cover = new Uint32Array(2 * g.chains);
    for (let c = 0; c < g.chains; c++) this.cover[2 * c] = NONE;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.marks.byteLength + this.cover.byteLength + this.touchedNodes.byteLength + this.touchedChains.byteLength;
  }

  /** True if a path runs from position pa to position pb (on different chains, level(pa) < level(pb)). */
  reachable(pa: number, pb: number): boolean {
    const found = this.search(pa, pb);
    const { marks, cover, touchedNodes, touchedChains } = this;
    for (let i = 0; i < this.nodeCount; i++) marks[touchedNodes[i]!] = 0;
    for (let i = 0; i < this.chainCount; i++) {
      const c = touchedChains[i]!;
      cover[2 * c] = NONE;
      cover[2 * c + 1] = 0;
    }
    this.nodeCount = 0;
    this.chainCount = 0;
    return found;
  }

  /** Marks p (first mark: remembered, to be put back). */
  private mark(p: number, bits: number): void {
    const m = this.marks[p]!;
    if (m === 0) {
      if (this.nodeCount === this.touchedNodes.length) this.touchedNodes = grown(this.touchedNodes);
      this.touchedNodes[this.nodeCount++] = p;
    }
    this.marks[p] = m | bits;
  }

  private touchChain(c: number): void {
    if (this.chainCount === this.touchedChains.length) this.touchedChains = grown(this.touchedChains);
    this.touchedChains[this.chainCount++] = c;
  }

  /**
   * Queues exit e forward as its chain's next one; true if e reaches b (a path). A node already
   * found forward is still queued (its position is after every one taken so far): it only gains
   * the flag.
   */
  private chainOnF(e: number): boolean {
    const m = this.marks[e]!;
    if (m & BWD) return true;
    if (m & FWD) this.marks[e] = m | FWD_CHAIN;
    else {
      this.mark(e, FWD | FWD_CHAIN);
      this.fwd.push(e);
    }
    return false;
  }

  /** Queues entry e backward as its chain's previous one; true if a reaches e. */
  private chainOnB(e: number): boolean {
    const m = this.marks[e]!;
    if (m & FWD) return true;
    if (m & BWD) this.marks[e] = m | BWD_CHAIN;
    else {
      this.mark(e, BWD | BWD_CHAIN);
      this.bwd.push(~e >>> 0);
    }
    return false;
  }

  private search(pa: number, pb: number): boolean {
    const { level, levelStart, start, out, inStart, into } = this.g;
    const { marks, cover, fwd, bwd } = this;
    fwd.clear();
    bwd.clear();
    // a covers its chain from a on, b its chain up to b; each sweep starts at its chain's exit
    // (entry) nearest to it.
    const ea = out[start[pa]!]!;
    const eb = into[inStart[pb]!]!;
    const ca = out[start[pa]! + 1]!;
    const cb = into[inStart[pb]! + 1]!;
    cover[2 * ca] = pa;
    cover[2 * cb + 1] = pb + 1;
    this.touchChain(ca);
    this.touchChain(cb);
    const xa = (ea & EXIT) !== 0 ? pa : ea & NONE_POS;
    const xb = (eb & ENTRY) !== 0 ? pb : eb & NONE_POS;
    // (They lie on two chains, so neither finds the other here.)
    if (xa !== pa) this.mark(pa, FWD);
    if (xb !== pb) this.mark(pb, BWD);
    if (xa !== NONE_POS) this.chainOnF(xa);
    if (xb !== NONE_POS) this.chainOnB(xb);
    // The level each side took last; its next-level array holds the level after (before) it.
    let atF = 0;
    let atB = 0;
    for (;;) {
      if (fwd.size === 0 || bwd.size === 0) return false;
      const lf = fwd.nextSize > 0 ? atF + 1 : level[fwd.heapTop()]!;
      const lb = bwd.nextSize > 0 ? atB - 1 : level[~bwd.heapTop() >>> 0]!;
      if (lf >= lb) return false;
      if (fwd.size <= bwd.size) {
        atF = lf;
        fwd.take(levelStart[lf + 1]!);
        fwd.nextEnd = levelStart[lf + 2]!;
        // Nodes from `deep` on are at the backward side's level or deeper: only its marks count there.
        const deep = levelStart[lb]!;
        const batch = fwd.batch;
        for (let k = 0; k < fwd.batchSize; k++) {
          const x = batch[k]!;
          const o = start[x]!;
          const link = out[o]!;
          if ((marks[x]! & FWD_CHAIN) === 0) {
            // Found across an edge: the chain test, then x covers its chain from here on.
            const c = out[o + 1]!;
            if (cover[2 * c + 1]! > x) return true;
            if (cover[2 * c]! <= x) continue;
            cover[2 * c] = x;
            this.touchChain(c);
            if ((link & EXIT) === 0) {
              const e = link & NONE_POS;
              if (e !== NONE_POS && this.chainOnF(e)) return true;
              continue;
            }
          }
          // x is an exit: its successors on other chains, then the chain's next exit.
          const end = start[x + 1]!;
          let i = o + HEAD;
          for (; i < end; i++) {
            const y = out[i]!;
            if (y >= deep) break;
            const m = marks[y]!;
            if (m & BWD) return true;
            if (m === 0) {
              this.mark(y, FWD);
              fwd.push(y);
            }
          }
          for (; i < end; i++) {
            const y = out[i]!;
            if (y > pb) break;
            if (marks[y]! & BWD) return true;
          }
          const e = link & NONE_POS;
          if (e !== NONE_POS && this.chainOnF(e)) return true;
        }
      } else {
        atB = lb;
        // Complements: the level's keys are those at or below ~levelStart[lb].
        bwd.take((~levelStart[lb]! >>> 0) + 1);
        bwd.nextEnd = (~levelStart[lb - 1]! >>> 0) + 1;
        // Nodes below `shallow` are at the forward side's level or shallower: only its marks count.
        const shallow = levelStart[lf + 1]!;
        const batch = bwd.batch;
        for (let k = 0; k < bwd.batchSize; k++) {
          const x = ~batch[k]! >>> 0;
          const o = inStart[x]!;
          const link = into[o]!;
          if ((marks[x]! & BWD_CHAIN) === 0) {
            const c = into[o + 1]!;
            if (cover[2 * c]! <= x) return true;
            if (cover[2 * c + 1]! > x) continue;
            cover[2 * c + 1] = x + 1;
            this.touchChain(c);
            if ((link & ENTRY) === 0) {
              const e = link & NONE_POS;
              if (e !== NONE_POS && this.chainOnB(e)) return true;
              continue;
            }
          }
          // x is an entry: its predecessors on other chains (read from the end), then the
          // chain's previous entry.
          const first = o + HEAD;
          let i = inStart[x + 1]! - 1;
          for (; i >= first; i--) {
            const y = into[i]!;
            if (y < shallow) break;
            const m = marks[y]!;
            if (m & FWD) return true;
            if (m === 0) {
              this.mark(y, BWD);
              bwd.push(~y >>> 0);
            }
          }
          for (; i >= first; i--) {
            const y = into[i]!;
            if (y < pa) break;
            if (marks[y]! & FWD) return true;
          }
          const e = link & NONE_POS;
          if (e !== NONE_POS && this.chainOnB(e)) return true;
        }
      }
    }
  }
}

function grown(a: Uint32Array): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
}
