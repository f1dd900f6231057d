import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe, requireBoolean, requireInstance, requireOneOf, requireOptions } from '../../util/validate.js';
import type { CaptureMode } from '../capture/capture-mode.js';
import type { NotAPromise } from '../capture/capture-options.js';
import { graph as gr, graphBuild as gb } from '../../driver/result/index.js';
import { CUDA_GRAPH_INSTANTIATE_FLAG, CU_GRAPH_DEBUG_DOT_FLAGS, CU_GRAPH_DEPENDENCY_TYPE, CU_GRAPH_KERNEL_NODE_PORT, CU_GRAPH_NODE_TYPE } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { Lifetime, keepFailure, surfaceCleanupErrors, cleanupsDeferred } from '../core/lifetime.js';
import { Device } from '../device/device.js';
import { hostFunctionsExist } from '../host/host-function.js';
import type { ComputeGraph } from '../../model/compute-graph.js';
import { computeGraphOf, jsHostFunctionIdsOf, readBackHandle, readContext, readNode } from './read-back.js';
import type { Stream } from '../device/stream.js';
import { GraphExec } from './graph-exec.js';
import { checkInstantiateFlags, type InstantiateFlags } from './instantiate-flags.js';
import type { CapturedNodeInfo, GraphNodeType, GraphReadBack } from './node-info.js';
import { CudaNode, nodeKind, type GraphAllocation } from './cuda-node.js';
import type { HostFunction } from '../host/host-function.js';
import type { Kernel } from '../kernel/kernel.js';
import type { LaunchConfig } from '../kernel/launch-config.js';
import type { Event } from '../device/event.js';
import type { MemcpyNodeParams, Memcpy3DNodeParams, MemsetNodeParams } from './node-params.js';
import { addKernels, type KernelNodeEntry } from './kernel-batch.js';
import { forgetConditional } from './conditional-records.js';
import {
  BODY_NODE_KINDS,
  BODY_RULE,
  CONDITIONAL_GRAPH_RULE,
  addConditional,
  ifBodies,
  makeHandle,
  switchBodies,
  type ConditionalHandle,
  type ConditionalNode,
} from './conditional.js';
import {
  addAlloc, addChild, addCopy, addEdges, addEmpty, addEventNode, addFill, addFree, addHost, addKernel,
  clonedNode, cloneOf, isFreedElsewhere, removeEdges, removeNode, MEMORY_NODE_RULE, type NodeEdge,
} from './explicit-nodes.js';
import { brands, registerBrand } from '../core/brands.js';

/** `CU_GRAPH_DEBUG_DOT_FLAGS_*` by name: what `graph.debugDot({ flags })` adds to the DOT. */
export const DOT_FLAGS = CU_GRAPH_DEBUG_DOT_FLAGS;

/** A name of `DOT_FLAGS`. */
export type DotFlag = keyof typeof DOT_FLAGS;

/** A capture into a graph, as `graph.captureInto` drives it (a `StreamGraphCapture`). */
interface CaptureIntoGraph {
  endGraph(): Graph;
  dispose(): void;
}

/** `StreamGraphCapture.beginInto` for `op`, registered by its module (which imports this one). */
let beginInto: ((op: string, stream: Stream, graph: Graph, options: unknown) => CaptureIntoGraph) | null = null;

/** @internal Called once by the capture module. */
export function registerCaptureInto(fn: (op: string, stream: Stream, graph: Graph, options: unknown) => CaptureIntoGraph): void {
  beginInto = fn;
}

/**
 * A CUDA graph (`CUgraph`): the template a `GraphExec` is instantiated from. Captured graphs come
 * from `StreamGraphCapture` (`capture.endGraph()`, or `exec.graph`); `Graph.create` makes an empty
 * one. A graph keeps alive every buffer, module and pinned buffer its captured work touches.
 *
 * @example
 * const g = capture.endGraph();
 * const { nodes, edges } = g.readBack();   // real node kinds, kernel names and dependencies
 * console.log(g.debugDot());
 * using exec = g.instantiate();
 */
export class Graph {
  /** The device whose context the graph's work belongs to. */
  readonly device: Device;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  /** The host function of each JS host node (its id); null until read (known at once for lowered graphs). */
  #jsHostFunctions: readonly number[] | null = null;
  /** Counts the changes of the node set (nodes added or removed, a capture into the graph): an exec's setters name the nodes it had. */
  #structure = 0;
  /** Set once the `CUgraph` has been destroyed (by the Lifetime's cleanup or `destroyTemplateBeforeExec`). */
  readonly #destroyed = { done: false };
  /** What the graph's work uses, each held once (released when the graph is destroyed). */
  readonly #keep: Set<Lifetime>;
  /** The last `holds` list `attach` took (all in `#keep`, which only grows while the graph lives). */
  #lastHolds: readonly Lifetime[] | null = null;
  /** Host functions the graph made for plain JS callbacks (disposed with it). */
  readonly #owned: HostFunction[];
  /** The node object of each handle handed out, so one node is one object. */
  // Keyed by the handle as a number (an address below 2^53: exact), which hashes faster than a bigint.
  readonly #nodes = new Map<number, CudaNode>();
  /**
   * Nodes added since the map was last brought up to date: adding a node only pushes it here (a
   * loop adding thousands pays no map insert each); the first lookup moves them into the map.
   */
  readonly #added: CudaNode[] = [];
  /**
   * The same for the nodes of each `addKernelNodes` call, one array per call: a copy of the array
   * returned (which the program may change) costs far less than a push per node.
   */
  readonly #addedBatches: CudaNode[][] = [];
  /** Whether the graph has allocation or free nodes (CUDA's extra rules apply), null until known. */
  #memoryNodes: boolean | null;
  /** Live execs instantiated from this graph (a graph with memory nodes allows one). */
  #instantiations = 0;
  /** True while a stream capture records into this graph (`captureInto`, or the graph a capture hands out). */
  #capturing = false;
  /** `dispose()` was called while a capture recorded into the graph: it takes effect when the capture ends. */
  #disposeAfterCapture = false;
  /** Whether the graph has conditional nodes (CUDA's extra rules apply), null until known. */
  #conditionals: boolean | null;
  /** The body graphs of each conditional node cudagraph added (the driver owns them; they end with the node). */
  readonly #bodies = new Map<CudaNode, readonly Graph[]>();
  /** For a conditional body: the node it is a body of (the driver owns the `CUgraph`); else null. */
  #bodyOf: CudaNode | null = null;
  /**
   * The conditional handles made for this graph or a body inside it (the driver counts them all
   * with the outermost graph: each must serve a live node before it instantiates). Empty in bodies.
   */
  readonly #handles: ConditionalHandle[] = [];

