/**
 * The graph pool handle registry, the `torch.cuda.graph_pool_handle()` of cudagraph: a handle
 * names a `CapturePool` that several captures can share without passing the object around.
 * Handles start at 1, only grow and are never reused.
 */
import { requireInt } from '../../util/validate.js';
import { INTERNAL } from '../core/internal.js';
import { CapturePool } from './capture-pool.js';

/** A number naming a registered `CapturePool` (1, 2, 3, …; never reused). */
export type GraphPoolHandle = number & { readonly __brand: 'GraphPoolHandle' };

let next = 1;
const pools = new Map<number, CapturePool>();

function requireHandle(op: string, handle: unknown): number {
  return requireInt(op, 'handle', handle, 0, Number.MAX_SAFE_INTEGER);
}

/**
 * Creates a new `CapturePool` and registers it under a new handle; the handle holds the pool
 * (as its creator would) until `releaseGraphPoolHandle`.
 *
 * @example
 * const h = graphPoolHandle();
 * using guard = GraphCaptureGuard.beginWithPool(s, capturePoolForHandle(h)!);
 */
export function graphPoolHandle(): GraphPoolHandle {
  const handle = next++;
  const pool = new CapturePool();
  pool.adoptHandle(INTERNAL, handle, () => pools.delete(handle));
  pools.set(handle, pool);
  return handle as GraphPoolHandle;
}

/**
 * The pool registered under `handle` (the same object on every call), or undefined for a handle
 * never issued or already released.
 * @throws InvalidArgumentError unless `handle` is a non-negative safe integer.
 */
export function capturePoolForHandle(handle: GraphPoolHandle | number): CapturePool | undefined {
  return pools.get(requireHandle('capturePoolForHandle', handle));
}

/**
 * Removes `handle` and drops its hold on the pool; graphs captured with the pool keep it alive.
 * Idempotent: an unknown or released handle is ignored.
 * @throws InvalidArgumentError unless `handle` is a non-negative safe integer.
 */
export function releaseGraphPoolHandle(handle: GraphPoolHandle | number): void {
  const pool = pools.get(requireHandle('releaseGraphPoolHandle', handle));
  pool?.dispose();
}
