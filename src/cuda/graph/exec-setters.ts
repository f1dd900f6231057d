/**
 * Updating one node of a `GraphExec` in place (`exec.set…NodeParams`, `exec.setKernelArgs`):
 * the node is named by its `CudaNode` or its index in the template's `nodes()`, its kind is
 * checked, the parameters are checked as for adding the node (node-params.ts), and the rules the
 * driver applies to each kind are refused here first, naming the node and the rule. Launches
 * already queued keep the old parameters; the template graph is not changed.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt } from '../../util/validate.js';
import { graph as gr, graphBuild as gb, execUpdate as xu, module as mod, host } from '../../driver/result/index.js';
import { CU_GRAPH_NODE_TYPE, KERNEL_NODE_PARAMS as K } from '../../driver/layouts.js';
import { LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import type { Lifetime } from '../core/lifetime.js';
import { brands } from '../core/brands.js';
import { HostFunction, hostTrampoline, isHostTrampoline } from '../host/host-function.js';
import { normalizeArg, writeArg, type ArgBuffer, type KernelArg, type KernelArgValue } from '../kernel/arg.js';
import { checkArgs, type LaunchConfig } from '../kernel/launch-config.js';
import type { Kernel } from '../kernel/kernel.js';
import { packScratch } from '../kernel/packed-args.js';
import { CudaNode } from './cuda-node.js';
import { kernelFunction, resolveCopy, resolveFill, resolveKernel, type KernelFunction, type MemsetNodeParams } from './node-params.js';
import { checkChild, checkEvent } from './explicit-nodes.js';
import { jsHostFunctionIdsOf } from './read-back.js';
import type { GraphNodeType } from './node-info.js';
import type { Graph } from './graph.js';

/** What a setter needs of the exec: its handle, its template, and a way to hold resources. */
export interface ExecTarget {
  readonly handle: bigint;
  /** The graph the exec was instantiated from: per-node setters name its nodes. */
  readonly template: Graph;
  /** `template.structureVersion` when the exec was instantiated: its nodes are the exec's while it is the same. */
  readonly templateVersion: number;
  /** The graph whose parameters the exec runs now (`template`, or the graph of the last `update`). */
  readonly current: Graph;
  /** Holds `lives` for the exec's life (launches made after the update use them). */
  hold(lives: readonly Lifetime[]): void;
  /** `hold` of one. */
  holdOne(life: Lifetime): void;
  /** A host function the exec made for a plain callback (disposed with it). */
  own(hf: HostFunction): void;
  /** The host function (id) node `node` now calls, or the ids a child graph node now calls: the exec recounts its host calls. */
  hostCallsChanged(node: bigint, ids: readonly number[]): void;
  /** What the exec's kernel nodes run now, by node (filled on first use; kept in step by `setKernelNodeParams`). */
  readonly kernels: Map<bigint, ExecKernel>;
  /**
   * Counts the times `kernels` was emptied (an update of the whole exec: its nodes run another
   * graph's parameters): a `TargetNode` keeps its kernel only for the count it was looked up at.
   */
  kernelsEpoch: number;
  /**
   * The template's nodes a setter named by their `CudaNode`, resolved once: valid while the
   * template's node set is the one the exec was made from (`sameNodes` refuses every setter after
   * a change, a removal included), so a setter called in a loop makes no object or BigInt a call.
   */
  readonly named: Map<CudaNode, TargetNode>;
}

/**
 * A kernel node of an exec as it runs now: its function and the launch bytes
 * (`CUDA_KERNEL_NODE_PARAMS_v2`). One object a node for the exec's life: `setKernelNodeParams`
 * rewrites its fields in place, so a node a setter resolved once keeps it (`TargetNode.kernel`).
 */
