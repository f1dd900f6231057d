/**
 * `ExecGraph`: the CPU model of an instantiated CUDA graph (`CUgraphExec`) and of its in-place
 * update (`cuGraphExecUpdate`). Instantiating snapshots a `ComputeGraph` (nodes, edges, execution
 * order); `diff` says what a new graph changes and whether the executable could take it in place,
 * and which result the driver would report; `update` applies it or refuses with the reason.
 *
 * Nodes are paired by id (the driver pairs them by the order they were created or captured, which
 * is what ids are). The rules are the driver's (cuda.h, `cuGraphExecUpdate`), as measured on CUDA
 * 13.0 by the GPU tests (test/gpu/update.test.ts; docs/conformance.md has the table):
 *
 * - the node count and every node's dependencies must stay (else `TOPOLOGY_CHANGED`);
 * - a node's kind must stay (else `NODE_TYPE_CHANGED`);
 * - kernels may change function, launch shape, shared memory (and arguments, which a
 *   `ComputeGraph` does not hold); host callbacks may change function; memsets may change value;
 * - a copy may not change direction (its memory types: `PARAMETERS_CHANGED`);
 * - sizes: see `UpdateRules`.
 */
import { GraphError } from '../errors/graph-error.js';
import { InvalidArgumentError, privateConstructorError } from '../errors/base.js';
import { describe, isU32, requireOneOf, requireOptions, requireU32 } from '../util/validate.js';
import { GraphErrorCode } from './error-codes.js';
import { requireGraph, type ComputeGraph } from './compute-graph.js';
import { GraphStore } from './graph-store.js';
import { appendNodeSpec } from './node-spec.js';
import { NODE_KINDS } from './node.js';
import { nameText } from './bounded-text.js';
import { memcpyDirName } from './memcpy-dir.js';
import type { GraphNode } from './node.js';
import type { NodeId } from './ids.js';

/** The `CUgraphExecUpdateResult` names the model predicts. */
export type ExecUpdateResult =
  | 'CU_GRAPH_EXEC_UPDATE_SUCCESS'
  | 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED'
  | 'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED'
  | 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED';

/**
 * Which size changes an update may make. `'cuda'` (the default): what the CUDA 13.0 driver was
 * measured to accept; `'fixed-size'`: no size change at all (the stricter rules of the upstream model).
 */
export type UpdateRules = 'cuda' | 'fixed-size';

/** Options of `ExecGraph.instantiate`. */
export interface ExecGraphOptions {
  /** Default `'cuda'`. */
  readonly rules?: UpdateRules;
}

/** A node the executable cannot take in place, and why. */
export interface NonUpdatableChange {
  readonly node: NodeId;
  /** e.g. `node 3: a memcpy cannot change direction (HostToDevice → DeviceToHost)`. */
  readonly reason: string;
  /** The result the driver reports for it. */
  readonly result: ExecUpdateResult;
}

/** What `diff` finds. */
export interface ExecGraphDiff {
  /** The new graph has another number of nodes. */
  readonly nodeCountChanged: boolean;
  /** The node count or some node's dependencies differ. */
  readonly topologyChanged: boolean;
  /** Nodes whose parameters changed in a way an update can take, ascending. */
  readonly changedParams: readonly NodeId[];
  /** Nodes that changed in a way an update cannot take, ascending. */
  readonly nonUpdatable: readonly NonUpdatableChange[];
  /** Nothing changed. */
  readonly identical: boolean;
  /** `update` would succeed. */
  readonly updatable: boolean;
  /** Why not, or null when updatable. */
  readonly reason: string | null;
  /** The result `cuGraphExecUpdate` is predicted to report (the first failure it checks). */
  readonly result: ExecUpdateResult;
}

/** A parameter update of one node (`ExecGraph.updateNode`), as `cuGraphExec*NodeSetParams` allow. */
export type NodeParamUpdate =
  | { readonly kind: 'kernel'; readonly functionName?: string; readonly grid?: readonly [number, number, number]; readonly block?: readonly [number, number, number]; readonly sharedMem?: number }
  | { readonly kind: 'memset'; readonly value: number };

/** Proves a constructor call comes from `ExecGraph.instantiate`. */
const CONSTRUCT = Symbol('ExecGraph.instantiate');

