import { InvalidArgumentError, DisposedError, privateConstructorError } from '../../errors/base.js';
import { requireInstance, requireInt } from '../../util/validate.js';
import { launch as ln } from '../../driver/result/index.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { checkEpoch } from '../core/check-epoch.js';
import { Lifetime } from '../core/lifetime.js';
import type { CaptureSink } from '../core/capture-hooks.js';
import { normalizeArg, writeArg, type ArgBuffer, type KernelArg, type KernelArgValue } from './arg.js';
import { checkArgSize, type CheckedConfig } from './launch-config.js';
import { packArgs, type PackedArgs } from './packed-args.js';
import type { Stream } from '../device/stream.js';
import type { Kernel } from './kernel.js';
import { brands, registerBrand } from '../core/brands.js';

const LAUNCH = 'PreparedLaunch.launch';

/**
 * A kernel launch packed once: the hot path. `launch(stream)` makes one `cuLaunchKernel` call
 * with the argument block built at `prepare` time (no allocation, no re-packing); `setArg`
 * rewrites one slot in place. Holds the module and the argument buffers alive until disposed.
 */
export class PreparedLaunch {
  /** The kernel launched. */
  readonly kernel: Kernel;
  /** Grid dimensions. */
  readonly grid: readonly [number, number, number];
  /** Block dimensions. */
  readonly block: readonly [number, number, number];
  /** Dynamic shared memory per block, in bytes. */
  readonly sharedMem: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #ctx: bigint;
  readonly #packed: PackedArgs;
  /** The launch fixed once (registered in the native addon where it is loaded). */
  readonly #call: ln.KernelCall;
  readonly #args: KernelArgValue[];
  /** What the launch needs alive: the module, then each buffer argument (kept in step with #args). */
  readonly #held: Lifetime[];
  /** The last capture this launch registered its resources with (setArg resets it). */
  #registeredWith: CaptureSink | null = null;
  /** The stream `launch`'s checks last passed with, its handle, and the check epoch then. */
  #checkedStream: Stream | null = null;
  #checkedHandle = 0n;
  #checkedSink: CaptureSink | null = null;
  #checkedEpoch = -1;

