import { InvalidArgumentError } from '../../errors/base.js';
import type { CudaError } from '../../errors/cuda-error.js';
import { describe } from '../../util/validate.js';
import { launch as ln, cudaError } from '../../driver/result/index.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime } from '../core/lifetime.js';
import type { PreparedLaunch } from './prepared-launch.js';
import type { Stream } from '../device/stream.js';
import { brands, registerBrand } from '../core/brands.js';

/** One entry of a `LaunchSequence`: a prepared launch and the stream it is launched on. */
export interface LaunchSequenceEntry {
  readonly launch: PreparedLaunch;
  readonly stream: Stream;
}

/** How an entry is named in messages: `entries[3].launch` (the constructor) or `launches[3]` (`stream.sequence`). */
type Naming = 'entries' | 'launches';

function entryName(naming: Naming, i: number, field: 'launch' | 'stream'): string {
  return naming === 'launches' ? `launches[${i}]` : `entries[${i}].${field}`;
}

function isIterable(x: unknown): x is Iterable<unknown> {
  return typeof x === 'object' && x !== null && typeof (x as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function';
}

/**
 * An ordered list of prepared launches, each with its stream, submitted by ONE call:
 * `seq.launch()` launches entry 0, then 1, … in order, exactly as calling `entry.launch.launch(entry.stream)`
 * for each would, but without a call from JS into native code per kernel. With the Node-API addon
 * (linux-x64; `docs/ffi-decision.md`) the launch ids and stream handles are packed once into typed
 * arrays and the addon loops `cuLaunchKernel` in C; without it (or with `CUDAGRAPH_NATIVE=0`) a JS
 * loop makes the same calls through koffi, with the same results and errors.
 *
 * Made by `stream.sequence(launches)` (every launch on one stream) or `new LaunchSequence(entries)`.
 * The sequence holds its launches alive (their argument blocks, modules and buffers) until it is
 * disposed; a launch the program disposed meanwhile makes `launch()` throw `DisposedError`, as the
 * launch itself would. `setArg` on a launch applies to the sequence's next submission.
 *
 * On a capturing stream every entry becomes a node, and the capture keeps what each launch holds
 * alive, as with single launches. The sequence is checked up front (every launch, its module and
 * buffers, and every stream alive); when the driver refuses entry k, entries 0…k-1 have been
 * submitted, k and the rest have not, and the `CudaError` says so.
 *
 * @example
 * using seq = stream.sequence([scale, bias, relu]);   // packed once
 * for (let step = 0; step < 1000; step++) seq.launch();  // three launches, one native call
 *
 * using capture = StreamGraphCapture.begin(stream);
 * seq.launch();                                        // three kernel nodes, in order
 * using exec = capture.end();
 */
export class LaunchSequence {
  /** The entries, in launch order (frozen). */
  readonly entries: readonly LaunchSequenceEntry[];
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #call: ln.SequenceCall;
  /** The primary context of the sequence's device (0n for an empty sequence, which never launches). */
  readonly #ctx: bigint;
  /** Each distinct launch and stream once: what `launch()` checks before submitting. */
  readonly #launches: readonly PreparedLaunch[];
  readonly #streams: readonly Stream[];
  /** Each distinct (launch, stream) pair and the index of its first entry: the capture bookkeeping. */
  readonly #pairLaunch: readonly PreparedLaunch[];
  readonly #pairStream: readonly Stream[];
  readonly #pairFirst: Uint32Array;

  /**
   * A sequence of `entries` (any iterable of `{ launch, stream }`; it may be empty).
   * @throws InvalidArgumentError when `entries` is not iterable, an entry is not a
   *   `{ launch: PreparedLaunch, stream: Stream }`, or the launches and streams are not all of one
   *   device; DisposedError when a launch, its module or buffer arguments, or a stream is disposed.
   */
  constructor(entries: Iterable<LaunchSequenceEntry>);
  /** @internal `stream.sequence`: errors name `op` and `launches[i]`. */
  constructor(key: typeof INTERNAL, op: string, entries: Iterable<LaunchSequenceEntry>);
  constructor(a: unknown, b?: string, c?: unknown) {
    const internal = a === INTERNAL;
    const op = internal ? b! : 'LaunchSequence';
    const naming: Naming = internal ? 'launches' : 'entries';
    const given = internal ? c : a;
    if (!isIterable(given)) throw new InvalidArgumentError(op, 'entries', `entries must be an iterable of { launch, stream }, got ${describe(given)}`);
    const list = [...given];
    const launches = new Map<PreparedLaunch, Map<Stream, number>>();
    const streams = new Set<Stream>();
    const calls: ln.KernelCall[] = [];
    const handles: bigint[] = [];
    let ctx = 0n;
    let deviceOrdinal = -1;
    list.forEach((e, i) => {
      const launch: unknown = typeof e === 'object' && e !== null ? (e as { launch?: unknown }).launch : undefined;
      const stream: unknown = typeof e === 'object' && e !== null ? (e as { stream?: unknown }).stream : undefined;
      if (!brands.PreparedLaunch.is(launch)) {
        const name = entryName(naming, i, 'launch');
        throw new InvalidArgumentError(op, naming, `${name} must be a PreparedLaunch, got ${describe(launch)}`);
      }
      if (!brands.Stream.is(stream)) {
        throw new InvalidArgumentError(op, naming, `${entryName(naming, i, 'stream')} must be a Stream, got ${describe(stream)}`);
      }
      calls.push(launch.callFor(op));
      handles.push(stream.handleFor(op));
      const device = launch.kernel.module.device;
      if (deviceOrdinal < 0) {
        deviceOrdinal = device.ordinal;
        ctx = device.context;
      } else if (device.context !== ctx) {
        throw new InvalidArgumentError(op, naming, `${entryName(naming, i, 'launch')} is a launch on device ${device.ordinal}; the sequence's first launch is on device ${deviceOrdinal}: a sequence runs on one device`);
      }
      if (stream.device.context !== ctx) {
        const detail =
          naming === 'launches'
            ? `launches[${i}] is a launch on device ${deviceOrdinal}; the stream is of device ${stream.device.ordinal}`
            : `entries[${i}].stream is a stream of device ${stream.device.ordinal}; the sequence's launches are on device ${deviceOrdinal}`;
        throw new InvalidArgumentError(op, naming, detail);
      }
      let on = launches.get(launch);
      if (on === undefined) launches.set(launch, (on = new Map()));
      if (!on.has(stream)) on.set(stream, i);
      streams.add(stream);
    });
    this.entries = Object.freeze(list.map((e) => Object.freeze({ launch: (e as LaunchSequenceEntry).launch, stream: (e as LaunchSequenceEntry).stream })));
    this.#call = ln.prepareSequence(calls, handles);
    this.#ctx = ctx;
    this.#launches = [...launches.keys()];
    this.#streams = [...streams];
    const pairLaunch: PreparedLaunch[] = [];
    const pairStream: Stream[] = [];
    const pairFirst: number[] = [];
    for (const [launch, on] of launches) {
      for (const [stream, first] of on) {
        pairLaunch.push(launch);
        pairStream.push(stream);
        pairFirst.push(first);
      }
    }
    this.#pairLaunch = pairLaunch;
    this.#pairStream = pairStream;
    this.#pairFirst = Uint32Array.from(pairFirst);
    // The launches' registrations in the addon and their argument blocks must outlive every
    // submission: hold them. The cleanup references their lifetimes only, never this object.
    const held = this.#launches.map((l) => l[LIFETIME]);
    for (const l of held) l.retain();
    this[LIFETIME] = new Lifetime(`LaunchSequence of ${list.length} launch${list.length === 1 ? '' : 'es'}`, this, () => {
      for (const l of held.splice(0)) l.release();
    });
  }

  /** @internal True for a LaunchSequence this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is LaunchSequence {
    return typeof value === 'object' && value !== null && #call in value;
  }

  static {
    registerBrand('LaunchSequence', LaunchSequence);
  }

  /** Number of entries. */
  get length(): number {
    return this.entries.length;
  }

  /**
   * True when `launch()` is one call into the Node-API addon (which loops `cuLaunchKernel` in C);
   * false when it is a JS loop through koffi (no addon, `CUDAGRAPH_NATIVE=0`, or a launch prepared
   * without the addon).
   */
  get native(): boolean {
    return this.#call.native;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * Launches every entry in order, as `entry.launch.launch(entry.stream)` for each would. On
   * capturing streams each entry is recorded as a node and the capture keeps the launches'
   * modules and buffers alive.
   * @throws DisposedError (nothing launched) when this sequence, a launch, its module or a buffer
   *   argument, or a stream is disposed. CudaError when the driver refuses entry k: `details.index`
   *   is k, `details.kernel` its kernel's name, `details.submitted` the number of entries submitted
   *   before it (k); the message says the same. A stream-capture error (900–908) is recorded by the
   *   capture with this call's JS stack, as for a single launch.
   */
  launch(): void {
    const op = 'LaunchSequence.launch';
    this[LIFETIME].assertAlive(op);
    const launches = this.#launches;
    for (let i = 0; i < launches.length; i++) launches[i]!.callFor(op);
    const streams = this.#streams;
    for (let i = 0; i < streams.length; i++) streams[i]!.handleFor(op);
    const call = this.#call;
    if (call.length === 0) return;
    makeCurrent(op, this.#ctx);
    const rc = call.launch(op);
    const submitted = rc === 0 ? call.length : call.submitted;
    this.#launchedInto(submitted);
    if (rc !== 0) throw this.#failure(op, rc, submitted);
  }

  /** Capture bookkeeping for the first `submitted` entries: each launch registers with each capture it was recorded into. */
  #launchedInto(submitted: number): void {
    const streams = this.#pairStream;
    const first = this.#pairFirst;
    for (let i = 0; i < streams.length; i++) {
      if (first[i]! >= submitted) continue;
      const sink = streams[i]![CAPTURE];
      if (sink !== null) this.#pairLaunch[i]!.launchedInto(sink);
    }
  }

  /** The error for entry `k` refused with `rc` (reported to active captures, with this call's stack). */
  #failure(op: string, rc: number, k: number): CudaError {
    const n = this.entries.length;
    const entry = this.entries[k]!;
    const kernel = entry.launch.kernel.name;
    const before = k === 0 ? 'no entry was submitted' : k === 1 ? 'entry 0 was submitted' : `entries 0–${k - 1} were submitted`;
    const after = k === n - 1 ? '' : k === n - 2 ? `; entry ${n - 1} was not` : `; entries ${k + 1}–${n - 1} were not`;
    return cudaError(rc, op, 'cuLaunchKernel', `entry ${k} of ${n} (kernel '${kernel}' on ${String(entry.stream)}) failed: ${before}${after}`, {
      index: k,
      kernel,
      submitted: k,
      entries: n,
    });
  }

  /** Releases the launches the sequence held. Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `LaunchSequence(${this.entries.length} entries${this.#call.native ? ', native' : ''})`;
  }
}
