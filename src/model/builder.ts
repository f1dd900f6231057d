/**
 * `GraphBuilder`: a fluent way to write a `ComputeGraph` by hand, with named buffers. Each node
 * says which buffers it reads and writes, and the builder adds the data-flow edges a sequential
 * program would need (read after write, write after read, write after write), so independent work
 * stays parallel. `dep`, `chain`, `fanIn` and `fanOut` add edges by hand. `build()` returns the
 * graph and the node bindings (kernel arguments, copy and fill buffers, host callbacks) that
 * `lowerGraph` needs to run it on a GPU.
 *
 * Graph memory is a buffer too: `memAlloc` declares one that an allocation node allocates (every
 * user of it runs after that node), `memFree` frees it after every user, and a freed buffer cannot
 * be used again.
 *
 * Control flow: `conditional` adds an if, while or switch node whose bodies are graphs (or other
 * builders' results, whose bindings go with them), as `childGraph` adds a child.
 *
 * Unlike the upstream builder, which adds an edge from every writer to every reader of a buffer
 * (a cycle as soon as a buffer is written twice), edges follow the order nodes were added: a
 * reader depends on the last writer before it, a writer on the last writer and the readers since.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, requireBoolean, requireInt, requireName, requireNonNegativeFinite, requireOptions, requireSize, requireU32 } from '../util/validate.js';
import { nameText } from './bounded-text.js';
import { ComputeGraph, addEdgeAs, addEdgesAs, addNodeAs, isComputeGraph, nodeIdAs, upgradeEdgeAs, type EdgeArg } from './compute-graph.js';
import { GraphErrorCode } from './error-codes.js';
import type { MemcpyDir } from './memcpy-dir.js';
import type { DimInput, EdgeSpec, NodeSpec, NodeSpecBase } from './node.js';
import type { ConditionalHandleSpec, ConditionalType } from './conditional.js';
import type { NodeId, StreamId } from './ids.js';
import type { ScalarType } from './element-type.js';

export type { ScalarType };

/** A named buffer of a builder: device memory, or host memory (bound to pinned memory when lowered). */
export interface BufferRef {
  readonly kind: 'buffer';
  readonly name: string;
  readonly sizeBytes: number;
  /** True for host memory (`hostBuffer`). */
  readonly host: boolean;
  /** The allocation node that allocates it, for graph memory (`memAlloc`); null for memory bound when lowered. */
  readonly allocatedBy: NodeId | null;
}


/** A scalar kernel argument with its C type (`b.f32(2)`, `b.i32(n)`). */
export interface ScalarArg {
  readonly kind: 'scalar';
  readonly type: ScalarType;
  readonly value: number | bigint;
}

/** A kernel argument in a builder: a buffer (its address) or a typed scalar. */
export type ArgSpec = BufferRef | ScalarArg;

/** What a node needs to run, besides its `ComputeGraph` record. */
export type NodeBinding =
  | { readonly kind: 'kernel'; readonly args: readonly ArgSpec[] }
  | { readonly kind: 'memcpy'; readonly src: BufferRef; readonly dst: BufferRef; readonly srcOffset: number; readonly dstOffset: number }
  | { readonly kind: 'memset'; readonly dst: BufferRef; readonly offset: number }
  | { readonly kind: 'hostCallback'; readonly fn: (() => void) | null }
  | { readonly kind: 'empty' }
  | { readonly kind: 'eventRecord' }
  | { readonly kind: 'eventWait' }
  /** A child's own bindings, when it was given as a `BuiltGraph`; null for a bare `ComputeGraph`. */
  | { readonly kind: 'childGraph'; readonly bindings: ReadonlyMap<NodeId, NodeBinding> | null }
  | { readonly kind: 'memAlloc'; readonly buffer: BufferRef }
  | { readonly kind: 'memFree'; readonly buffer: BufferRef }
  /** Per body, its own bindings when it was given as a `BuiltGraph`, else null. */
  | { readonly kind: 'conditional'; readonly bodies: readonly (ReadonlyMap<NodeId, NodeBinding> | null)[] };

/** What `build()` returns. */
export interface BuiltGraph {
  readonly graph: ComputeGraph;
  /** Node id → what it runs with; `lowerGraph(graph, { nodes: bindings, … })` takes it. */
  readonly bindings: ReadonlyMap<NodeId, NodeBinding>;
  /** The buffers declared, in order. */
  readonly buffers: readonly BufferRef[];
}