/** The fields `updateNode` takes, by the kind of node it updates. */
const UPDATE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  kernel: ['kind', 'functionName', 'grid', 'block', 'sharedMem'],
  memset: ['kind', 'value'],
};

const SUCCESS: ExecUpdateResult = 'CU_GRAPH_EXEC_UPDATE_SUCCESS';
const TOPOLOGY: ExecUpdateResult = 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED';
const NODE_TYPE: ExecUpdateResult = 'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED';
const PARAMETERS: ExecUpdateResult = 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED';

const same3 = (a: readonly number[], b: readonly number[]): boolean => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

/**
 * Compares node `a` (instantiated) with `b` (new): `null` when equal in every parameter CUDA
 * keeps, `'params'` for an update the rules allow, or the refusal.
 */
function compareNode(a: GraphNode, b: GraphNode, rules: UpdateRules): null | 'params' | { reason: string; result: ExecUpdateResult } {
  const id = a.id;
  if (a.kind !== b.kind) return { reason: `node ${id}: its kind changed (${a.kind} → ${b.kind})`, result: NODE_TYPE };
  switch (a.kind) {
    case 'kernel': {
      const k = b as typeof a;
      const same = a.functionName === k.functionName && same3(a.grid, k.grid) && same3(a.block, k.block) && a.sharedMem === k.sharedMem;
      return same ? null : 'params';
    }
    case 'memset': {
      const m = b as typeof a;
      if (a.sizeBytes !== m.sizeBytes || a.elementSize !== m.elementSize) {
        if (rules === 'fixed-size') {
          return { reason: `node ${id}: a memset cannot change its size (${a.sizeBytes} → ${m.sizeBytes} bytes)`, result: PARAMETERS };
        }
        return 'params';
      }
      return a.value === m.value ? null : 'params';
    }
    case 'memcpy': {
      const c = b as typeof a;
      if (memcpyDirName(a.dir) !== memcpyDirName(c.dir)) {
        return { reason: `node ${id}: a memcpy cannot change direction (${memcpyDirName(a.dir)} → ${memcpyDirName(c.dir)})`, result: PARAMETERS };
      }
      if (a.sizeBytes === c.sizeBytes) return null;
      if (rules === 'fixed-size') return { reason: `node ${id}: a memcpy cannot change its size (${a.sizeBytes} → ${c.sizeBytes} bytes)`, result: PARAMETERS };
      return 'params';
    }
    case 'hostCallback':
      return a.label === (b as typeof a).label ? null : 'params';
    case 'empty':
      return null;
  }
}

/**
 * An instantiated graph, modelled: the snapshot `cuGraphInstantiate` would take, and the rules of
 * `cuGraphExecUpdate`.
 *
 * @example
 * const exec = ExecGraph.instantiate(graph);
 * const d = exec.diff(changed);           // { updatable, reason, result, changedParams, … }
 * if (d.updatable) exec.update(changed);  // else rebuild: ExecGraph.instantiate(changed)
 */
export class ExecGraph {
  /** The update rules this executable follows. */
  readonly rules: UpdateRules;
  #nodes: GraphNode[];
  /** Edge keys `from · n + to`, ascending (the order `ComputeGraph.edges()` gives). */
  readonly #edges: Float64Array;
  readonly #order: readonly NodeId[];
  #updates = 0;

  /** Made by `ExecGraph.instantiate` only (`key` proves it; `new ExecGraph()` is refused). */
  private constructor(key: symbol, graph: ComputeGraph, rules: UpdateRules) {
    if (key !== CONSTRUCT) throw privateConstructorError('ExecGraph', 'ExecGraph.instantiate(graph)');
    this.rules = rules;
    this.#nodes = graph.nodes();
    this.#edges = edgeKeys(graph);
    this.#order = graph.topologicalOrder();
  }

  /**
   * Snapshots `graph` (later changes to it do not reach the executable).
   * @throws GraphError `EmptyGraph` for a graph without nodes (as `cuGraphInstantiate` of an empty
   *   template is pointless and the upstream refuses it); InvalidArgumentError for bad options.
   */
  static instantiate(graph: ComputeGraph, options?: ExecGraphOptions): ExecGraph {
    const OP = 'ExecGraph.instantiate';
    requireGraph(OP, 'graph', graph);
    const o = requireOptions<ExecGraphOptions>(OP, options, ['rules']);
    const rules = o.rules === undefined ? 'cuda' : requireOneOf(OP, 'rules', o.rules, ['cuda', 'fixed-size'] as const);
    if (graph.nodeCount() === 0) throw new GraphError('EmptyGraph', GraphErrorCode.Empty, `${OP}: the graph has no nodes`);
    return new ExecGraph(CONSTRUCT, graph, rules);
  }

