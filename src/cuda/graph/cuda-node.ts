import { DisposedError, InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe } from '../../util/validate.js';
import { graph as gr } from '../../driver/result/index.js';
import { CU_GRAPH_NODE_TYPE } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { readContext, readNode } from './read-back.js';
import type { CapturedNodeInfo, GraphNodeType } from './node-info.js';
import type { Graph } from './graph.js';

/** Handles up to this value are kept as numbers (exactly). */
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** The graph memory an allocation node reserves: fixed when the node is added (`cuGraphAddMemAllocNode`). */
export interface GraphAllocation {
  /** The address every launch's allocation has (pass it as `arg.ptr(address)`). */
  readonly address: bigint;
  readonly byteLength: number;
  /** The device ordinal it lives on. */
  readonly device: number;
}

/** @internal What a node is, shared by the live nodes of one kind (`nodeKind`). */
export interface NodeKind {
  readonly type: GraphNodeType;
  readonly allocation: GraphAllocation | null;
  readonly removed: boolean;
}

const TYPES: readonly GraphNodeType[] = [...CU_GRAPH_NODE_TYPE, 'unknown'];
const kinds = (removed: boolean): Readonly<Record<GraphNodeType, NodeKind>> =>
  Object.freeze(Object.fromEntries(TYPES.map((type) => [type, Object.freeze({ type, allocation: null, removed })])) as Record<GraphNodeType, NodeKind>);
const LIVE = kinds(false);
const REMOVED = kinds(true);

/** @internal The kind of a live node: shared by every node of `type` without memory; its own for an allocation node. */
export function nodeKind(type: GraphNodeType, allocation: GraphAllocation | null = null): NodeKind {
  return allocation === null ? LIVE[type] : Object.freeze({ type, allocation: Object.freeze(allocation), removed: false });
}

/**
 * One node of a CUDA graph (`CUgraphNode`), as `graph.add…Node` returns it and `graph.nodeRefs()`
 * lists it: pass it as a dependency of later nodes, to `graph.addDependencies`, to an exec's
 * per-node setters (`exec.setKernelNodeParams(node, …)`), or to `capture.insert`. A node belongs
 * to one graph; `graph.removeNode(node)` or the graph's dispose ends it.
 *
 * @example
 * const a = g.addKernelNode(fill, { grid: 4, block: 256, args: [x, arg.u32(1), arg.i32(n)] });
 * const b = g.addMemcpyNode({ dst: host, src: x, byteLength: 4 * n }, [a]);
 * console.log(b.type, b.dependencies().map(String)); // 'memcpy' ['CudaNode(kernel #0)']
 */
export class CudaNode {
  /** The graph the node belongs to. */
  readonly graph: Graph;
  /**
   * The handle, as a number where that is exact (every handle on today's 64-bit systems, whose
   * addresses stay below 2^53): a graph of 10,000 nodes then keeps no BigInt per node, which would
   * cost as much again as the node object (measured in docs/graphs.md).
   */
  readonly #handle: number | bigint;
  /**
   * The node's kind, memory and whether it was removed, in one object that the live nodes of one
   * kind share (`nodeKind`): a node object then has three fields, not five (48 bytes, not 64), less
   * to make and to collect for the 10,000 nodes of a batch (docs/graphs.md). Replaced on removal.
   */
  #kind: NodeKind;

  /** @internal Made by the graph (`graph.add…Node`, `graph.nodeRefs()`); `kind` from `nodeKind`. */
  constructor(key: typeof INTERNAL, graph: Graph, handle: bigint | number, kind: NodeKind) {
    if (key !== INTERNAL) throw privateConstructorError('CudaNode', 'graph.add…Node() or graph.nodeRefs()');
    this.graph = graph;
    this.#handle = typeof handle === 'number' || handle > MAX_EXACT ? handle : Number(handle);
    this.#kind = kind;
  }

  /** The node's kind (`cuGraphNodeGetType`). */
  get type(): GraphNodeType {
    return this.#kind.type;
  }

