/**
 * A binary min-heap of unsigned 32-bit integers in a typed array that grows by doubling: the
 * queues of the reachability search (reach-labels.ts), which pop millions of positions a second
 * and must not allocate per push. A max-heap stores complements (`0xffffffff − x`).
 */

/**
 * First capacity: small, so that the first searches already grow it, while V8 still records what
 * the code does. A growth first seen after the search is compiled throws the compiled code away.
 */
const START = 2;

/** Min-heap of uint32 values (see the file comment). Reuse it with `clear`. */
export class UintHeap {
  protected a: Uint32Array = new Uint32Array(START);
  /** Number of values held. */
  size = 0;

  constructor() {
    // Stored a second time on purpose: V8 takes a field stored only once as a constant, and the
    // first growth, often well into a run, then discards every compiled function that read it
    // (the whole search) while it is being optimised. Stored twice, it is a plain field from the start.
    this.a = new Uint32Array(START);
  }

  /** Empties the heap (keeps its storage). */
  clear(): void {
    this.size = 0;
  }

  /** The smallest value; only when `size > 0`. */
  top(): number {
    return this.a[0]!;
  }

  /** Makes room for one more value (doubling the storage when full). */
  protected room(): void {
    if (this.size === this.a.length) {
      const b = new Uint32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
  }

  /** Adds `x`. */
  push(x: number): void {
    this.room();
    const a = this.a;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const v = a[p]!;
      if (v <= x) break;
      a[i] = v;
      i = p;
    }
    a[i] = x;
  }

  /** Removes and returns the smallest value; only when `size > 0`. */
  pop(): number {
    const a = this.a;
    const top = a[0]!;
    const n = --this.size;
    if (n === 0) return top;
    const x = a[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && a[c + 1]! < a[c]!) c++;
      const v = a[c]!;
      if (v >= x) break;
      a[i] = v;
      i = c;
    }
    a[i] = x;
    return top;
  }
}
