/** Validation of a launch configuration: grid and block dimensions, shared memory, arguments. */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireOptions, requirePositiveU32, requireU32 } from '../../util/validate.js';
import { normalizeArg, type KernelArg, type KernelArgValue } from './arg.js';

/** Grid or block dimensions: `n`, `[x]`, `[x, y]` or `[x, y, z]` (missing ones are 1). */
export type Dim3 = number | readonly [number] | readonly [number, number] | readonly [number, number, number];

/** How to launch a kernel. */
export interface LaunchConfig {
  /** Blocks in the grid. */
  readonly grid: Dim3;
  /** Threads per block. */
  readonly block: Dim3;
  /** Dynamic shared memory per block, in bytes. Default 0. */
  readonly sharedMem?: number;
  /** One argument per kernel parameter, in order. */
  readonly args: readonly KernelArg[];
}

/** A checked launch configuration. */
export interface CheckedConfig {
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedMem: number;
  readonly args: readonly KernelArgValue[];
}

/** Parses a `Dim3`. @throws InvalidArgumentError naming `name`. */
export function parseDim3(op: string, name: string, d: unknown): readonly [number, number, number] {
  if (typeof d === 'number') return [requirePositiveU32(op, name, d), 1, 1];
  if (Array.isArray(d) && d.length >= 1 && d.length <= 3) {
    const out: [number, number, number] = [1, 1, 1];
    d.forEach((v, i) => (out[i] = requirePositiveU32(op, `${name}[${i}]`, v)));
    return out;
  }
  throw new InvalidArgumentError(op, name, `${name} must be a positive integer or an array of 1 to 3 of them, got ${describe(d)}`);
}

/**
 * Checks a launch configuration against the kernel's parameter sizes when the driver reports them
 * (`cuFuncGetParamInfo`): a wrong count or a 4-byte value for an 8-byte parameter is refused
 * before the GPU reads garbage.
 */
export function checkConfig(
  op: string,
  kernelName: string,
  config: unknown,
  paramSizes: readonly number[] | null,
): CheckedConfig {
  const c = requireOptions<LaunchConfig>(op, config, ['grid', 'block', 'sharedMem', 'args']);
  if (config === undefined) throw new InvalidArgumentError(op, 'config', 'config { grid, block, args } is required');
  const grid = parseDim3(op, 'grid', c.grid);
  const block = parseDim3(op, 'block', c.block);
  const sharedMem = c.sharedMem === undefined ? 0 : requireU32(op, 'sharedMem', c.sharedMem);
  if (!Array.isArray(c.args)) throw new InvalidArgumentError(op, 'args', `args must be an array, got ${describe(c.args)}`);
  const args = c.args.map((a, i) => normalizeArg(op, i, a));
  checkArgs(op, kernelName, args, paramSizes);
  return { grid, block, sharedMem, args };
}

/**
 * Checks arguments against the kernel's parameter sizes (when the driver reports them): the
 * count, then each size.
 * @throws InvalidArgumentError naming the mismatch.
 */
export function checkArgs(op: string, kernelName: string, args: readonly KernelArgValue[], paramSizes: readonly number[] | null): void {
  if (paramSizes === null) return;
  if (args.length !== paramSizes.length) {
    throw new InvalidArgumentError(
      op,
      'args',
      `kernel '${kernelName}' takes ${paramSizes.length} parameter(s) (sizes ${paramSizes.join(', ') || 'none'}), got ${args.length} argument(s)`,
    );
  }
  args.forEach((a, i) => checkArgSize(op, kernelName, i, a, paramSizes));
}

/** @throws InvalidArgumentError when `a`'s C size is not the size of parameter `i`. */
export function checkArgSize(op: string, kernelName: string, i: number, a: KernelArgValue, paramSizes: readonly number[] | null): void {
  if (paramSizes === null) return;
  const want = paramSizes[i];
  if (want !== undefined && want !== a.size) {
    throw new InvalidArgumentError(
      op,
      `args[${i}]`,
      `args[${i}] is ${a.type} (${a.size} bytes) but parameter ${i} of '${kernelName}' is ${want} bytes`,
    );
  }
}