  /** @internal Use `kernel.prepare(config)`. */
  constructor(key: typeof INTERNAL, kernel: Kernel, fn: bigint, c: CheckedConfig) {
    if (key !== INTERNAL) throw privateConstructorError('PreparedLaunch', 'kernel.prepare(config)');
    const op = 'Kernel.prepare';
    this.kernel = kernel;
    this.grid = c.grid;
    this.block = c.block;
    this.sharedMem = c.sharedMem;
    this.#ctx = kernel.module.device.context;
    this.#args = [...c.args];
    const packed = packArgs(this.#args, (b: ArgBuffer) => b.ptrFor(op));
    this.#packed = packed;
    let call: ln.KernelCall;
    try {
      call = ln.prepareLaunch(fn, c.grid, c.block, c.sharedMem, packed.address);
    } catch (e) {
      packed.free();
      throw e;
    }
    this.#call = call;
    const held = [kernel.module[LIFETIME], ...this.#args.filter((a) => a.buffer !== null).map((a) => a.buffer![LIFETIME])];
    for (const l of held) l.retain();
    this.#held = held;
    // The cleanup frees the block and lets go of what it held; it references no JS object that
    // could keep this PreparedLaunch reachable.
    const heldNow = held;
    this[LIFETIME] = new Lifetime(`PreparedLaunch of ${kernel.name}`, this, () => {
      call.release();
      packed.free();
      for (const l of heldNow.splice(0)) l.release();
    });
  }

  /** @internal True for a PreparedLaunch this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is PreparedLaunch {
    return typeof value === 'object' && value !== null && #call in value;
  }

  static {
    registerBrand('PreparedLaunch', PreparedLaunch);
  }

  /** Number of arguments. */
  get argCount(): number {
    return this.#args.length;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * Launches on `stream`. On a capturing stream the launch is recorded, and the module and
   * argument buffers are kept alive by the graph.
   * @throws DisposedError when this, the stream, the module or an argument buffer is disposed;
   *   InvalidArgumentError for a non-Stream or a stream of another device.
   */
  launch(stream: Stream): void {
    // Fast path: the checks below passed for this stream and nothing that could fail them has
    // happened since (check-epoch.ts); otherwise run them all, in the order of the errors they throw.
    if (stream !== this.#checkedStream || checkEpoch.value !== this.#checkedEpoch) this.#check(stream);
    makeCurrent(LAUNCH, this.#ctx);
    this.#call.launch(LAUNCH, this.#checkedHandle);
    // The stream's capture as the checks saw it: a capture beginning or ending bumps the epoch.
    const sink = this.#checkedSink;
    // Register once per capture: a capture loop launches the same prepared launch many times.
    if (sink !== null && sink !== this.#registeredWith) this.#register(sink);
  }

  /** The checks of `launch`; on success remembers the stream, its handle and the epoch. */
  #check(stream: Stream): void {
    this[LIFETIME].assertAlive(LAUNCH);
    requireInstance(LAUNCH, 'stream', stream, brands.Stream);
    if (stream.device.context !== this.#ctx) {
      throw new InvalidArgumentError(LAUNCH, 'stream', `the stream is of device ${stream.device.ordinal}; the launch is on device ${this.kernel.module.device.ordinal}`);
    }
    this.#assertHeld(LAUNCH);
    const epoch = checkEpoch.value;
    this.#checkedHandle = stream.handleFor(LAUNCH);
    this.#checkedSink = stream[CAPTURE];
    this.#checkedStream = stream;
    this.#checkedEpoch = epoch;
  }

  /**
   * @internal For `LaunchSequence`: the checks `launch` makes before the driver call (this launch,
   * its module and its buffer arguments alive), then the launch fixed once.
   * @throws DisposedError naming `op`.
   */
  callFor(op: string): ln.KernelCall {
    this[LIFETIME].assertAlive(op);
    this.#assertHeld(op);
    return this.#call;
  }

  /**
   * @internal For `LaunchSequence`: this launch was submitted on a stream recording into `sink`;
   * registers what it holds with that capture, once per capture, as `launch` does.
   */
  launchedInto(sink: CaptureSink): void {
    if (sink !== this.#registeredWith) this.#register(sink);
  }

  /** @throws DisposedError naming `op` when the module or a buffer argument is disposed. */
  #assertHeld(op: string): void {
    const held = this.#held;
    for (let i = 0; i < held.length; i++) if (held[i]!.disposed) throw new DisposedError(op, held[i]!.what);
  }

  /** Makes `sink` keep the module and buffer arguments alive as long as its graph. */
  #register(sink: CaptureSink): void {
    const held = this.#held;
    for (let i = 0; i < held.length; i++) sink.retain(held[i]!);
    this.#registeredWith = sink;
  }

  /**
   * Rewrites argument `index` in place; the next launch uses it. Graphs captured earlier keep
   * the value they captured (the driver copied it).
   * @throws InvalidArgumentError for a bad index or a value whose C size differs from the parameter.
   */
  setArg(index: number, value: KernelArg): void {
    const op = 'PreparedLaunch.setArg';
    this[LIFETIME].assertAlive(op);
    requireInt(op, 'index', index, 0, Math.max(0, this.#args.length - 1));
    if (this.#args.length === 0) throw new InvalidArgumentError(op, 'index', 'the kernel takes no arguments');
    const a = normalizeArg(op, index, value);
    const old = this.#args[index]!;
    if (a.size !== old.size) {
      throw new InvalidArgumentError(op, 'value', `argument ${index} is ${old.size} bytes (${old.type}); got ${a.type} (${a.size} bytes)`);
    }
    checkArgSize(op, this.kernel.name, index, a, this.kernel.paramSizes);
    writeArg(this.#packed.view, this.#packed.slotOffset(index), a, (b) => b.ptrFor(op), this.#packed.words);
    if (a.buffer !== old.buffer) {
      if (a.buffer !== null) {
        a.buffer[LIFETIME].retain();
        this.#held.push(a.buffer[LIFETIME]);
      }
      if (old.buffer !== null) {
        const at = this.#held.indexOf(old.buffer[LIFETIME]);
        if (at >= 0) this.#held.splice(at, 1);
        old.buffer[LIFETIME].release();
      }
    }
    this.#args[index] = a;
    this.#registeredWith = null;
    this.#checkedStream = null; // what the launch holds changed: check it again
  }

  /** Frees the argument block and releases the module and buffers. Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