  /** Number of nodes. */
  nodeCount(): number {
    return this.#nodes.length;
  }

  /** Number of edges. */
  edgeCount(): number {
    return this.#edges.length;
  }

  /** The order the nodes were scheduled in at instantiation (a topological order); updates keep it. */
  executionOrder(): NodeId[] {
    return [...this.#order];
  }

  /** Successful `update`/`updateNode` calls so far. */
  get updateCount(): number {
    return this.#updates;
  }

  /** The executable's record of node `id` (a copy). @throws GraphError `NodeNotFound`. */
  node(id: NodeId): GraphNode {
    return structuredClone(this.#nodes[this.#id('ExecGraph.node', id)]!);
  }

  /** Whether the executable has the edge `from → to`. @throws GraphError `NodeNotFound`. */
  hasEdge(from: NodeId, to: NodeId): boolean {
    const n = this.#nodes.length;
    const key = this.#id('ExecGraph.hasEdge', from) * n + this.#id('ExecGraph.hasEdge', to);
    let lo = 0;
    let hi = this.#edges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.#edges[mid]!;
      if (v === key) return true;
      if (v < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /**
   * What updating with `graph` would do. O(n + m).
   * @throws GraphError `EmptyGraph` when `graph` has no nodes.
   */
  diff(graph: ComputeGraph): ExecGraphDiff {
    const OP = 'ExecGraph.diff';
    requireGraph(OP, 'graph', graph);
    if (graph.nodeCount() === 0) throw new GraphError('EmptyGraph', GraphErrorCode.Empty, `${OP}: the graph has no nodes`);
    return this.#diff(graph, graph.nodes());
  }

  #diff(graph: ComputeGraph, nodes: GraphNode[]): ExecGraphDiff {
    const n = this.#nodes.length;
    if (nodes.length !== n) {
      return {
        nodeCountChanged: true,
        topologyChanged: true,
        changedParams: [],
        nonUpdatable: [],
        identical: false,
        updatable: false,
        reason: `the node count changed (${n} → ${nodes.length}); an update needs the same topology`,
        result: TOPOLOGY,
      };
    }
    const edges = edgeKeys(graph);
    let topologyChanged = edges.length !== this.#edges.length;
    for (let i = 0; !topologyChanged && i < edges.length; i++) if (edges[i] !== this.#edges[i]) topologyChanged = true;
    const changedParams: NodeId[] = [];
    const nonUpdatable: NonUpdatableChange[] = [];
    for (let v = 0; v < n; v++) {
      const c = compareNode(this.#nodes[v]!, nodes[v]!, this.rules);
      if (c === null) continue;
      if (c === 'params') changedParams.push(v as NodeId);
      else nonUpdatable.push({ node: v as NodeId, reason: c.reason, result: c.result });
    }
    const first = nonUpdatable[0];
    const reason = topologyChanged
      ? `the dependencies changed (${this.#edges.length} → ${edges.length} edges, or other edges); an update needs the same topology`
      : first !== undefined
        ? `${nonUpdatable.length} node(s) changed in a way an update cannot take; ${first.reason}`
        : null;
    return {
      nodeCountChanged: false,
      topologyChanged,
      changedParams,
      nonUpdatable,
      identical: !topologyChanged && changedParams.length === 0 && nonUpdatable.length === 0,
      updatable: reason === null,
      reason,
      result: topologyChanged ? TOPOLOGY : first !== undefined ? first.result : SUCCESS,
    };
  }

  /**
   * Takes `graph`'s parameters in place (`cuGraphExecUpdate`); returns the diff that was applied.
   * @throws GraphError kind `UpdateNotPossible` (code `UPDATE_NOT_POSSIBLE`) with the reason when the
   *   update is not possible (the executable is unchanged); `EmptyGraph` for a graph without nodes.
   */
  update(graph: ComputeGraph): ExecGraphDiff {
    const OP = 'ExecGraph.update';
    requireGraph(OP, 'graph', graph);
    if (graph.nodeCount() === 0) throw new GraphError('EmptyGraph', GraphErrorCode.Empty, `${OP}: the graph has no nodes`);
    const nodes = graph.nodes();
    const d = this.#diff(graph, nodes);
    if (!d.updatable) throw new GraphError('UpdateNotPossible', GraphErrorCode.UpdateNotPossible, `${OP}: ${d.reason} (${d.result})`);
    this.#nodes = nodes;
    this.#updates++;
    return d;
  }

  /**
   * Changes one node's parameters (`cuGraphExecKernelNodeSetParams` / `…MemsetNodeSetParams`).
   * @throws GraphError `NodeNotFound`; kind `UpdateNotPossible` when the update targets another kind
   *   of node or a kind that takes no update; InvalidArgumentError for a field the update does not
   *   take (`update.gird`) and for bad values (same limits as `addNode`, named `update.grid[0]`).
   *   A refused update changes nothing and is not counted.
   */
  updateNode(id: NodeId, update: NodeParamUpdate): void {
    const OP = 'ExecGraph.updateNode';
    const v = this.#id(OP, id);
    if (typeof update !== 'object' || update === null || Array.isArray(update)) {
      throw new InvalidArgumentError(OP, 'update', `update must be an object, got ${describe(update)}`);
    }
    const u = update as Record<string, unknown>;
    const kind = requireOneOf(OP, 'update.kind', u.kind, NODE_KINDS);
    const node = this.#nodes[v]!;
    if (node.kind !== kind) {
      throw new GraphError('UpdateNotPossible', GraphErrorCode.UpdateNotPossible, `${OP}: node ${v} is a '${node.kind}' node but the update targets '${kind}'`);
    }
    const fields = UPDATE_FIELDS[kind];
    if (fields === undefined) {
      throw new GraphError('UpdateNotPossible', GraphErrorCode.UpdateNotPossible, `${OP}: '${node.kind}' nodes take no parameter update`);
    }
    // A field the driver call does not take is a mistake, not something to ignore (and count).
    for (const key of Object.keys(u)) {
      if (!fields.includes(key)) {
        throw new InvalidArgumentError(OP, `update.${nameText(key)}`, `update.${nameText(key)} is not a field of a '${kind}' update (known: ${fields.join(', ')})`);
      }
    }
    // Check the new values with the graph's own checks, refusals naming this call: build the node alone.
    const probe = new GraphStore();
    let next: GraphNode;
    if (node.kind === 'kernel') {
      appendNodeSpec(probe, OP, 'update.', {
        kind: 'kernel',
        name: node.name,
        // A field left out keeps its value; one given (null included) is checked.
        functionName: u.functionName === undefined ? node.functionName : u.functionName,
        grid: u.grid === undefined ? node.grid : u.grid,
        block: u.block === undefined ? node.block : u.block,
        sharedMem: u.sharedMem === undefined ? node.sharedMem : u.sharedMem,
      });
      next = { ...node, ...probe.readNode(0), id: node.id, stream: node.stream, cost: node.cost } as GraphNode;
    } else {
      const m = node as Extract<GraphNode, { kind: 'memset' }>;
      appendNodeSpec(probe, OP, 'update.', { kind: 'memset', sizeBytes: m.sizeBytes, elementSize: m.elementSize, value: u.value });
      next = { ...m, value: u.value as number };
    }
    this.#nodes[v] = next;
    this.#updates++;
  }

  /** `ExecGraph(4 nodes, 4 edges)`. */
  toString(): string {
    return `ExecGraph(${this.nodeCount()} nodes, ${this.edgeCount()} edges)`;
  }

  #id(op: string, id: unknown): number {
    const v = isU32(id) ? id : requireU32(op, 'id', id);
    if (v >= this.#nodes.length) {
      throw new GraphError('NodeNotFound', GraphErrorCode.NodeNotFound, `${op}: node ${v} not found (the executable has ${this.#nodes.length} nodes)`);
    }
    return v;
  }
}


/** The edges as ascending numeric keys `from · n + to` (exact below 2^53). */
function edgeKeys(graph: ComputeGraph): Float64Array {
  const n = graph.nodeCount();
  const edges = graph.edges();
  const keys = new Float64Array(edges.length);
  for (let i = 0; i < edges.length; i++) keys[i] = edges[i]![0] * n + edges[i]![1];
  return keys;
}
