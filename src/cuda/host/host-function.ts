/**
 * JS functions the GPU calls in stream order: `cuLaunchHostFunc` on a stream (captured as a host
 * node during a capture) and host nodes of lowered graphs.
 *
 * One koffi trampoline serves every host function of the process: it is registered once and never
 * unregistered, and the driver passes it the function's id as `userData`. So a graph can never call
 * a released koffi slot (a crash), the 8192-slot limit of koffi callbacks never binds, and a call
 * for a function already released is reported instead of crashing.
 *
 * What keeps a host function alive: its owner until `dispose()`; every graph that calls it (its
 * `Lifetime`, as for buffers); and every call in flight, eager or from a graph launch, until the
 * call has run. While any call is in flight the host-call gate is closed (driver/host-gate.ts):
 * driver calls that would wait for the GPU are refused and frees that would are deferred, because
 * the GPU cannot get past the call until the JS thread runs it.
 *
 * What a host function throws is kept and thrown by the next checked call or the
 * `synchronizeAsync()` promise (`HostCallbackError`).
 */
import { privateConstructorError } from '../../errors/base.js';
import { requireInstance, describe, requireName, requireOptions } from '../../util/validate.js';
import { InvalidArgumentError } from '../../errors/base.js';
import { graphBuild as gb, graph as gr, host, gate, hostCallsSubmitted, hostCallStarted, hostCallFinished } from '../../driver/result/index.js';
import { CU_STREAM_CAPTURE_STATUS } from '../../driver/layouts.js';
import { CAPTURE, INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, surfaceCleanupErrors } from '../core/lifetime.js';
import { keepHostCallbackError } from './host-calls.js';
import type { Stream } from '../device/stream.js';
import { brands, registerBrand } from '../core/brands.js';

interface Entry {
  readonly fn: () => void;
  readonly label: string;
  readonly life: Lifetime;
  calls: number;
  failures: number;
  /** Calls submitted to the GPU and not yet returned; the entry holds its Lifetime while > 0. */
  inFlight: number;
}

const entries = new Map<number, Entry>();
let nextId = 1;
let trampoline: bigint | null = null;

/** `n` calls of `entry` were submitted: it stays alive until they have run. */
function callsSubmitted(entry: Entry, n: number): void {
  if (entry.inFlight === 0) entry.life.retain();
  entry.inFlight += n;
}

/** One call of `entry` has returned. */
function callDone(entry: Entry): void {
  if (entry.inFlight === 0) return;
  entry.inFlight--;
  if (entry.inFlight === 0) entry.life.release();
}

/** What the driver thread calls (through koffi, on the JS thread): dispatch by id, keep errors. */
function dispatch(userData: bigint | null): void {
  hostCallStarted();
  const id = userData === null ? 0 : Number(userData);
  const entry = entries.get(id);
  try {
    if (entry === undefined) {
      keepHostCallbackError(`#${id}`, new Error(`host function #${id} was called by the GPU after it was released`));
      return;
    }
    entry.calls++;
    try {
      entry.fn();
    } catch (e) {
      entry.failures++;
      keepHostCallbackError(entry.label, e);
    }
  } finally {
    if (entry !== undefined) callDone(entry);
    hostCallFinished();
  }
}

// Error messages of the gate name the host functions in flight.
gate.describers.add(() => {
  const out: string[] = [];
  for (const e of entries.values()) if (e.inFlight > 0) out.push(`'${e.label}' (${e.inFlight} call${e.inFlight === 1 ? '' : 's'})`);
  return out;
});

/** @internal The trampoline's function pointer (registered on first use). */
export function hostTrampoline(): bigint {
  return (trampoline ??= host.hostCallback(dispatch));
}

/** @internal The label of the host function a host node calls, or null when it is not one of ours. */
export function hostFunctionLabel(fn: bigint, userData: bigint): string | null {
  if (trampoline === null || fn !== trampoline) return null;
  return entries.get(Number(userData))?.label ?? null;
}

/** @internal True when `fn` is the trampoline (the node calls a cudagraph host function). */
export function isHostTrampoline(fn: bigint): boolean {
  return trampoline !== null && fn === trampoline;
}

/** @internal True while any host function exists (graphs count their JS host nodes only then). */
export function hostFunctionsExist(): boolean {
  return entries.size > 0;
}

/**
 * @internal A graph launch submitted one call of each host function in `ids` (the `userData` of
 * its trampoline host nodes, with repeats): they stay alive, and the gate closed, until each ran.
 */
export function graphHostCallsSubmitted(ids: readonly number[]): void {
  for (let i = 0; i < ids.length; i++) {
    const entry = entries.get(ids[i]!);
    if (entry !== undefined) callsSubmitted(entry, 1);
  }
  hostCallsSubmitted(ids.length);
}

/**
 * @internal True when `stream` (not capturing through cudagraph) is being captured by other code,
 * so work submitted to it is recorded, not run. Never asked of the legacy NULL stream: querying
 * it while another stream captures is itself an illegal implicit synchronization.
 */
