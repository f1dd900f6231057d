import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { requireInstance } from '../../util/validate.js';
import { launch as ln, launchEx as lx, module as mod } from '../../driver/result/index.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { checkConfig, type LaunchConfig } from './launch-config.js';
import { packScratch } from './packed-args.js';
import { PreparedLaunch } from './prepared-launch.js';
import type { Stream } from '../device/stream.js';
import type { Module } from './module.js';
import type { ArgBuffer } from './arg.js';
import { brands, registerBrand } from '../core/brands.js';

/**
 * A kernel (`CUfunction`) of a loaded module. `launch` for a one-off launch; `prepare` packs the
 * arguments once for the hot path.
 *
 * @example
 * const axpy = module.function('axpy');
 * const run = axpy.prepare({ grid: 64, block: 256, args: [arg.f32(2), x, y, arg.i32(n)] });
 * for (let i = 0; i < 1000; i++) run.launch(s);
 */
export class Kernel {
  /** The module the kernel lives in (kept loaded while the kernel is used). */
  readonly module: Module;
  /** The kernel's name as looked up (the lowered name for C++ name expressions). */
  readonly name: string;
  readonly #handle: bigint;
  #paramSizes: readonly number[] | null | undefined = undefined;

  /** @internal Use `module.function(name)`. */
  constructor(key: typeof INTERNAL, module: Module, name: string, handle: bigint) {
    if (key !== INTERNAL) throw privateConstructorError('Kernel', 'module.function(name)');
    this.module = module;
    this.name = name;
    this.#handle = handle;
  }

  /** @internal True for a Kernel this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Kernel {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Kernel', Kernel);
  }

  /** The `CUfunction` handle. @throws DisposedError once the module is disposed. */
  get handle(): bigint {
    this.module[LIFETIME].assertAlive('Kernel.handle');
    return this.#handle;
  }

  /**
   * The byte size of each parameter, as the driver reports it (`cuFuncGetParamInfo`, CUDA 12.4+),
   * or null when the driver cannot say (also once the module is disposed, unless read before).
   * Launches check arguments against it.
   */
  get paramSizes(): readonly number[] | null {
    if (this.#paramSizes === undefined) {
      const op = 'Kernel.paramSizes';
      // A getter answers after dispose: the driver can no longer be asked.
      if (this.module.disposed) return null;
      this.module[LIFETIME].assertAlive(op);
      const sizes = mod.functionParamSizes(op, this.#handle);
      this.#paramSizes = sizes === null ? null : Object.freeze(sizes);
    }
    return this.#paramSizes;
  }

  /**
   * Launches the kernel once on `stream`. The arguments are packed into a shared block that the
   * driver copies during the call; for repeated launches, `prepare` once and `launch` the result.
   * @throws InvalidArgumentError for a bad configuration, arguments that do not match the
   *   kernel's parameters, or a stream of another device; CudaError from the driver.
   */
  launch(stream: Stream, config: LaunchConfig): void {
    const op = 'Kernel.launch';
    this.module[LIFETIME].assertAlive(op);
    requireInstance(op, 'stream', stream, brands.Stream);
    if (stream.device !== this.module.device) {
      throw new InvalidArgumentError(op, 'stream', `the stream is of device ${stream.device.ordinal}; the kernel is on device ${this.module.device.ordinal}`);
    }
    const c = checkConfig(op, this.name, config, this.paramSizes);
    const h = stream.handleFor(op);
    const ptrOf = (b: ArgBuffer): bigint => b.ptrFor(op);
    const params = packScratch(c.args, ptrOf);
    makeCurrent(op, this.module.device.context);
    if (c.attributes === null) {
      ln.launchKernel(op, this.#handle, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.sharedMem, h, params);
    } else {
      if (c.attributes.event !== null && c.attributes.event.device !== this.module.device) {
        throw new InvalidArgumentError(op, 'attributes.programmaticEvent.event', `the event belongs to ${c.attributes.event.device}; the kernel runs on ${this.module.device}`);
      }
      lx.launchKernelEx(op, this.#handle, c.grid, c.block, c.sharedMem, h, params, c.attributes);
    }
    const sink = stream[CAPTURE];
    if (sink !== null) {
      sink.retain(this.module[LIFETIME]);
      for (const a of c.args) if (a.buffer !== null) sink.retain(a.buffer[LIFETIME]);
      if (c.attributes?.event) sink.retain(c.attributes.event[LIFETIME]);
    }
  }

  /**
   * Packs a launch once: arguments go into memory that stays put, and `launch(stream)` reuses it
   * with no allocation. The prepared launch keeps the module and the argument buffers alive.
   */
  prepare(config: LaunchConfig): PreparedLaunch {
    const op = 'Kernel.prepare';
    this.module[LIFETIME].assertAlive(op);
    const c = checkConfig(op, this.name, config, this.paramSizes);
    if (c.attributes !== null) {
      throw new InvalidArgumentError(op, 'attributes', 'a prepared launch takes no launch attributes (its hot path is cuLaunchKernel); launch with attributes through kernel.launch');
    }
    return new PreparedLaunch(INTERNAL, this, this.#handle, c);
  }

  toString(): string {
    return `Kernel(${this.name})`;
  }
}
