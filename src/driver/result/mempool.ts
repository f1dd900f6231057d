/** Stream-ordered memory pools (`cuMemPool*`, `cuMemAllocFromPoolAsync`). */
import { driverSymbol } from '../sys.js';
import { check } from './check.js';
import { MEM_POOL_PROPS as P, MEM_LOCATION as L, CU } from '../layouts.js';
import { u64, takeHandle } from './scratch.js';

/**
 * Creates a memory pool of pinned device memory on device `ordinal`, not shareable between
 * processes (`cuMemPoolCreate`).
 */
export function memPoolCreate(op: string, ordinal: number): bigint {
  const props = new Uint8Array(P.size);
  const v = new DataView(props.buffer);
  v.setInt32(P.allocType, CU.MEM_ALLOCATION_TYPE_PINNED, true);
  v.setInt32(P.handleTypes, 0, true);
  v.setInt32(P.location + L.type, CU.MEM_LOCATION_TYPE_DEVICE, true);
  v.setInt32(P.location + L.id, ordinal, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuMemPoolCreate')(u64, props), op, 'cuMemPoolCreate');
  return takeHandle();
}

/** Destroys a memory pool (`cuMemPoolDestroy`); returns the CUresult for the cleanup path. */
export function memPoolDestroy(op: string, pool: bigint): number {
  return driverSymbol(op, 'cuMemPoolDestroy')(pool);
}

/** Releases reserved memory the pool does not use, down to `minBytesToKeep` (`cuMemPoolTrimTo`). */
export function memPoolTrimTo(op: string, pool: bigint, minBytesToKeep: number): void {
  check(driverSymbol(op, 'cuMemPoolTrimTo')(pool, minBytesToKeep), op, 'cuMemPoolTrimTo');
}

/** A 64-bit pool attribute (`cuMemPoolGetAttribute`), e.g. `CU_MEMPOOL_ATTR_USED_MEM_CURRENT`. */
export function memPoolAttribute(op: string, pool: bigint, attr: number): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuMemPoolGetAttribute')(pool, attr, u64), op, 'cuMemPoolGetAttribute');
  return takeHandle();
}

/** Sets a 64-bit pool attribute (`cuMemPoolSetAttribute`), e.g. `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`. */
export function memPoolSetAttribute(op: string, pool: bigint, attr: number, value: bigint): void {
  const v = new BigUint64Array([value]);
  check(driverSymbol(op, 'cuMemPoolSetAttribute')(pool, attr, v), op, 'cuMemPoolSetAttribute');
}

/**
 * Allocates from `pool`, ordered on `stream` (`cuMemAllocFromPoolAsync`). On a capturing stream
 * the driver records an allocation node instead, owned by the graph, not by the pool.
 */
export function memAllocFromPoolAsync(op: string, bytes: number, pool: bigint, stream: bigint): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuMemAllocFromPoolAsync')(u64, bytes, pool, stream), op, 'cuMemAllocFromPoolAsync');
  return takeHandle();
}