export interface ExecKernel {
  name: string;
  func: bigint;
  paramSizes: readonly number[] | null;
  /** The node's parameters; `setKernelArgs` rewrites only the argument pointer. */
  params: Uint8Array;
  /** `params` as 64-bit words (`host.u64Words`), for the argument pointer a `setKernelArgs` rewrites. */
  words: BigUint64Array;
  /**
   * Each argument the node runs with now, as its bytes or as the value `setKernelArgs` gave (turned
   * into bytes only if `setKernelArg` needs them, to keep that call as cheap as it was), kept
   * because the exec's arguments cannot be read back (the driver returns the template's): what
   * `setKernelArg` keeps when it replaces one. Null when unknown: the driver cannot say the
   * kernel's parameters, or the node takes its arguments through `extra`.
   */
  args: ReadonlyArray<Uint8Array | KernelArgValue> | null;
}

/** A node of the template named by its `CudaNode` or index, with its kind. */
export interface TargetNode {
  readonly handle: bigint;
  /** Its position in the template's `nodes()`, or -1 when not read yet (`indexIn` reads it for messages). */
  readonly index: number;
  readonly type: GraphNodeType;
  /** For a kernel node: its `ExecKernel` once `kernelOf` looked it up (null before), and `kernelsEpoch` then. */
  kernel: ExecKernel | null;
  kernelEpoch: number;
}

/** The node's position in the template's `nodes()`. */
export function nodeIndex(op: string, t: ExecTarget, n: TargetNode): number {
  return indexIn(op, t, n);
}

function indexIn(op: string, t: ExecTarget, n: TargetNode): number {
  return n.index >= 0 ? n.index : gr.graphNodes(op, t.template.handleUnchecked()).indexOf(n.handle);
}

/** `node #3 (memcpy)`: a node for messages. */
export function nodeText(op: string, t: ExecTarget, n: TargetNode): string {
  return `node #${indexIn(op, t, n)} (${n.type})`;
}

/**
 * Refuses naming a node once the template's nodes changed after the exec was made: a node added
 * since is not the exec's, a node removed is gone from the template but not from the exec, and
 * indices and kernel names are counted over the template's nodes as they are now.
 * @throws InvalidArgumentError
 */
function sameNodes(op: string, t: ExecTarget): void {
  if (t.template.structureVersion === t.templateVersion) return;
  throw new InvalidArgumentError(
    op,
    'node',
    'nodes were added to or removed from the graph since this exec was instantiated from it, so its nodes no longer name the exec\'s; instantiate the graph again (or update an exec of its new shape)',
  );
}

/**
 * Resolves `node` (a CudaNode of the template, or its index) and checks its kind is one of `kinds`
 * (null: any). A CudaNode costs no driver call: its handle and kind are known.
 */
export function targetNode(op: string, t: ExecTarget, node: unknown, kinds: readonly GraphNodeType[] | null): TargetNode {
  sameNodes(op, t);
  let n: TargetNode | undefined;
  if (CudaNode.is(node)) {
    n = t.named.get(node);
    if (n !== undefined) return kinds === null || kinds.includes(n.type) ? n : wrongKind(op, t, n, kinds);
    if (node.graph !== t.template) {
      throw new InvalidArgumentError(op, 'node', `node is ${node} of another graph; name a node of the graph the exec was instantiated from (or its index)`);
    }
    // The exec holds its template: its nodes stay valid while the exec lives, disposed graph or not.
    n = { handle: node.handleWhileHeld(op), index: -1, type: node.type, kernel: null, kernelEpoch: -1 };
    t.named.set(node, n);
  } else if (typeof node === 'number') {
    const handles = gr.graphNodes(op, t.template.handleUnchecked());
    if (handles.length === 0) throw new InvalidArgumentError(op, 'node', 'the graph the exec was instantiated from has no nodes');
    const index = requireInt(op, 'node', node, 0, handles.length - 1);
    const handle = handles[index]!;
    n = { handle, index, type: CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, handle)] ?? 'unknown', kernel: null, kernelEpoch: -1 };
  } else {
    throw new InvalidArgumentError(op, 'node', `node must be a CudaNode or a node index, got ${describe(node)}`);
  }
  return kinds === null || kinds.includes(n.type) ? n : wrongKind(op, t, n, kinds);
}

