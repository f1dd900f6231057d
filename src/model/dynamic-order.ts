/**
 * Adding an edge by hand without ever making a cycle, cheaply, whatever order the edges come in.
 *
 * Why: `addEdge(u, v)` must refuse an edge that would close a cycle (v already reaches u). A
 * search from v on every call costs O(n) per edge, so building a graph edge by edge could cost
 * O(n·m). Instead the store keeps a topological order (order-list.ts: a linked list with labels,
 * where a node moves in O(1)) and each edge is checked against it:
 *
 * - if u comes before v the edge agrees with the order and cannot close a cycle: O(1). This is
 *   every edge of a capture and every edge added from an older node to a newer one;
 * - otherwise only nodes between v and u in the order can lie on a cycle. Two searches run at
 *   once, forward from v and backward from u, each taking its nodes in order (the forward one the
 *   earliest first, the backward one the latest first), and they stop as soon as the next node of
 *   the forward search comes after the next one of the backward search: the two-way ordered search
 *   of Haeupler, Kavitha, Mathew, Sen and Tarjan ("Incremental cycle detection, topological
 *   ordering, and strong component maintenance", TALG 2012). A node found by both means a cycle.
 *   Otherwise there is a place p in the order, just after the backward search's next node, such
 *   that the forward search has taken every descendant of v before p and the backward search every
 *   ancestor of u after p; moving those ancestors, then those descendants (each group in its own
 *   order), to p makes the order valid again, and nothing else moves.
 *
 * The searches are balanced (the side that has scanned fewer edges goes next), so each costs
 * about twice the smaller side, not the span between v and u. Pearce–Kelly, which this replaced,
 * searched and renumbered the whole span: adding a 20,000-node chain from its end took 20 s.
 * Neither search queues a node past the other's next one (it would stop before taking it), so
 * each queue holds only nodes it may take; the search is step for step the one above.
 *
 * Many edges at once (`ComputeGraph.addEdges`, `fromJSON`) go through `addEdges`: append them all,
 * then one Kahn pass (O(n + m)) either finds a cycle — and the batch is undone — or gives the new
 * order.
 */
import type { GraphStore } from './graph-store.js';
import { LabelHeap } from './label-heap.js';
import { doubled } from './doubled.js';

/** What `DynamicOrder.addEdge` did: added the edge, found it already there, or refused a cycle. */
export type AddEdgeResult = 'added' | 'duplicate' | 'cycle';

/**
 * What `DynamicOrder.addEdges` did: `added[i]` tells whether pair i was new (false: a duplicate);
 * or the batch closed a cycle — `index` is the last pair of the batch on it, `cycle` its nodes in order
 * (cycle[0] → cycle[1] → … → cycle[0]) — and nothing was added.
 */
export type AddEdgesResult = { ok: true; added: boolean[] } | { ok: false; index: number; cycle: number[] };

const F_SEEN = 1;
const F_DONE = 2;
const B_SEEN = 3;
const B_DONE = 4;

/** Keeps a store's topological order valid as edges are added (one per `ComputeGraph`). */
export class DynamicOrder {
  // Search marks, one byte a node (F_SEEN, F_DONE, B_SEEN, B_DONE; 0: not met), made on the first
  // edge that disagrees with the order and put back after each search for the nodes it marked
  // (`touched`): a byte a node keeps the marks of a graph of half a million nodes in the
  // processor's cache, where the 32-bit stamps this replaced took four times the room.
  private mark: Uint8Array = new Uint8Array(0);
  private touched: Uint32Array = new Uint32Array(64);
  private touchedCount = 0;
  private readonly ahead = new LabelHeap(1);
  private readonly behind = new LabelHeap(-1);
  // The nodes each search took, in the order it took them (reused; counts in locals): typed
  // arrays, not JS arrays, so that a search allocates nothing and `length = 0` costs nothing.
  private doneF = new Uint32Array(64);
  private doneB = new Uint32Array(64);
  /** The block of nodes to move, in their new order (reused). */
  private run = new Uint32Array(64);
  /** Nodes taken and edges scanned by the searches so far: the work, for tests and benchmarks. */
  scanned = 0;
  /** Nodes the searches have queued so far (u and v included), for tests and benchmarks. */
  queued = 0;
  /**
   * A sum of what the searches read ahead, kept so that the reads are not optimised away. Each
   * step of a search waits for a chain of cache misses (the node, its first edge, that edge's
   * target); reading a queued node's first edge when it is queued, long before its turn, lets
   * those misses overlap: 10–20 % off edges added in random order on half a million nodes.
   */
  warm = 0;

