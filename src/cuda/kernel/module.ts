import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe, requireInstance, requireName } from '../../util/validate.js';
import { module as mod, gate, passGate } from '../../driver/result/index.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure, surfaceCleanupErrors } from '../core/lifetime.js';
import type { Device } from '../device/device.js';
import { Kernel } from './kernel.js';
import { compileCuda, type CompileOptions } from './nvrtc.js';
import { brands, registerBrand } from '../core/brands.js';

/** What a module image is. */
export type ModuleImageKind = 'ptx' | 'cubin' | 'fatbin';

const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];
const FATBIN_MAGIC = 0xba55ed50;

/** Recognises an image by its first bytes: ELF → cubin, fatbin magic → fatbin, else PTX text. */
export function imageKind(image: Uint8Array): ModuleImageKind {
  if (image.length >= 4 && ELF_MAGIC.every((b, i) => image[i] === b)) return 'cubin';
  if (image.length >= 4 && new DataView(image.buffer, image.byteOffset, 4).getUint32(0, true) === FATBIN_MAGIC) {
    return 'fatbin';
  }
  return 'ptx';
}

/** PTX must reach the driver NUL-terminated. */
function nulTerminated(bytes: Uint8Array): Uint8Array {
  if (bytes.length > 0 && bytes[bytes.length - 1] === 0) return bytes;
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/**
 * A loaded CUDA module (`CUmodule`): PTX, cubin or fatbin, or CUDA C++ compiled at run time with
 * NVRTC. `function(name)` gives its kernels. Graphs and prepared launches that use its kernels
 * keep it loaded after `dispose()` until they are done.
 *
 * @example
 * using m = Module.compile(device, `extern "C" __global__ void fill(float *p, float v, int n) {
 *   int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = v; }`);
 * m.function('fill').launch(s, { grid: 4, block: 256, args: [buf, arg.f32(1), arg.i32(1024)] });
 */
export class Module {
  /** The device whose context the module is loaded in. */
  readonly device: Device;
  /** What was loaded. */
  readonly kind: ModuleImageKind;
  /** NVRTC's log for a compiled module (warnings); empty otherwise. */
  readonly compileLog: string;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  readonly #kernels = new Map<string, Kernel>();
  readonly #lowered: ReadonlyMap<string, string>;

  /** @internal Use `Module.load` or `Module.compile`. */
  constructor(
    key: typeof INTERNAL,
    device: Device,
    image: Uint8Array,
    kind: ModuleImageKind,
    log: string,
    lowered: ReadonlyMap<string, string>,
    op: string,
  ) {
    if (key !== INTERNAL) throw privateConstructorError('Module', 'Module.load() or Module.compile()');
    this.device = device;
    this.kind = kind;
    this.compileLog = log;
    this.#lowered = lowered;
    makeCurrent(op, device.context);
    const handle = mod.moduleLoadData(op, kind === 'ptx' ? nulTerminated(image) : image);
    this.#handle = handle;
    const ctx = device.context;
    // cuModuleUnload waits for the GPU: deferred while a JS host call is in flight.
    this[LIFETIME] = new Lifetime(
      `Module 0x${handle.toString(16)} (${kind})`,
      this,
      () => {
        makeCurrent('Module.dispose', ctx);
        keepFailure(mod.moduleUnload('Module.dispose', handle), 'Module.dispose', 'cuModuleUnload');
      },
      { waits: true },
    );
  }

  /** @internal True for a Module this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Module {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Module', Module);
  }

  /**
   * Loads a module image into `device`'s context: PTX text (a string, or bytes), a cubin or a
   * fatbin (bytes). A PTX the JIT cannot compile fails with the JIT's log in the message.
   * Loading waits for the GPU (measured on CUDA 13.0): while a JS host call is in flight it is
   * refused with `HostCallbackError` `ERR_HOST_CALL_PENDING`.
   */
  static load(device: Device, image: string | Uint8Array): Module {
    const op = 'Module.load';
    requireInstance(op, 'device', device, brands.Device);
    let bytes: Uint8Array;
    if (typeof image === 'string') {
      requireName(op, 'image', image);
      bytes = new TextEncoder().encode(image);
    } else if (image instanceof Uint8Array && image.length > 0) {
      bytes = image;
    } else {
      throw new InvalidArgumentError(op, 'image', `image must be PTX text or a non-empty Uint8Array, got ${describe(image)}`);
    }
    surfaceCleanupErrors(op);
    return new Module(INTERNAL, device, bytes, imageKind(bytes), '', new Map(), op);
  }

  /**
   * Compiles CUDA C++ with NVRTC (to a cubin for the device's architecture unless told otherwise)
   * and loads it. Kernels need `extern "C"` for plain names, or list C++ names in `names`.
   * @throws NvrtcError with the compile log; NvrtcError `NVRTC_NOT_LOADED` listing where NVRTC was looked for.
   */
  static compile(device: Device, source: string, options?: CompileOptions): Module {
    const op = 'Module.compile';
    requireInstance(op, 'device', device, brands.Device);
    surfaceCleanupErrors(op);
    // Loading the result waits for the GPU: refuse now rather than after seconds of compiling.
    if (gate.calls !== 0) passGate(op, 'cuModuleLoadDataEx', 'gpu');
    const out = compileCuda(op, device, source, options);
    return new Module(INTERNAL, device, out.image, out.kind, out.log, out.lowered, op);
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /** The `CUmodule` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('Module.handle');
    return this.#handle;
  }

  /**
   * The kernel `name` (a C name, or a C++ name expression given to `compile` in `names`). The
   * same object on every call.
   * @throws CudaError 500 `CUDA_ERROR_NOT_FOUND` when the module has no such kernel.
   */
  function(name: string): Kernel {
    const op = 'Module.function';
    this[LIFETIME].assertAlive(op);
    requireName(op, 'name', name);
    const hit = this.#kernels.get(name);
    if (hit !== undefined) return hit;
    const symbol = this.#lowered.get(name) ?? name;
    const k = new Kernel(INTERNAL, this, symbol, mod.moduleGetFunction(op, this.#handle, symbol));
    this.#kernels.set(name, k);
    return k;
  }

  /** Unloads the module (once no graph or prepared launch uses it). Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
