/**
 * A total order of node ids that can move a node to just before or after another in O(1)
 * amortised (internal: used by dynamic-order.ts through GraphStore).
 *
 * Why: keeping a topological order as a dense numbering 0..n−1 means that moving one node shifts
 * every node between its old and new place, so an edge added against the order costs as much as
 * the distance it spans (Pearce–Kelly's reassignment). Here the order is a doubly linked list and
 * each node carries a label that grows along the list, so two nodes compare by label in O(1) and a
 * node moves by unlinking it and linking it elsewhere, with a label between its new neighbours'.
 *
 * When two neighbours' labels leave no integer between them, the labels of a small range around the
 * place are spread out again: the list-labelling scheme of Bender, Cole, Demaine, Farach-Colton and
 * Zito ("Two simplified algorithms for maintaining order in a list", ESA 2002). Ranges of 2^i labels
 * aligned on multiples of 2^i are tried for i = 1, 2, …, and the first holding at most (2/T)^i nodes
 * is relabelled evenly; the amortised cost is O(log n) label writes per insertion, and in practice a
 * handful, because appended nodes are spaced `STEP` apart.
 *
 * Labels are integers below 2^52, exact in a Float64Array. With T = 1.2 the whole range may hold
 * (5/3)^52 ≈ 3·10^11 nodes, far beyond the 2^32 node ids.
 */

/** Labels lie in [1, UNIVERSE); 0 and UNIVERSE stand for the ends of the list. */
const UNIVERSE = 2 ** 52;
/** The gap left between appended nodes, so later moves rarely need a relabelling. */
const STEP = 2 ** 20;
/** Bender et al.'s density parameter: a range of 2^i labels may hold (2/T)^i nodes. */
const DENSITY = 2 / 1.2;
const NONE = -1;

/** A linked list of node ids with order labels (see the file comment). */
export class OrderList {
  /** Label of node v; grows along the list. */
  label: Float64Array;
  /** The node before v, or −1. */
  prev: Int32Array;
  /** The node after v, or −1. */
  next: Int32Array;
  head = NONE;
  tail = NONE;
  /** Bumped whenever a node moves, so a dense numbering built from the list knows it is stale. */
  moves = 0;
  /** Labels written by relabellings (a test and benchmark figure). */
  relabelled = 0;
  private readonly one = new Int32Array(1);

  /** A list of the nodes `order[0], order[1], …` in that order; `capacity` ≥ their count. */
  constructor(order: ArrayLike<number>, count: number, capacity: number) {
    this.label = new Float64Array(capacity);
    this.prev = new Int32Array(capacity);
    this.next = new Int32Array(capacity);
    this.assign(order, count);
  }

  /** Makes the list `order[0..count)` again, evenly labelled (after a full topological sort). */
  assign(order: ArrayLike<number>, count: number): void {
    const step = Math.min(STEP, Math.floor(UNIVERSE / (count + 1)));
    let p = NONE;
    for (let i = 0; i < count; i++) {
      const v = order[i]!;
      this.label[v] = (i + 1) * step;
      this.prev[v] = p;
      if (p !== NONE) this.next[p] = v;
      p = v;
    }
    if (p !== NONE) this.next[p] = NONE;
    this.head = count > 0 ? order[0]! : NONE;
    this.tail = p;
    this.moves++;
  }

  /** True if node a comes before node b. */
  before(a: number, b: number): boolean {
    return this.label[a]! < this.label[b]!;
  }

