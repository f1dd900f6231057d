/**
 * The state that must exist once per process, however many copies of cudagraph are loaded.
 *
 * A dependency tree can hold two versions of the package, and each copy loads its own modules;
 * but there is one CUDA driver, one current context per thread and one set of host functions in
 * flight. If each copy kept its own bookkeeping, a free made through one copy could invalidate a
 * global-mode capture begun through the other, one copy could launch in the context the other made
 * current, and a synchronous wait in one could deadlock on a host function pending in the other.
 * So that bookkeeping lives here, in one plain record under a registered symbol on `globalThis`,
 * shared by every copy that reads the same version of the record.
 *
 * The record holds plain data and functions only (no class instances, which differ per copy). Its
 * layout is versioned by the key: a copy that needs a different layout must use a new key AND keep
 * maintaining this one, so that it stays safe next to copies that only know v1.
 */

/** A free held back until it is safe to run (see `cuda/lifetime.ts`). */
export interface DeferredCleanup {
  /** Frees the driver object; may throw (the copy that made it keeps the error). */
  readonly run: () => void;
  /** True when the free waits for the GPU (cuMemFree, cuModuleUnload, …): it also waits for host calls. */
  readonly waits: boolean;
}

/** Version 1 of the process-wide record. */
export interface ProcessStateV1 {
  readonly version: 1;
  /** The check epoch: bumped by every event that can make a hot call's earlier check fail now. */
  readonly epoch: { value: number };
  /** The context cudagraph last made current on the JS thread, or null when unknown. */
  readonly context: { current: bigint | null };
  /** JS host calls in flight: submitted to the GPU and not yet finished on the JS thread. */
  readonly gate: {
    /** `pending + running`: the one number the hot paths read (0: no host call in flight). */
    calls: number;
    /** Submitted to the GPU, not yet started on the JS thread. */
    pending: number;
    /** Running on the JS thread now (a host function calling back into cudagraph). */
    running: number;
    /** Asynchronous operations submitted since the gate closed (host calls went from 0 to more). */
    queued: number;
    /** Bytes copied from pageable memory since the gate closed (the driver stages them). */
    staged: number;
    /** Each copy's description of its pending host functions, for error messages. */
    readonly describers: Set<() => string[]>;
    /** Called (after the host call returned) when the last host call in flight has finished. */
    readonly openListeners: Set<() => void>;
  };
  /** Frees held back while a capture is active or, for frees that wait for the GPU, while host calls are in flight. */
  readonly cleanups: {
    /** Active stream captures (of every copy). */
    captures: number;
    readonly deferred: DeferredCleanup[];
  };
}

const KEY = Symbol.for('cudagraph.process-state.v1');

function fresh(): ProcessStateV1 {
  return {
    version: 1,
    epoch: { value: 0 },
    context: { current: null },
    gate: { calls: 0, pending: 0, running: 0, queued: 0, staged: 0, describers: new Set(), openListeners: new Set() },
    cleanups: { captures: 0, deferred: [] },
  };
}

function isV1(x: unknown): x is ProcessStateV1 {
  if (typeof x !== 'object' || x === null) return false;
  const s = x as Partial<ProcessStateV1>;
  return (
    s.version === 1 &&
    typeof s.epoch?.value === 'number' &&
    typeof s.gate?.calls === 'number' &&
    typeof s.gate.staged === 'number' &&
    s.gate.describers instanceof Set &&
    s.gate.openListeners instanceof Set &&
    typeof s.cleanups?.captures === 'number' &&
    Array.isArray(s.cleanups.deferred) &&
    typeof s.context === 'object' &&
    s.context !== null
  );
}

function claim(): ProcessStateV1 {
  const g = globalThis as { [KEY]?: unknown };
  const existing = g[KEY];
  if (isV1(existing)) return existing;
  const state = fresh();
  if (existing === undefined) {
    Object.defineProperty(g, KEY, { value: state, enumerable: false, configurable: false, writable: false });
  } else {
    // Something else sits under our key: keep a private record rather than trust it.
    process.emitWarning(
      'cudagraph: globalThis[Symbol.for("cudagraph.process-state.v1")] holds an unexpected value; this copy keeps its own state',
      { code: 'CUDAGRAPH_PROCESS_STATE' },
    );
  }
  return state;
}

/** The process-wide record, shared with every other loaded copy of cudagraph. */
export const processState: ProcessStateV1 = claim();
