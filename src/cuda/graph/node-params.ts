/**
 * The parameters of explicit graph nodes as users write them (buffers, offsets, typed kernel
 * arguments), checked and turned into what the driver takes. One place serves both adding a node
 * (`graph.add…Node`) and updating one in an exec (`exec.set…NodeParams`), so the two always agree.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt, requireOptions } from '../../util/validate.js';
import type { graphBuild as gb } from '../../driver/result/index.js';
import { LIFETIME } from '../core/internal.js';
import type { Lifetime } from '../core/lifetime.js';
import type { Device } from '../device/device.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import type { Kernel } from '../kernel/kernel.js';
import { checkConfig, type CheckedAttributes, type CheckedConfig, type LaunchConfig } from '../kernel/launch-config.js';
import { packArgs, packScratch, type PackedArgs } from '../kernel/packed-args.js';
import { brands } from '../core/brands.js';
import { CudaNode } from './cuda-node.js';

/** Memory a copy or fill node reads or writes: a device buffer, pinned host memory, or an allocation node's graph memory. */
export type NodeMemory = DeviceBuffer | PinnedHostBuffer | CudaNode;

/** A 1-D copy of `byteLength` bytes (every direction; device buffers of two devices make a peer copy). */
export interface MemcpyNodeParams {
  readonly dst: NodeMemory;
  readonly src: NodeMemory;
  readonly byteLength: number;
  /** Default 0. */
  readonly dstOffset?: number;
  /** Default 0. */
  readonly srcOffset?: number;
}

/** One side of a pitched copy: its memory, where the copy starts, and its row layout. */
export interface PitchedMemory {
  readonly memory: NodeMemory;
  /** Byte offset of the first row. Default 0. */
  readonly offset?: number;
  /** Bytes from one row to the next (≥ the copy's width). */
  readonly pitch: number;
  /** Rows from one slice to the next (for 3-D copies; default: the copy's height). */
  readonly rows?: number;
}

/** A 2-D or 3-D copy: `depth` slices of `height` rows of `width` bytes. */
export interface Memcpy3DNodeParams {
  readonly dst: PitchedMemory;
  readonly src: PitchedMemory;
  /** Bytes per row. */
  readonly width: number;
  /** Rows per slice. */
  readonly height: number;
  /** Slices. Default 1. */
  readonly depth?: number;
}

/** A fill of `count` elements (per row, for `rows` rows `pitch` bytes apart) of `elementSize` bytes. */
export interface MemsetNodeParams {
  readonly dst: DeviceBuffer | CudaNode;
  /** The element's value: fits in `elementSize` bytes. */
  readonly value: number;
  /** 1, 2 or 4. Default 1. */
  readonly elementSize?: 1 | 2 | 4;
  /** Elements per row. */
  readonly count: number;
  /** Rows (a 2-D fill). Default 1. */
  readonly rows?: number;
  /** Bytes from one row to the next; required for more than one row. */
  readonly pitch?: number;
  /** Byte offset of the first element (a multiple of `elementSize`). Default 0. */
  readonly offset?: number;
}

/** What a checked parameter set becomes: the driver's input, and the resources the node uses. */
export interface Resolved<T> {
  readonly input: T;
  readonly holds: readonly Lifetime[];
}

/** The address, size and kind of one node memory; `holds` collects what must stay alive. */
function memoryOf(op: string, name: string, m: unknown, device: Device, holds: Lifetime[]): { address: bigint; size: number; host: boolean } {
  if (brands.DeviceBuffer.is(m)) {
    holds.push(m[LIFETIME]);
    return { address: m.ptrFor(op), size: m.byteLength, host: false };
  }
  if (brands.PinnedHostBuffer.is(m)) {
    m[LIFETIME].assertAlive(op);
    holds.push(m[LIFETIME]);
    return { address: m.ptr, size: m.byteLength, host: true };
  }
  if (CudaNode.is(m)) {
    m.handleFor(op);
    const a = m.allocation;
    if (a === null) throw new InvalidArgumentError(op, name, `${name} is ${m}; only an allocation node (graph.addMemAllocNode) names memory`);
    if (a.device !== device.ordinal) throw new InvalidArgumentError(op, name, `${name} is graph memory of device ${a.device}; the graph runs on device ${device.ordinal}`);
    return { address: a.address, size: a.byteLength, host: false };
  }
  throw new InvalidArgumentError(op, name, `${name} must be a DeviceBuffer, a PinnedHostBuffer or an allocation node, got ${describe(m)}`);
}

