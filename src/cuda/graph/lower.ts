/**
 * Lowering: a `ComputeGraph` (built by hand, with `GraphBuilder`, or read from JSON) becomes a real
 * CUDA graph, node by node (`cuGraphAddKernelNode_v2`, `cuGraphAddMemcpyNode`,
 * `cuGraphAddMemsetNode`, `cuGraphAddHostNode`, `cuGraphAddEmptyNode`), with the model's edges as
 * its dependencies (`cuGraphAddDependencies_v2`). Kernels are resolved by name from loaded
 * modules, with their arguments bound; copies and fills are bound to named buffers; host nodes to
 * JS callbacks. (The upstream Rust lowers every node to an empty placeholder.)
 */
import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { describe, requireInstance, requireOptions } from '../../util/validate.js';
import { graph as gr, graphBuild as gb } from '../../driver/result/index.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { surfaceCleanupErrors, type Lifetime } from '../core/lifetime.js';
import { Device } from '../device/device.js';
import type { Module } from '../kernel/module.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import { HostFunction, hostTrampoline } from '../host/host-function.js';
import { arg as cudaArg, type KernelArgValue } from '../kernel/arg.js';
import { checkConfig } from '../kernel/launch-config.js';
import { packScratch } from '../kernel/packed-args.js';
import { requireGraph, type ComputeGraph } from '../../model/compute-graph.js';
import type { ArgSpec, BufferRef, NodeBinding } from '../../model/builder.js';
import type { GraphNode } from '../../model/node.js';
import type { NodeId } from '../../model/ids.js';
import type { Kernel } from '../kernel/kernel.js';
import type { Stream } from '../device/stream.js';
import { Graph } from './graph.js';
import type { GraphExec } from './graph-exec.js';
import type { InstantiateFlags } from './instantiate-flags.js';
import { brands } from '../core/brands.js';

/** What `lowerGraph` binds the graph's nodes to. */
export interface LowerBindings {
  /** Where kernels are looked up by function name (the first module that has it wins). */
  readonly modules: Module | readonly Module[];
  /** Per node: its arguments, buffers or callback (`GraphBuilder.build().bindings`). */
  readonly nodes?: ReadonlyMap<NodeId, NodeBinding>;
  /** Device memory for the builder's `buffer(name)`s, by name. */
  readonly buffers?: Readonly<Record<string, DeviceBuffer>>;
  /** Host memory for the builder's `hostBuffer(name)`s, by name: pinned, since the graph copies it at every launch. */
  readonly hostBuffers?: Readonly<Record<string, PinnedHostBuffer>>;
  /** Host callbacks by label: override or provide what the node bindings say. */
  readonly callbacks?: Readonly<Record<string, (() => void) | HostFunction>>;
  /** The device (default: the first module's). */
  readonly device?: Device;
}

/**
 * A `ComputeGraph` built on the GPU: the CUDA `graph` (owned: disposed with this), the model
 * graph it came from, and which driver node each model node became.
 *
 * @example
 * const { graph, bindings } = builder.build();
 * using lowered = lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x, y }, hostBuffers: { in: pin } });
 * using exec = lowered.instantiate();
 * exec.launch(s); await s.synchronizeAsync();
 */
export class LoweredGraph {
  /** The CUDA graph (read it back, draw it, instantiate it). */
  readonly graph: Graph;
  /** The model graph it was lowered from. */
  readonly source: ComputeGraph;
  readonly #handles: BigUint64Array;
  readonly #owned: HostFunction[];

  /** @internal Made by `lowerGraph`. */
  constructor(key: typeof INTERNAL, graph: Graph, source: ComputeGraph, handles: BigUint64Array, owned: HostFunction[]) {
    if (key !== INTERNAL) throw privateConstructorError('LoweredGraph', 'lowerGraph(graph, bindings)');
    this.graph = graph;
    this.source = source;
    this.#handles = handles;
    this.#owned = owned;
  }

