/**
 * One argument of an exec's kernel node(s) replaced, the others kept (`exec.setKernelArg`): a
 * position or step that changes per launch without a new capture. CUDA takes a node's whole
 * argument list (`cuGraphExecKernelNodeSetParams_v2`), and neither the driver nor a compiled
 * kernel keeps parameter names (PTX calls them `<kernel>_param_<i>`, a cubin records offsets and
 * sizes only), so an argument is named by its index, and the exec keeps the bytes of the others.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt } from '../../util/validate.js';
import { execUpdate as xu } from '../../driver/result/index.js';
import { LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { brands } from '../core/brands.js';
import { KernelArgValue } from '../kernel/arg.js';
import { packScratchBytes } from '../kernel/packed-args.js';
import { argBytes, argSize, keptArgBytes, kernelOf, kernelNodesRunning, nodeText, targetNode, type ExecTarget, type TargetNode } from './exec-setters.js';

/** Where one argument goes: kernel nodes of an exec and the argument's index, checked against a size. */
export interface KernelArgSite {
  readonly nodes: readonly TargetNode[];
  readonly index: number;
  /** The argument's size in bytes: the values written here must have it. */
  readonly size: number;
}

/** The typed value of `value` (a DeviceBuffer stands for its address). @throws InvalidArgumentError otherwise. */
export function kernelArgValue(op: string, value: unknown): KernelArgValue {
  if (KernelArgValue.is(value)) return value;
  if (brands.DeviceBuffer.is(value)) return new KernelArgValue('ptr', 0n, value);
  const hint = typeof value === 'number' || typeof value === 'bigint' ? ': plain numbers are refused because the C type must be explicit (arg.i32(n), arg.f32(x), …)' : '';
  throw new InvalidArgumentError(op, 'value', `value must be a DeviceBuffer or an arg.*() value, got ${describe(value)}${hint}`);
}

/**
 * The nodes `node` names (a kernel name: every node running it; an index or CudaNode: that node,
 * which must be a kernel node) and argument `index` of each, checked: the index exists, the
 * exec knows the node's arguments, and the argument is `size` bytes.
 * @throws InvalidArgumentError naming the node for each refusal.
 */
export function kernelArgSite(op: string, t: ExecTarget, node: unknown, index: unknown, size: number): KernelArgSite {
  const nodes = typeof node === 'string' ? kernelNodesRunning(op, t, node) : [targetNode(op, t, node, ['kernel'])];
  const i = requireInt(op, 'index', index, 0, Number.MAX_SAFE_INTEGER);
  for (const n of nodes) {
    const k = kernelOf(op, t, n);
    if (k.args === null) {
      throw new InvalidArgumentError(
        op,
        'node',
        `${nodeText(op, t, n)} runs '${k.name}', whose arguments this exec does not know (the driver cannot say the kernel's parameters, cuFuncGetParamInfo needs CUDA 12.4, or the node takes them through 'extra'); give them all with setKernelArgs`,
      );
    }
    if (i >= k.args.length) {
      throw new InvalidArgumentError(op, 'index', `${nodeText(op, t, n)} runs '${k.name}', which takes ${k.args.length} argument${k.args.length === 1 ? '' : 's'}; there is no argument ${i}`);
    }
    const want = argSize(k.args[i]!);
    if (want !== size) throw new InvalidArgumentError(op, 'value', `argument ${i} of '${k.name}' (${nodeText(op, t, n)}) is ${want} bytes; the value is ${size}`);
  }
  return { nodes, index: i, size };
}

/**
 * Writes `value` as the site's argument in each of its nodes, keeping the other arguments: later
 * launches run it, launches already queued keep the old value. A buffer value is held by the exec.
 * @throws InvalidArgumentError for a value of another size; DisposedError for a disposed buffer; CudaError from the driver.
 */
export function setKernelArgAt(op: string, t: ExecTarget, site: KernelArgSite, value: KernelArgValue): void {
  if (value.size !== site.size) throw new InvalidArgumentError(op, 'value', `the argument is ${site.size} bytes; the value (${value}) is ${value.size}`);
  const kernels = site.nodes.map((n) => {
    const k = kernelOf(op, t, n);
    // A site is kept between calls (a cache's scalars): a node given another function since is refused, not written.
    const now = k.args?.[site.index];
    if (now === undefined || argSize(now) !== site.size) {
      throw new InvalidArgumentError(op, 'node', `${nodeText(op, t, n)} runs '${k.name}' now, whose argument ${site.index} is not the ${site.size}-byte argument this site was made for`);
    }
    return k;
  });
  const bytes = argBytes(op, value);
  // Held first: a node updated before a later one failed already uses the buffer.
  if (value.buffer !== null) t.holdOne(value.buffer[LIFETIME]);
  makeCurrent(op, t.template.device.context);
  site.nodes.forEach((n, i) => {
    const k = kernels[i]!;
    const args = k.args!.map((a, j) => (j === site.index ? bytes : keptArgBytes(a)));
    xu.setKernelArgs(op, t.handle, n.handle, k.params, k.words, packScratchBytes(args));
    k.args = args;
  });
}

/** `exec.setKernelArg`: checks, then writes; returns the number of nodes changed. */
export function setKernelArg(op: string, t: ExecTarget, node: unknown, index: unknown, value: unknown): number {
  const v = kernelArgValue(op, value);
  const site = kernelArgSite(op, t, node, index, v.size);
  setKernelArgAt(op, t, site, v);
  return site.nodes.length;
}
