/**
 * Ownership of driver resources: one `Lifetime` per resource object (stream, event, buffer,
 * module, graph, …). It implements the house rules in one place:
 * - `dispose()` is idempotent and never throws; a use after it throws `DisposedError`.
 * - Holders (a prepared launch, a captured graph) `retain()` what they need; the driver object is
 *   freed when the owner has disposed it (or it was garbage-collected) AND the last holder has
 *   released it, so a graph never replays into freed memory.
 * - A `FinalizationRegistry` frees what the program forgot to dispose.
 * - While any stream capture is active, frees are deferred until the last capture ends: a
 *   `cuMemFree`/`cuStreamDestroy` in the middle of a global-mode capture would invalidate it.
 * - A free that fails cannot throw (dispose and finalizers must not): the error is kept and
 *   thrown by the next public call (`surfaceCleanupErrors`), as cudarc does.
 */
import { DisposedError } from '../errors/base.js';
import { CudaError } from '../errors/cuda-error.js';
import { hostCallState, surfaceHostCallbackErrors } from './host-calls.js';
import { invalidateChecks } from './check-epoch.js';

const deferred: Array<() => void> = [];
let deferDepth = 0;
const keptErrors: unknown[] = [];
let cleanupErrorPending = false;

function runCleanup(cleanup: () => void): void {
  try {
    cleanup();
  } catch (e) {
    keptErrors.push(e);
    cleanupErrorPending = true;
    invalidateChecks();
  }
}

function runOrDefer(cleanup: () => void): void {
  if (deferDepth > 0) deferred.push(cleanup);
  else runCleanup(cleanup);
}

/** Holds frees back (a capture began). Pair with `resumeCleanups`. */
export function deferCleanups(): void {
  deferDepth++;
}

/** Ends one `deferCleanups`; the last one runs every free held back meanwhile. */
export function resumeCleanups(): void {
  if (deferDepth === 0) return;
  deferDepth--;
  if (deferDepth === 0) {
    for (const cleanup of deferred.splice(0)) runCleanup(cleanup);
  }
}

/** True while frees are held back (a capture is active): a free made now would be deferred. */
export function cleanupsDeferred(): boolean {
  return deferDepth > 0;
}

/** Number of frees waiting for the active captures to end (for tests and diagnostics). */
export function deferredCleanupCount(): number {
  return deferred.length;
}

/**
 * Throws, once, the errors of frees that failed in `dispose()` or a finalizer since the last
 * call. Every public entry point calls this (through `Lifetime.assertAlive` or directly).
 */
export function surfaceCleanupErrors(op: string): void {
  if (!cleanupErrorPending) return;
  const errors = keptErrors.splice(0);
  cleanupErrorPending = false;
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  const what = first instanceof Error ? first.message : String(first);
  throw new CudaError({
    code: first instanceof CudaError ? first.code : 999,
    operation: op,
    detail:
      `An earlier release of a driver resource failed${more}; it is reported here because dispose() and ` +
      `garbage-collection finalizers cannot throw. The first failure: ${what}`,
    details: { deferredFailures: errors.length },
    cause: first,
  });
}

const registry = new FinalizationRegistry<Lifetime>((life) => life.collected());

/**
 * The lifetime of one driver resource. Its cleanup closure must capture handles only, never the
 * owning object (the registry could then never collect it).
 */
export class Lifetime {
  #disposed = false;
  #freed = false;
  #holders = 0;
  readonly #cleanup: () => void;

  /**
   * @param what how errors name the resource, e.g. `DeviceBuffer (1024 bytes)`.
   * @param owner the JS object whose collection frees the resource when it was never disposed.
   * @param cleanup frees the driver object; may throw (the error is kept, see above).
   */
  constructor(
    readonly what: string,
    owner: object,
    cleanup: () => void,
  ) {
    this.#cleanup = cleanup;
    registry.register(owner, this, this);
  }

  /** True once the owner disposed it (or it was collected). */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** True once the driver object has been freed (or its free was deferred). */
  get freed(): boolean {
    return this.#freed;
  }

  /** How many holders keep the resource alive. */
  get holders(): number {
    return this.#holders;
  }

  /** @throws DisposedError naming `op` after dispose; surfaces kept cleanup errors. */
  assertAlive(op: string): void {
    if (this.#disposed) throw new DisposedError(op, this.what);
    if (cleanupErrorPending) surfaceCleanupErrors(op);
    if (hostCallState.errorPending) surfaceHostCallbackErrors(op);
  }

  /** A holder (graph, prepared launch) starts using the resource. */
  retain(): void {
    this.#holders++;
  }

  /** A holder is done with it; frees it if the owner already let go. */
  release(): void {
    if (this.#holders === 0) return;
    this.#holders--;
    if (this.#holders === 0 && this.#disposed) this.#free();
  }

  /** The owner lets go: frees now unless holders remain. Idempotent, never throws. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    invalidateChecks();
    registry.unregister(this);
    if (this.#holders === 0) this.#free();
  }

  /**
   * The owner freed the driver object itself (e.g. `cuMemFreeAsync`): mark it disposed and freed
   * without running the cleanup.
   */
  markFreed(): void {
    this.#disposed = true;
    invalidateChecks();
    this.#freed = true;
    registry.unregister(this);
  }

  /** Finalizer path: the owner was collected without dispose(). */
  collected(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    invalidateChecks();
    if (this.#holders === 0) this.#free();
  }

  #free(): void {
    if (this.#freed) return;
    this.#freed = true;
    runOrDefer(this.#cleanup);
  }
}

/**
 * Keeps a cleanup failure that cannot be thrown where it happened (a `dispose()` that must not
 * throw): the next public call throws it, as it does for failed frees.
 */
export function keepCleanupError(error: unknown): void {
  keptErrors.push(error);
  cleanupErrorPending = true;
  invalidateChecks();
}

/** Keeps a failed free of a driver call's CUresult (for cleanups written as `keep(rc, …)`). */
export function keepFailure(code: number, operation: string, driverCall: string): void {
  if (code === 0) return;
  keptErrors.push(new CudaError({ code, operation, driverCall }));
  cleanupErrorPending = true;
  invalidateChecks();
}