  /**
   * @internal Wraps a `CUgraph` this object now owns; `held` are the resources its work uses
   * (already retained on its behalf; released when the graph is destroyed).
   */
  constructor(key: typeof INTERNAL, device: Device, handle: bigint, held: readonly Lifetime[], memoryNodes: boolean | null = null, body = false) {
    if (key !== INTERNAL) throw privateConstructorError('Graph', 'Graph.create() or a capture');
    this.device = device;
    this.#handle = handle;
    this.#memoryNodes = memoryNodes;
    // Known once cudagraph adds one; otherwise read from the driver when a rule needs it.
    this.#conditionals = null;
    const bodies = this.#bodies;
    const keep = new Set(held);
    const owned: HostFunction[] = [];
    this.#keep = keep;
    this.#owned = owned;
    const destroyed = this.#destroyed;
    const nodes = this.#nodes;
    const added = this.#added;
    const addedBatches = this.#addedBatches;
    this[LIFETIME] = new Lifetime(`Graph 0x${handle.toString(16)}`, this, () => {
      try {
        // A body's CUgraph is its node's: the driver destroys it with the node.
        if (!destroyed.done && !body) keepFailure(gr.graphDestroy('Graph.dispose', handle), 'Graph.dispose', 'cuGraphDestroy');
        destroyed.done = true;
      } finally {
        for (const [node, list] of bodies) {
          forgetConditional(node.handleUnchecked());
          for (const b of list) {
            b.forgetNestedConditionals();
            b[LIFETIME].dispose();
          }
        }
        bodies.clear();
        for (const n of nodes.values()) n.markRemoved();
        for (const n of added) n.markRemoved();
        for (const batch of addedBatches) for (const n of batch) n.markRemoved();
        nodes.clear();
        added.length = 0;
        addedBatches.length = 0;
        for (const l of keep) l.release();
        keep.clear();
        for (const h of owned.splice(0)) h.dispose();
      }
    });
  }