  /** For an allocation node: the memory it reserves; null for every other kind. */
  get allocation(): GraphAllocation | null {
    return this.#kind.allocation;
  }

  /** @internal True for a CudaNode this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is CudaNode {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  /** @internal The node of `handle` in `graph`, its kind read from the driver. */
  static read(op: string, graph: Graph, handle: bigint): CudaNode {
    const type = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, handle)] ?? 'unknown';
    let allocation: GraphAllocation | null = null;
    if (type === 'memAlloc') {
      const p = gr.memAllocNodeParams(op, handle);
      allocation = { address: p.dptr, byteLength: p.bytesize, device: p.device };
    }
    return new CudaNode(INTERNAL, graph, handle, nodeKind(type, allocation));
  }

  /** The `CUgraphNode` handle. @throws DisposedError once removed or its graph is disposed. */
  get handle(): bigint {
    return this.handleFor('CudaNode.handle');
  }

  /**
   * @internal The handle for a holder of the graph (an exec of it): refused only once the node was
   * removed, not because the program disposed the graph the holder keeps.
   */
  handleWhileHeld(op: string): bigint {
    if (this.#kind.removed) throw new DisposedError(op, `${this} (removed from its graph, or its graph was destroyed)`);
    return this.#big();
  }

  #big(): bigint {
    const h = this.#handle;
    return typeof h === 'number' ? BigInt(h) : h;
  }

  /** @internal The handle as a number where exact, else the bigint (a key for the graph's map of nodes). */
  handleKey(): number | bigint {
    return this.#handle;
  }

  /** @internal The handle, alive or not (the graph's bookkeeping). */
  handleUnchecked(): bigint {
    return this.#big();
  }

  /** @internal The handle, checked alive for `op`. */
  handleFor(op: string): bigint {
    this.graph[LIFETIME].assertAlive(op);
    if (this.#kind.removed) throw new DisposedError(op, `${this} (removed from its graph)`);
    return this.#big();
  }

  /** @internal `handleFor` as `handleKey` gives it: a number where exact, so that no BigInt is made. */
  keyFor(op: string): number | bigint {
    this.graph[LIFETIME].assertAlive(op);
    if (this.#kind.removed) throw new DisposedError(op, `${this} (removed from its graph)`);
    return this.#handle;
  }

  /** True once removed from its graph, or once the graph is disposed. */
  get removed(): boolean {
    return this.#kind.removed || this.graph.disposed;
  }

  /** @internal Marks the node removed (`graph.removeNode`). */
  markRemoved(): void {
    const k = this.#kind;
    if (!k.removed) this.#kind = k.allocation === null ? REMOVED[k.type] : Object.freeze({ type: k.type, allocation: k.allocation, removed: true });
  }

  /**
   * The node's position in `graph.nodes()` (the driver's order; it changes when nodes are removed);
   * -1 once the node is removed or its graph disposed.
   */
  get index(): number {
    const op = 'CudaNode.index';
    if (this.removed) return -1;
    const h = this.handleFor(op);
    return gr.graphNodes(op, this.graph.handle).indexOf(h);
  }

  /** The node's kind and parameters, read from the driver (the same record as `graph.nodes()[index]`). */
  info(): CapturedNodeInfo {
    const op = 'CudaNode.info';
    const h = this.handleFor(op);
    return readNode(op, h, this.index, readContext());
  }

  /**
   * A conditional node's body graphs (`[then]`, `[then, else]`, `[body]` or the SWITCH cases, in
   * order); `[]` for every other kind.
   * @throws InvalidArgumentError for a conditional node cudagraph did not add (its bodies cannot be
   *   read back before CUDA 13.2).
   */
  bodies(): readonly Graph[] {
    const op = 'CudaNode.bodies';
    this.handleFor(op);
    if (this.type !== 'conditional') return [];
    const b = this.graph.bodiesOf(this);
    if (b === null) throw new InvalidArgumentError(op, 'node', `${this} was not added by cudagraph: a conditional node's bodies cannot be read back from the driver before CUDA 13.2`);
    return b;
  }

  /**
   * The id profiling tools (Nsight Systems, CUPTI) report for this node (`cuGraphNodeGetToolsId`).
   * @throws CudaError 801 (not supported) on a driver before CUDA 13.1, which lacks the call.
   */
  toolsId(): bigint {
    const op = 'CudaNode.toolsId';
    return gr.nodeToolsId(op, this.handleFor(op));
  }

  /**
   * The node's id within its graph, as `graph.debugDot()` prints it (`cuGraphNodeGetLocalId`).
   * @throws CudaError 801 (not supported) on a driver before CUDA 13.1, which lacks the call.
   */
  localId(): number {
    const op = 'CudaNode.localId';
    return gr.nodeLocalId(op, this.handleFor(op));
  }

  /** The nodes this one runs after (`cuGraphGetEdges_v2` of its graph). */
  dependencies(): CudaNode[] {
    return this.#neighbours('CudaNode.dependencies', true);
  }

  /** The nodes that run after this one. */
  dependents(): CudaNode[] {
    return this.#neighbours('CudaNode.dependents', false);
  }

  #neighbours(op: string, before: boolean): CudaNode[] {
    const h = this.handleFor(op);
    const out: CudaNode[] = [];
    for (const e of gr.graphEdges(op, this.graph.handle)) {
      if ((before ? e.to : e.from) === h) out.push(this.graph.nodeOf(op, before ? e.from : e.to));
    }
    return out;
  }

  toString(): string {
    return `CudaNode(${this.#kind.type}${this.#kind.removed ? ', removed' : ''})`;
  }
}