function wrongKind(op: string, t: ExecTarget, n: TargetNode, kinds: readonly GraphNodeType[]): never {
  throw new InvalidArgumentError(op, 'node', `node #${indexIn(op, t, n)} is a '${n.type}' node, not a ${kinds.join(' or ')} node`);
}

const KERNEL: readonly GraphNodeType[] = ['kernel'];

/**
 * `execKernel` of a resolved node, kept on it (a node a setter named by its `CudaNode` is resolved
 * once, a kernel argument site is kept by its user) until the exec's kernels are read again.
 */
export function kernelOf(op: string, t: ExecTarget, n: TargetNode): ExecKernel {
  if (n.kernel !== null && n.kernelEpoch === t.kernelsEpoch) return n.kernel;
  n.kernel = execKernel(op, t, n.handle);
  n.kernelEpoch = t.kernelsEpoch;
  return n.kernel;
}

/** What kernel node `handle` runs now (read from the template the first time). */
export function execKernel(op: string, t: ExecTarget, handle: bigint): ExecKernel {
  let k = t.kernels.get(handle);
  if (k === undefined) {
    // After `update(graph)` the exec runs that graph's parameters: its node in the same position
    // (the driver pairs the nodes of graphs of one topology in the order they were added).
    const from = t.current === t.template ? handle : gr.graphNodes(op, t.current.handleUnchecked())[gr.graphNodes(op, t.template.handleUnchecked()).indexOf(handle)] ?? handle;
    const params = gr.kernelNodeParamBytes(op, from);
    const p = gr.kernelNodeParams(op, from);
    // Name the function once: a CUfunction alone (the driver fills in its kernel and context too).
    if (p.func !== 0n) params.fill(0, K.kern, K.ctx + 8);
    const library = p.func === 0n;
    const func = library ? p.kern : p.func;
    const words = host.u64Words(params);
    const paramSizes = mod.functionParamSizes(op, func);
    // Read now: the driver's copy of the values is valid only while the node is unchanged.
    k = { name: safeName(op, func, library), func, paramSizes, params, words, args: argsAt(words[K.kernelParams / 8]!, paramSizes) };
    t.kernels.set(handle, k);
  }
  return k;
}

/** The argument values a `kernelParams` array points at (null when the sizes are unknown, or there is no array but there are parameters). */
function argsAt(kernelParams: bigint, sizes: readonly number[] | null): Uint8Array[] | null {
  if (sizes === null) return null;
  if (kernelParams === 0n) return sizes.length === 0 ? [] : null;
  return host.readKernelArgs(kernelParams, sizes);
}

/** The bytes of a new argument as the driver receives it (a buffer's must not be disposed). */
export function argBytes(op: string, a: KernelArgValue): Uint8Array {
  return bytesOf(a, (b) => b.ptrFor(op));
}

/**
 * The bytes of an argument `ExecKernel.args` keeps. A buffer in it is held by the exec, so its
 * address stands even after its owner disposed it.
 */
export function keptArgBytes(a: Uint8Array | KernelArgValue): Uint8Array {
  return a instanceof Uint8Array ? a : bytesOf(a, (b) => b.ptrHeld());
}

function bytesOf(a: KernelArgValue, ptrOf: (b: ArgBuffer) => bigint): Uint8Array {
  const bytes = new Uint8Array(a.size);
  writeArg(new DataView(bytes.buffer), 0, a, ptrOf);
  return bytes;
}

/** The size in bytes of one argument as `ExecKernel.args` keeps it. */
export function argSize(a: Uint8Array | KernelArgValue): number {
  return a instanceof Uint8Array ? a.length : a.size;
}

