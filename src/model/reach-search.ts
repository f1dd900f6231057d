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
 * - **Plain chains skip the chain test.** On a chain whose every node is an exit and an entry
 *   (most of a layered or random graph), a sweep walking it marks every node, so marks alone
 *   find where two sweeps meet on it and its chain entry is never read; a's and b's own chains
 *   are still tested (their first cover, a's suffix and b's prefix, is not made of marks).
 *
 * - **One record a node.** What a sweep reads of a node taken — its link, chain word and, for
 *   most nodes, its one or two edges to other chains — is one 16-byte record (reach-layout.ts),
 *   one cache line, where a head and then its edge list were two dependent random reads.
 *
 * - **Reads in batches.** Before a level is taken, one loop reads the records of all its nodes
 *   and another the first edge of each whose edges lie outside its record (touchRecords): those
 *   reads do not depend on each other, so their cache misses overlap, where the loop that takes
 *   the level waits on each in turn (on the 10-layer graph of the benchmark, a third off a
 *   reachable pair's search).
 *
 * - **Small compiled pieces.** Each side's level is its own method, rare branches share their
 *   stores with common ones, and the arrays that grow start small and are stored twice (see
 *   uint-heap.ts): V8 compiles the search while the first queries run (tens of milliseconds a
 *   function on the machine measured), and compiled code that reaches a branch it never saw run,
 *   or a field it took for a constant changing, is thrown away and compiled again. A new graph
 *   shape reaches such branches, so those that some graphs reach late or not at all run early
 *   on every graph: room in the lists is made by calls on every level taken (their growth shared
 *   by both sides, and run once by the constructor), the chain test compares with the other
 *   end's chain before it tests for a plain chain, and the records are int32 words with their
 *   flags in the sign bit (a Uint32Array word of 2^31 or more is a double to V8).
 *   test/model/search-feedback.test.ts checks it.
 *
 * Marks (one byte a position) and chain entries are put back after each search for what it
 * touched, so a search costs what it touches, never n; a bit a chain says which entries this
 * search has written, so that the entries of chains it has not covered are never read.
 */
import { edgeEnd, edgeStart, ENTRY, EXIT, NONE_POS, REC, type ReachLayout } from './reach-layout.js';
import { LevelQueue } from './level-queue.js';
import { doubled, withRoom } from './doubled.js';

/** Found forward: a reaches the node. */
const FWD = 1;
/** Found backward: the node reaches b. */
const BWD = 2;
/** Queued forward as the next exit of a chain already covered (taken without the chain test). */
const FWD_CHAIN = 4;
/** Queued backward as the previous entry of a chain already covered. */
const BWD_CHAIN = 8;
const NONE = 0xffff_ffff;
/** First capacity of the lists of what to put back: small, so that the first searches already grow them (see uint-heap.ts). */
const START = 2;

/** The reusable state of the search (one per labels object). */
export class ChainSweep {
  /** Per position: FWD, BWD, FWD_CHAIN, BWD_CHAIN (see above). */
  private readonly marks: Uint8Array;
  /**
   * Per chain: the lowest position covered forward (NONE: none) at [2c], 1 + the highest covered
   * backward (0: none) at [2c + 1]; then a spare pair that always holds (NONE, 0).
   */
  private readonly cover: Uint32Array;
  /**
   * One bit a chain, set once this search has covered it. A chain not covered yet holds nothing,
   * so its entries are not read (the spare pair is instead): on a graph of many chains the entries
   * are megabytes and a read of one is a miss (the benchmark's 10-layer graph has 258,922 chains,
   * of which a search touches a few dozen), where the bits stay in cache. A bit left set would
   * only send a read to the chain's own entries, which hold (NONE, 0) again after each search.
   */
  private readonly covered: Uint32Array;
  /** Where the spare pair of `cover` starts. */
  private readonly spare: number;
  private touchedNodes: Uint32Array = new Uint32Array(START);
  private nodeCount = 0;
  private touchedChains: Uint32Array = new Uint32Array(START);
  private chainCount = 0;
  private readonly fwd = new LevelQueue();
  // Complements: the highest position first.
  private readonly bwd = new LevelQueue();
  /** What touchRecords read, kept so that its reads are not optimised away. */
  readonly sink = new Uint32Array(1);

  constructor(private readonly g: ReachLayout) {
    // Stored twice so that V8 takes them as plain fields, not constants (as in UintHeap): their
    // first growth would otherwise discard the compiled search.
    this.touchedNodes = new Uint32Array(START);
    this.touchedChains = new Uint32Array(START);
    ChainSweep.warmUp(this.fwd);
    ChainSweep.warmUp(this.bwd);
    this.marks = new Uint8Array(g.levelStart[g.levelStart.length - 1]!);
    this.cover = new Uint32Array(2 * g.chains + 2);
    for (let c = 0; c <= g.chains; c++) this.cover[2 * c] = NONE;
    this.covered = new Uint32Array((g.chains + 31) >>> 5);
    this.spare = 2 * g.chains;
  }

  /**
   * Runs once each growth and drain of the lists the levels use (doubling twice), so that their
   * type feedback exists before V8 compiles the search: a path first met in compiled code throws
   * it away, and which list fills first, and when, differs from one graph to the next (tested in
   * test/model/search-feedback.test.ts).
   */
  private static warmUp(q: LevelQueue): void {
    q.reserve(0, 4 * START); // withRoom's growth, doubling twice
    // More keys than the batch holds, so that taking them grows it.
    for (let k = 0; k < 8 * START; k++) q.pushFar(k);
    q.take(8 * START);
    q.clear();
  }

  /** Bytes held. */
  get bytes(): number {
    return this.marks.byteLength + this.cover.byteLength + this.covered.byteLength + this.touchedNodes.byteLength + this.touchedChains.byteLength;
  }

  /**
   * True if a path runs from position pa to position pb, on different chains, at levels la < lb
   * (the caller has read them).
   */
  reachable(pa: number, pb: number, la: number, lb: number): boolean {
    // No exit after a on its chain: a reaches only its chain; no entry before b: only b's chain
    // reaches b. Settled before the search touches anything (sinks and sources of random graphs).
    const ea = this.g.frec[REC * pa]!;
    const eb = this.g.brec[REC * pb]!;
    const xa = (ea & EXIT) !== 0 ? pa : ea & NONE_POS;
    const xb = (eb & ENTRY) !== 0 ? pb : eb & NONE_POS;
    if (xa === NONE_POS || xb === NONE_POS) return false;
    const found = this.search(pa, pb, la, lb, xa, xb);
    const { marks, cover, covered, touchedNodes, touchedChains } = this;
    for (let i = 0; i < this.nodeCount; i++) marks[touchedNodes[i]!] = 0;
    for (let i = 0; i < this.chainCount; i++) {
      const c = touchedChains[i]!;
      cover[2 * c] = NONE;
      cover[2 * c + 1] = 0;
      covered[c >>> 5] = 0;
    }
    this.nodeCount = 0;
    this.chainCount = 0;
    return found;
  }

  /** Marks p (first mark: remembered, to be put back). */
  private mark(p: number, bits: number): void {
    const m = this.marks[p]!;
    if (m === 0) {
      if (this.nodeCount === this.touchedNodes.length) this.touchedNodes = doubled(this.touchedNodes);
      this.touchedNodes[this.nodeCount++] = p;
    }
    this.marks[p] = m | bits;
  }

  private touchChain(c: number): void {
    if (this.chainCount === this.touchedChains.length) this.touchedChains = doubled(this.touchedChains);
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

  private search(pa: number, pb: number, la: number, lb0: number, xa: number, xb: number): boolean {
    const { levelStart, frec, brec } = this.g;
    const levels = levelStart.length - 1;
    const { cover, fwd, bwd } = this;
    fwd.clear();
    bwd.clear();
    // a covers its chain from a on, b its chain up to b; each sweep starts at its chain's exit
    // (entry) nearest to it, xa (xb).
    // Chain words (negative on a plain chain); a plain chain is tested only when it is a's or b's.
    const caw = frec[REC * pa + 1]!;
    const cbw = brec[REC * pb + 1]!;
    const ca = caw & NONE_POS;
    const cb = cbw & NONE_POS;
    cover[2 * ca] = pa;
    cover[2 * cb + 1] = pb + 1;
    this.covered[ca >>> 5]! |= 1 << ca;
    this.covered[cb >>> 5]! |= 1 << cb;
    this.touchChain(ca);
    this.touchChain(cb);
    // (They lie on two chains, so neither finds the other here.)
    if (xa !== pa) this.mark(pa, FWD);
    if (xb !== pb) this.mark(pb, BWD);
    this.chainOnF(xa);
    this.chainOnB(xb);
    // The level each side took last; its next-level array holds the level after (before) it.
    let atF = la;
    let atB = lb0;
    for (;;) {
      if (fwd.size === 0 || bwd.size === 0) return false;
      const lf = fwd.nextSize > 0 ? atF + 1 : levelUp(levelStart, levels, atF, fwd.heapTop());
      const lb = bwd.nextSize > 0 ? atB - 1 : levelDown(levelStart, atB, ~bwd.heapTop() >>> 0);
      if (lf >= lb) return false;
      if (fwd.size <= bwd.size) {
        atF = lf;
        if (this.forwardLevel(lf, lb, pb, cbw)) return true;
      } else {
        atB = lb;
        if (this.backwardLevel(lb, lf, pa, caw)) return true;
      }
    }
  }

  /**
   * Takes forward level lf (the backward side waits at level lb at most; b's position and chain
   * word pb, cbw); true if the sweeps met.
   */
  private forwardLevel(lf: number, lb: number, pb: number, cbw: number): boolean {
    const fwd = this.fwd;
    // The hot loops keep the queue's array and the lists of what to put back in locals, and
    // write them back once a level is done (or the sweeps met).
    const { levelStart, frec } = this.g;
    const { marks, cover, covered, spare } = this;
    let touched = this.touchedNodes;
    let tn = this.nodeCount;
    let chains = this.touchedChains;
    let tc = this.chainCount;
    let met = false;
    fwd.take(levelStart[lf + 1]!);
    const nextEnd = (fwd.nextEnd = levelStart[lf + 2]!);
    let next = fwd.next;
    let ns = 0;
    // Nodes from `deep` on are at the backward side's level or deeper: only its marks count there.
    const deep = levelStart[lb]!;
    const batch = fwd.batch;
    const size = fwd.batchSize;
    // Room for all the level can queue and mark (each node's edges and its chain's next exit),
    // made by calls on every level whose growth both sides share (and the constructor runs).
    const room = touchRecords(frec, batch, size, 0, EXIT, this.sink);
    next = fwd.reserve(0, room);
    touched = withRoom(touched, tn, room);
    level: for (let k = 0; k < size; k++) {
      const x = batch[k]!;
      const r = REC * x;
      const link = frec[r]!;
      const cw = frec[r + 1]!;
      // (The comparison with b's chain comes first so that it runs on every graph: the first
      // graphs may have no plain chain, and code compiled without it was thrown away later.)
      if ((marks[x]! & FWD_CHAIN) === 0 && (cw === cbw || cw >= 0)) {
        // Found across an edge: the chain test, then x covers its chain from here on.
        const c = cw & NONE_POS;
        // A select, not a branch: both cases run on every graph (see the file comment).
        const at = ((covered[c >>> 5]! >>> c) & 1) !== 0 ? 2 * c : spare;
        if (cover[at + 1]! > x) {
          met = true;
          break;
        }
        if (cover[at]! <= x) continue;
        cover[2 * c] = x;
        covered[c >>> 5]! |= 1 << c;
        chains = withRoom(chains, tc, 1);
        chains[tc++] = c;
      }
      if ((link & EXIT) !== 0) {
        // Its successors on other chains (a node queued as a chain's next exit is one).
        const end = edgeEnd(frec, r);
        let i = edgeStart(frec, r);
        for (; i < end; i++) {
          const y = frec[i]!;
          if (y >= deep) break;
          const m = marks[y]!;
          if (m & BWD) {
            met = true;
            break level;
          }
          if (m === 0) {
            marks[y] = FWD;
            touched[tn++] = y;
            if (y < nextEnd) {
              next[ns++] = y;
            } else fwd.pushFar(y);
          }
        }
        for (; i < end; i++) {
          const y = frec[i]!;
          if (y > pb) break;
          if (marks[y]! & BWD) {
            met = true;
            break level;
          }
        }
      }
      // The chain's next exit (found already: it only gains the flag, being queued still).
      const e = link & NONE_POS;
      if (e !== NONE_POS) {
        const m = marks[e]!;
        if (m & BWD) {
          met = true;
          break;
        }
        // One store for both cases (m is 0 or has FWD): a branch taken rarely would reach the
        // compiled code with no type feedback and throw it away.
        marks[e] = m | FWD | FWD_CHAIN;
        if (m === 0) {
          touched[tn++] = e;
          if (e < nextEnd) {
            next[ns++] = e;
          } else fwd.pushFar(e);
        }
      }
    }
    fwd.nextSize = ns;
    this.touchedNodes = touched;
    this.nodeCount = tn;
    this.touchedChains = chains;
    this.chainCount = tc;
    return met;
  }

  /** Takes backward level lb (the forward side waits at level lf at least; a's position and chain word pa, caw); true if the sweeps met. */
  private backwardLevel(lb: number, lf: number, pa: number, caw: number): boolean {
    const bwd = this.bwd;
    // The hot loops keep the queue's array and the lists of what to put back in locals, and
    // write them back once a level is done (or the sweeps met).
    const { levelStart, brec } = this.g;
    const { marks, cover, covered, spare } = this;
    let touched = this.touchedNodes;
    let tn = this.nodeCount;
    let chains = this.touchedChains;
    let tc = this.chainCount;
    let met = false;
    // Complements: the level's keys are those at or below ~levelStart[lb].
    bwd.take((~levelStart[lb]! >>> 0) + 1);
    const nextEnd = (bwd.nextEnd = (~levelStart[lb - 1]! >>> 0) + 1);
    let next = bwd.next;
    let ns = 0;
    // Nodes below `shallow` are at the forward side's level or shallower: only its marks count.
    const shallow = levelStart[lf + 1]!;
    const batch = bwd.batch;
    const size = bwd.batchSize;
    const room = touchRecords(brec, batch, size, -1, ENTRY, this.sink);
    next = bwd.reserve(0, room);
    touched = withRoom(touched, tn, room);
    level: for (let k = 0; k < size; k++) {
      const x = ~batch[k]! >>> 0;
      const r = REC * x;
      const link = brec[r]!;
      const cw = brec[r + 1]!;
      if ((marks[x]! & BWD_CHAIN) === 0 && (cw === caw || cw >= 0)) {
        const c = cw & NONE_POS;
        const at = ((covered[c >>> 5]! >>> c) & 1) !== 0 ? 2 * c : spare;
        if (cover[at]! <= x) {
          met = true;
          break;
        }
        if (cover[at + 1]! > x) continue;
        cover[2 * c + 1] = x + 1;
        covered[c >>> 5]! |= 1 << c;
        chains = withRoom(chains, tc, 1);
        chains[tc++] = c;
      }
      if ((link & ENTRY) !== 0) {
        // Its predecessors on other chains, read from the end.
        const first = edgeStart(brec, r);
        let i = edgeEnd(brec, r) - 1;
        for (; i >= first; i--) {
          const y = brec[i]!;
          if (y < shallow) break;
          const m = marks[y]!;
          if (m & FWD) {
            met = true;
            break level;
          }
          if (m === 0) {
            marks[y] = BWD;
            touched[tn++] = y;
            const key = ~y >>> 0;
            if (key < nextEnd) {
              next[ns++] = key;
            } else bwd.pushFar(key);
          }
        }
        for (; i >= first; i--) {
          const y = brec[i]!;
          if (y < pa) break;
          if (marks[y]! & FWD) {
            met = true;
            break level;
          }
        }
      }
      // The chain's previous entry.
      const e = link & NONE_POS;
      if (e !== NONE_POS) {
        const m = marks[e]!;
        if (m & FWD) {
          met = true;
          break;
        }
        marks[e] = m | BWD | BWD_CHAIN;
        if (m === 0) {
          touched[tn++] = e;
          const key = ~e >>> 0;
          if (key < nextEnd) {
            next[ns++] = key;
          } else bwd.pushFar(key);
        }
      }
    }
    bwd.nextSize = ns;
    this.touchedNodes = touched;
    this.nodeCount = tn;
    this.touchedChains = chains;
    this.chainCount = tc;
    return met;
  }
}

/**
 * The level of position p, knowing it is `from` or more: a gallop up `levelStart` from there (the
 * forward side's levels grow by little from one batch to the next).
 */
function levelUp(levelStart: Uint32Array, levels: number, from: number, p: number): number {
  let lo = from; // levelStart[lo] ≤ p
  let step = 1;
  while (lo + step < levels && levelStart[lo + step]! <= p) {
    lo += step;
    step *= 2;
  }
  let hi = Math.min(lo + step, levels); // levelStart[hi] > p
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (levelStart[mid]! <= p) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The level of position p, knowing it is `from` or less: a gallop down `levelStart`. */
function levelDown(levelStart: Uint32Array, from: number, p: number): number {
  let hi = from + 1; // levelStart[hi] > p
  let step = 1;
  while (hi - step > 0 && levelStart[hi - step]! > p) {
    hi -= step;
    step *= 2;
  }
  let lo = Math.max(hi - step, 0); // levelStart[lo] ≤ p
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (levelStart[mid]! <= p) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Reads the records of a batch, then the first edge of each whose edges lie outside its record,
 * before the batch is taken: the reads are independent of each other, so their cache misses
 * overlap, where the loop that takes the batch waits on each node's in turn. `flip` is −1 for keys
 * that are complements. Returns how many nodes taking the batch can queue or mark at most (each
 * node's edges and its chain's next or previous node); what it read goes to `sink[0]`.
 */
function touchRecords(rec: Int32Array, batch: Uint32Array, size: number, flip: number, bit: number, sink: Uint32Array): number {
  let read = 0;
  for (let k = 0; k < size; k++) read ^= rec[REC * ((batch[k]! ^ flip) >>> 0)]!;
  let room = size;
  for (let k = 0; k < size; k++) {
    const r = REC * ((batch[k]! ^ flip) >>> 0);
    if ((rec[r]! & bit) !== 0) {
      const a = rec[r + 2]!;
      if (a < 0) {
        read ^= rec[~a]!;
        room += rec[r + 3]! - ~a;
      } else room += 2;
    }
  }
  sink[0] = read;
  return room;
}
