/**
 * Reusable out-parameter slots for synchronous driver calls. A call writes its result into the
 * slot and the wrapper reads it back at once, so one slot per type serves every call on the JS
 * thread (asynchronous calls, which run on worker threads, never use these).
 */
export const u64 = new BigUint64Array(1);
export const u64b = new BigUint64Array(1);
export const i32 = new Int32Array(1);
export const i32b = new Int32Array(1);
export const f32 = new Float32Array(1);

/** Reads a handle the driver wrote to `u64`, clearing the slot for the next call. */
export function takeHandle(): bigint {
  const h = u64[0]!;
  u64[0] = 0n;
  return h;
}
