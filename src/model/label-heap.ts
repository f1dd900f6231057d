/**
 * A binary heap of node ids ordered by their labels in an `OrderList` (internal: the two searches
 * of dynamic-order.ts). Each search takes its nodes in order — the forward one smallest label first,
 * the backward one largest first — which is what lets them stop where they meet. The storage of
 * `UintHeap` (ids are uint32), ordered by label instead of by value.
 */
import { UintHeap } from './uint-heap.js';

/** A heap of ids by label (see the file comment); `top`, `clear` and `size` as `UintHeap`'s. */
export class LabelHeap extends UintHeap {
  /** Labels of the ids; set before each search (the list may have grown). */
  label: Float64Array = new Float64Array(0);

  /** `sign` 1: smallest label on top; −1: largest. */
  constructor(private readonly sign: 1 | -1) {
    super();
  }

  /** Adds id `x`. */
  override push(x: number): void {
    this.room();
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
  override pop(): number {
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
