/** A typed array's growth by doubling, shared by the searches' reused lists (dynamic-order.ts, reach-search.ts, level-queue.ts). */

/** A copy of `a` twice as long (its elements first, zeros after). */
export function doubled(a: Uint32Array): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
}

/**
 * `a` when it has room for `need` more elements after its first `used`, else a copy of those
 * `used` doubled in length until it has (one growth for a whole batch of pushes, made in one place).
 */
export function withRoom(a: Uint32Array, used: number, need: number): Uint32Array {
  if (used + need <= a.length) return a;
  let size = a.length * 2;
  while (size < used + need) size *= 2;
  const b = new Uint32Array(size);
  b.set(a.subarray(0, used));
  return b;
}
