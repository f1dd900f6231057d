/**
 * The queue of one side of the reachability search (internal: reach-search.ts): keys (positions,
 * or their complements for the backward side) taken a level at a time, smallest first.
 *
 * Why not a plain heap: the search takes a whole level at once, and most of what it queues while
 * taking one level lies in the next level (every successor in a layered graph, most in a random
 * one). Those go to a plain array, which costs nothing to push and is handed over whole; only keys
 * further away go through the heap. Taking a level as one batch also lets the processor overlap
 * the cache misses of its nodes, where a heap hands out one node at a time.
 */
import { UintHeap } from './uint-heap.js';
import { withRoom } from './doubled.js';

/** First capacity of the arrays: small, so that the first searches already grow them (see uint-heap.ts). */
const START = 2;

/** Keys below `nextEnd` in an array, the rest in a heap (see the file comment). */
export class LevelQueue {
  /** Keys pushed below this go to the next level's array. */
  nextEnd = 0;
  /** The keys of the level taken last (`take`), at `batch[0 … batchSize)`. */
  batch: Uint32Array = new Uint32Array(START);
  batchSize = 0;
  /** The next level's keys, at `next[0 … nextSize)`; the search appends to it directly (after `reserve`). */
  next: Uint32Array = new Uint32Array(START);
  nextSize = 0;
  private readonly heap = new UintHeap();

  /** Empties the queue (keeps its storage). */
  clear(): void {
    this.nextSize = 0;
    this.batchSize = 0;
    this.nextEnd = 0;
    this.heap.clear();
  }

  /** Keys waiting (not counting the batch taken). */
  get size(): number {
    return this.nextSize + this.heap.size;
  }

  /** The smallest key in the heap; only when its size is above 0. */
  heapTop(): number {
    return this.heap.top();
  }

  /** Adds a key. */
  push(key: number): void {
    if (key < this.nextEnd) {
      if (this.nextSize === this.next.length) this.grow();
      this.next[this.nextSize++] = key;
    } else this.heap.push(key);
  }

  /** Adds a key at or above `nextEnd` (to the heap). */
  pushFar(key: number): void {
    this.heap.push(key);
  }

  /** Doubles the next level's array (its first `nextSize` keys kept) and returns it. */
  grow(): Uint32Array {
    this.next = withRoom(this.next, this.nextSize, 1);
    return this.next;
  }

  /**
   * The next level's array with room for `need` keys after its first `used` (grown when it has
   * not; `used` becomes `nextSize`), for the search to append to. The search calls it for every
   * level it takes, so that its one growth (shared by both sides) has run before V8 compiles the
   * search: code that meets a growth it never saw run is thrown away.
   */
  reserve(used: number, need: number): Uint32Array {
    if (used + need > this.next.length) {
      this.nextSize = used;
      this.next = withRoom(this.next, used, need);
    }
    return this.next;
  }

  /** Makes the batch every waiting key below `end`: the next level's array, and the heap's keys below `end`. */
  take(end: number): void {
    const old = this.batch;
    this.batch = this.next;
    this.batchSize = this.nextSize;
    this.next = old;
    this.nextSize = 0;
    const heap = this.heap;
    while (heap.size > 0 && heap.top() < end) {
      if (this.batchSize === this.batch.length) this.batch = withRoom(this.batch, this.batchSize, 1);
      this.batch[this.batchSize++] = heap.pop();
    }
  }
}