/** `exec.setKernelNodeParams`: a new function (same device), launch shape and arguments. */
export function setKernelParams(t: ExecTarget, node: unknown, params: unknown): void {
  const op = 'GraphExec.setKernelNodeParams';
  const n = targetNode(op, t, node, ['kernel']);
  if (typeof params !== 'object' || params === null) throw new InvalidArgumentError(op, 'params', `params must be { kernel?, grid, block, sharedMem?, args }, got ${describe(params)}`);
  const { kernel, ...config } = params as LaunchConfig & { kernel?: Kernel };
  let fn: KernelFunction;
  if (kernel !== undefined) {
    if (!brands.Kernel.is(kernel)) {
      throw new InvalidArgumentError(op, 'params.kernel', `kernel must be a Kernel, got ${describe(kernel)}`);
    }
    kernel.module[LIFETIME].assertAlive(op);
    fn = kernelFunction(kernel);
  } else {
    // Keep the function the node runs now.
    const now = kernelOf(op, t, n);
    fn = { name: now.name, func: now.func, paramSizes: now.paramSizes, device: t.template.device, keep: null };
  }
  const k = resolveKernel(op, fn, config, t.template.device, false);
  if (k.attributes !== null) {
    throw new InvalidArgumentError(op, 'params.attributes', `${nodeText(op, t, n)}: an exec's kernel node keeps the attributes it was instantiated with; set them on the graph's node (addKernelNode) and instantiate again`);
  }
  const bytes = gb.encodeKernelParams(k.input);
  makeCurrent(op, t.template.device.context);
  xu.setKernelBytes(op, t.handle, n.handle, bytes);
  t.hold(k.holds);
  const args = argsAt(k.input.kernelParams, fn.paramSizes);
  const next: ExecKernel = { name: fn.name, func: fn.func, paramSizes: fn.paramSizes, params: bytes, words: host.u64Words(bytes), args };
  const known = t.kernels.get(n.handle);
  if (known === undefined) t.kernels.set(n.handle, next);
  else Object.assign(known, next);
}

function safeName(op: string, func: bigint, library: boolean): string {
  try {
    return mod.functionName(op, func, library);
  } catch {
    return 'kernel';
  }
}

/**
 * `exec.setKernelArgs`: new arguments for a kernel node, keeping its function and shape. `node` is
 * the kernel's name (when one node runs it), a CudaNode or an index.
 */
export function setKernelArgs(op: string, t: ExecTarget, node: unknown, args: unknown): void {
  if (!Array.isArray(args)) throw new InvalidArgumentError(op, 'args', `args must be an array, got ${describe(args)}`);
  const values: KernelArgValue[] = new Array<KernelArgValue>(args.length);
  for (let i = 0; i < args.length; i++) values[i] = normalizeArg(op, i, args[i] as KernelArg);
  const n = typeof node === 'string' ? kernelNamed(op, t, node) : targetNode(op, t, node, KERNEL);
  const k = kernelOf(op, t, n);
  checkArgs(op, k.name, values, k.paramSizes);
  const address = packScratch(values, (b) => b.ptrFor(op));
  makeCurrent(op, t.template.device.context);
  xu.setKernelArgs(op, t.handle, n.handle, k.params, k.words, address);
  for (const v of values) if (v.buffer !== null) t.holdOne(v.buffer[LIFETIME]);
  k.args = values;
}

/** The kernel node running `name` now (the function a setter gave it, else the template's). */
function kernelNamed(op: string, t: ExecTarget, name: string): TargetNode {
  const hits = kernelNodesRunning(op, t, name);
  if (hits.length === 1) return hits[0]!;
  throw new InvalidArgumentError(op, 'node', `${hits.length} kernel nodes run '${name}' (indices ${hits.map((h) => h.index).join(', ')}); name one by its index`);
}

/**
 * Every kernel node running `name` now (the function a setter gave it, else the template's), in
 * the template's node order.
 * @throws InvalidArgumentError, listing the graph's kernels, when none does.
 */
