/**
 * Run-time compilation of CUDA C++ with NVRTC, loaded lazily like the driver (from the toolkit,
 * pip's NVIDIA wheels, or `$NVRTC_PATH`).
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireName, requireOptions, requireOneOf } from '../../util/validate.js';
import { nvrtc as nv } from '../../driver/result/index.js';
import type { Device } from '../device/device.js';

/** Options of `Module.compile` / `compileCuda`. */
export interface CompileOptions {
  /** The program's name in messages and `#line` directives. Default `kernel.cu`. */
  readonly name?: string;
  /** NVRTC options, e.g. `['-O3', '--use_fast_math']`. An `-arch`/`--gpu-architecture` here wins over the default. */
  readonly options?: readonly string[];
  /**
   * C++ name expressions to look up after compilation (`'axpy<float>'`, `'ns::f'`), so
   * `module.function(expr)` finds templated or namespaced kernels without `extern "C"`.
   */
  readonly names?: readonly string[];
  /** `cubin` (default: a binary for the device's exact architecture) or `ptx` (JIT-compiled at load). */
  readonly output?: 'cubin' | 'ptx';
}

/** What `compileCuda` returns. */
export interface CompiledCuda {
  readonly image: Uint8Array;
  readonly kind: 'ptx' | 'cubin';
  readonly log: string;
  readonly lowered: ReadonlyMap<string, string>;
}

/** NVRTC's version. @throws NvrtcError `NVRTC_NOT_LOADED` listing every path tried. */
export function nvrtcVersion(): { major: number; minor: number } {
  return nv.nvrtcVersion('nvrtcVersion');
}

/**
 * Compiles CUDA C++ for `device` (by default to a cubin for its compute capability).
 * @throws NvrtcError with the compiler log when the source does not compile.
 */
export function compileCuda(op: string, device: Device, source: unknown, options?: CompileOptions): CompiledCuda {
  requireName(op, 'source', source);
  const o = requireOptions<CompileOptions>(op, options, ['name', 'options', 'names', 'output']);
  const name = o.name === undefined ? 'kernel.cu' : requireName(op, 'name', o.name);
  const userOptions = o.options ?? [];
  if (!Array.isArray(userOptions) || userOptions.some((x) => typeof x !== 'string')) {
    throw new InvalidArgumentError(op, 'options', `options must be an array of strings, got ${describe(userOptions)}`);
  }
  const names = o.names ?? [];
  if (!Array.isArray(names) || names.some((x) => typeof x !== 'string' || x.length === 0)) {
    throw new InvalidArgumentError(op, 'names', `names must be an array of non-empty strings, got ${describe(names)}`);
  }
  const output = o.output === undefined ? 'cubin' : requireOneOf(op, 'output', o.output, ['cubin', 'ptx'] as const);
  const archGiven = userOptions.find((x) => /^(-arch|--gpu-architecture)(=|$)/.test(x));
  const { major, minor } = device.computeCapability;
  const opts = [...userOptions];
  let wantCubin = output === 'cubin';
  if (archGiven === undefined) {
    opts.push(`--gpu-architecture=${wantCubin ? 'sm' : 'compute'}_${major}${minor}`);
  } else {
    // A virtual architecture (compute_XX) yields PTX only.
    wantCubin = wantCubin && /sm_\d+/.test(archGiven + (userOptions[userOptions.indexOf(archGiven) + 1] ?? ''));
  }
  return nv.nvrtcCompile(op, source as string, name, opts, names, wantCubin);
}