const MAX = Number.MAX_SAFE_INTEGER;

function pitchedEnd(op: string, name: string, p: unknown, width: number, height: number, depth: number, device: Device, holds: Lifetime[]): gb.PitchedEnd {
  const o = requireOptions<PitchedMemory>(op, p, ['memory', 'offset', 'pitch', 'rows'], name);
  if (p === undefined) throw new InvalidArgumentError(op, name, `${name} { memory, pitch } is required`);
  const mem = memoryOf(op, `${name}.memory`, o.memory, device, holds);
  const offset = o.offset === undefined ? 0 : requireInt(op, `${name}.offset`, o.offset, 0, MAX);
  const pitch = requireInt(op, `${name}.pitch`, o.pitch, 1, MAX);
  if (pitch < width) throw new InvalidArgumentError(op, `${name}.pitch`, `${name}.pitch (${pitch}) must be at least the copy's width (${width} bytes)`);
  const rows = o.rows === undefined ? height : requireInt(op, `${name}.rows`, o.rows, 1, MAX);
  if (depth > 1 && rows < height) throw new InvalidArgumentError(op, `${name}.rows`, `${name}.rows (${rows}) must be at least the copy's height (${height}) for a 3-D copy`);
  const end = offset + ((depth - 1) * rows + (height - 1)) * pitch + width;
  if (end > mem.size) throw new InvalidArgumentError(op, name, `${name} reaches byte ${end}, past the end of its ${mem.size}-byte memory`);
  return { host: mem.host, address: mem.address + BigInt(offset), pitch, height: rows };
}

/** Checks a 1-D or pitched copy (a `width` field makes it pitched). */
export function resolveCopy(op: string, params: unknown, device: Device): Resolved<gb.CopyShape> {
  if (typeof params !== 'object' || params === null) throw new InvalidArgumentError(op, 'params', `params must be an object, got ${describe(params)}`);
  const holds: Lifetime[] = [];
  if ('width' in params) {
    const o = requireOptions<Memcpy3DNodeParams>(op, params, ['dst', 'src', 'width', 'height', 'depth'], 'params');
    const width = requireInt(op, 'width', o.width, 1, MAX);
    const height = requireInt(op, 'height', o.height, 1, MAX);
    const depth = o.depth === undefined ? 1 : requireInt(op, 'depth', o.depth, 1, MAX);
    const src = pitchedEnd(op, 'src', o.src, width, height, depth, device, holds);
    const dst = pitchedEnd(op, 'dst', o.dst, width, height, depth, device, holds);
    return { input: { src, dst, width, height, depth }, holds };
  }
  const o = requireOptions<MemcpyNodeParams>(op, params, ['dst', 'src', 'byteLength', 'dstOffset', 'srcOffset'], 'params');
  const bytes = requireInt(op, 'byteLength', o.byteLength, 1, MAX);
  const end = (name: 'src' | 'dst', m: unknown, off: unknown): gb.CopyEnd => {
    const mem = memoryOf(op, name, m, device, holds);
    const offset = off === undefined ? 0 : requireInt(op, `${name}Offset`, off, 0, MAX);
    if (offset + bytes > mem.size) throw new InvalidArgumentError(op, name, `${name} holds ${mem.size} bytes; the copy needs ${offset + bytes} (offset ${offset} + ${bytes})`);
    return { host: mem.host, address: mem.address + BigInt(offset) };
  };
  const src = end('src', o.src, o.srcOffset);
  const dst = end('dst', o.dst, o.dstOffset);
  return { input: { src: { ...src, pitch: bytes, height: 1 }, dst: { ...dst, pitch: bytes, height: 1 }, width: bytes, height: 1, depth: 1 }, holds };
}

