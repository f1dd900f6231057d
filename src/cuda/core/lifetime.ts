/**
 * Ownership of driver resources: one `Lifetime` per resource object (stream, event, buffer,
 * module, graph, …). It implements the house rules in one place:
 * - `dispose()` is idempotent and never throws; a use after it throws `DisposedError`.
 * - Holders (a prepared launch, a captured graph) `retain()` what they need; the driver object is
 *   freed when the owner has disposed it (or it was garbage-collected) AND the last holder has
 *   released it, so a graph never replays into freed memory.
 * - A `FinalizationRegistry` frees what the program forgot to dispose.
 * - Frees are deferred, never refused, while running them now could break something:
 *   - while any stream capture is active (of any loaded copy of cudagraph), every free waits for
 *     the last capture to end: a `cuMemFree`/`cuStreamDestroy` in the middle of a global-mode
 *     capture would invalidate it;
 *   - while a JS host call is in flight, a free that waits for the GPU (`cuMemFree`,
 *     `cuModuleUnload`, `cuMemHostUnregister`, a pool's teardown) waits until the last host call
 *     has returned: run now, it would deadlock the process (driver/host-gate.ts).
 *   Deferred frees run as soon as their condition clears (the last capture ends; the event loop
 *   turns after the last host call returned); nothing is leaked.
 * - A free that fails cannot throw (dispose and finalizers must not): the error is kept and
 *   thrown by the next public call (`surfaceCleanupErrors`), as cudarc does.
 */
import { DisposedError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { processState, gate, type DeferredCleanup } from '../../driver/result/index.js';
import { hostCallState, surfaceHostCallbackErrors } from '../host/host-calls.js';
import { invalidateChecks } from './check-epoch.js';

/** Frees held back, shared with every loaded copy of cudagraph. */
const held = processState.cleanups;
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

/** True when a free of this kind must wait now. */
function mustWait(waits: boolean): boolean {
  return held.captures > 0 || (waits && gate.calls !== 0);
}

function runOrDefer(cleanup: () => void, waits: boolean): void {
  if (mustWait(waits)) held.deferred.push({ run: () => runCleanup(cleanup), waits });
  else runCleanup(cleanup);
}

/**
 * Runs every deferred free whose reason to wait has gone, in the order they were deferred.
 * A free that runs can release more (a graph releases its buffers): those run or wait in turn.
 */
function drainDeferred(): void {
  const queue = held.deferred;
  if (queue.length === 0) return;
  const waiting: DeferredCleanup[] = [];
  for (const d of queue.splice(0)) {
    if (mustWait(d.waits)) waiting.push(d);
    else d.run();
  }
  queue.unshift(...waiting);
}

let drainScheduled = false;

/**
 * The gate opened (the last host call in flight returned). The host function that returned was
 * called from the driver's thread through the JS thread; the deferred frees run on a later turn
 * of the event loop, once that call has fully unwound and the driver thread is free.
 */
function scheduleDrain(): void {
  if (drainScheduled || held.deferred.length === 0) return;
  drainScheduled = true;
  setImmediate(() => {
    drainScheduled = false;
    drainDeferred();
  }).unref();
}
gate.openListeners.add(scheduleDrain);

/** Holds frees back (a capture began). Pair with `resumeCleanups`. */
export function deferCleanups(): void {
  held.captures++;
}

/** Ends one `deferCleanups`; the last one runs every free held back meanwhile that may run now. */
export function resumeCleanups(): void {
  if (held.captures === 0) return;
  held.captures--;
  if (held.captures === 0) drainDeferred();
}

/** True while every free is held back (a capture is active): a free made now would be deferred. */
export function cleanupsDeferred(): boolean {
  return held.captures > 0;
}

/**
 * Runs `free` now, or as soon as frees may run (deferred as a `Lifetime`'s waiting cleanup is):
 * for a free that belongs to no resource's lifetime (a pool taking back memory a graph still
 * uses). A failure is kept like a failed cleanup's.
 */
export function freeWhenSafe(free: () => void): void {
  runOrDefer(free, true);
}

/** Number of frees waiting (for active captures or host calls in flight), for tests and diagnostics. */
export function deferredCleanupCount(): number {
  return held.deferred.length;
}

/**
 * Throws, once, the errors of frees that failed in `dispose()` or a finalizer since the last
 * call. Every public entry point calls this (through `Lifetime.assertAlive` or directly).
 */
export function surfaceCleanupErrors(op: string): void {
  if (!cleanupErrorPending) return;
  throw takeCleanupError(op);
}

/**
 * The error `surfaceCleanupErrors` would throw (consumed), or null when none is kept: for calls
 * that must finish what they started before they report it (`StreamGraphCapture.end`).
 */
export function takeCleanupError(op: string): CudaError | null {
  if (!cleanupErrorPending) return null;
  const errors = keptErrors.splice(0);
  cleanupErrorPending = false;
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  const what = first instanceof Error ? first.message : String(first);
  return new CudaError({
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

/** Options of a `Lifetime`. */
export interface LifetimeOptions {
  /**
   * The cleanup can wait for the GPU (`cuMemFree`, `cuModuleUnload`, `cuMemHostUnregister`, a
   * synchronization): it is also deferred while a JS host call is in flight. Default false.
   */
  readonly waits?: boolean;
}

/**
 * The lifetime of one driver resource. Its cleanup closure must capture handles only, never the
 * owning object (the registry could then never collect it).
 */
export class Lifetime {
  #disposed = false;
  #freed = false;
  #holders = 0;
  readonly #cleanup: () => void;
  readonly #waits: boolean;

  /**
   * @param what how errors name the resource, e.g. `DeviceBuffer (1024 bytes)`.
   * @param owner the JS object whose collection frees the resource when it was never disposed.
   * @param cleanup frees the driver object; may throw (the error is kept, see above).
   */
  constructor(
    readonly what: string,
    owner: object,
    cleanup: () => void,
    options?: LifetimeOptions,
  ) {
    this.#cleanup = cleanup;
    this.#waits = options?.waits === true;
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
    runOrDefer(this.#cleanup, this.#waits);
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