/** Fields every node method takes. */
export interface NodeOptions {
  /** Display name (defaults: the function name, the label, or a description of the copy or fill). */
  readonly name?: string;
  readonly stream?: StreamId;
  /** Cost for scheduling figures (default 1). */
  readonly cost?: number;
}

/** Options of `kernel`. */
export interface KernelNodeOptions extends NodeOptions {
  readonly grid: DimInput;
  readonly block: DimInput;
  readonly sharedMem?: number;
  /** In order: buffers (their addresses) and typed scalars. */
  readonly args?: readonly ArgSpec[];
  /** Buffers the kernel reads. When neither `reads` nor `writes` is given, every buffer argument counts as read and written. */
  readonly reads?: readonly BufferRef[];
  /** Buffers the kernel writes. */
  readonly writes?: readonly BufferRef[];
}

/** Options of `memcpy`. */
export interface MemcpyNodeOptions extends NodeOptions {
  readonly src: BufferRef;
  readonly dst: BufferRef;
  /** Default: all that fits from the offsets. */
  readonly sizeBytes?: number;
  readonly srcOffset?: number;
  readonly dstOffset?: number;
}

/** Options of `memset`. */
export interface MemsetNodeOptions extends NodeOptions {
  /** 1, 2 or 4 (default 1). */
  readonly elementSize?: 1 | 2 | 4;
  /** Default: the rest of the buffer from `offset`. */
  readonly sizeBytes?: number;
  readonly offset?: number;
}

/** Options of `host`. */
export interface HostNodeOptions extends NodeOptions {
  /** Buffers (typically host buffers) the callback reads. */
  readonly reads?: readonly BufferRef[];
  /** Buffers the callback writes (e.g. the host buffer a later upload copies). */
  readonly writes?: readonly BufferRef[];
}

/** Options of `memAlloc`. */
export interface MemAllocNodeOptions extends NodeOptions {
  /** The device the memory lives on (default 0). */
  readonly device?: number;
}

/** Options of `childGraph`. */
export interface ChildGraphNodeOptions extends NodeOptions {
  /** Buffers the child reads. */
  readonly reads?: readonly BufferRef[];
  /** Buffers the child writes. */
  readonly writes?: readonly BufferRef[];
}

/** Options of `conditional`. */
export interface ConditionalNodeOptions extends NodeOptions {
  /** The node's condition (see `ConditionalHandleSpec`; default: a fresh id of this graph). */
  readonly handle?: ConditionalHandleSpec;
  /** How often the bodies run: a while loop's trips, or the chance (0..1) that an if's or switch's body runs. Default 1. */
  readonly estimate?: number;
  /** Buffers the bodies read. */
  readonly reads?: readonly BufferRef[];
  /** Buffers the bodies write. */
  readonly writes?: readonly BufferRef[];
}

/** Options of `new GraphBuilder`. */
export interface GraphBuilderOptions {
  /** Add the data-flow edges from reads and writes (default true). */
  readonly inferEdges?: boolean;
}

const NODE_KEYS = ['name', 'stream', 'cost'];

/**
 * The scalar arguments the builders made (`b.f32(2)`, …). A kernel's `args` accept only these: a
 * look-alike `{ kind: 'scalar', type: 'f32', value: 'x' }` would reach the GPU unchecked. A WeakSet
 * is the brand check of plain (frozen) objects.
 */
const SCALARS = new WeakSet<ScalarArg>();

/** What `build()` returned: `childGraph` takes only these (a look-alike's bindings would reach lowering unchecked). */
const BUILT = new WeakSet<BuiltGraph>();

function scalar(type: ScalarType, value: number | bigint): ScalarArg {
  const arg: ScalarArg = Object.freeze({ kind: 'scalar', type, value });
  SCALARS.add(arg);
  return arg;
}

/**
 * Builds a `ComputeGraph` with named buffers.
 *
 * @example
 * const b = new GraphBuilder();
 * const hx = b.hostBuffer('hx', 4 * n), x = b.buffer('x', 4 * n), y = b.buffer('y', 4 * n);
 * const up = b.memcpy({ src: hx, dst: x, name: 'upload' });
 * b.kernel('scale', { grid: 4, block: 256, args: [x, b.f32(2), b.i32(n)], reads: [x], writes: [x] });
 * b.kernel('square', { grid: 4, block: 256, args: [x, y, b.i32(n)], reads: [x], writes: [y] });
 * const { graph, bindings } = b.build();   // upload → scale → square, from the buffers alone
 */
