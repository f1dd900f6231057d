/**
 * A binary heap of node ids ordered by their labels in an `OrderList` (internal: the two searches
 * of dynamic-order.ts). Each search takes its nodes in order — the forward one smallest label first,
 * the backward one largest first — which is what lets them stop where they meet.
 *
 * Why the keys are stored beside the ids: comparing two entries by `label[id]` reads the label
 * array at two random places, a cache miss each on a graph of a million nodes; the search has read
 * a node's label already when it queues it, so the heap keeps a copy and compares its own array.
 */

/** A heap of ids by label (see the file comment). Reuse it with `clear`. */
export class LabelHeap {
  private ids: Uint32Array = new Uint32Array(64);
  /** `sign` × label of each entry: the heap keeps the smallest key on top. */
  private keys: Float64Array = new Float64Array(64);
  /** Number of ids held. */
  size = 0;
  /** Ids pushed since the last `clear`. */
  pushes = 0;

  /** `sign` 1: smallest label on top; −1: largest. */
  constructor(private readonly sign: 1 | -1) {}

  /** Empties the heap (keeps its storage). */
  clear(): void {
    this.size = 0;
    this.pushes = 0;
  }

  /** The id on top; only when `size > 0`. */
  top(): number {
    return this.ids[0]!;
  }

  /** The label of the id on top; only when `size > 0`. */
  topLabel(): number {
    return this.sign * this.keys[0]!;
  }

  /** Adds id `x`, whose label is `label`. */
  push(x: number, label: number): void {
    if (this.size === this.ids.length) this.grow();
    this.pushes++;
    const { ids, keys } = this;
    const k = this.sign * label;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const kp = keys[p]!;
      if (kp <= k) break;
      ids[i] = ids[p]!;
      keys[i] = kp;
      i = p;
    }
    ids[i] = x;
    keys[i] = k;
  }

  /** Removes and returns the id on top; only when `size > 0`. */
  pop(): number {
    const { ids, keys } = this;
    const top = ids[0]!;
    const n = --this.size;
    if (n === 0) return top;
    const x = ids[n]!;
    const k = keys[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && keys[c + 1]! < keys[c]!) c++;
      const kc = keys[c]!;
      if (kc >= k) break;
      ids[i] = ids[c]!;
      keys[i] = kc;
      i = c;
    }
    ids[i] = x;
    keys[i] = k;
    return top;
  }

  private grow(): void {
    const ids = new Uint32Array(this.ids.length * 2);
    ids.set(this.ids);
    this.ids = ids;
    const keys = new Float64Array(this.keys.length * 2);
    keys.set(this.keys);
    this.keys = keys;
  }
}
