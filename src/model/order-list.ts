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
  /**
   * The node before v at [2v], the node after it at [2v + 1] (−1: none). One array, so that moving
   * a node reads and writes one cache line of it and one of each neighbour, where two arrays took
   * two.
   */
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
    this.label = new Float64Array(capacity);
    this.links = new Int32Array(2 * capacity);
    this.assign(order, count);
  }

  /** Makes the list `order[0..count)` again, evenly labelled (after a full topological sort). */
  assign(order: ArrayLike<number>, count: number): void {
    const step = Math.min(STEP, Math.floor(UNIVERSE / (count + 1)));
    let p = NONE;
    for (let i = 0; i < count; i++) {
      const v = order[i]!;
      this.label[v] = (i + 1) * step;
      this.links[2 * v] = p;
      if (p !== NONE) this.links[2 * p + 1] = v;
      p = v;
    }
    if (p !== NONE) this.links[2 * p + 1] = NONE;
    this.head = count > 0 ? order[0]! : NONE;
    this.tail = p;
    this.moves++;
  }

  /** The node before v, or −1. */
  prev(v: number): number {
    return this.links[2 * v]!;
  }

  /** The node after v, or −1. */
  next(v: number): number {
    return this.links[2 * v + 1]!;
  }

  /** True if node a comes before node b. */
  before(a: number, b: number): boolean {
    return this.label[a]! < this.label[b]!;
  }

  /** Room for node ids below `capacity`. */
  grow(capacity: number): void {
    const grow = <T extends Float64Array | Int32Array>(a: T, length: number): T => {
      const b = new (a.constructor as new (n: number) => T)(length);
      b.set(a.subarray(0, Math.min(a.length, length)) as never);
      return b;
    };
    this.label = grow(this.label, capacity);
    this.links = grow(this.links, 2 * capacity);
  }

  /** A copy sharing nothing with this list. */
  clone(): OrderList {
    const c = new OrderList([], 0, 0);
    c.label = this.label.slice();
    c.links = this.links.slice();
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
    const links = this.links;
    const p = links[2 * x]!;
    const q = links[2 * x + 1]!;
    if (p === NONE) this.head = q;
    else links[2 * p + 1] = q;
    if (q === NONE) this.tail = p;
    else links[2 * q] = p;
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
    const q = this.links[2 * at + 1]!;
    const hi = q === NONE ? UNIVERSE : this.label[q]!;
    const gap = Math.floor((hi - lo) / (k + 1));
    if (gap >= 1) for (let i = 0; i < k; i++) this.label[xs[i]!] = lo + (i + 1) * gap;
    else this.relabel(xs[0]!, at, k);
  }

  /** Links node x (unlinked) right before node b. */
  insertBefore(x: number, b: number): void {
    this.insertAfter(x, this.links[2 * b]!);
  }

  private link(x: number, a: number): void {
    const links = this.links;
    const q = a === NONE ? this.head : links[2 * a + 1]!;
    links[2 * x] = a;
    links[2 * x + 1] = q;
    if (a === NONE) this.head = x;
    else links[2 * a + 1] = x;
    if (q === NONE) this.tail = x;
    else links[2 * q] = x;
    this.moves++;
  }

  /**
   * Spreads out the labels of the smallest aligned range around the run `first..last` of k nodes
   * (linked, not yet labelled) that is sparse enough, labelling the run between its neighbours.
   */
  private relabel(first: number, last: number, k: number): void {
    const { label, links } = this;
    // The range is grown around the run's left neighbour's label (or 0 at the front).
    const at = links[2 * first] === NONE ? 0 : label[links[2 * first]!]!;
    let lo = first; // first node of the range
    let hi = last; // last node of the range
    let count = k;
    for (let size = 2, allowed = DENSITY; ; size *= 2, allowed *= DENSITY) {
      const base = size >= UNIVERSE ? 0 : Math.floor(at / size) * size;
      const end = size >= UNIVERSE ? UNIVERSE : base + size;
      while (links[2 * lo] !== NONE && label[links[2 * lo]!]! >= base) {
        lo = links[2 * lo]!;
        count++;
      }
      while (links[2 * hi + 1] !== NONE && label[links[2 * hi + 1]!]! < end) {
        hi = links[2 * hi + 1]!;
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
          v = links[2 * v + 1]!;
        }
        this.relabelled += count;
        return;
      }
    }
  }
}