  /**
   * Adds u → v to `store` unless it is a duplicate or would close a cycle (self-loops included).
   * On 'duplicate' and 'cycle' the store is unchanged (the order too). `isNew`: the caller has
   * looked the edge up already and it is not there (so it is not looked up again).
   */
  addEdge(store: GraphStore, u: number, v: number, isNew = false): AddEdgeResult {
    if (u === v) return 'cycle';
    if (!isNew && store.hasEdge(u, v)) return 'duplicate';
    if (store.before(u, v)) {
      store.appendEdge(u, v);
      return 'added';
    }
    const list = store.orderList();
    const label = list.label; // the label of x at [2x]
    if (this.mark.length < store.n) this.mark = new Uint8Array(Math.max(store.n, this.mark.length * 2));
    const mark = this.mark;
    const ahead = this.ahead;
    const behind = this.behind;
    ahead.clear();
    behind.clear();
    let doneF = this.doneF;
    let doneB = this.doneB;
    let nF = 0;
    let nB = 0;
    const lu = label[2 * u]!;
    const lv = label[2 * v]!;
    mark[v] = F_SEEN;
    ahead.push(v, lv);
    mark[u] = B_SEEN;
    behind.push(u, lu);
    this.touch(v);
    this.touch(u);
    const { firstOut, firstIn, outs, ins } = store;
    let workF = 0;
    let workB = 0;
    let warm = 0;
    // The latest of the ancestors of u the backward search left out for coming before the forward
    // search's next node (see `limit`), and its label: not queued, it still bounds p (below).
    let skippedB = -1;
    let skippedLabel = -1;
    while (ahead.size > 0 && behind.size > 0) {
      if (ahead.topLabel() > behind.topLabel()) break;
      if (workF <= workB) {
        // A node after the backward search's next one is never taken: the forward search would
        // stop first (that next label only falls). Nor can it close a cycle: every ancestor of u
        // after that label is marked already. So it is not queued (nor its first edge read).
        const limit = behind.topLabel();
        const a = ahead.pop();
        mark[a] = F_DONE;
        if (nF === doneF.length) doneF = this.doneF = doubled(doneF);
        doneF[nF++] = a;
        workF++;
        for (let e = firstOut[a]!; e !== 0; e = outs[2 * e + 1]!) {
          workF++;
          const x = outs[2 * e]!;
          const mx = mark[x]!;
          if (mx >= B_SEEN) return this.refuse(workF + workB);
          if (mx === 0) {
            const lx = label[2 * x]!;
            if (lx < limit) {
              mark[x] = F_SEEN;
              this.touch(x);
              ahead.push(x, lx);
              // Read x's first edge now (see `warm`): its cache misses overlap the rest of the search.
              warm += outs[2 * firstOut[x]!]!;
            }
          }
        }
      } else {
        const limit = ahead.topLabel(); // the same bound the other way (it only rises)
        const b = behind.pop();
        mark[b] = B_DONE;
        if (nB === doneB.length) doneB = this.doneB = doubled(doneB);
        doneB[nB++] = b;
        workB++;
        for (let e = firstIn[b]!; e !== 0; e = ins[2 * e + 1]!) {
          workB++;
          const x = ins[2 * e]!;
          const mx = mark[x]!;
          if (mx === F_SEEN || mx === F_DONE) return this.refuse(workF + workB);
          if (mx === 0) {
            const lx = label[2 * x]!;
            if (lx > limit) {
              mark[x] = B_SEEN;
              this.touch(x);
              behind.push(x, lx);
              warm += ins[2 * firstIn[x]!]!;
            } else if (lx > lv && lx > skippedLabel) {
              skippedB = x;
              skippedLabel = lx;
            }
          }
        }
      }
    }
    this.scanned += workF + workB;
    this.queued += ahead.pushes + behind.pushes;
    this.warm = warm;
    this.untouch();
    // No cycle. Move u's ancestors after p, then v's descendants before p, to p (file comment).
    // Each search took its nodes in order, so doneF is ascending by label and doneB descending:
    // the block to move is doneB reversed, then the part of doneF before p, with no sorting.
    if (this.run.length < nB + nF) this.run = new Uint32Array(2 * (nB + nF));
    const run = this.run;
    let k = 0;
    for (let i = nB - 1; i >= 0; i--) run[k++] = doneB[i]!;
    // The backward search's next node b, had it queued every ancestor of u after v: the later of
    // its queue's top and the latest node it left out (which it would have queued, and never taken).
    let b = skippedB;
    let lb = skippedLabel;
    if (behind.size > 0 && behind.topLabel() > lb) {
      b = behind.top();
      lb = behind.topLabel();
    }
    if (b >= 0) {
      // p is just after b, which stays where it is; every node the backward search took lies after it.
      for (let i = 0; i < nF && label[2 * doneF[i]!]! < lb; i++) run[k++] = doneF[i]!;
      for (let i = 0; i < k; i++) list.unlink(run[i]!);
      list.insertRunAfter(run, k, b);
    } else {
      // The backward search found every ancestor of u after v: p is just before v, and only they move.
      for (let i = 0; i < k; i++) list.unlink(run[i]!);
      list.insertRunAfter(run, k, list.prev(v));
    }
    store.appendEdge(u, v);
    return 'added';
  }

