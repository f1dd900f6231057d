/** Validation of a launch configuration: grid and block dimensions, shared memory, arguments. */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireBoolean, requireInstance, requireInt, requireOptions, requirePositiveU32, requireU32 } from '../../util/validate.js';
import type { LaunchAttributeValues } from '../../driver/result/launch-ex.js';
import type { Event } from '../device/event.js';
import { brands } from '../core/brands.js';
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
  /** Launch attributes (`cuLaunchKernelEx`): `kernel.launch` and graph kernel nodes take them. */
  readonly attributes?: LaunchAttributes;
}

/**
 * Launch attributes (`CUlaunchAttribute`). `cluster` and `priority` also become a kernel node's
 * attributes; the programmatic ones are for stream launches (eager, or captured: the driver then
 * records a programmatic edge to the kernel before).
 */
export interface LaunchAttributes {
  /** Thread-block cluster shape (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`; compute capability 9.0+; the grid must be a multiple). */
  readonly cluster?: Dim3;
  /** Priority of this launch (`CU_LAUNCH_ATTRIBUTE_PRIORITY`), in `device.streamPriorityRange()`; a graph node's is used with `useNodePriority`. */
  readonly priority?: number;
  /**
   * Programmatic dependent launch (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`): the
   * kernel may start before the kernel before it in the stream has finished; it must wait for
   * that kernel's results itself (`cudaGridDependencySynchronize()`, PTX `griddepcontrol.wait`).
   */
  readonly programmaticStreamSerialization?: boolean;
  /** `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`: `event` is recorded once every block has triggered (or, with `triggerAtBlockStart`, started). */
  readonly programmaticEvent?: { readonly event: Event; readonly triggerAtBlockStart?: boolean };
}

/** A checked launch configuration. */
export interface CheckedConfig {
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedMem: number;
  readonly args: readonly KernelArgValue[];
  /** The launch attributes, or null for a plain launch. */
  readonly attributes: CheckedAttributes | null;
}

/** Checked attributes: the driver values, and the event a programmatic event names (kept alive by its user). */
export interface CheckedAttributes extends LaunchAttributeValues {
  readonly event: Event | null;
}

/** Parses a `Dim3`. @throws InvalidArgumentError naming `name`. */
export function parseDim3(op: string, name: string, d: unknown): readonly [number, number, number] {
  if (typeof d === 'number') return [requirePositiveU32(op, name, d), 1, 1];
  if (Array.isArray(d) && d.length >= 1 && d.length <= 3) {
    const out: [number, number, number] = [1, 1, 1];
    // An index loop, not forEach: a hole is refused, not taken for 1.
    for (let i = 0; i < d.length; i++) out[i] = requirePositiveU32(op, `${name}[${i}]`, d[i]);
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
  const c = requireOptions<LaunchConfig>(op, config, ['grid', 'block', 'sharedMem', 'args', 'attributes']);
  if (config === undefined) throw new InvalidArgumentError(op, 'config', 'config { grid, block, args } is required');
  const grid = parseDim3(op, 'grid', c.grid);
  const block = parseDim3(op, 'block', c.block);
  const sharedMem = c.sharedMem === undefined ? 0 : requireU32(op, 'sharedMem', c.sharedMem);
  if (!Array.isArray(c.args)) throw new InvalidArgumentError(op, 'args', `args must be an array, got ${describe(c.args)}`);
  // An index loop, not map: a hole in the array is refused as the undefined it reads as.
  const given = c.args as readonly unknown[];
  const args = new Array<KernelArgValue>(given.length);
  for (let i = 0; i < given.length; i++) args[i] = normalizeArg(op, i, given[i]);
  checkArgs(op, kernelName, args, paramSizes);
  return { grid, block, sharedMem, args, attributes: c.attributes === undefined ? null : checkAttributes(op, c.attributes, grid) };
}

/** Checks `attributes`; `grid` is the launch's (a cluster must divide it). */
export function checkAttributes(op: string, attributes: unknown, grid: readonly [number, number, number]): CheckedAttributes {
  const a = requireOptions<LaunchAttributes>(op, attributes, ['cluster', 'priority', 'programmaticStreamSerialization', 'programmaticEvent'], 'attributes');
  const cluster = a.cluster === undefined ? null : parseDim3(op, 'attributes.cluster', a.cluster);
  if (cluster !== null && cluster.some((c, i) => grid[i]! % c !== 0)) {
    throw new InvalidArgumentError(op, 'attributes.cluster', `the grid [${grid.join(', ')}] must be a multiple of the cluster [${cluster.join(', ')}] in every dimension`);
  }
  const priority = a.priority === undefined ? null : requireInt(op, 'attributes.priority', a.priority, -(2 ** 31), 2 ** 31 - 1);
  const pss = a.programmaticStreamSerialization === undefined ? false : requireBoolean(op, 'attributes.programmaticStreamSerialization', a.programmaticStreamSerialization);
  let programmaticEvent: CheckedAttributes['programmaticEvent'] = null;
  let event: Event | null = null;
  if (a.programmaticEvent !== undefined) {
    const pe = requireOptions<{ event: Event; triggerAtBlockStart: boolean }>(op, a.programmaticEvent, ['event', 'triggerAtBlockStart'], 'attributes.programmaticEvent');
    event = requireInstance(op, 'attributes.programmaticEvent.event', pe.event, brands.Event);
    const atStart = pe.triggerAtBlockStart === undefined ? false : requireBoolean(op, 'attributes.programmaticEvent.triggerAtBlockStart', pe.triggerAtBlockStart);
    programmaticEvent = { event: event.handleFor(op), triggerAtBlockStart: atStart };
  }
  return { cluster, priority, programmaticStreamSerialization: pss, programmaticEvent, event };
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
