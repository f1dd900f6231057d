/** A typed array's growth by doubling, shared by the searches' reused lists (dynamic-order.ts, reach-search.ts). */

/** A copy of `a` twice as long (its elements first, zeros after). */
export function doubled(a: Uint32Array): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
}