export class GraphBuilder {
  readonly #graph = new ComputeGraph();
  readonly #bindings = new Map<NodeId, NodeBinding>();
  readonly #buffers = new Map<string, BufferRef>();
  readonly #infer: boolean;
  // Per buffer: the last node that wrote it, and the nodes that read it since.
  readonly #lastWriter = new Map<string, number>();
  readonly #readers = new Map<string, number[]>();
  /** Graph-memory buffers freed so far, and the free node that freed each. */
  readonly #freed = new Map<string, NodeId>();
  #built = false;

  /** @throws InvalidArgumentError for bad options. */
  constructor(options?: GraphBuilderOptions) {
    const o = requireOptions<GraphBuilderOptions>('GraphBuilder', options, ['inferEdges']);
    this.#infer = o.inferEdges === undefined ? true : requireBoolean('GraphBuilder', 'inferEdges', o.inferEdges);
  }

  /** Declares device memory of `sizeBytes` bytes. @throws InvalidArgumentError for a used name or a bad size. */
  buffer(name: string, sizeBytes: number): BufferRef {
    return this.#declare('GraphBuilder.buffer', name, sizeBytes, false);
  }

  /** Declares host memory (bound to a `PinnedHostBuffer` when lowered), for uploads and downloads. */
  hostBuffer(name: string, sizeBytes: number): BufferRef {
    return this.#declare('GraphBuilder.hostBuffer', name, sizeBytes, true);
  }

  /** A C `int` argument. */
  i32(value: number): ScalarArg {
    return scalar('i32', requireInt('GraphBuilder.i32', 'value', value, -(2 ** 31), 2 ** 31 - 1));
  }
  /** A C `unsigned int` argument. */
  u32(value: number): ScalarArg {
    return scalar('u32', requireU32('GraphBuilder.u32', 'value', value));
  }
  /** A C `long long` argument (a safe integer or a bigint in range). */
  i64(value: number | bigint): ScalarArg {
    return scalar('i64', bigArg('GraphBuilder.i64', value, -(2n ** 63n), 2n ** 63n - 1n));
  }
  /** A C `unsigned long long` argument. */
  u64(value: number | bigint): ScalarArg {
    return scalar('u64', bigArg('GraphBuilder.u64', value, 0n, 2n ** 64n - 1n));
  }
  /** A C `float` argument. */
  f32(value: number): ScalarArg {
    return scalar('f32', requireNumber('GraphBuilder.f32', value));
  }
  /** A C `double` argument. */
  f64(value: number): ScalarArg {
    return scalar('f64', requireNumber('GraphBuilder.f64', value));
  }