/** Checks a 1-D or 2-D fill. */
export function resolveFill(op: string, params: unknown, device: Device): Resolved<gb.FillShape> {
  const o = requireOptions<MemsetNodeParams>(op, params, ['dst', 'value', 'elementSize', 'count', 'rows', 'pitch', 'offset'], 'params');
  if (params === undefined) throw new InvalidArgumentError(op, 'params', 'params { dst, value, count } are required');
  const holds: Lifetime[] = [];
  if (brands.PinnedHostBuffer.is(o.dst)) throw new InvalidArgumentError(op, 'dst', 'dst is host memory; a memset node fills device memory');
  const mem = memoryOf(op, 'dst', o.dst, device, holds);
  const es: unknown = o.elementSize ?? 1;
  if (es !== 1 && es !== 2 && es !== 4) throw new InvalidArgumentError(op, 'elementSize', `elementSize must be 1, 2 or 4, got ${describe(es)}`);
  const elementSize = es;
  const value = requireInt(op, 'value', o.value, 0, 2 ** (8 * elementSize) - 1);
  const count = requireInt(op, 'count', o.count, 1, MAX);
  const rows = o.rows === undefined ? 1 : requireInt(op, 'rows', o.rows, 1, MAX);
  const offset = o.offset === undefined ? 0 : requireInt(op, 'offset', o.offset, 0, MAX);
  if (offset % elementSize !== 0) throw new InvalidArgumentError(op, 'offset', `offset ${offset} must be a multiple of elementSize ${elementSize}`);
  const rowBytes = count * elementSize;
  let pitch = rowBytes;
  if (rows > 1) {
    if (o.pitch === undefined) throw new InvalidArgumentError(op, 'pitch', `pitch is required for a fill of ${rows} rows`);
    pitch = requireInt(op, 'pitch', o.pitch, rowBytes, MAX);
    if (pitch % elementSize !== 0) throw new InvalidArgumentError(op, 'pitch', `pitch ${pitch} must be a multiple of elementSize ${elementSize}`);
  } else if (o.pitch !== undefined) pitch = requireInt(op, 'pitch', o.pitch, rowBytes, MAX);
  const end = offset + (rows - 1) * pitch + rowBytes;
  if (end > mem.size) throw new InvalidArgumentError(op, 'dst', `dst holds ${mem.size} bytes; the fill reaches byte ${end}`);
  return { input: { dst: mem.address + BigInt(offset), value, elementSize, width: count, height: rows, pitch: rows > 1 ? pitch : 0 }, holds };
}

/** The function a kernel node runs: what checking its launch needs. */
export interface KernelFunction {
  readonly name: string;
  readonly func: bigint;
  /** Its parameter sizes (`cuFuncGetParamInfo`), or null when the driver cannot say. */
  readonly paramSizes: readonly number[] | null;
  /** The device it is loaded on. */
  readonly device: Device;
  /** What must stay loaded while a node runs it (its module), or null when something else holds it. */
  readonly keep: Lifetime | null;
}

/** Each kernel's `KernelFunction`, made once (its module's liveness is checked by the callers). */
const functions = new WeakMap<Kernel, KernelFunction>();

/** The last kernel asked for and its function: a loop adding nodes asks for one kernel again and again. */
let lastKernel: Kernel | null = null;
let lastFunction: KernelFunction | null = null;

/** The function of a `Kernel`. */
export function kernelFunction(kernel: Kernel): KernelFunction {
  if (kernel === lastKernel) return lastFunction!;
  let f = functions.get(kernel);
  if (f === undefined) {
    f = { name: kernel.name, func: kernel.handle, paramSizes: kernel.paramSizes, device: kernel.module.device, keep: kernel.module[LIFETIME] };
    functions.set(kernel, f);
  }
  lastKernel = kernel;
  lastFunction = f;
  return f;
}