export function isForeignCapture(op: string, stream: Stream, handle: bigint): boolean {
  return !stream.isLegacyDefault && gr.streamIsCapturing(op, handle) !== CU_STREAM_CAPTURE_STATUS.NONE;
}

/** Options of `HostFunction.create`. */
export interface HostFunctionOptions {
  /** A name for errors, read-backs and DOT (default `host#<id>`). */
  readonly label?: string;
}

/**
 * A JS function the GPU calls in stream order. `launch(stream)` enqueues one call
 * (`cuLaunchHostFunc`); during a capture it records a host node, and the graph keeps the function
 * alive. Lowered graphs bind their host nodes to host functions too. It takes no user data
 * pointer (C's `void *userData`): what the callback needs, it reaches through its closure
 * (`HostFunction.create(() => report(state))`).
 *
 * Wait for work that calls host functions with `await stream.synchronizeAsync()`: while a host
 * call is in flight, calls that would wait for the GPU (`synchronize()`, `Module.load`, copies
 * to or from pageable memory, …) are refused with `HostCallbackError` `ERR_HOST_CALL_PENDING`
 * (they would deadlock), and frees are deferred until the calls have run. What the function
 * throws is reported by that promise (or the next checked call) as `HostCallbackError`.
 *
 * @example
 * using hf = HostFunction.create(() => { seen++; }, { label: 'tick' });
 * hf.launch(s);
 * await s.synchronizeAsync();   // seen === 1
 */
export class HostFunction {
  /** The name used in errors and read-backs. */
  readonly label: string;
  /** The id the driver passes back as `userData`. */
  readonly id: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #entry: Entry;

  /** @internal Use `HostFunction.create`. */
  constructor(key: typeof INTERNAL, fn: () => void, label: string | undefined) {
    if (key !== INTERNAL) throw privateConstructorError('HostFunction', 'HostFunction.create(fn)');
    const id = nextId++;
    this.id = id;
    this.label = label ?? `host#${id}`;
    // The cleanup holds the id only; the trampoline stays registered for the process.
    const life = new Lifetime(`HostFunction '${this.label}'`, this, () => {
      entries.delete(id);
    });
    this[LIFETIME] = life;
    this.#entry = { fn, label: this.label, life, calls: 0, failures: 0, inFlight: 0 };
    entries.set(id, this.#entry);
  }

  /** @internal True for a HostFunction this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is HostFunction {
    return typeof value === 'object' && value !== null && #entry in value;
  }

  static {
    registerBrand('HostFunction', HostFunction);
  }

  /**
   * Wraps `fn` (called with no arguments, on the JS thread, when the GPU reaches it).
   * @throws InvalidArgumentError when `fn` is not a function or the label is empty.
   */
  static create(fn: () => void, options?: HostFunctionOptions): HostFunction {
    const op = 'HostFunction.create';
    if (typeof fn !== 'function') throw new InvalidArgumentError(op, 'fn', `fn must be a function, got ${describe(fn)}`);
    const o = requireOptions<HostFunctionOptions>(op, options, ['label']);
    const label = o.label === undefined ? undefined : requireName(op, 'label', o.label);
    surfaceCleanupErrors(op);
    return new HostFunction(INTERNAL, fn, label);
  }

  /** How many times the GPU has called it (including calls that threw). */
  get calls(): number {
    return this.#entry.calls;
  }

  /** How many of those calls threw. */
  get failures(): number {
    return this.#entry.failures;
  }

  /** Calls submitted (eagerly or by graph launches) that have not run yet. */
  get callsInFlight(): number {
    return this.#entry.inFlight;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * Enqueues one call on `stream` (`cuLaunchHostFunc`). On a capturing stream the call is recorded
   * as a host node and the graph keeps this function alive; otherwise the call keeps it alive
   * until it has run, even if it is disposed meanwhile.
   * @throws InvalidArgumentError for a non-Stream; DisposedError after dispose; CudaError from the driver.
   */
  launch(stream: Stream): void {
    const op = 'HostFunction.launch';
    this[LIFETIME].assertAlive(op);
    requireInstance(op, 'stream', stream, brands.Stream);
    const h = stream.handleFor(op);
    const fn = hostTrampoline();
    makeCurrent(op, stream.device.context);
    const sink = stream[CAPTURE];
    // A stream captured by other code (not through cudagraph) records the call as a node of a
    // graph cudagraph cannot see: counting it as in flight would keep the gate closed for ever.
    const foreignCapture = sink === null && isForeignCapture(op, stream, h);
    gb.launchHostFunc(op, h, fn, BigInt(this.id));
    if (sink !== null) sink.retain(this[LIFETIME]);
    else if (foreignCapture) this[LIFETIME].retain(); // that graph may call it at any time: never released
    else {
      callsSubmitted(this.#entry, 1);
      hostCallsSubmitted(1);
    }
  }

  /** Releases the function once no graph holds it and no call is in flight. Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `HostFunction(${this.label})`;
  }
}
