/**
 * JS functions the GPU calls in stream order: `cuLaunchHostFunc` on a stream (captured as a host
 * node during a capture) and host nodes of lowered graphs.
 *
 * One koffi trampoline serves every host function of the process: it is registered once and never
 * unregistered, and the driver passes it the function's id as `userData`. So a graph can never call
 * a released koffi slot (a crash), the 8192-slot limit of koffi callbacks never binds, and a call
 * for a function already released is reported instead of crashing. Graphs that call a function
 * keep it alive (its `Lifetime`), as they keep buffers alive.
 *
 * What a host function throws is kept and thrown by the next checked call or the
 * `synchronizeAsync()` promise (`HostCallbackError`); synchronous waits are refused while host
 * calls are pending, because they would deadlock (see host-calls.ts).
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireName, requireOptions } from '../util/validate.js';
import { registerHostFunction } from '../driver/sys.js';
import { graphBuild as gb } from '../driver/result/index.js';
import { CAPTURE, INTERNAL, LIFETIME } from './internal.js';
import { makeCurrent } from './context.js';
import { Lifetime, surfaceCleanupErrors } from './lifetime.js';
import { hostCallStarted, hostCallsSubmitted, keepHostCallbackError } from './host-calls.js';
import { Stream } from './stream.js';

interface Entry {
  readonly fn: () => void;
  readonly label: string;
  calls: number;
  failures: number;
}

const entries = new Map<number, Entry>();
let nextId = 1;
let trampoline: bigint | null = null;

/** What the driver thread calls (through koffi, on the JS thread): dispatch by id, keep errors. */
function dispatch(userData: bigint | null): void {
  hostCallStarted();
  const id = userData === null ? 0 : Number(userData);
  const entry = entries.get(id);
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
}

/** @internal The trampoline's function pointer (registered on first use). */
export function hostTrampoline(): bigint {
  return (trampoline ??= registerHostFunction(dispatch));
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

/** Options of `HostFunction.create`. */
export interface HostFunctionOptions {
  /** A name for errors, read-backs and DOT (default `host#<id>`). */
  readonly label?: string;
}

/**
 * A JS function the GPU calls in stream order. `launch(stream)` enqueues one call
 * (`cuLaunchHostFunc`); during a capture it records a host node, and the graph keeps the function
 * alive. Lowered graphs bind their host nodes to host functions too.
 *
 * Wait for work that calls host functions with `await stream.synchronizeAsync()`: the synchronous
 * `synchronize()` is refused while host calls are pending (it would deadlock). What the function
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
    if (key !== INTERNAL) throw new TypeError('HostFunction: use HostFunction.create(fn)');
    const id = nextId++;
    this.id = id;
    this.label = label ?? `host#${id}`;
    this.#entry = { fn, label: this.label, calls: 0, failures: 0 };
    entries.set(id, this.#entry);
    // The cleanup holds the id only; the trampoline stays registered for the process.
    this[LIFETIME] = new Lifetime(`HostFunction '${this.label}'`, this, () => {
      entries.delete(id);
    });
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

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * Enqueues one call on `stream` (`cuLaunchHostFunc`). On a capturing stream the call is recorded
   * as a host node and the graph keeps this function alive.
   * @throws InvalidArgumentError for a non-Stream; DisposedError after dispose; CudaError from the driver.
   */
  launch(stream: Stream): void {
    const op = 'HostFunction.launch';
    this[LIFETIME].assertAlive(op);
    if (!(stream instanceof Stream)) throw new InvalidArgumentError(op, 'stream', `stream must be a Stream, got ${describe(stream)}`);
    const h = stream.handleFor(op);
    const fn = hostTrampoline();
    makeCurrent(op, stream.device.context);
    gb.launchHostFunc(op, h, fn, BigInt(this.id));
    const sink = stream[CAPTURE];
    if (sink !== null) sink.retain(this[LIFETIME]);
    else hostCallsSubmitted(1);
  }

  /** Releases the function once no graph holds it. Idempotent; never throws. */
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