/**
 * The last check of each configuration object given for kernel nodes, with what it was checked
 * against: a program that adds many nodes with one config object (the usual loop) has it checked
 * once. Every call still compares the object's contents with the checked ones (each field, each
 * argument by identity: `arg.*` values are frozen) and checks every buffer alive, so a config
 * changed in place is checked again, never trusted.
 */
interface CheckedKernelConfig {
  /** The function it was checked for (one object per kernel: a reloaded module's is another). */
  readonly fn: KernelFunction;
  readonly grid: unknown;
  readonly block: unknown;
  readonly gridItems: readonly unknown[] | null;
  readonly blockItems: readonly unknown[] | null;
  readonly sharedMem: unknown;
  readonly argsRef: unknown;
  readonly argItems: readonly unknown[];
  readonly keys: number;
  readonly checked: CheckedConfig;
  readonly holds: readonly Lifetime[];
  /** The arguments packed once (buffer addresses do not change while the buffers live). */
  readonly packed: PackedArgs;
  /**
   * The launch every use of the memo returns: one object, never changed, so that the driver layer
   * can tell it encoded this very launch last time and skip encoding it again.
   */
  readonly input: gb.KernelNodeInput;
  /** The lifetimes of the buffers among the arguments, each checked alive on every use. */
  readonly buffers: readonly Lifetime[];
  /** What `resolveKernel` returns for it (one frozen object: nothing is made per use). */
  readonly resolved: Resolved<gb.KernelNodeInput> & { readonly attributes: null };
}
const checkedConfigs = new WeakMap<object, CheckedKernelConfig>();
/**
 * The configuration last memoized or found and its memo, as `checkedConfigs` has them (kept in
 * step with it): the usual loop hands one configuration object again and again. It keeps that one
 * object alive until another takes its place.
 */
let lastConfig: object | null = null;
let lastMemo: CheckedKernelConfig | null = null;

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * The number of own keys of `o` when every one is a launch option, else -1: a memo is reused only
 * while the object has no key its check never saw (the same count is not enough: `sharedMem:
 * undefined` deleted and a misspelt key added keeps it). Counted without making `Object.keys`'s
 * array: `hasOwnProperty.call` inside a `for…in` is compiled to a check of the loop's own key
 * cache; `Object.hasOwn` would be a call each.
 */
function keyCount(o: object): number {
  let n = 0;
  for (const k in o) {
    if (!hasOwn.call(o, k)) continue;
    if (k !== 'grid' && k !== 'block' && k !== 'sharedMem' && k !== 'args' && k !== 'attributes') return -1;
    n++;
  }
  return n;
}
/** Frees a memo's packed arguments once its configuration object is collected. */
const packedBlocks = new FinalizationRegistry<PackedArgs>((p) => p.free());

const itemsOf = (d: unknown): readonly unknown[] | null => (Array.isArray(d) ? [...(d as unknown[])] : null);
const sameItems = (a: readonly unknown[] | null, d: unknown): boolean => {
  if (a === null) return !Array.isArray(d);
  if (!Array.isArray(d) || d.length !== a.length) return false;
  for (let i = 0; i < a.length; i++) if (d[i] !== a[i]) return false;
  return true;
};

/** The memo of `config` when it still holds exactly what was checked for `fn`, else null. */
function memoOf(config: object, fn: KernelFunction): CheckedKernelConfig | null {
  const m = config === lastConfig ? lastMemo! : checkedConfigs.get(config);
  if (m === undefined || m.fn !== fn) return null;
  lastConfig = config;
  lastMemo = m;
  const c = config as Partial<LaunchConfig>;
  if (c.grid !== m.grid || c.block !== m.block || c.sharedMem !== m.sharedMem || c.args !== m.argsRef || c.attributes !== undefined) return null;
  if (!sameItems(m.gridItems, c.grid) || !sameItems(m.blockItems, c.block) || !sameItems(m.argItems, c.args)) return null;
  if (keyCount(config) !== m.keys) return null;
  return m;
}