  /** The driver node (`CUgraphNode`) model node `id` became. @throws InvalidArgumentError for an unknown id. */
  nodeHandle(id: NodeId): bigint {
    const h = this.#handles[id];
    if (!Number.isInteger(id) || h === undefined) {
      throw new InvalidArgumentError('LoweredGraph.nodeHandle', 'id', `id must be a node of the source graph (0..${this.#handles.length - 1}), got ${describe(id)}`);
    }
    return h;
  }

  /**
   * For each node of `graph.readBack()` (the driver's order), the model node it came from: so
   * `graph.toComputeGraph()` node `i` is `source` node `modelIds()[i]`.
   */
  modelIds(): NodeId[] {
    const op = 'LoweredGraph.modelIds';
    const index = new Map<bigint, number>();
    this.#handles.forEach((h, i) => index.set(h, i));
    return gr.graphNodes(op, this.graph.handle).map((h) => index.get(h)! as NodeId);
  }

  /** Instantiates the CUDA graph (`graph.instantiate`); the exec keeps it alive. */
  instantiate(flags?: InstantiateFlags, stream?: Stream): GraphExec {
    return this.graph.instantiate(flags, stream);
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this.graph.disposed;
  }

  /** Disposes the graph (once no exec holds it) and the host functions lowering made. Idempotent. */
  dispose(): void {
    this.graph.dispose();
    for (const h of this.#owned) h.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** The node kinds `lowerGraph` builds. */
const LOWERED_KINDS: readonly GraphNode['kind'][] = ['kernel', 'memcpy', 'memset', 'hostCallback', 'empty'];

/** Describes a node for messages: `node 3 (kernel 'scale')`. */
function what(n: GraphNode): string {
  return `node ${n.id} (${n.kind} '${n.name}')`;
}

/**
 * Builds `graph` on the GPU: one driver node per model node, bound as `bindings` says, and the
 * model's edges as dependencies. The CUDA graph keeps every module, buffer, pinned buffer and host
 * function it uses alive.
 *
 * - kernel: the function named `functionName` in `bindings.modules`, launched with the node's grid,
 *   block and shared memory, and the node binding's arguments (buffers by name, typed scalars);
 *   arguments are checked against the kernel's parameters when the driver reports them;
 * - memcpy: from the binding's `src` to its `dst` (device buffers from `buffers`, host memory from
 *   `hostBuffers`), `sizeBytes` bytes at the offsets; the direction must match the buffers';
 * - memset: `sizeBytes / elementSize` elements of `value` into the binding's `dst`;
 * - hostCallback: `callbacks[label]`, else the binding's function, as a `HostFunction`;
 * - empty: an empty node.
 *
 * @throws InvalidArgumentError naming the node (`lowerGraph: node 3 (kernel 'scale'): …`) for a
 *   missing binding, buffer or kernel, a buffer too small, or arguments that do not fit the kernel;
 *   CudaError from the driver. Nothing is left allocated on failure.
 */
export function lowerGraph(graph: ComputeGraph, bindings: LowerBindings): LoweredGraph {
  const OP = 'lowerGraph';
  requireGraph(OP, 'graph', graph);
  const b = requireOptions<LowerBindings>(OP, bindings, ['modules', 'nodes', 'buffers', 'hostBuffers', 'callbacks', 'device']);
  if (bindings === undefined) throw new InvalidArgumentError(OP, 'bindings', 'bindings { modules, … } are required');
  const modules = Array.isArray(b.modules) ? (b.modules as readonly Module[]) : b.modules === undefined ? [] : [b.modules as Module];
  modules.forEach((m, i) => {
    requireInstance(OP, `modules[${i}]`, m, brands.Module);
  });
  if (b.device !== undefined) requireInstance(OP, 'device', b.device, brands.Device);
  const device = b.device ?? modules[0]?.device ?? Device.getFor(OP, 0);
  surfaceCleanupErrors(OP);

  const nodes = graph.nodes();
  const held = new Set<Lifetime>();
  const owned: HostFunction[] = [];
  const kernels = new Map<string, Kernel>();

  const fail = (n: GraphNode, message: string): never => {
    throw new InvalidArgumentError(OP, `nodes[${n.id}]`, `${what(n)}: ${message}`);
  };
  const kernelNamed = (n: GraphNode, name: string): Kernel => {
    const hit = kernels.get(name);
    if (hit !== undefined) return hit;
    for (const m of modules) {
      try {
        const k = m.function(name);
        kernels.set(name, k);
        return k;
      } catch (e) {
        if (!(e instanceof CudaError && e.code === 500)) throw e;
      }
    }
    return fail(n, `no kernel named '${name}' in the ${modules.length} module(s) given`);
  };
  const device_ = (n: GraphNode, ref: BufferRef, need: number): DeviceBuffer => {
    const buf = b.buffers?.[ref.name];
    if (!brands.DeviceBuffer.is(buf)) return fail(n, `buffer '${ref.name}' is not bound: give bindings.buffers['${ref.name}'] (a DeviceBuffer)`);
    if (buf.byteLength < need) return fail(n, `buffer '${ref.name}' holds ${buf.byteLength} bytes, the node needs ${need}`);
    return buf;
  };
  const host_ = (n: GraphNode, ref: BufferRef, need: number): PinnedHostBuffer => {
    const buf = b.hostBuffers?.[ref.name];
    if (!brands.PinnedHostBuffer.is(buf)) {
      return fail(n, `host buffer '${ref.name}' is not bound: give bindings.hostBuffers['${ref.name}'] (a PinnedHostBuffer: the graph copies it at every launch)`);
    }
    if (buf.byteLength < need) return fail(n, `host buffer '${ref.name}' holds ${buf.byteLength} bytes, the node needs ${need}`);
    return buf;
  };
  const bindingOf = (n: GraphNode): NodeBinding | undefined => {
    const x = b.nodes?.get(n.id);
    if (x !== undefined && x.kind !== n.kind) return fail(n, `its binding is for a '${x.kind}' node`);
    return x;
  };
  const scalar = (a: ArgSpec & { kind: 'scalar' }): KernelArgValue => {
    switch (a.type) {
      case 'i32':
        return cudaArg.i32(a.value as number);
      case 'u32':
        return cudaArg.u32(a.value as number);
      case 'i64':
        return cudaArg.i64(a.value);
      case 'u64':
        return cudaArg.u64(a.value);
      case 'f32':
        return cudaArg.f32(a.value as number);
      case 'f64':
        return cudaArg.f64(a.value as number);
    }
  };

  // What this build cannot lower is refused before any driver work, so a refusal leaves nothing behind.
  for (const n of nodes) {
    if (!LOWERED_KINDS.includes(n.kind)) {
      fail(n, `lowering '${n.kind}' nodes is not supported by this build (it lowers ${LOWERED_KINDS.join(', ')} nodes)`);
    }
  }
  for (const e of graph.edgeRecords()) {
    if (e.kind !== 'plain' || e.port !== 'completion') {
      fail(nodes[e.to]!, `its edge from node ${e.from} is ${e.kind} (port ${e.port}); this build lowers plain edges only`);
    }
  }

  makeCurrent(OP, device.context);
  const handle = gr.graphCreate(OP);
  const handles = new BigUint64Array(nodes.length);
  const hostIds: number[] = [];
  try {
    for (const n of nodes) {
      switch (n.kind) {
        case 'kernel': {
          const binding = bindingOf(n) as (NodeBinding & { kind: 'kernel' }) | undefined;
          const k = kernelNamed(n, n.functionName);
          const args = (binding?.args ?? []).map((a) => {
            if (a.kind === 'scalar') return scalar(a);
            if (a.host) return fail(n, `argument '${a.name}' is host memory; kernels take device buffers`);
            return cudaArg.ptr(device_(n, a, a.sizeBytes));
          });
          let params: bigint;
          try {
            const c = checkConfig(OP, k.name, { grid: n.grid, block: n.block, sharedMem: n.sharedMem, args }, k.paramSizes);
            params = packScratch(c.args, (buf) => buf.ptrFor(OP));
          } catch (e) {
            if (e instanceof InvalidArgumentError) return fail(n, e.message.slice(OP.length + 2));
            throw e;
          }
          handles[n.id] = gb.addKernelNode(OP, handle, { func: k.handle, grid: n.grid, block: n.block, sharedMem: n.sharedMem, kernelParams: params });
          held.add(k.module[LIFETIME]);
          for (const a of args) if (a.buffer !== null) held.add(a.buffer[LIFETIME]);
          break;
        }
        case 'memcpy': {
          const binding = bindingOf(n) as (NodeBinding & { kind: 'memcpy' }) | undefined;
          if (binding === undefined) return fail(n, 'a copy needs a binding (src and dst buffers): give bindings.nodes');
          const want = typeof n.dir === 'string' ? n.dir : 'DeviceToDevice';
          const have = binding.src.host ? 'HostToDevice' : binding.dst.host ? 'DeviceToHost' : 'DeviceToDevice';
          if (want !== have) return fail(n, `the node copies ${want} but its binding copies '${binding.src.name}' → '${binding.dst.name}' (${have})`);
          const end = (ref: BufferRef, offset: number): gb.CopyEnd => {
            if (ref.host) {
              const h = host_(n, ref, offset + n.sizeBytes);
              held.add(h[LIFETIME]);
              return { host: true, address: h.ptr + BigInt(offset) };
            }
            const d = device_(n, ref, offset + n.sizeBytes);
            held.add(d[LIFETIME]);
            return { host: false, address: d.ptr + BigInt(offset) };
          };
          const src = end(binding.src, binding.srcOffset);
          const dst = end(binding.dst, binding.dstOffset);
          handles[n.id] = gb.addMemcpyNode(OP, handle, src, dst, n.sizeBytes, device.context);
          break;
        }
        case 'memset': {
          const binding = bindingOf(n) as (NodeBinding & { kind: 'memset' }) | undefined;
          if (binding === undefined) return fail(n, 'a fill needs a binding (its dst buffer): give bindings.nodes');
          const d = device_(n, binding.dst, binding.offset + n.sizeBytes);
          held.add(d[LIFETIME]);
          const count = n.sizeBytes / n.elementSize;
          handles[n.id] = gb.addMemsetNode(OP, handle, d.ptr + BigInt(binding.offset), n.value, n.elementSize, count, device.context);
          break;
        }
        case 'hostCallback': {
          const binding = bindingOf(n) as (NodeBinding & { kind: 'hostCallback' }) | undefined;
          const given = b.callbacks?.[n.label] ?? binding?.fn ?? null;
          if (given === null) return fail(n, `no callback for label '${n.label}': give bindings.callbacks['${n.label}'] or a function to GraphBuilder.host`);
          let hf: HostFunction;
          if (brands.HostFunction.is(given)) hf = given;
          else if (typeof given === 'function') {
            hf = HostFunction.create(given, { label: n.label });
            owned.push(hf);
          } else return fail(n, `callbacks['${n.label}'] must be a function or a HostFunction, got ${describe(given)}`);
          handles[n.id] = gb.addHostNode(OP, handle, hostTrampoline(), BigInt(hf.id));
          held.add(hf[LIFETIME]);
          hostIds.push(hf.id);
          break;
        }
        case 'empty':
          handles[n.id] = gb.addEmptyNode(OP, handle);
          break;
        default:
          // Refused before any driver work (see LOWERED_KINDS above); kept so the switch covers every kind.
          return fail(n, `lowering '${n.kind}' nodes is not supported`);
      }
    }
    const edges = graph.edges();
    const from = new BigUint64Array(edges.length);
    const to = new BigUint64Array(edges.length);
    edges.forEach(([u, v], i) => {
      from[i] = handles[u]!;
      to[i] = handles[v]!;
    });
    gb.addDependencies(OP, handle, from, to);
  } catch (e) {
    gr.graphDestroy(OP, handle);
    for (const h of owned) h.dispose();
    throw e;
  }
  for (const l of held) l.retain();
  const g = new Graph(INTERNAL, device, handle, [...held]);
  g.setJsHostFunctionIds(hostIds);
  return new LoweredGraph(INTERNAL, g, graph, handles, owned);
}