  /**
   * @internal Makes the node object of a node just added: the graph takes a hold on each of
   * `holds` it does not hold yet (so the user's variables may go), and forgets what it read once
   * (host functions, memory nodes) that the new node may change.
   */
  attach(handle: bigint | number, type: GraphNodeType, holds: readonly Lifetime[], allocation: GraphAllocation | null = null): CudaNode {
    // A loop adding nodes with one checked configuration hands the same list each time: taken once.
    if (holds !== this.#lastHolds) {
      for (const l of holds) {
        if (this.#keep.has(l)) continue;
        l.retain();
        this.#keep.add(l);
      }
      this.#lastHolds = holds;
    }
    const node = new CudaNode(INTERNAL, this, handle, nodeKind(type, allocation));
    this.#added.push(node);
    this.#jsHostFunctions = null;
    this.#structure++;
    if (type === 'memAlloc' || type === 'memFree') this.#memoryNodes = true;
    if (type === 'conditional') this.#conditionals = true;
    return node;
  }

  /** @internal Makes the body graphs of conditional node `node` just added (the driver's, owned by the node). */
  adoptBodies(node: CudaNode, handles: readonly bigint[]): readonly Graph[] {
    const bodies = Object.freeze(
      handles.map((h) => {
        const b = new Graph(INTERNAL, this.device, h, [], false, true);
        b.#bodyOf = node;
        return b;
      }),
    );
    this.#bodies.set(node, bodies);
    return bodies;
  }

  /**
   * @internal Forgets the conditional records of every conditional node inside this graph's bodies,
   * at every depth, now: the driver frees them with their node at once, while the body objects'
   * own cleanup may be deferred (a capture is active, an exec holds the graph).
   */
  forgetNestedConditionals(): void {
    for (const [node, list] of this.#bodies) {
      forgetConditional(node.handleUnchecked());
      for (const b of list) b.forgetNestedConditionals();
    }
  }

  /** @internal True when a capture records into a body of `node` (a conditional node of this graph), at any depth. */
  bodyCapturing(node: CudaNode): boolean {
    for (const b of this.#bodies.get(node) ?? []) {
      if (b.#capturing) return true;
      for (const inner of b.#bodies.keys()) if (b.bodyCapturing(inner)) return true;
    }
    return false;
  }

  /** @internal The bodies of a conditional node cudagraph added, or null for any other node. */
  bodiesOf(node: CudaNode): readonly Graph[] | null {
    return this.#bodies.get(node) ?? null;
  }

  /**
   * For a conditional body: the conditional node it is a body of (in the graph `bodyOf.graph`);
   * null for any other graph. A body lives as long as its node: its `dispose()` does nothing.
   */
  get bodyOf(): CudaNode | null {
    return this.#bodyOf;
  }

  /** @internal The outermost graph: this one, or the graph whose conditional node this body (at any depth) belongs to. */
  root(): Graph {
    let at: Graph = this;
    while (at.#bodyOf !== null) at = at.#bodyOf.graph;
    return at;
  }

  /** @internal Remembers a handle made for this graph or a body inside it (kept by the outermost graph). */
  noteHandle(handle: ConditionalHandle): void {
    this.root().#handles.push(handle);
  }

  /**
   * @internal The handles made for this graph or a body inside it that no live conditional node
   * uses (measured on the H200, CUDA 13.0: a handle whose node was removed, or made for a body whose
   * node was removed, still counts: the instantiation fails with CONDITIONAL_HANDLE_UNUSED).
   */
  unusedHandles(): ConditionalHandle[] {
    return this.root().#handles.filter((h) => h.node === null || h.node.removed);
  }

  /** @internal Handles made for a body (at any depth) of conditional node `node`: they cannot serve anything once it goes. */
  handlesInBodies(node: CudaNode): ConditionalHandle[] {
    const bodies = this.#bodies.get(node) ?? [];
    return this.root().#handles.filter((h) => bodies.some((b) => h.graph.withinGraph(b)));
  }

  /** @internal True when this graph is `g` or a body (at any depth) inside `g`. */
  withinGraph(g: Graph): boolean {
    let at: Graph | undefined = this;
    while (at !== undefined) {
      if (at === g) return true;
      at = at.#bodyOf?.graph;
    }
    return false;
  }

  /** @internal True when the graph has conditional nodes (read once from the driver when not known). */
  hasConditionalNodes(op: string): boolean {
    if (this.#conditionals === null) {
      this.#conditionals = gr.graphNodes(op, this.#handle).some((h) => CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)] === 'conditional');
    }
    return this.#conditionals;
  }

  /**
   * @internal `attach` for many nodes of one kind just added (`addKernelNodes`): the graph takes
   * each of `holds` once for all of them.
   */
  attachMany(handles: BigUint64Array, type: GraphNodeType, holds: readonly Lifetime[]): CudaNode[] {
    for (const l of holds) {
      if (this.#keep.has(l)) continue;
      l.retain();
      this.#keep.add(l);
    }
    const n = handles.length;
    const nodes = new Array<CudaNode>(n);
    const kind = nodeKind(type);
    // Each handle read as two 32-bit halves: reading a BigUint64Array element makes a BigInt, which
    // costs as much as the node object.
    const words = new Uint32Array(handles.buffer, handles.byteOffset, 2 * n);
    for (let i = 0; i < n; i++) {
      const hi = words[2 * i + 1]!;
      const handle = hi < 0x200000 ? words[2 * i]! + hi * 0x100000000 : handles[i]!;
      nodes[i] = new CudaNode(INTERNAL, this, handle, kind);
    }
    this.#addedBatches.push(nodes.slice());
    this.#jsHostFunctions = null;
    this.#structure++;
    return nodes;
  }

  /** @internal The handle, alive or not (for the capture that records into this graph). */
  handleUnchecked(): bigint {
    return this.#handle;
  }

  /**
   * @internal Marks the graph as being recorded into by a capture: `owned` false for the graph a
   * live capture hands out (the capture owns it until it ends), true for the user's own graph.
   */
  beginCapture(owned: boolean): void {
    this.#capturing = true;
    if (!owned) this.#destroyed.done = true;
  }

  /**
   * @internal The capture recording into this graph ended: with `handle` (this graph's) it
   * succeeded and the graph takes over `held` (already retained for it); with 0n it failed, and
   * a graph the capture owned is gone (this object is disposed; the user's own graph stays).
   */
  adoptCapture(handle: bigint, held: readonly Lifetime[], memoryNodes: boolean): void {
    if (!this.#capturing) {
      for (const l of held) l.release();
      return;
    }
    this.#capturing = false;
    this.#jsHostFunctions = null;
    this.#structure++;
    // What the capture recorded is not all known here (a failed capture may leave allocation nodes,
    // foreign code may add nodes): read the memory nodes again when they matter.
    this.#memoryNodes = memoryNodes ? true : null;
    if (handle === 0n) {
      if (this.#destroyed.done) this[LIFETIME].dispose();
    } else {
      this.#destroyed.done = false;
      this.keepAfterCapture(held);
    }
    if (this.#disposeAfterCapture) this[LIFETIME].dispose();
  }

  /** @internal Takes over holds a capture took for nodes it recorded into this graph (already retained for it). */
  keepAfterCapture(held: readonly Lifetime[]): void {
    for (const l of held) {
      if (this.#keep.has(l) || this[LIFETIME].disposed) l.release();
      else this.#keep.add(l);
    }
  }

  /** @internal Refuses `what` while a capture records into the graph. */
  refuseWhileCapturing(op: string, what: string): void {
    if (this.#capturing) throw new InvalidArgumentError(op, 'graph', `a stream capture is recording into this graph; ${what} after the capture ends (CUDA rule)`);
  }

  /** @internal A host function the graph made for a plain callback: disposed with the graph. */
  own(hf: HostFunction): void {
    this.#owned.push(hf);
  }

  /** The node map, with the nodes added since the last lookup moved in. */
  #nodeMap(): Map<number, CudaNode> {
    const added = this.#added;
    if (added.length !== 0) {
      for (const n of added) this.#nodes.set(Number(n.handleKey()), n);
      added.length = 0;
    }
    const batches = this.#addedBatches;
    if (batches.length !== 0) {
      for (const batch of batches) for (const n of batch) this.#nodes.set(Number(n.handleKey()), n);
      batches.length = 0;
    }
    return this.#nodes;
  }

  /** @internal The node object of `handle` (one per node). */
  nodeOf(op: string, handle: bigint): CudaNode {
    let n = this.#nodeMap().get(Number(handle));
    if (n === undefined) {
      n = CudaNode.read(op, this, handle);
      this.#nodes.set(Number(handle), n);
    }
    return n;
  }

  /** @internal Forgets a removed node. */
  forget(handle: bigint): void {
    const map = this.#nodeMap();
    const node = map.get(Number(handle));
    node?.markRemoved();
    if (node !== undefined && this.#bodies.has(node)) {
      forgetConditional(handle);
      for (const b of this.#bodies.get(node)!) {
        b.forgetNestedConditionals();
        b[LIFETIME].dispose();
      }
      this.#bodies.delete(node);
      // Read again when a rule needs it: this may have been the last one.
      this.#conditionals = null;
    }
    map.delete(Number(handle));
    this.#jsHostFunctions = null;
    this.#structure++;
  }

  /** @internal True when the graph has allocation or free nodes (read once from the driver when not known). */
  hasMemoryNodes(op: string): boolean {
    if (this.#memoryNodes === null) {
      this.#memoryNodes = gr.graphNodes(op, this.#handle).some((h) => {
        const t = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)];
        return t === 'memAlloc' || t === 'memFree';
      });
    }
    return this.#memoryNodes;
  }

  /**
   * @internal The addresses of allocations this graph makes and nothing frees: no free node of
   * this graph, and no free node cudagraph added to another graph. Each launch leaves them
   * allocated until freed, so the graph cannot be launched again before that.
   */
  unfreedAllocations(op: string): bigint[] {
    const allocs: bigint[] = [];
    const freed = new Set<bigint>();
    for (const h of gr.graphNodes(op, this.#handle)) {
      const t = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)];
      if (t === 'memAlloc') {
        const n = this.#nodeMap().get(Number(h));
        if (n === undefined || !isFreedElsewhere(n)) allocs.push(gr.memAllocNodeParams(op, h).dptr);
      } else if (t === 'memFree') freed.add(gr.memFreeNodeParams(op, h));
    }
    return allocs.filter((a) => !freed.has(a));
  }

  /** @internal The resources the graph holds (a clone takes the same). */
  heldLifetimes(): Lifetime[] {
    return [...this.#keep];
  }

  /** @internal Counts execs instantiated from this graph that are still alive. */
  noteInstantiation(delta: 1 | -1): void {
    this.#instantiations += delta;
  }

  /**
   * @internal For `GraphExec.dispose` of the exec that owns this graph and is its last holder:
   * destroys the `CUgraph` now, before the exec, keeping what its work uses alive until the
   * Lifetime's cleanup runs (after the exec is destroyed). The order matters for speed, not for
   * correctness: a capture made after destroying the template before its exec records nodes about a
   * quarter faster on CUDA 13.0 than one made after the reverse order (docs/ffi-decision.md).
   * Does nothing where the free would be deferred (a capture is active) or was already made.
   */
  destroyTemplateBeforeExec(op: string): void {
    if (this.#destroyed.done || cleanupsDeferred()) return;
    this.#destroyed.done = true;
    keepFailure(gr.graphDestroy(op, this.#handle), op, 'cuGraphDestroy');
  }

  /** @internal True for a Graph this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is Graph {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  static {
    registerBrand('Graph', Graph);
  }

  /** An empty graph on `device` (default: device 0) (`cuGraphCreate`). */
  static create(device?: Device): Graph {
    const op = 'Graph.create';
    if (device !== undefined) requireInstance(op, 'device', device, brands.Device);
    surfaceCleanupErrors(op);
    const d = device ?? Device.getFor(op, 0);
    makeCurrent(op, d.context);
    return new Graph(INTERNAL, d, gr.graphCreate(op), [], false);
  }

  /**
   * Adds a kernel node running `kernel` with `config` (grid, block, shared memory, typed
   * arguments, checked against the kernel's parameters), after `dependencies`
   * (`cuGraphAddKernelNode_v2`). The driver copies the argument values; the graph holds the
   * module and the buffers passed.
   * @throws InvalidArgumentError for a bad configuration, a kernel of another device, or a
   *   dependency that is not a node of this graph; DisposedError for a disposed graph, module,
   *   buffer or removed node; CudaError from the driver. Nothing is added on failure.
   */
  addKernelNode(kernel: Kernel, config: LaunchConfig, dependencies?: readonly CudaNode[]): CudaNode {
    return addKernel(this, kernel, config, dependencies);
  }

  /**
   * Adds many kernel nodes in one call, in order: each entry `{ kernel, config, after? }` as
   * `addKernelNode(kernel, config, dependencies)` takes it, where `after` lists nodes of this graph
   * or the indices of earlier entries (`after: [i - 1]` chains them). Every entry is checked before
   * the driver sees any; the nodes then go to the driver in one batch (one native call where the
   * addon is loaded), which makes building a large graph cost about what a C loop costs.
   * @example
   * const chain = g.addKernelNodes(steps.map((config, i) => ({ kernel: step, config, after: i ? [i - 1] : [] })));
   * @throws InvalidArgumentError naming the entry (`nodes[3].after[0]`) for a bad entry, a
   *   dependency that is not a node of this graph or an earlier entry, a repeated dependency; as
   *   `addKernelNode` for the rest. All or nothing: on any failure no node is added.
   */
  addKernelNodes(nodes: readonly KernelNodeEntry[]): CudaNode[] {
    return addKernels(this, nodes);
  }

  /**
   * Adds a copy (`cuGraphAddMemcpyNode`): 1-D (`{ dst, src, byteLength, dstOffset?, srcOffset? }`)
   * or pitched 2-D/3-D (`{ dst: { memory, pitch, offset?, rows? }, src: …, width, height, depth? }`).
   * Each side is a `DeviceBuffer` (of any device: two devices make a peer copy), a
   * `PinnedHostBuffer`, or an allocation node's graph memory; every direction is allowed.
   * @throws InvalidArgumentError for a copy past the end of its memory, a pitch below the width,
   *   a zero size; as `addKernelNode` for the rest.
   */
  addMemcpyNode(params: MemcpyNodeParams | Memcpy3DNodeParams, dependencies?: readonly CudaNode[]): CudaNode {
    return addCopy(this, params, dependencies);
  }

  /**
   * Adds a fill (`cuGraphAddMemsetNode`) of `count` elements of 1, 2 or 4 bytes; with `rows` and
   * `pitch`, a 2-D fill. `dst` is a `DeviceBuffer` or an allocation node.
   * @throws InvalidArgumentError for a value that does not fit the element, an unaligned offset or
   *   pitch, a fill past the end; as `addKernelNode` for the rest.
   */
  addMemsetNode(params: MemsetNodeParams, dependencies?: readonly CudaNode[]): CudaNode {
    return addFill(this, params, dependencies);
  }

  /**
   * Adds a host node calling `fn` on the JS thread (`cuGraphAddHostNode`). A plain function
   * becomes a `HostFunction` the graph owns (`options.label` names it); a `HostFunction` is held.
   * Host calls in a graph follow the rules of `HostFunction` (a call must not wait for the GPU).
   */
  addHostNode(fn: (() => void) | HostFunction, dependencies?: readonly CudaNode[], options?: { label?: string }): CudaNode {
    return addHost(this, fn, dependencies, options);
  }

  /** Adds an empty node (`cuGraphAddEmptyNode`): no work, a point to join or fan out dependencies. */
  addEmptyNode(dependencies?: readonly CudaNode[]): CudaNode {
    return addEmpty(this, dependencies);
  }

  /** Adds a node recording `event` (`cuGraphAddEventRecordNode`); the graph holds the event. */
  addEventRecordNode(event: Event, dependencies?: readonly CudaNode[]): CudaNode {
    return addEventNode(this, true, event, dependencies);
  }

  /** Adds a node waiting for `event` (`cuGraphAddEventWaitNode`); the graph holds the event. */
  addEventWaitNode(event: Event, dependencies?: readonly CudaNode[]): CudaNode {
    return addEventNode(this, false, event, dependencies);
  }

  /**
   * Adds a node running a copy of `child` (`cuGraphAddChildGraphNode`: later changes to `child`
   * do not reach it). The graph holds `child` and what its work uses.
   * @throws InvalidArgumentError for this graph itself, a graph of another device, or a child
   *   with allocation or free nodes (CUDA's rule).
   */
  addChildGraphNode(child: Graph, dependencies?: readonly CudaNode[]): CudaNode {
    return addChild(this, child, dependencies);
  }

  /**
   * Adds an allocation node (`cuGraphAddMemAllocNode`): `byteLength` bytes of graph memory on
   * the graph's device, whose address (`node.allocation.address`) is fixed now and valid for
   * the nodes that run after this one (and before its free). Pass it to kernels as
   * `arg.ptr(address)`, to copies and fills as the node itself.
   */
  addMemAllocNode(params: { byteLength: number }, dependencies?: readonly CudaNode[]): CudaNode {
    return addAlloc(this, params, dependencies);
  }

  /**
   * Adds a node freeing the memory of allocation node `alloc` (of this graph, or of another
   * graph whose launches allocate it) (`cuGraphAddMemFreeNode`).
   * @throws InvalidArgumentError for a node that is not an allocation node, or one already freed.
   */
  addMemFreeNode(alloc: CudaNode, dependencies?: readonly CudaNode[]): CudaNode {
    return addFree(this, alloc, dependencies);
  }

  /**
   * Makes a condition for one conditional node of this graph or of a body inside it
   * (`cuGraphConditionalHandleCreate`). It starts every launch at `default` (0 unless given);
   * with `{ assignDefault: false }` a launch starts with it undefined, for a kernel before the node to set.
   */
  conditionalHandle(options?: { default?: number; assignDefault?: boolean }): ConditionalHandle {
    return makeHandle(this, options);
  }

  /**
   * Adds an IF node (`cuGraphAddNode_v2`, `CU_GRAPH_COND_TYPE_IF`): `bodies[0]` runs when the
   * handle's condition is non-zero; with `{ else: true }`, `bodies[1]` runs when it is zero.
   * Fill the bodies with `add…Node` calls or `body.captureInto(stream, fn)`.
   * @throws InvalidArgumentError for a handle that is not this graph's (or its parents') or already
   *   serves a node; as `addKernelNode` for the dependencies.
   */
  addIfNode(handle: ConditionalHandle, options?: { else?: boolean }, dependencies?: readonly CudaNode[]): ConditionalNode {
    const op = 'Graph.addIfNode';
    return addConditional(op, this, 'if', handle, ifBodies(op, options), dependencies);
  }

  /**
   * Adds a WHILE node: its one body runs again and again while the handle's condition is non-zero
   * (tested before each run: with a default of 0 it never runs). A kernel in the body sets the
   * condition for the next round (`cudaGraphSetConditional`).
   * @throws as `addIfNode`.
   */
  addWhileNode(handle: ConditionalHandle, dependencies?: readonly CudaNode[]): ConditionalNode {
    return addConditional('Graph.addWhileNode', this, 'while', handle, 1, dependencies);
  }

  /**
   * Adds a SWITCH node with `cases` bodies: `bodies[v]` runs when the condition is `v`; none when
   * it is `cases` or more.
   * @throws as `addIfNode`, and for `cases` not an integer in 1..65535.
   */
  addSwitchNode(handle: ConditionalHandle, cases: number, dependencies?: readonly CudaNode[]): ConditionalNode {
    const op = 'Graph.addSwitchNode';
    return addConditional(op, this, 'switch', handle, switchBodies(op, cases), dependencies);
  }

  /**
   * Adds edges (`cuGraphAddDependencies_v2`): `[from, to]` makes `to` run after `from`;
   * `[from, to, { kind: 'programmatic', port }]` gives the edge data (as the model's edges).
   * @throws InvalidArgumentError for a node of another graph, an edge that exists, an edge that
   *   would close a cycle, edge data CUDA does not allow between those nodes. All or nothing.
   */
  addDependencies(edges: readonly NodeEdge[]): void {
    addEdges(this, edges);
  }

  /**
   * Removes edges (`cuGraphRemoveDependencies_v2`); each must exist, with the data given.
   * @throws InvalidArgumentError for an edge the graph lacks, or a graph with memory nodes (CUDA's rule).
   */
  removeDependencies(edges: readonly NodeEdge[]): void {
    removeEdges(this, edges);
  }

  /** Removes a node and its edges (`cuGraphDestroyNode`); the node object is then removed. */
  removeNode(node: CudaNode): void {
    removeNode(this, node);
  }

  /**
   * A copy of the graph (`cuGraphClone`) that holds what this one holds; `clone.clonedNode(n)`
   * finds the copy of node `n`.
   * @throws InvalidArgumentError for a graph with allocation or free nodes (CUDA's rule).
   */
  clone(): Graph {
    const { handle, held } = cloneOf(this);
    return new Graph(INTERNAL, this.device, handle, held, false);
  }

  /** The node of this clone that `original` (a node of the graph it was cloned from) became (`cuGraphNodeFindInClone`). */
  clonedNode(original: CudaNode): CudaNode {
    return clonedNode(this, original);
  }

  /**
   * Records the work `body` submits to `stream` as new nodes of this graph
   * (`cuStreamBeginCaptureToGraph`), the first of them after `options.dependencies` (nodes of
   * this graph; default none), and returns the nodes added. Fill a child graph or a loop body by
   * capture, then mix in explicit nodes. `body` runs synchronously; if it throws, the capture is
   * ended, the error propagates unchanged, and what was recorded before stays in the graph.
   * @throws InvalidArgumentError as `StreamGraphCapture.beginInto`, or for an async `body`;
   *   CudaError when ending the capture fails (901 names the first illegal call).
   */
  captureInto<R>(stream: Stream, body: (stream: Stream) => R & NotAPromise<R>, options?: { dependencies?: readonly CudaNode[]; mode?: CaptureMode }): CudaNode[] {
    return this.captureIntoFor('Graph.captureInto', stream, body, options);
  }

  /** @internal `captureInto` for a caller that names its own operation in errors (a conditional body's capture). */
  captureIntoFor(op: string, stream: Stream, body: (stream: Stream) => void, options?: unknown): CudaNode[] {
    this[LIFETIME].assertAlive(op);
    if (typeof body !== 'function') throw new InvalidArgumentError(op, 'body', `body must be a function (stream) => void, got ${describe(body)}`);
    if (beginInto === null) throw new InvalidArgumentError(op, 'stream', 'stream capture is not loaded');
    const before = new Set(gr.graphNodes(op, this.#handle));
    const cap = beginInto(op, stream, this, options);
    let result: unknown;
    try {
      result = body(stream);
    } catch (e) {
      cap.dispose();
      // A body keeps what was recorded before the error, unless CUDA would refuse it there.
      if (this.#bodyOf !== null && !this.disposed) {
        try {
          const added = gr.graphNodes(op, this.#handle).filter((h) => !before.has(h));
          if (this.#disallowedInBody(op, added) !== null) this.#dropRecorded(op, added);
        } catch {
          // The body's own error stands.
        }
      }
      throw e;
    }
    if (typeof (result as { then?: unknown } | null)?.then === 'function') {
      cap.dispose();
      throw new InvalidArgumentError(op, 'body', 'body returned a promise: captureInto records synchronous work only (await inside a capture lets other code submit to the stream); use GraphCaptureGuard for async bodies');
    }
    cap.endGraph();
    this[LIFETIME].assertAlive(op);
    const added = gr.graphNodes(op, this.#handle).filter((h) => !before.has(h));
    if (this.#bodyOf !== null) this.#refuseCapturedInBody(op, added);
    return added.map((h) => this.nodeOf(op, h));
  }

  /** The kind CUDA does not allow in a body among `nodes` and the child graphs they run, or null. */
  #disallowedInBody(op: string, nodes: readonly bigint[]): string | null {
    for (const h of nodes) {
      const t = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)] ?? 'unknown';
      if (!BODY_NODE_KINDS.includes(t)) return t;
      if (t === 'graph') {
        const inner = this.#disallowedInBody(op, gr.graphNodes(op, gr.childGraphNodeGraph(op, h)));
        if (inner !== null) return `${inner} (in a child graph)`;
      }
    }
    return null;
  }

  /** Removes `nodes` (just recorded into this body), newest first, and forgets their objects. */
  #dropRecorded(op: string, nodes: readonly bigint[]): void {
    for (const h of [...nodes].reverse()) {
      try {
        gb.destroyNode(op, h);
        this.forget(h);
      } catch {
        // Best effort: the refusal or the body's own error stands.
      }
    }
  }

  /**
   * A capture into a conditional body that recorded a node kind CUDA does not allow there (a host
   * function, an external event, a graph allocation) is refused as a whole: its nodes are removed
   * again, so the body is as it was before the capture.
   */
  #refuseCapturedInBody(op: string, added: readonly bigint[]): void {
    const bad = this.#disallowedInBody(op, added);
    if (bad === null) return;
    this.#dropRecorded(op, added);
    throw new InvalidArgumentError(op, 'body', `the graph is a body of ${this.#bodyOf}, and ${BODY_RULE}: the capture recorded a ${bad} node (nothing it recorded was kept)`);
  }

  /** Every node as a `CudaNode`, in the driver's order (node `i` is `nodes()[i]`). */
  nodeRefs(): CudaNode[] {
    const op = 'Graph.nodeRefs';
    this[LIFETIME].assertAlive(op);
    return gr.graphNodes(op, this.#handle).map((h) => this.nodeOf(op, h));
  }

  /** Every edge with its nodes and data (`cuGraphGetEdges_v2`). */
  edgeRefs(): Array<{ from: CudaNode; to: CudaNode; kind: 'plain' | 'programmatic'; port: 'completion' | 'trigger' | 'launchOrder' }> {
    const op = 'Graph.edgeRefs';
    this[LIFETIME].assertAlive(op);
    return gr.graphEdges(op, this.#handle).map((e) => ({
      from: this.nodeOf(op, e.from),
      to: this.nodeOf(op, e.to),
      kind: e.type === CU_GRAPH_DEPENDENCY_TYPE.PROGRAMMATIC ? 'programmatic' : 'plain',
      port: e.fromPort === CU_GRAPH_KERNEL_NODE_PORT.PROGRAMMATIC ? 'trigger' : e.fromPort === CU_GRAPH_KERNEL_NODE_PORT.LAUNCH_ORDER ? 'launchOrder' : 'completion',
    }));
  }

  /** The `CUgraph` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('Graph.handle');
    return this.#handle;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /** Number of nodes (`cuGraphGetNodes`); 0 after dispose (every node object is then removed). */
  get nodeCount(): number {
    const op = 'Graph.nodeCount';
    if (this[LIFETIME].disposed) return 0;
    this[LIFETIME].assertAlive(op);
    return gr.graphNodeCount(op, this.#handle);
  }

  /** The nodes with their kinds and parameters (see `readBack`). */
  nodes(): CapturedNodeInfo[] {
    return [...this.#readBack('Graph.nodes').nodes];
  }

  /** The dependency edges `[from, to]` as indices into `nodes()` (`cuGraphGetEdges_v2`). */
  edges(): Array<[number, number]> {
    return this.#readBack('Graph.edges').edges.map(([a, b]) => [a, b]);
  }

  /**
   * Reads the graph back from the driver: every node with its kind, kernel name and launch shape
   * (`cuGraphKernelNodeGetParams_v2` + `cuFuncGetName`), copy and memset parameters, and the
   * real dependency edges (`cuGraphGetEdges_v2`), not a chain.
   */
  readBack(): GraphReadBack {
    return this.#readBack('Graph.readBack');
  }

  /** `readBack` for the public call `op`, which its errors name. */
  #readBack(op: string): GraphReadBack {
    this[LIFETIME].assertAlive(op);
    return readBackHandle(op, this.#handle);
  }

  /**
   * The graph as the model's `ComputeGraph`, from `readBack()`: the driver's nodes (in its order:
   * node `i` is `readBack().nodes[i]`) and its real edges, so the model's queries, schedules, DOT
   * and JSON work on what was really captured or built.
   *
   * Kinds map as: kernel → `'kernel'` (the function's name, launch shape); memcpy → `'memcpy'` with
   * the direction from the memory types and the byte count; memset → `'memset'` (bytes, value,
   * element size); host → `'hostCallback'` labelled with the `HostFunction`'s label (`'host'` for a
   * foreign one); empty → `'empty'`; event record / wait → `'eventRecord'` / `'eventWait'` (events
   * numbered 0, 1, … in the order first seen); child graph → `'childGraph'` (read back too);
   * allocation / free → `'memAlloc'` / `'memFree'` (a free of an allocation of the same graph
   * names that node). Edges keep their data (programmatic edges, ports). Kinds the model has no
   * record for (conditional, external semaphores, batch memory operations, a host-to-host copy)
   * become `'empty'` nodes named after the kind, so the dependencies through them are kept.
   * @throws DisposedError after dispose; CudaError from the driver.
   */
  toComputeGraph(): ComputeGraph {
    return computeGraphOf(this.#readBack('Graph.toComputeGraph'));
  }

  /** @internal Counts the changes of the node set so far; an exec compares it with the count when it was instantiated. */
  get structureVersion(): number {
    return this.#structure;
  }

  /**
   * @internal The host functions one launch of this graph calls: the id (`userData`) of each host
   * node that calls the cudagraph trampoline. Read once, and only while host functions exist.
   */
  jsHostFunctionIds(op: string): readonly number[] {
    if (this.#jsHostFunctions !== null) return this.#jsHostFunctions;
    if (!hostFunctionsExist()) return [];
    this.#jsHostFunctions = Object.freeze(jsHostFunctionIdsOf(op, this.#handle));
    return this.#jsHostFunctions;
  }

  /** @internal Sets the host functions of a graph built node by node (lowering knows them). */
  setJsHostFunctionIds(ids: readonly number[]): void {
    this.#jsHostFunctions = Object.freeze([...ids]);
  }

  /** @internal A node's description for error messages: `#3 (kernel 'axpy')`. */
  describeNode(op: string, node: bigint): string {
    try {
      const handles = gr.graphNodes(op, this.#handle);
      const i = handles.indexOf(node);
      const info = readNode(op, node, i, readContext());
      const what = info.kernel ? `kernel '${info.kernel.name}'` : info.type;
      return i >= 0 ? `#${i} (${what})` : `(${what}, not a node of this graph)`;
    } catch {
      return `0x${node.toString(16)}`;
    }
  }

  /**
   * The graph as Graphviz DOT, written by the driver (`cuGraphDebugDotPrint`) to a temporary
   * file and read back. `verbose` adds every node's parameters; `flags` picks what to add, by the
   * names of `DOT_FLAGS` (`CU_GRAPH_DEBUG_DOT_FLAGS_*`), e.g. `['kernelNodeParams', 'handles']`.
   */
  debugDot(options?: { verbose?: boolean; flags?: readonly DotFlag[] }): string {
    const op = 'Graph.debugDot';
    this[LIFETIME].assertAlive(op);
    const o = requireOptions<{ verbose: boolean; flags: readonly DotFlag[] }>(op, options, ['verbose', 'flags']);
    const verbose = o.verbose === undefined ? false : requireBoolean(op, 'verbose', o.verbose);
    let bits = verbose ? DOT_FLAGS.verbose : 0;
    if (o.flags !== undefined) {
      if (!Array.isArray(o.flags)) throw new InvalidArgumentError(op, 'flags', `flags must be an array of ${Object.keys(DOT_FLAGS).join(', ')}, got ${describe(o.flags)}`);
      o.flags.forEach((f: unknown, i) => {
        bits |= DOT_FLAGS[requireOneOf(op, `flags[${i}]`, f, Object.keys(DOT_FLAGS) as DotFlag[])];
      });
    }
    const dir = mkdtempSync(join(tmpdir(), 'cudagraph-dot-'));
    try {
      const path = join(dir, 'graph.dot');
      gr.graphDebugDotPrint(op, this.#handle, path, bits);
      return readFileSync(path, 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * Instantiates the graph into a launchable `GraphExec`. The exec keeps this graph (and what it
   * holds) alive; `exec.launch()` defaults to `stream`, else the device's default stream (as it
   * is now: the exec keeps that stream as its default).
   * @throws InvalidArgumentError for bad flags or a non-Stream; DisposedError for a disposed graph or
   *   stream; CudaError naming the instantiation result and the failing node.
   */
  instantiate(flags?: InstantiateFlags, stream?: Stream): GraphExec {
    const op = 'Graph.instantiate';
    if (stream !== undefined) requireInstance(op, 'stream', stream, brands.Stream).handleFor(op);
    return this.instantiateFor(op, flags, stream ?? null, false);
  }

  /** @internal Instantiation shared with `StreamGraphCapture.end`; `owns` makes the exec dispose this graph with itself. */
  instantiateFor(op: string, flags: unknown, stream: Stream | null, owns: boolean): GraphExec {
    this[LIFETIME].assertAlive(op);
    this.refuseWhileCapturing(op, 'instantiate it');
    const f = checkInstantiateFlags(op, flags);
    makeCurrent(op, this.device.context);
    const upload = f.upload !== null ? f.upload.handleFor(op) : null;
    if (this.#bodyOf !== null) {
      throw new InvalidArgumentError(op, 'graph', `the graph is a body of ${this.#bodyOf}: it runs inside that node; instantiate the graph that holds it`);
    }
    const memory = this.hasMemoryNodes(op);
    if (memory && this.#instantiations > 0) {
      throw new InvalidArgumentError(op, 'graph', `the graph is already instantiated (an exec of it is alive; dispose it first): ${MEMORY_NODE_RULE}`);
    }
    const unused = this.unusedHandles();
    if (unused.length > 0) {
      throw new InvalidArgumentError(op, 'graph', `${unused.map(String).join(', ')} ${unused.length === 1 ? 'was' : 'were'} made for this graph but serve${unused.length === 1 ? 's' : ''} no conditional node: CUDA refuses to instantiate a graph with an unused handle (CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED); add the node, or make handles only for nodes you add`);
    }
    if (this.#instantiations > 0 && this.hasConditionalNodes(op)) {
      throw new InvalidArgumentError(op, 'graph', `the graph is already instantiated (an exec of it is alive; dispose it first): ${CONDITIONAL_GRAPH_RULE}`);
    }
    // The exec's default stream is fixed now: the given one, else the device's default stream.
    const launchOn = stream ?? this.device.stream();
    const unfreed = memory && (f.bits & CUDA_GRAPH_INSTANTIATE_FLAG.AUTO_FREE_ON_LAUNCH) === 0 ? this.unfreedAllocations(op) : [];
    const exec = gr.graphInstantiate(op, this.#handle, f.bits, upload, (n) => this.describeNode(op, n));
    return new GraphExec(INTERNAL, this, exec, launchOn, owns, unfreed);
  }

  /**
   * Destroys the graph, once no `GraphExec` holds it; then releases the resources its work used.
   * Idempotent; never throws.
   */
  dispose(): void {
    // A body is its conditional node's: it ends with the node (removed, or its graph disposed).
    if (this.#bodyOf !== null) return;
    // A capture recording into the graph still adds nodes to it: the graph goes when the capture ends.
    if (this.#capturing) {
      this.#disposeAfterCapture = true;
      return;
    }
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