export function kernelNodesRunning(op: string, t: ExecTarget, name: string): TargetNode[] {
  sameNodes(op, t);
  const hits: TargetNode[] = [];
  const names = new Set<string>();
  gr.graphNodes(op, t.template.handleUnchecked()).forEach((h, index) => {
    if (CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)] !== 'kernel') return;
    const k = execKernel(op, t, h);
    names.add(k.name);
    if (k.name === name) hits.push({ handle: h, index, type: 'kernel', kernel: k, kernelEpoch: t.kernelsEpoch });
  });
  if (hits.length === 0) throw new InvalidArgumentError(op, 'node', `no kernel node runs '${name}' (kernels in the graph: ${[...names].join(', ') || 'none'})`);
  return hits;
}

/** `exec.setMemcpyNodeParams`: CUDA updates 1-D copies only, between memory of the same contexts. */
export function setCopyParams(t: ExecTarget, node: unknown, params: unknown): void {
  const op = 'GraphExec.setMemcpyNodeParams';
  const n = targetNode(op, t, node, ['memcpy']);
  if (typeof params === 'object' && params !== null && 'width' in params) {
    throw new InvalidArgumentError(op, 'params', `${nodeText(op, t, n)}: CUDA updates 1-D copies only (cuGraphExecMemcpyNodeSetParams); give { dst, src, byteLength }`);
  }
  const c = resolveCopy(op, params, t.template.device);
  const was = gr.memcpyNodeParams(op, n.handle);
  if (was.height > 1 || was.depth > 1) {
    throw new InvalidArgumentError(op, 'node', `${nodeText(op, t, n)} is a ${was.depth > 1 ? '3-D' : '2-D'} copy; CUDA updates 1-D copies only (re-instantiate, or update the exec from a new graph)`);
  }
  const side = (type: number): 'host' | 'device' => (type === 1 ? 'host' : 'device');
  const wasSrc = side(was.srcMemoryType);
  const wasDst = side(was.dstMemoryType);
  const nowSrc = c.input.src.host ? 'host' : 'device';
  const nowDst = c.input.dst.host ? 'host' : 'device';
  if (was.srcMemoryType !== 4 && was.dstMemoryType !== 4 && (wasSrc !== nowSrc || wasDst !== nowDst)) {
    throw new InvalidArgumentError(op, 'params', `${nodeText(op, t, n)} copies ${wasSrc} → ${wasDst} memory; the update copies ${nowSrc} → ${nowDst} (CUDA keeps a copy node's memory kinds and contexts)`);
  }
  makeCurrent(op, t.template.device.context);
  xu.setCopy(op, t.handle, n.handle, c.input, t.template.device.context);
  t.hold(c.holds);
}

/** `exec.setMemsetNodeParams`: CUDA keeps a 2-D fill's shape and a 1-D fill's single row. */
export function setFillParams(t: ExecTarget, node: unknown, params: unknown): void {
  const op = 'GraphExec.setMemsetNodeParams';
  const n = targetNode(op, t, node, ['memset']);
  const f = resolveFill(op, params as MemsetNodeParams, t.template.device);
  const was = gr.memsetNodeParams(op, n.handle);
  const wasRows = Math.max(1, was.height);
  if (wasRows > 1 && (f.input.height !== wasRows || f.input.width !== was.width || f.input.elementSize !== was.elementSize || f.input.pitch !== was.pitch)) {
    throw new InvalidArgumentError(
      op,
      'params',
      `${nodeText(op, t, n)} is a 2-D fill of ${wasRows} rows of ${was.width} × ${was.elementSize}-byte elements, ${was.pitch} bytes apart; CUDA refuses any change of a 2-D fill's shape`,
    );
  }
  if (wasRows === 1 && f.input.height > 1) throw new InvalidArgumentError(op, 'params', `${nodeText(op, t, n)} is a 1-D fill; CUDA refuses changing its height (rows)`);
  makeCurrent(op, t.template.device.context);
  xu.setFill(op, t.handle, n.handle, f.input, t.template.device.context);
  t.hold(f.holds);
}

