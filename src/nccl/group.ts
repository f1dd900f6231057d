/**
 * NCCL group calls (`ncclGroupStart` / `ncclGroupEnd`). Calls made between them are fused and
 * launched at the end; a thread that drives several GPUs must put the collectives of all its
 * ranks in one group, or the first rank's call may wait for peers the thread never reaches.
 */
import { InvalidArgumentError, SuppressedCleanupError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { device as dev, init } from '../driver/result/index.js';
import { groupEnd, groupStart, ncclError } from './result.js';

let depth = 0;

/** How many `ncclGroupStart` calls made through cudagraph are not ended yet (0 outside any group). */
export function ncclGroupDepth(): number {
  return depth;
}

/** The calling thread's CUDA context, when the driver is loaded (NCCL may switch devices inside a call). */
export function currentContext(op: string): bigint | null {
  return init.driverLoaded() ? dev.ctxGetCurrent(op) : null;
}

/**
 * Makes `ctx` current again if an NCCL call left another context current. NCCL switches devices
 * inside `ncclCommInitAll` and group ends (`cudaSetDevice`); the object layer keeps a mirror of the
 * current context (`src/cuda/core/context.ts`) that must stay true, so every NCCL call that can switch
 * is bracketed: the context current before it (the mirror's) is made current again after it.
 */
export function restoreContext(op: string, ctx: bigint | null): void {
  if (ctx === null || ctx === 0n) return;
  if (dev.ctxGetCurrent(op) !== ctx) dev.ctxSetCurrent(op, ctx);
}

/**
 * Starts an NCCL group (`ncclGroupStart`); groups nest. Pair with `ncclGroupEnd`, or use
 * `ncclGroup(fn)`, which always ends it.
 * @throws NcclError from NCCL; `NCCL_NOT_LOADED` when no NCCL loads.
 */
export function ncclGroupStart(): void {
  groupStart('ncclGroupStart');
  depth++;
}

/**
 * Ends the innermost group (`ncclGroupEnd`); the outermost end launches every call made in it.
 * @throws InvalidArgumentError when no group is open; NcclError from NCCL (the group is ended
 *   either way: NCCL leaves group mode when it returns).
 */
export function ncclGroupEnd(): void {
  const op = 'ncclGroupEnd';
  if (depth === 0) throw new InvalidArgumentError(op, 'group', 'no NCCL group is open (ncclGroupStart was not called)');
  // The context current now is the one the object layer's mirror holds (the collectives of the
  // group made their device current); the outermost end launches on every device and may leave
  // another current.
  const ctx = depth === 1 ? currentContext(op) : null;
  const rc = groupEnd(op);
  depth--;
  restoreContext(op, ctx);
  if (rc !== 0) throw ncclError(rc, op, 'ncclGroupEnd');
}

/**
 * Runs `fn` inside an NCCL group and ends the group whatever happens: the calls `fn` makes are
 * launched together when it returns. If `fn` throws, the group is still ended and `fn`'s error is
 * rethrown (with the end's failure attached as a `SuppressedCleanupError` if that failed too).
 * `fn` must be synchronous: a group is per thread, and an `await` inside it would let other code
 * run in the middle of the group.
 * @throws InvalidArgumentError when `fn` is not a function or returns a promise (the group is ended
 *   first); whatever `fn` throws; NcclError from NCCL.
 *
 * @example
 * ncclGroup(() => {
 *   for (const c of clique.comms) c.allReduce(streams[c.rank], { send: grads[c.rank], count, type: 'f32', op: 'sum' });
 * });
 */
export function ncclGroup<T>(fn: () => T): T {
  const op = 'ncclGroup';
  if (typeof fn !== 'function') throw new InvalidArgumentError(op, 'fn', `fn must be a function, got ${describe(fn)}`);
  ncclGroupStart();
  let result: T;
  try {
    result = fn();
  } catch (e) {
    try {
      ncclGroupEnd();
    } catch (endError) {
      throw new SuppressedCleanupError(e, endError, `${op}: the group's function threw, and ending the group failed too`);
    }
    throw e;
  }
  ncclGroupEnd();
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    throw new InvalidArgumentError(
      op,
      'fn',
      'fn returned a promise: an NCCL group is per thread and must not span an await; the group was ended when fn returned',
    );
  }
  return result;
}