  /**
   * A kernel launch of `functionName` (resolved by name from the modules given to `lowerGraph`).
   * @throws InvalidArgumentError for bad launch limits (CUDA's), arguments or buffers.
   */
  kernel(functionName: string, options: KernelNodeOptions): NodeId {
    const OP = 'GraphBuilder.kernel';
    this.#open(OP);
    const o = requireOptions<KernelNodeOptions>(OP, options, [...NODE_KEYS, 'grid', 'block', 'sharedMem', 'args', 'reads', 'writes']);
    if (options === undefined) throw new InvalidArgumentError(OP, 'options', 'options { grid, block, … } are required');
    const given = (o.args ?? []) as unknown[];
    if (!Array.isArray(given)) throw new InvalidArgumentError(OP, 'args', `args must be an array, got ${describe(o.args)}`);
    // Every index, holes included (forEach would skip one, and the binding would hold undefined).
    const args: ArgSpec[] = [];
    for (let i = 0; i < given.length; i++) args.push(this.#arg(OP, `args[${i}]`, given[i]));
    const buffers = args.filter((a): a is BufferRef => a.kind === 'buffer');
    const explicit = o.reads !== undefined || o.writes !== undefined;
    const reads = explicit ? this.#refs(OP, 'reads', o.reads) : buffers;
    const writes = explicit ? this.#refs(OP, 'writes', o.writes) : buffers;
    const spec: NodeSpec = {
      kind: 'kernel',
      functionName,
      grid: o.grid as DimInput,
      block: o.block as DimInput,
      ...(o.sharedMem !== undefined ? { sharedMem: o.sharedMem } : {}),
      ...common(OP, o),
    };
    return this.#add(OP, spec, { kind: 'kernel', args }, reads, writes);
  }

  /**
   * A copy from `src` to `dst`; its direction follows from where the buffers live (host → device
   * is `HostToDevice`, and so on).
   * @throws InvalidArgumentError for unknown buffers, a host-to-host copy, or a range outside a buffer.
   */
  memcpy(options: MemcpyNodeOptions): NodeId {
    const OP = 'GraphBuilder.memcpy';
    this.#open(OP);
    const o = requireOptions<MemcpyNodeOptions>(OP, options, [...NODE_KEYS, 'src', 'dst', 'sizeBytes', 'srcOffset', 'dstOffset']);
    const src = this.#ref(OP, 'src', o.src);
    const dst = this.#ref(OP, 'dst', o.dst);
    if (src.host && dst.host) throw new InvalidArgumentError(OP, 'dst', 'a copy between two host buffers is not GPU work');
    const srcOffset = o.srcOffset === undefined ? 0 : requireSize(OP, 'srcOffset', o.srcOffset);
    const dstOffset = o.dstOffset === undefined ? 0 : requireSize(OP, 'dstOffset', o.dstOffset);
    // An offset past the end is refused as such (else the default size would be negative).
    fits(OP, 'srcOffset', src, srcOffset, 0);
    fits(OP, 'dstOffset', dst, dstOffset, 0);
    const size =
      o.sizeBytes === undefined ? Math.min(src.sizeBytes - srcOffset, dst.sizeBytes - dstOffset) : requireSize(OP, 'sizeBytes', o.sizeBytes);
    fits(OP, 'srcOffset', src, srcOffset, size);
    fits(OP, 'dstOffset', dst, dstOffset, size);
    const dir: MemcpyDir = src.host ? 'HostToDevice' : dst.host ? 'DeviceToHost' : 'DeviceToDevice';
    const spec: NodeSpec = { kind: 'memcpy', dir, sizeBytes: size, name: o.name ?? `${src.name} → ${dst.name}`, ...common(OP, o, false) };
    return this.#add(OP, spec, { kind: 'memcpy', src, dst, srcOffset, dstOffset }, [src], [dst]);
  }

  /**
   * A fill of device buffer `dst` with `value` (`elementSize`-byte elements).
   * @throws InvalidArgumentError for a host buffer, a value that does not fit, or a bad range.
   */
  memset(dst: BufferRef, value: number, options?: MemsetNodeOptions): NodeId {
    const OP = 'GraphBuilder.memset';
    this.#open(OP);
    const d = this.#ref(OP, 'dst', dst);
    if (d.host) throw new InvalidArgumentError(OP, 'dst', `dst must be a device buffer; '${nameText(d.name)}' is host memory`);
    const o = requireOptions<MemsetNodeOptions>(OP, options, [...NODE_KEYS, 'elementSize', 'sizeBytes', 'offset']);
    const offset = o.offset === undefined ? 0 : requireSize(OP, 'offset', o.offset);
    fits(OP, 'offset', d, offset, 0);
    const size = o.sizeBytes === undefined ? d.sizeBytes - offset : requireSize(OP, 'sizeBytes', o.sizeBytes);
    fits(OP, 'offset', d, offset, size);
    const spec: NodeSpec = {
      kind: 'memset',
      sizeBytes: size,
      value,
      ...(o.elementSize !== undefined ? { elementSize: o.elementSize } : {}),
      name: o.name ?? `fill ${d.name}`,
      ...common(OP, o, false),
    };
    return this.#add(OP, spec, { kind: 'memset', dst: d, offset }, [], [d]);
  }

  /**
   * A host callback labelled `label`; `fn` is what it runs (or bind it when lowering, by label).
   * @throws InvalidArgumentError for an empty label or a non-function.
   */
  host(label: string, fn?: () => void, options?: HostNodeOptions): NodeId {
    const OP = 'GraphBuilder.host';
    this.#open(OP);
    if (fn !== undefined && typeof fn !== 'function') throw new InvalidArgumentError(OP, 'fn', `fn must be a function, got ${describe(fn)}`);
    const o = requireOptions<HostNodeOptions>(OP, options, [...NODE_KEYS, 'reads', 'writes']);
    const reads = this.#refs(OP, 'reads', o.reads);
    const writes = this.#refs(OP, 'writes', o.writes);
    return this.#add(OP, { kind: 'hostCallback', label, ...common(OP, o) }, { kind: 'hostCallback', fn: fn ?? null }, reads, writes);
  }

  /** An empty node: no work, a join point for `fanIn`/`fanOut`. */
  empty(name?: string, options?: NodeOptions): NodeId {
    const OP = 'GraphBuilder.empty';
    this.#open(OP);
    const o = requireOptions<NodeOptions>(OP, options, NODE_KEYS);
    const spec: NodeSpec = { kind: 'empty', ...(name !== undefined ? { name } : {}), ...common(OP, o, false) };
    return this.#add(OP, spec, { kind: 'empty' }, [], []);
  }

  /** Records event `event` (an integer id: the event bound when lowered) once the node's predecessors are done. */
  eventRecord(event: number, options?: NodeOptions): NodeId {
    const OP = 'GraphBuilder.eventRecord';
    this.#open(OP);
    const o = requireOptions<NodeOptions>(OP, options, NODE_KEYS);
    return this.#add(OP, { kind: 'eventRecord', event, ...common(OP, o) }, { kind: 'eventRecord' }, [], []);
  }

  /** Waits on event `event` before the node's successors run (the event is bound when lowered). */
  eventWait(event: number, options?: NodeOptions): NodeId {
    const OP = 'GraphBuilder.eventWait';
    this.#open(OP);
    const o = requireOptions<NodeOptions>(OP, options, NODE_KEYS);
    return this.#add(OP, { kind: 'eventWait', event, ...common(OP, o) }, { kind: 'eventWait' }, [], []);
  }

  /**
   * A child graph node running `child`: a `ComputeGraph` (copied), or what another builder's
   * `build()` returned (its bindings go with it). `reads` / `writes` give its data flow here.
   * @throws InvalidArgumentError for anything else, or a child holding allocation or free nodes (CUDA's rule).
   */
  childGraph(child: ComputeGraph | BuiltGraph, options?: ChildGraphNodeOptions): NodeId {
    const OP = 'GraphBuilder.childGraph';
    this.#open(OP);
    const o = requireOptions<ChildGraphNodeOptions>(OP, options, [...NODE_KEYS, 'reads', 'writes']);
    const { graph, bindings } = graphOf(OP, 'child', child);
    const reads = this.#refs(OP, 'reads', o.reads);
    const writes = this.#refs(OP, 'writes', o.writes);
    try {
      return this.#add(OP, { kind: 'childGraph', graph, ...common(OP, o) }, { kind: 'childGraph', bindings }, reads, writes);
    } catch (e) {
      // The checks name the spec's field `graph`; this call's argument is `child`.
      if (e instanceof InvalidArgumentError && e.parameter === 'graph') {
        throw new InvalidArgumentError(OP, 'child', `child${e.message.slice(OP.length + 2 + 'graph'.length)}`);
      }
      throw e;
    }
  }

  /**
   * A conditional node of `type` ('if': [then] or [then, else]; 'while': [body]; 'switch': one body
   * per case) whose bodies are `ComputeGraph`s (copied) or what other builders' `build()` returned
   * (their bindings go with them). `reads` / `writes` give the bodies' data flow here.
   * @throws InvalidArgumentError for a body that is neither, a wrong number of bodies, a body holding
   *   a node kind CUDA does not allow in one, a handle id already used in this graph, or a bad estimate.
   * @example
   * const loop = b.conditional('while', [step.build()], { estimate: 50, reads: [x], writes: [x] });
   */
  conditional(type: ConditionalType, bodies: readonly (ComputeGraph | BuiltGraph)[], options?: ConditionalNodeOptions): NodeId {
    const OP = 'GraphBuilder.conditional';
    this.#open(OP);
    const o = requireOptions<ConditionalNodeOptions>(OP, options, [...NODE_KEYS, 'handle', 'estimate', 'reads', 'writes']);
    if (!Array.isArray(bodies)) throw new InvalidArgumentError(OP, 'bodies', `bodies must be an array of graphs, got ${describe(bodies)}`);
    const given = (bodies as readonly unknown[]).map((body, i) => graphOf(OP, `bodies[${i}]`, body));
    const reads = this.#refs(OP, 'reads', o.reads);
    const writes = this.#refs(OP, 'writes', o.writes);
    const spec: NodeSpec = {
      kind: 'conditional',
      type,
      bodies: given.map((g) => g.graph),
      ...(o.handle !== undefined ? { handle: o.handle } : {}),
      ...(o.estimate !== undefined ? { estimate: o.estimate } : {}),
      ...common(OP, o),
    };
    return this.#add(OP, spec, { kind: 'conditional', bodies: given.map((g) => g.bindings) }, reads, writes);
  }

  /**
   * Declares `sizeBytes` of graph memory named `name`, allocated by a new allocation node; every
   * node using the buffer runs after it. Free it with `memFree` (or outside the graph after each launch).
   * @throws InvalidArgumentError for a used name, a bad size or device.
   */
  memAlloc(name: string, sizeBytes: number, options?: MemAllocNodeOptions): BufferRef {
    const OP = 'GraphBuilder.memAlloc';
    this.#open(OP);
    requireName(OP, 'name', name);
    requireInt(OP, 'sizeBytes', sizeBytes, 1, Number.MAX_SAFE_INTEGER);
    if (this.#buffers.has(name)) throw new InvalidArgumentError(OP, 'name', `a buffer named '${nameText(name)}' already exists`);
    const o = requireOptions<MemAllocNodeOptions>(OP, options, [...NODE_KEYS, 'device']);
    const spec: NodeSpec = { kind: 'memAlloc', sizeBytes, name: `alloc ${name}`, ...common(OP, o), ...(o.device !== undefined ? { device: o.device } : {}) };
    const id = addNodeAs(this.#graph, OP, spec);
    const ref: BufferRef = Object.freeze({ kind: 'buffer', name, sizeBytes, host: false, allocatedBy: id });
    this.#buffers.set(name, ref);
    this.#bindings.set(id, { kind: 'memAlloc', buffer: ref });
    if (this.#infer) this.#flow(id, [], [ref]);
    return ref;
  }

  /**
   * Frees graph memory `buffer` (from `memAlloc`) after every node that used it; the buffer
   * cannot be used afterwards.
   * @throws InvalidArgumentError for a buffer that is not graph memory of this builder, or freed already.
   */
  memFree(buffer: BufferRef, options?: NodeOptions): NodeId {
    const OP = 'GraphBuilder.memFree';
    this.#open(OP);
    const ref = this.#ref(OP, 'buffer', buffer);
    if (ref.allocatedBy === null) {
      throw new InvalidArgumentError(OP, 'buffer', `buffer '${nameText(ref.name)}' is not graph memory (declare it with memAlloc); CUDA's free nodes free only what allocation nodes allocated`);
    }
    const o = requireOptions<NodeOptions>(OP, options, NODE_KEYS);
    const id = this.#add(OP, { kind: 'memFree', alloc: ref.allocatedBy, name: `free ${ref.name}`, ...common(OP, o) }, { kind: 'memFree', buffer: ref }, [], [ref]);
    this.#freed.set(ref.name, id);
    return id;
  }

  /**
   * `to` runs after `from`; `data` makes the edge programmatic or picks its port (see
   * `ComputeGraph.addEdge`): a plain edge already there (one the builder inferred from the
   * buffers, say) takes the data, so a producer and its consumer can be joined programmatically.
   * Unlike the upstream builder (which drops a bad edge silently), a cycle or an unknown node throws.
   * @throws GraphError `CycleDetected` or `NodeNotFound`, naming `GraphBuilder.dep`; GraphError
   *   `GRAPH_EDGE_CONFLICT` when the edge has other, non-plain data; InvalidArgumentError for data
   *   against CUDA's rules. Nothing is changed.
   */
  dep(from: NodeId, to: NodeId, data?: EdgeSpec): this {
    const OP = 'GraphBuilder.dep';
    this.#open(OP);
    if (data === undefined || !upgradeEdgeAs(this.#graph, OP, from, to, data)) addEdgeAs(this.#graph, OP, from, to, data);
    return this;
  }

  /**
   * Each node runs after the one before it. All or nothing: every id is checked and the edges go in
   * at once, or none does.
   * @throws GraphError `CycleDetected` or `NodeNotFound` naming the element (`nodes[2]`); InvalidArgumentError for a non-array.
   */
  chain(nodes: readonly NodeId[]): this {
    const OP = 'GraphBuilder.chain';
    this.#open(OP);
    const ids = this.#ids(OP, 'nodes', nodes);
    const edges: EdgeArg[] = [];
    for (let i = 1; i < ids.length; i++) {
      edges.push({ from: ids[i - 1], to: ids[i], fromName: `nodes[${i - 1}]`, toName: `nodes[${i}]`, name: `nodes[${i - 1}], nodes[${i}]:` });
    }
    addEdgesAs(this.#graph, OP, edges);
    return this;
  }

  /**
   * `join` runs after every node of `preds`. All or nothing, as `chain`.
   * @throws GraphError `CycleDetected` or `NodeNotFound` naming the argument (`preds[1]`, `join`).
   */
  fanIn(preds: readonly NodeId[], join: NodeId): this {
    const OP = 'GraphBuilder.fanIn';
    this.#open(OP);
    const ids = this.#ids(OP, 'preds', preds);
    nodeIdAs(this.#graph, OP, 'join', join);
    addEdgesAs(this.#graph, OP, ids.map((p, i) => ({ from: p, to: join, fromName: `preds[${i}]`, toName: 'join', name: `preds[${i}], join:` })));
    return this;
  }

  /**
   * Every node of `succs` runs after `fork`. All or nothing, as `chain`.
   * @throws GraphError `CycleDetected` or `NodeNotFound` naming the argument (`fork`, `succs[1]`).
   */
  fanOut(fork: NodeId, succs: readonly NodeId[]): this {
    const OP = 'GraphBuilder.fanOut';
    this.#open(OP);
    nodeIdAs(this.#graph, OP, 'fork', fork);
    const ids = this.#ids(OP, 'succs', succs);
    addEdgesAs(this.#graph, OP, ids.map((x, i) => ({ from: fork, to: x, fromName: 'fork', toName: `succs[${i}]`, name: `fork, succs[${i}]:` })));
    return this;
  }

  /** The graph, its node bindings and its buffers. The builder is finished afterwards. */
  build(): BuiltGraph {
    this.#open('GraphBuilder.build');
    this.#built = true;
    // Frozen: `childGraph` and `conditional` take it by its brand, and then trust its fields.
    const built: BuiltGraph = Object.freeze({ graph: this.#graph, bindings: this.#bindings, buffers: Object.freeze([...this.#buffers.values()]) });
    BUILT.add(built);
    return built;
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  #open(op: string): void {
    if (this.#built) throw new GraphError('Internal', GraphErrorCode.BuilderBuilt, `${op}: build() was called; start a new GraphBuilder`);
  }

  #declare(op: string, name: string, sizeBytes: number, host: boolean): BufferRef {
    this.#open(op);
    requireName(op, 'name', name);
    requireInt(op, 'sizeBytes', sizeBytes, 1, Number.MAX_SAFE_INTEGER);
    if (this.#buffers.has(name)) throw new InvalidArgumentError(op, 'name', `a buffer named '${nameText(name)}' already exists`);
    const ref: BufferRef = Object.freeze({ kind: 'buffer', name, sizeBytes, host, allocatedBy: null });
    this.#buffers.set(name, ref);
    return ref;
  }

  #ref(op: string, name: string, value: unknown): BufferRef {
    const ref = value as BufferRef;
    if (typeof value !== 'object' || value === null || ref.kind !== 'buffer' || this.#buffers.get(ref.name) !== ref) {
      throw new InvalidArgumentError(op, name, `${name} must be a buffer declared on this builder, got ${describe(value)}`);
    }
    const freedBy = this.#freed.get(ref.name);
    if (freedBy !== undefined) throw new InvalidArgumentError(op, name, `buffer '${nameText(ref.name)}' was freed by node ${freedBy}; it cannot be used afterwards`);
    return ref;
  }

  /** An array of this builder's buffers, every index checked (a hole is refused, as `map` would skip it). */
  #refs(op: string, name: string, value: unknown): BufferRef[] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw new InvalidArgumentError(op, name, `${name} must be an array of buffers, got ${describe(value)}`);
    const refs: BufferRef[] = [];
    for (let i = 0; i < value.length; i++) refs.push(this.#ref(op, `${name}[${i}]`, value[i]));
    return refs;
  }

  #arg(op: string, name: string, a: unknown): ArgSpec {
    if (SCALARS.has(a as ScalarArg)) return a as ScalarArg;
    if (typeof a === 'object' && a !== null && (a as ScalarArg).kind === 'scalar') {
      throw new InvalidArgumentError(op, name, `${name} must be a scalar made by a builder (b.i32(…), b.f32(…), …) or a buffer declared on this builder, got a look-alike object`);
    }
    return this.#ref(op, name, a);
  }

  /** An array of ids, each naming a node (checked in order; a copy, so the caller cannot change it under us). */
  #ids(op: string, name: string, ids: unknown): unknown[] {
    if (!Array.isArray(ids)) throw new InvalidArgumentError(op, name, `${name} must be an array of node ids, got ${describe(ids)}`);
    const copy = [...(ids as unknown[])];
    copy.forEach((id, i) => nodeIdAs(this.#graph, op, `${name}[${i}]`, id));
    return copy;
  }

  /** Adds the node (checked as `addNode` checks, refusals naming `op`), its binding, and the data-flow edges into it. */
  #add(op: string, spec: NodeSpec, binding: NodeBinding, reads: readonly BufferRef[], writes: readonly BufferRef[]): NodeId {
    const id = addNodeAs(this.#graph, op, spec);
    this.#bindings.set(id, binding);
    if (this.#infer) this.#flow(id, reads, writes);
    return id;
  }

  #flow(id: number, reads: readonly BufferRef[], writes: readonly BufferRef[]): void {
    const g = this.#graph;
    const edge = (from: number | undefined): void => {
      if (from !== undefined && from !== id) g.addEdge(from as NodeId, id as NodeId);
    };
    for (const r of reads) edge(this.#lastWriter.get(r.name));
    for (const w of writes) {
      edge(this.#lastWriter.get(w.name));
      for (const r of this.#readers.get(w.name) ?? []) edge(r);
    }
    // A node may list thousands of buffers (a child graph over a model's weights): a set keeps this linear.
    const written = writes.length > 8 ? new Set(writes) : null;
    for (const r of reads) {
      if (written !== null ? written.has(r) : writes.includes(r)) continue;
      const list = this.#readers.get(r.name);
      if (list === undefined) this.#readers.set(r.name, [id]);
      else list.push(id);
    }
    for (const w of writes) {
      this.#lastWriter.set(w.name, id);
      this.#readers.set(w.name, []);
    }
  }
}

/** A graph argument (`name`) of `childGraph` or `conditional`: a `ComputeGraph`, or a `build()` result with a copy of its bindings. */
function graphOf(op: string, name: string, value: unknown): { graph: ComputeGraph; bindings: ReadonlyMap<NodeId, NodeBinding> | null } {
  if (isComputeGraph(value)) return { graph: value, bindings: null };
  if (BUILT.has(value as BuiltGraph)) return { graph: (value as BuiltGraph).graph, bindings: new Map((value as BuiltGraph).bindings) };
  throw new InvalidArgumentError(op, name, `${name} must be a ComputeGraph or what GraphBuilder.build() returned, got ${describe(value)}`);
}

function common(op: string, o: NodeOptions, withName = true): NodeSpecBase {
  return {
    ...(withName && o.name !== undefined ? { name: o.name } : {}),
    ...(o.stream !== undefined ? { stream: o.stream } : {}),
    ...(o.cost !== undefined ? { cost: requireNonNegativeFinite(op, 'cost', o.cost) } : {}),
  };
}

function fits(op: string, name: string, b: BufferRef, offset: number, size: number): void {
  if (offset > b.sizeBytes) {
    throw new InvalidArgumentError(op, name, `${name} ${offset} is past the end of buffer '${nameText(b.name)}' (${b.sizeBytes} bytes)`);
  }
  if (offset + size > b.sizeBytes) {
    throw new InvalidArgumentError(op, name, `${size} bytes at offset ${offset} do not fit in buffer '${nameText(b.name)}' (${b.sizeBytes} bytes)`);
  }
}

function requireNumber(op: string, value: unknown): number {
  if (typeof value !== 'number') throw new InvalidArgumentError(op, 'value', `value must be a number, got ${describe(value)}`);
  return value;
}

function bigArg(op: string, value: unknown, min: bigint, max: bigint): bigint {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
  else throw new InvalidArgumentError(op, 'value', `value must be a safe integer or a bigint, got ${describe(value)}`);
  if (v < min || v > max) throw new InvalidArgumentError(op, 'value', `value ${v} is out of range ${min}..${max}`);
  return v;
}