/**
 * Checks that `value` is a live node of `graph` and returns its handle.
 * @throws InvalidArgumentError for a non-node or a node of another graph; DisposedError for a removed one.
 */
export function nodeHandleIn(op: string, name: string, value: unknown, graph: Graph): bigint {
  refuseForeign(op, name, value, graph);
  return value.handleFor(op);
}

/** `nodeHandleIn`, the handle as `CudaNode.keyFor` gives it (a number where exact). */
export function nodeKeyIn(op: string, name: string, value: unknown, graph: Graph): number | bigint {
  refuseForeign(op, name, value, graph);
  return value.keyFor(op);
}

function refuseForeign(op: string, name: string, value: unknown, graph: Graph): asserts value is CudaNode {
  if (!CudaNode.is(value)) throw new InvalidArgumentError(op, name, `${name} must be a CudaNode (from graph.add…Node or graph.nodeRefs()), got ${describe(value)}`);
  if (value.graph !== graph) throw new InvalidArgumentError(op, name, `${name} is ${value} of another graph; a node can only be used with the graph it belongs to`);
}

/** The array of a one-dependency call, reused: the driver reads it during the call only. */
const one = new BigUint64Array(1);

/**
 * Checks a dependency list (`undefined` for none): an array of distinct live nodes of `graph`.
 * Returns their handles (an array the next call may reuse: pass it to the driver at once), or null for none.
 */
export function dependencyHandles(op: string, deps: unknown, graph: Graph, name = 'dependencies'): BigUint64Array | null {
  if (deps === undefined) return null;
  if (!Array.isArray(deps)) throw new InvalidArgumentError(op, name, `${name} must be an array of CudaNodes, got ${describe(deps)}`);
  if (deps.length === 0) return null;
  if (deps.length === 1) {
    // The name is made only where it is not the usual one: a string per call costs as much as the rest.
    one[0] = nodeHandleIn(op, name === 'dependencies' ? 'dependencies[0]' : `${name}[0]`, deps[0], graph);
    return one;
  }
  const out = new BigUint64Array(deps.length);
  const seen = new Set<bigint>();
  // An index loop, not forEach: a hole in the array is refused as the undefined it reads as.
  for (let i = 0; i < deps.length; i++) {
    const h = nodeHandleIn(op, `${name}[${i}]`, deps[i], graph);
    if (seen.has(h)) throw new InvalidArgumentError(op, `${name}[${i}]`, `${name}[${i}] repeats a node already listed; list each dependency once`);
    seen.add(h);
    out[i] = h;
  }
  return out;
}