/**
 * Checks a kernel launch for a node: the function on `device`, its configuration and arguments.
 * With `blocks` (a batch of nodes that the driver reads after all are resolved), arguments that
 * would go to the shared scratch block, or replace a memo, are packed into a block of their own,
 * pushed onto `blocks` for the caller to free after the driver call.
 */
export function resolveKernel(
  op: string,
  fn: KernelFunction,
  config: unknown,
  device: Device,
  memoize = true,
  blocks: PackedArgs[] | null = null,
): Resolved<gb.KernelNodeInput> & { readonly attributes: CheckedAttributes | null } {
  if (fn.device !== device) {
    throw new InvalidArgumentError(op, 'kernel', `kernel '${fn.name}' is loaded on ${fn.device}; the graph runs on ${device}`);
  }
  const memo = memoize && typeof config === 'object' && config !== null ? memoOf(config, fn) : null;
  if (memo !== null) {
    // Each buffer alive, as packing would check (a buffer disposed since is refused).
    const buffers = memo.buffers;
    for (let i = 0; i < buffers.length; i++) buffers[i]!.assertAlive(op);
    return memo.resolved;
  }
  const c = checkConfig(op, fn.name, config as LaunchConfig, fn.paramSizes);
  if (c.attributes !== null && (c.attributes.programmaticStreamSerialization || c.attributes.programmaticEvent !== null)) {
    throw new InvalidArgumentError(
      op,
      'attributes',
      'programmatic launch attributes are for stream launches; in a graph, give the kernel node a programmatic edge (addDependencies([[from, to, { kind: "programmatic" }]]))',
    );
  }
  const holds: Lifetime[] = fn.keep === null ? [] : [fn.keep];
  for (const a of c.args) if (a.buffer !== null) holds.push(a.buffer[LIFETIME]);
  const previous = typeof config === 'object' && config !== null ? checkedConfigs.get(config) : undefined;
  if (blocks !== null && (c.attributes !== null || previous !== undefined)) {
    // A batch reads every node's arguments in one driver call after all are resolved: each needs a
    // block of its own until then, and a memo an earlier node of the batch reads must not be freed.
    const p = packArgs(c.args, (b) => b.ptrFor(op));
    blocks.push(p);
    return { input: { func: fn.func, grid: c.grid, block: c.block, sharedMem: c.sharedMem, kernelParams: p.address }, holds, attributes: c.attributes };
  }
  if (!memoize || c.attributes !== null || typeof config !== 'object' || config === null) {
    // The driver copies the argument values while it adds or updates the node: a scratch block will do.
    const kernelParams = packScratch(c.args, (b) => b.ptrFor(op));
    return { input: { func: fn.func, grid: c.grid, block: c.block, sharedMem: c.sharedMem, kernelParams }, holds, attributes: c.attributes };
  }
  const o = config as LaunchConfig;
  if (previous !== undefined) {
    packedBlocks.unregister(previous);
    previous.packed.free();
  }
  const packed = packArgs(c.args, (b) => b.ptrFor(op));
  const input: gb.KernelNodeInput = Object.freeze({ func: fn.func, grid: c.grid, block: c.block, sharedMem: c.sharedMem, kernelParams: packed.address });
  const entry: CheckedKernelConfig = {
    fn,
    grid: o.grid,
    block: o.block,
    gridItems: itemsOf(o.grid),
    blockItems: itemsOf(o.block),
    sharedMem: o.sharedMem,
    argsRef: o.args,
    argItems: [...o.args],
    keys: keyCount(config),
    checked: c,
    holds,
    packed,
    input,
    buffers: c.args.flatMap((a) => (a.buffer === null ? [] : [a.buffer[LIFETIME]])),
    resolved: Object.freeze({ input, holds, attributes: null }),
  };
  checkedConfigs.set(config, entry);
  lastConfig = config;
  lastMemo = entry;
  packedBlocks.register(config, packed, entry);
  return entry.resolved;
}
