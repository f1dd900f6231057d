/**
 * A binary heap of node ids ordered by their labels in an `OrderList` (internal: the two searches
 * of dynamic-order.ts). Each search takes its nodes in order — the forward one smallest label first,
 * the backward one largest first — which is what lets them stop where they meet. Typed storage that
 * grows by doubling, so a search allocates nothing per push.
 */
export class LabelHeap {
  private a = new Int32Array(64);
  /** Number of ids held. */
  size = 0;
  /** Labels of the ids; set before each search (the list may have grown). */
  label: Float64Array = new Float64Array(0);

  /** `sign` 1: smallest label on top; −1: largest. */
  constructor(private readonly sign: 1 | -1) {}

  /** Empties the heap (keeps its storage). */
  clear(): void {
    this.size = 0;
  }

  /** The id on top; only when `size > 0`. */
  top(): number {
    return this.a[0]!;
  }

  /** Adds id `x`. */
  push(x: number): void {
    if (this.size === this.a.length) {
      const b = new Int32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    const { a, label, sign } = this;
    const kx = sign * label[x]!;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const y = a[p]!;
      if (sign * label[y]! <= kx) break;
      a[i] = y;
      i = p;
    }
    a[i] = x;
  }

  /** Removes and returns the id on top; only when `size > 0`. */
  pop(): number {
    const { a, label, sign } = this;
    const top = a[0]!;
    const n = --this.size;
    if (n === 0) return top;
    const x = a[n]!;
    const kx = sign * label[x]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && sign * label[a[c + 1]!]! < sign * label[a[c]!]!) c++;
      const y = a[c]!;
      if (sign * label[y]! >= kx) break;
      a[i] = y;
      i = c;
    }
    a[i] = x;
    return top;
  }
}
