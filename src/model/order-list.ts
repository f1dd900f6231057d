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
 * handful, because appended nodes are spaced `STEP` apart and a list labelled at once wider still.
 *
 * Labels are integers below 2^52, exact in a Float64Array. With T = 1.2 the whole range may hold
 * (5/3)^52 ≈ 3·10^11 nodes, far beyond the 2^32 node ids.
 *
 * Layout: one 16-byte record a node — its label, then the nodes before and after it — seen as
 * 64-bit floats (`label`, the label of v at [2v]) and as 32-bit integers (`links`, prev at
 * [4v + 2], next at [4v + 3]). Moving a node, and every step of a relabelling, reads and writes
 * one cache line for a node and one for each neighbour, where separate arrays took three.
 */

/** Labels lie in [1, UNIVERSE); 0 and UNIVERSE stand for the ends of the list. */
const UNIVERSE = 2 ** 52;
/** The gap left between appended nodes, so later moves rarely need a relabelling. */
const STEP = 2 ** 20;
/**
 * The widest gap `assign` leaves between nodes. Wider gaps than `STEP` make fewer relabellings
 * later (each a walk along the list, a cache miss a node on a large graph): on the bench's 1M
 * edges added in random order, 2^32 instead of 2^20 took the labels relabelled from 1.2M to 0.43M.
 * `assign` spreads its nodes over at most half the labels, so the other half stays for appends.
 */
const ASSIGN_STEP = 2 ** 32;
/** Bender et al.'s density parameter: a range of 2^i labels may hold (2/T)^i nodes. */
const DENSITY = 2 / 1.2;
const NONE = -1;

/** A linked list of node ids with order labels (see the file comment). */
export class OrderList {
  /** The records as floats: label of node v at [2v] (grows along the list). */
  label: Float64Array;
  /** The records as integers: the node before v at [4v + 2], after it at [4v + 3] (−1: none). */
  links: Int32Array;
  head = NONE;
  tail = NONE;
  /** Bumped whenever a node moves, so a dense numbering built from the list knows it is stale. */
  moves = 0;
  /** Labels written by relabellings (a test and benchmark figure). */
  relabelled = 0;
  private readonly one = new Int32Array(1);

  /** A list of the nodes `order[0], order[1], …` in that order; `capacity` ≥ their count. */
  constructor(order: ArrayLike<number>, count: number, capacity: number) {
    this.label = new Float64Array(2 * capacity);
    this.links = new Int32Array(this.label.buffer);
    this.assign(order, count);
  }

  /** Makes the list `order[0..count)` again, evenly labelled (after a full topological sort). */
  assign(order: ArrayLike<number>, count: number): void {
    const step = Math.min(ASSIGN_STEP, Math.floor(UNIVERSE / 2 / (count + 1)));
    let p = NONE;
    for (let i = 0; i < count; i++) {
      const v = order[i]!;
      this.label[2 * v] = (i + 1) * step;
      this.links[4 * v + 2] = p;
      if (p !== NONE) this.links[4 * p + 3] = v;
      p = v;
    }
    if (p !== NONE) this.links[4 * p + 3] = NONE;
    this.head = count > 0 ? order[0]! : NONE;
    this.tail = p;
    this.moves++;
  }

  /** The node before v, or −1. */
  prev(v: number): number {
    return this.links[4 * v + 2]!;
  }

  /** The node after v, or −1. */
  next(v: number): number {
    return this.links[4 * v + 3]!;
  }

  /** The label of v (grows along the list). */
  labelOf(v: number): number {
    return this.label[2 * v]!;
  }

  /** True if node a comes before node b. */
  before(a: number, b: number): boolean {
    return this.label[2 * a]! < this.label[2 * b]!;
  }

  /** Room for node ids below `capacity`. */
  grow(capacity: number): void {
    const label = new Float64Array(2 * capacity);
    label.set(this.label.subarray(0, Math.min(this.label.length, label.length)));
    this.label = label;
    this.links = new Int32Array(label.buffer);
  }

  /** A copy sharing nothing with this list. */
  clone(): OrderList {
    const c = new OrderList([], 0, 0);
    c.label = this.label.slice();
    c.links = new Int32Array(c.label.buffer);
    c.head = this.head;
    c.tail = this.tail;
    return c;
  }

  /** Links the new node `x` (in no list yet) at the end. */
  append(x: number): void {
    const t = this.tail;
    if (t !== NONE && this.label[2 * t]! + STEP < UNIVERSE) {
      this.link(x, t);
      this.label[2 * x] = this.label[2 * t]! + STEP;
    } else this.insertAfter(x, t);
  }

  /** Takes node x out of the list (its label stays, unused, until x is linked again). */
  unlink(x: number): void {
    const links = this.links;
    const p = links[4 * x + 2]!;
    const q = links[4 * x + 3]!;
    if (p === NONE) this.head = q;
    else links[4 * p + 3] = q;
    if (q === NONE) this.tail = p;
    else links[4 * q + 2] = p;
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
    const lo = a === NONE ? 0 : this.label[2 * a]!;
    const q = this.links[4 * at + 3]!;
    const hi = q === NONE ? UNIVERSE : this.label[2 * q]!;
    const gap = Math.floor((hi - lo) / (k + 1));
    if (gap >= 1) for (let i = 0; i < k; i++) this.label[2 * xs[i]!] = lo + (i + 1) * gap;
    else this.relabel(xs[0]!, at, k);
  }

  /** Links node x (unlinked) right before node b. */
  insertBefore(x: number, b: number): void {
    this.insertAfter(x, this.links[4 * b + 2]!);
  }

  private link(x: number, a: number): void {
    const links = this.links;
    const q = a === NONE ? this.head : links[4 * a + 3]!;
    links[4 * x + 2] = a;
    links[4 * x + 3] = q;
    if (a === NONE) this.head = x;
    else links[4 * a + 3] = x;
    if (q === NONE) this.tail = x;
    else links[4 * q + 2] = x;
    this.moves++;
  }

  /**
   * Spreads out the labels of the smallest aligned range around the run `first..last` of k nodes
   * (linked, not yet labelled) that is sparse enough, labelling the run between its neighbours.
   */
  private relabel(first: number, last: number, k: number): void {
    const { label, links } = this;
    // The range is grown around the run's left neighbour's label (or 0 at the front).
    const at = links[4 * first + 2] === NONE ? 0 : label[2 * links[4 * first + 2]!]!;
    let lo = first; // first node of the range
    let hi = last; // last node of the range
    let count = k;
    for (let size = 2, allowed = DENSITY; ; size *= 2, allowed *= DENSITY) {
      const base = size >= UNIVERSE ? 0 : Math.floor(at / size) * size;
      const end = size >= UNIVERSE ? UNIVERSE : base + size;
      while (links[4 * lo + 2] !== NONE && label[2 * links[4 * lo + 2]!]! >= base) {
        lo = links[4 * lo + 2]!;
        count++;
      }
      while (links[4 * hi + 3] !== NONE && label[2 * links[4 * hi + 3]!]! < end) {
        hi = links[4 * hi + 3]!;
        count++;
      }
      if (count <= allowed || size >= UNIVERSE) {
        // Labels base+gap, base+2·gap, …: strictly inside [base, end), never 0.
        const start = Math.max(base, 1);
        const gap = Math.floor((end - start) / (count + 1));
        if (gap < 1) throw new RangeError('OrderList: more nodes than labels');
        let v = lo;
        for (let i = 1; i <= count; i++) {
          label[2 * v] = start + i * gap;
          v = links[4 * v + 3]!;
        }
        this.relabelled += count;
        return;
      }
    }
  }
}