  private refuse(work: number): AddEdgeResult {
    this.scanned += work;
    this.queued += this.ahead.pushes + this.behind.pushes;
    this.untouch();
    return 'cycle';
  }

  /** Remembers that node x was marked (its first mark of this search). */
  private touch(x: number): void {
    if (this.touchedCount === this.touched.length) {
      const t = new Uint32Array(this.touched.length * 2);
      t.set(this.touched);
      this.touched = t;
    }
    this.touched[this.touchedCount++] = x;
  }

  /** Clears the marks of the nodes the search marked. */
  private untouch(): void {
    const { mark, touched } = this;
    for (let i = 0; i < this.touchedCount; i++) mark[touched[i]!] = 0;
    this.touchedCount = 0;
  }

  /**
   * Adds the edges `from[i] → to[i]` (ids already checked), skipping duplicates, or none of them
   * if they would close a cycle. O(k) when every new edge agrees with the order, else
   * O(n + m) for one Kahn pass.
   */
  addEdges(store: GraphStore, from: readonly number[], to: readonly number[]): AddEdgesResult {
    for (let i = 0; i < from.length; i++) if (from[i] === to[i]) return { ok: false, index: i, cycle: [from[i]!] };
    const before = store.m;
    const added: boolean[] = new Array<boolean>(from.length);
    let agrees = true;
    for (let i = 0; i < from.length; i++) {
      const u = from[i]!;
      const v = to[i]!;
      added[i] = !store.hasEdge(u, v);
      if (!added[i]) continue;
      if (!store.before(u, v)) agrees = false;
      store.appendEdge(u, v);
    }
    if (agrees) return { ok: true, added };

    // Kahn over the whole graph: it either orders every node or leaves a cycle behind.
    const n = store.n;
    const indeg = new Uint32Array(n);
    for (let e = 1; e <= store.m; e++) indeg[store.edgeTo(e)]!++;
    const queue = new Uint32Array(n);
    let tail = 0;
    for (let v = 0; v < n; v++) if (indeg[v] === 0) queue[tail++] = v;
    for (let head = 0; head < tail; head++) {
      for (let e = store.firstOut[queue[head]!]!; e !== 0; e = store.nextOut(e)) {
        const x = store.edgeTo(e);
        if (--indeg[x]! === 0) queue[tail++] = x;
      }
    }
    if (tail === n) {
      store.setOrder(queue);
      return { ok: true, added };
    }

    // A node Kahn never reached has a predecessor it never reached either: walking back along
    // those must revisit a node, and the walk between the two visits is a cycle.
    const step = new Map<number, number>();
    let x = 0;
    while (indeg[x] === 0) x++;
    while (!step.has(x)) {
      let p = -1;
      for (let e = store.firstIn[x]!; e !== 0 && p < 0; e = store.nextIn(e)) if (indeg[store.edgeFrom(e)]! > 0) p = store.edgeFrom(e);
      step.set(x, p);
      x = p;
    }
    const cycle: number[] = [x];
    for (let y = step.get(x)!; y !== x; y = step.get(y)!) cycle.push(y);
    cycle.reverse(); // the walk went backwards
    // The graph was acyclic before the batch, so one of the cycle's edges is new: report the last
    // one in the batch, the edge that closes the cycle when the batch is read in order.
    const onCycle = new Set(cycle.map((c, i) => `${c}>${cycle[(i + 1) % cycle.length]}`));
    let index = -1;
    for (let i = from.length - 1; i >= 0 && index < 0; i--) if (added[i] && onCycle.has(`${from[i]}>${to[i]}`)) index = i;
    while (store.m > before) store.popEdge();
    // Rotate so the cycle starts at the reported edge.
    const start = cycle.indexOf(from[index]!);
    return { ok: false, index, cycle: cycle.slice(start).concat(cycle.slice(0, start)) };
  }
}