  /** Room for node ids below `capacity`. */
  grow(capacity: number): void {
    const grow = <T extends Float64Array | Int32Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(capacity);
      b.set(a.subarray(0, Math.min(a.length, capacity)) as never);
      return b;
    };
    this.label = grow(this.label);
    this.prev = grow(this.prev);
    this.next = grow(this.next);
  }

  /** A copy sharing nothing with this list. */
  clone(): OrderList {
    const c = new OrderList([], 0, 0);
    c.label = this.label.slice();
    c.prev = this.prev.slice();
    c.next = this.next.slice();
    c.head = this.head;
    c.tail = this.tail;
    return c;
  }

  /** Links the new node `x` (in no list yet) at the end. */
  append(x: number): void {
    const t = this.tail;
    if (t !== NONE && this.label[t]! + STEP < UNIVERSE) {
      this.link(x, t);
      this.label[x] = this.label[t]! + STEP;
    } else this.insertAfter(x, t);
  }

  /** Takes node x out of the list (its label stays, unused, until x is linked again). */
  unlink(x: number): void {
    const p = this.prev[x]!;
    const q = this.next[x]!;
    if (p === NONE) this.head = q;
    else this.next[p] = q;
    if (q === NONE) this.tail = p;
    else this.prev[q] = p;
    this.moves++;
  }

  /** Links node x (unlinked) right after node a (−1: at the front). */
  insertAfter(x: number, a: number): void {
    this.one[0] = x;
    this.insertRunAfter(this.one, 1, a);
  }

  /**
   * Links the nodes `xs[0..k)` (unlinked), in that order, right after node a (−1: at the front).
   * The run is labelled at once, evenly over the gap, so moving a block of nodes costs at most one
   * relabelling, where inserting them one by one would halve the same gap k times.
   */
  insertRunAfter(xs: ArrayLike<number>, k: number, a: number): void {
    if (k === 0) return;
    let at = a;
    for (let i = 0; i < k; i++) {
      this.link(xs[i]!, at);
      at = xs[i]!;
    }
    const lo = a === NONE ? 0 : this.label[a]!;
    const q = this.next[at]!;
    const hi = q === NONE ? UNIVERSE : this.label[q]!;
    const gap = Math.floor((hi - lo) / (k + 1));
    if (gap >= 1) for (let i = 0; i < k; i++) this.label[xs[i]!] = lo + (i + 1) * gap;
    else this.relabel(xs[0]!, at, k);
  }

  /** Links node x (unlinked) right before node b. */
  insertBefore(x: number, b: number): void {
    this.insertAfter(x, this.prev[b]!);
  }

  private link(x: number, a: number): void {
    const q = a === NONE ? this.head : this.next[a]!;
    this.prev[x] = a;
    this.next[x] = q;
    if (a === NONE) this.head = x;
    else this.next[a] = x;
    if (q === NONE) this.tail = x;
    else this.prev[q] = x;
    this.moves++;
  }

  /**
   * Spreads out the labels of the smallest aligned range around the run `first..last` of k nodes
   * (linked, not yet labelled) that is sparse enough, labelling the run between its neighbours.
   */
  private relabel(first: number, last: number, k: number): void {
    const { label, prev, next } = this;
    // The range is grown around the run's left neighbour's label (or 0 at the front).
    const at = prev[first] === NONE ? 0 : label[prev[first]!]!;
    let lo = first; // first node of the range
    let hi = last; // last node of the range
    let count = k;
    for (let size = 2, allowed = DENSITY; ; size *= 2, allowed *= DENSITY) {
      const base = size >= UNIVERSE ? 0 : Math.floor(at / size) * size;
      const end = size >= UNIVERSE ? UNIVERSE : base + size;
      while (prev[lo] !== NONE && label[prev[lo]!]! >= base) {
        lo = prev[lo]!;
        count++;
      }
      while (next[hi] !== NONE && label[next[hi]!]! < end) {
        hi = next[hi]!;
        count++;
      }
      if (count <= allowed || size >= UNIVERSE) {
        // Labels base+gap, base+2·gap, …: strictly inside [base, end), never 0.
        const start = Math.max(base, 1);
        const gap = Math.floor((end - start) / (count + 1));
        if (gap < 1) throw new RangeError('OrderList: more nodes than labels');
        let v = lo;
        for (let i = 1; i <= count; i++) {
          label[v] = start + i * gap;
          v = next[v]!;
        }
        this.relabelled += count;
        return;
      }
    }
  }
}