/** `exec.setHostNodeParams`: a plain function becomes a HostFunction the exec owns. */
export function setHostParams(t: ExecTarget, node: unknown, fn: unknown): void {
  const op = 'GraphExec.setHostNodeParams';
  const n = targetNode(op, t, node, ['hostCallback']);
  let hf: HostFunction;
  let made = false;
  if (brands.HostFunction.is(fn)) {
    fn[LIFETIME].assertAlive(op);
    hf = fn;
  } else if (typeof fn === 'function') {
    hf = HostFunction.create(fn as () => void);
    made = true;
  } else throw new InvalidArgumentError(op, 'fn', `fn must be a function or a HostFunction, got ${describe(fn)}`);
  try {
    makeCurrent(op, t.template.device.context);
    xu.setHost(op, t.handle, n.handle, hostTrampoline(), BigInt(hf.id));
  } catch (e) {
    if (made) hf.dispose();
    throw e;
  }
  t.hold([hf[LIFETIME]]);
  if (made) t.own(hf);
  t.hostCallsChanged(n.handle, [hf.id]);
}

/** `exec.setChildGraphNodeParams`: `child` must have the node's child graph's topology (same kinds in the same order, same edges). */
export function setChildParams(t: ExecTarget, node: unknown, child: unknown): void {
  const op = 'GraphExec.setChildGraphNodeParams';
  const n = targetNode(op, t, node, ['graph']);
  const c = checkChild(op, child, t.template);
  const was = gr.childGraphNodeGraph(op, n.handle);
  const kinds = (g: bigint): string => gr.graphNodes(op, g).map((h) => gr.graphNodeType(op, h)).join(',');
  const wasKinds = kinds(was);
  const nowKinds = kinds(c.handle);
  const wasEdges = gr.graphEdges(op, was).length;
  const nowEdges = gr.graphEdges(op, c.handle).length;
  if (wasKinds !== nowKinds || wasEdges !== nowEdges) {
    const count = (s: string): number => (s === '' ? 0 : s.split(',').length);
    throw new InvalidArgumentError(
      op,
      'child',
      `${nodeText(op, t, n)} runs a graph of ${count(wasKinds)} nodes and ${wasEdges} edges; the new child has ${count(nowKinds)} nodes and ${nowEdges} edges${
        count(wasKinds) === count(nowKinds) && wasEdges === nowEdges ? ' but other node kinds or order' : ''
      } (CUDA needs the same topology and node order)`,
    );
  }
  makeCurrent(op, t.template.device.context);
  xu.setChildGraph(op, t.handle, n.handle, c.handle);
  t.hold([c[LIFETIME]]);
  t.hostCallsChanged(n.handle, jsHostFunctionIdsOf(op, c.handle, 2));
}

/** `exec.setEventRecordNodeEvent` / `exec.setEventWaitNodeEvent`. */
export function setEvent(t: ExecTarget, record: boolean, node: unknown, event: unknown): void {
  const op = record ? 'GraphExec.setEventRecordNodeEvent' : 'GraphExec.setEventWaitNodeEvent';
  const n = targetNode(op, t, node, [record ? 'eventRecord' : 'waitEvent']);
  const e = checkEvent(op, event, t.template);
  makeCurrent(op, t.template.device.context);
  (record ? xu.setRecordEvent : xu.setWaitEvent)(op, t.handle, n.handle, e.handleFor(op));
  t.hold([e[LIFETIME]]);
}

/** Node kinds whose host calls the exec counts: the ids each top-level host or child node of `graph` calls. */
export function hostIdsByNode(op: string, graph: bigint): Map<bigint, number[]> {
  const out = new Map<bigint, number[]>();
  for (const h of gr.graphNodes(op, graph)) {
    const type = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)];
    if (type === 'hostCallback') {
      const p = gb.hostNodeParams(op, h);
      if (isHostTrampoline(p.fn)) out.set(h, [Number(p.userData)]);
    } else if (type === 'graph') {
      out.set(h, jsHostFunctionIdsOf(op, gr.childGraphNodeGraph(op, h), 2));
    }
  }
  return out;
}
