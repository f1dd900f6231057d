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
 * - sizes: see `UpdateRules`;
 * - event record and wait nodes may change their event;
 * - a child graph must keep its topology (`TOPOLOGY_CHANGED`), and its nodes follow these rules
 *   recursively;
 * - an allocation node may change its size in a whole-graph update (measured on CUDA 13.0), not
 *   its device; a free node may not change what it frees (`PARAMETERS_CHANGED`); neither takes a
 *   per-node update (`cuGraphExecNodeSetParams`: API unsupported);
 * - a conditional node may not change its type, its number of bodies or its handle
 *   (`PARAMETERS_CHANGED`: cuda.h, "changing node parameters is not supported"); its handle's
 *   default value and flag may change (the update takes them); each body must keep its topology
 *   and its nodes follow these rules recursively, as a child graph's; it takes no per-node update;
 * - an edge may not change its data (plain ↔ programmatic, its port): `TOPOLOGY_CHANGED`.
 *
 * The rules for the kinds beyond kernel, copy, fill, host and empty are cuda.h's documentation of
 * `cuGraphExecUpdate` and `cuGraphExecNodeSetParams`.
 *
 * It also models what an executable holding graph memory allows: the free nodes must be ordered
 * after their allocations (else instantiation is refused), and an allocation the graph does not
 * free must be freed before the next launch, unless the executable frees it on launch
 * (`autoFreeOnLaunch`, CUDA's `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`).
 */
import { GraphError } from '../errors/graph-error.js';
import { InvalidArgumentError, privateConstructorError } from '../errors/base.js';
import { describe, isU32, requireBoolean, requireOneOf, requireOptions, requireU32 } from '../util/validate.js';
import { GraphErrorCode } from './error-codes.js';
import { requireGraph, type ComputeGraph } from './compute-graph.js';
import { GraphStore } from './graph-store.js';
import { appendNodeSpec } from './node-spec.js';
import { NODE_KINDS } from './node.js';
import { nameText } from './bounded-text.js';
import { memcpyDirName } from './memcpy-dir.js';
import { edgeCode } from './edge-data.js';
import { bodyLabel } from './conditional.js';
import type { ConditionalNodeRecord, GraphNode } from './node.js';
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
  /**
   * Free the allocations the graph does not free itself when it is launched again (CUDA's
   * `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`). Default false: they must be freed first.
   */
  readonly autoFreeOnLaunch?: boolean;
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
  | { readonly kind: 'memset'; readonly value: number }
  | { readonly kind: 'memcpy'; readonly sizeBytes: number }
  | { readonly kind: 'hostCallback'; readonly label: string }
  | { readonly kind: 'eventRecord'; readonly event: number }
  | { readonly kind: 'eventWait'; readonly event: number }
  | { readonly kind: 'childGraph'; readonly graph: ComputeGraph };

/** Proves a constructor call comes from `ExecGraph.instantiate`. */
const CONSTRUCT = Symbol('ExecGraph.instantiate');

/** The fields `updateNode` takes, by the kind of node it updates. */
const UPDATE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  kernel: ['kind', 'functionName', 'grid', 'block', 'sharedMem'],
  memset: ['kind', 'value'],
  memcpy: ['kind', 'sizeBytes'],
  hostCallback: ['kind', 'label'],
  eventRecord: ['kind', 'event'],
  eventWait: ['kind', 'event'],
  childGraph: ['kind', 'graph'],
};

/** Why the kinds without a per-node update take none. */
const NO_UPDATE: Readonly<Record<string, string>> = {
  empty: 'an empty node has no parameters',
  memAlloc: 'CUDA has no update for allocation nodes (cuGraphExecNodeSetParams: API unsupported)',
  memFree: 'CUDA has no update for free nodes (cuGraphExecNodeSetParams: API unsupported)',
  conditional: 'CUDA has no per-node update for conditional nodes (cuGraphExecNodeSetParams lists none); change their bodies with a whole-graph update',
};

/** The kinds `cuGraphNodeSetEnabled` takes. */
const ENABLE_KINDS: readonly string[] = ['kernel', 'memset', 'memcpy'];

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
    case 'eventRecord':
    case 'eventWait':
      return a.event === (b as typeof a).event ? null : 'params';
    case 'childGraph': {
      const c = compareGraphs(a.graph, (b as typeof a).graph, rules);
      if (c === null || c === 'params') return c;
      return { reason: `node ${id} (a child graph): ${c.reason}`, result: c.result };
    }
    case 'memAlloc': {
      const m = b as typeof a;
      if (a.device !== m.device) {
        return { reason: `node ${id}: an allocation node cannot move to another device (${a.device} → ${m.device})`, result: PARAMETERS };
      }
      // The CUDA 13.0 driver was measured to take a new size in a whole-graph update.
      return a.sizeBytes === m.sizeBytes ? null : 'params';
    }
    case 'memFree': {
      const m = b as typeof a;
      if (a.alloc === m.alloc) return null;
      return { reason: `node ${id}: a free node cannot change what it frees (node ${a.alloc ?? 'outside'} → ${m.alloc ?? 'outside'}); CUDA has no update for it`, result: PARAMETERS };
    }
    case 'conditional':
      return compareConditional(a, b as typeof a, rules);
  }
}

/**
 * Compares two conditional nodes as an update would: type, body count and handle must stay; the
 * handle's default and flag may change; each body is compared as a child graph is.
 */
function compareConditional(a: ConditionalNodeRecord, b: ConditionalNodeRecord, rules: UpdateRules): null | 'params' | { reason: string; result: ExecUpdateResult } {
  const id = a.id;
  const fixed = (what: string, from: string | number, to: string | number) => ({
    reason: `node ${id}: a conditional node cannot change its ${what} (${from} → ${to}); CUDA does not update a conditional node's parameters`,
    result: PARAMETERS,
  });
  if (a.type !== b.type) return fixed('type', `'${a.type}'`, `'${b.type}'`);
  if (a.bodies.length !== b.bodies.length) return fixed('number of bodies', a.bodies.length, b.bodies.length);
  if (a.handle.id !== b.handle.id) return fixed('handle', a.handle.id, b.handle.id);
  let changed = a.handle.default !== b.handle.default || a.handle.assignDefault !== b.handle.assignDefault;
  for (let i = 0; i < a.bodies.length; i++) {
    const c = compareGraphs(a.bodies[i]!, b.bodies[i]!, rules);
    if (c === 'params') changed = true;
    else if (c !== null) return { reason: `node ${id} (a conditional node), its ${bodyLabel(a.type, i)} (bodies[${i}]): ${c.reason}`, result: c.result };
  }
  return changed ? 'params' : null;
}

/**
 * Compares two graphs as an update would (a child graph's old and new graph): their topology, then
 * node by node. `null` when equal, `'params'` when an update can take the change, else the first refusal.
 */
function compareGraphs(a: ComputeGraph, b: ComputeGraph, rules: UpdateRules): null | 'params' | { reason: string; result: ExecUpdateResult } {
  // Read-only children are shared: the same graph is equal to itself, without walking it.
  if (a === b) return null;
  if (a.nodeCount() !== b.nodeCount()) {
    return { reason: `the node count changed (${a.nodeCount()} → ${b.nodeCount()}); an update needs the same topology`, result: TOPOLOGY };
  }
  const ea = edgeKeys(a);
  const eb = edgeKeys(b);
  if (!sameKeys(ea, eb)) return { reason: `the dependencies changed; an update needs the same topology`, result: TOPOLOGY };
  const na = a.nodes();
  const nb = b.nodes();
  let changed = false;
  for (let v = 0; v < na.length; v++) {
    const c = compareNode(na[v]!, nb[v]!, rules);
    if (c === 'params') changed = true;
    else if (c !== null) return c;
  }
  return changed ? 'params' : null;
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
  /** Whether a relaunch frees the allocations the graph leaves unfreed (see `ExecGraphOptions`). */
  readonly autoFreeOnLaunch: boolean;
  #nodes: GraphNode[];
  /** Edge keys (see `edgeKeys`), in the order `ComputeGraph.edgeRecords()` gives. */
  readonly #edges: EdgeKeys;
  readonly #order: readonly NodeId[];
  #updates = 0;
  /** Nodes turned off with `setNodeEnabled`. */
  readonly #disabled = new Set<number>();
  /** Allocation nodes no free node of the graph frees. */
  readonly #unfreed: readonly NodeId[];
  /** Of those, the ones the last launch allocated and nothing has freed yet. */
  readonly #outstanding = new Set<number>();
  #launches = 0;

  /** Made by `ExecGraph.instantiate` only (`key` proves it; `new ExecGraph()` is refused). */
  private constructor(key: symbol, graph: ComputeGraph, rules: UpdateRules, autoFreeOnLaunch: boolean) {
    if (key !== CONSTRUCT) throw privateConstructorError('ExecGraph', 'ExecGraph.instantiate(graph)');
    this.rules = rules;
    this.autoFreeOnLaunch = autoFreeOnLaunch;
    this.#nodes = graph.nodes();
    this.#edges = edgeKeys(graph);
    this.#order = graph.topologicalOrder();
    const freed = new Set<number>();
    for (const n of this.#nodes) if (n.kind === 'memFree' && n.alloc !== null) freed.add(n.alloc);
    this.#unfreed = this.#nodes.filter((n) => n.kind === 'memAlloc' && !freed.has(n.id)).map((n) => n.id);
  }

  /**
   * Snapshots `graph` (later changes to it do not reach the executable).
   * @throws GraphError `EmptyGraph` for a graph without nodes (as `cuGraphInstantiate` of an empty
   *   template is pointless and the upstream refuses it); GraphError kind `InvalidPlan` (code
   *   `GRAPH_MEMORY_ORDER`) when a free node is not ordered after the allocation it frees (the
   *   memory would be freed before it exists); InvalidArgumentError for bad options.
   */
  static instantiate(graph: ComputeGraph, options?: ExecGraphOptions): ExecGraph {
    const OP = 'ExecGraph.instantiate';
    requireGraph(OP, 'graph', graph);
    const o = requireOptions<ExecGraphOptions>(OP, options, ['rules', 'autoFreeOnLaunch']);
    const rules = o.rules === undefined ? 'cuda' : requireOneOf(OP, 'rules', o.rules, ['cuda', 'fixed-size'] as const);
    const autoFree = o.autoFreeOnLaunch === undefined ? false : requireBoolean(OP, 'autoFreeOnLaunch', o.autoFreeOnLaunch);
    if (graph.nodeCount() === 0) throw new GraphError('EmptyGraph', GraphErrorCode.Empty, `${OP}: the graph has no nodes`);
    for (const n of graph.nodes()) {
      if (n.kind === 'memFree' && n.alloc !== null && !graph.isReachable(n.alloc, n.id)) {
        throw new GraphError(
          'InvalidPlan',
          GraphErrorCode.MemoryOrder,
          `${OP}: free node ${n.id} is not ordered after allocation node ${n.alloc} (no path ${n.alloc} → ${n.id}); add an edge so that the memory exists before it is freed`,
        );
      }
    }
    return new ExecGraph(CONSTRUCT, graph, rules, autoFree);
  }

  /** Number of nodes. */
  nodeCount(): number {
    return this.#nodes.length;
  }

  /** Number of edges. */
  edgeCount(): number {
    return this.#edges.pairs.length;
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
    const n = this.#nodes[this.#id('ExecGraph.node', id)]!;
    // Child graphs and bodies are read-only, so they are shared; structuredClone would drop their class.
    if (n.kind === 'childGraph') return { ...n };
    if (n.kind === 'conditional') return { ...n, bodies: [...n.bodies] };
    return structuredClone(n);
  }

  /** Whether the executable has the edge `from → to`. @throws GraphError `NodeNotFound`. */
  hasEdge(from: NodeId, to: NodeId): boolean {
    const n = this.#nodes.length;
    const key = this.#id('ExecGraph.hasEdge', from) * n + this.#id('ExecGraph.hasEdge', to);
    const keys = this.#edges.pairs;
    let lo = 0;
    let hi = keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = keys[mid]!;
      if (v === key) return true;
      if (v < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /**
   * Turns node `id` off or on for later launches (`cuGraphNodeSetEnabled`): a disabled node does
   * no work, but its dependencies still order the graph. Updates keep the setting.
   * @throws GraphError `NodeNotFound`; kind `UpdateNotPossible` for a node other than a kernel,
   *   memset or memcpy (the only kinds CUDA can disable); InvalidArgumentError for a non-boolean.
   */
  setNodeEnabled(id: NodeId, enabled: boolean): void {
    const OP = 'ExecGraph.setNodeEnabled';
    const v = this.#id(OP, id);
    const on = requireBoolean(OP, 'enabled', enabled);
    const kind = this.#nodes[v]!.kind;
    if (!ENABLE_KINDS.includes(kind)) {
      throw new GraphError(
        'UpdateNotPossible',
        GraphErrorCode.UpdateNotPossible,
        `${OP}: node ${v} is a '${kind}' node; CUDA enables and disables only kernel, memset and memcpy nodes`,
      );
    }
    if (on) this.#disabled.delete(v);
    else this.#disabled.add(v);
  }

  /** Whether node `id` runs when the executable is launched (see `setNodeEnabled`). @throws GraphError `NodeNotFound`. */
  isNodeEnabled(id: NodeId): boolean {
    return !this.#disabled.has(this.#id('ExecGraph.isNodeEnabled', id));
  }

  /** The allocation nodes no free node of the graph frees: their memory outlives each launch, until freed outside the graph. */
  unfreedAllocations(): NodeId[] {
    return [...this.#unfreed];
  }

  /** The allocations the last launch made that nothing has freed yet (see `freeAllocation`), ascending. */
  outstandingAllocations(): NodeId[] {
    return [...this.#outstanding].sort((a, b) => a - b) as NodeId[];
  }

  /** Launches so far. */
  get launchCount(): number {
    return this.#launches;
  }

  /**
   * A launch, as far as graph memory is concerned: the graph's unfreed allocations are allocated
   * again, so the last launch's must have been freed (`freeAllocation`), unless the executable frees
   * them on launch (`autoFreeOnLaunch`).
   * @throws GraphError kind `InvalidPlan` (code `GRAPH_ALLOCATION_NOT_FREED`) naming the allocation
   *   still outstanding; nothing changes.
   */
  launch(): void {
    const OP = 'ExecGraph.launch';
    if (this.#outstanding.size > 0 && !this.autoFreeOnLaunch) {
      const first = this.outstandingAllocations()[0]!;
      throw new GraphError(
        'InvalidPlan',
        GraphErrorCode.AllocationNotFreed,
        `${OP}: allocation node ${first}'s memory from the last launch is not freed (${this.#outstanding.size} allocation(s) outstanding); free it first, or instantiate with autoFreeOnLaunch`,
      );
    }
    this.#outstanding.clear();
    for (const a of this.#unfreed) this.#outstanding.add(a);
    this.#launches++;
  }

  /**
   * Records that allocation node `id`'s memory from the last launch was freed outside the graph
   * (`cuMemFreeAsync`, or a free node of another graph).
   * @throws GraphError `NodeNotFound`; kind `InvalidPlan` (code `GRAPH_ALLOCATION_NOT_FREED`) when
   *   the node has no outstanding allocation (not an allocation node the graph leaves unfreed, not
   *   launched since, or already freed).
   */
  freeAllocation(id: NodeId): void {
    const OP = 'ExecGraph.freeAllocation';
    const v = this.#id(OP, id);
    if (!this.#outstanding.has(v)) {
      const n = this.#nodes[v]!;
      const why =
        n.kind !== 'memAlloc'
          ? `node ${v} is a '${n.kind}' node, not an allocation node`
          : !this.#unfreed.includes(v as NodeId)
            ? `the graph frees node ${v}'s memory itself`
            : `node ${v}'s memory is not allocated (${this.#launches === 0 ? 'the executable was never launched' : 'it was freed already'})`;
      throw new GraphError('InvalidPlan', GraphErrorCode.AllocationNotFreed, `${OP}: nothing to free: ${why}`);
    }
    this.#outstanding.delete(v);
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
    const topologyChanged = !sameKeys(edges, this.#edges);
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
      ? `the dependencies changed (${this.#edges.pairs.length} → ${edges.pairs.length} edges, or other edges or edge data); an update needs the same topology`
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
   * Changes one node's parameters, as the driver's per-node setters do
   * (`cuGraphExecKernelNodeSetParams`, `…MemsetNodeSetParams`, `…MemcpyNodeSetParams`,
   * `…HostNodeSetParams`, `…EventRecordNodeSetEvent`, `…EventWaitNodeSetEvent`,
   * `…ChildGraphNodeSetParams`).
   * @throws GraphError `NodeNotFound`; kind `UpdateNotPossible` when the update targets another kind
   *   of node, a kind that takes no update (empty, allocation, free and conditional nodes), a copy's size under
   *   `'fixed-size'` rules, or a child graph of another topology or with changes its nodes cannot
   *   take (the reason names the child's node); InvalidArgumentError for a field the update does
   *   not take (`update.gird`) and for bad values (same limits as `addNode`, named
   *   `update.grid[0]`). A refused update changes nothing and is not counted.
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
      throw new GraphError('UpdateNotPossible', GraphErrorCode.UpdateNotPossible, `${OP}: '${node.kind}' nodes take no parameter update: ${NO_UPDATE[kind]}`);
    }
    // A field the driver call does not take is a mistake, not something to ignore (and count).
    for (const key of Object.keys(u)) {
      if (!fields.includes(key)) {
        throw new InvalidArgumentError(OP, `update.${nameText(key)}`, `update.${nameText(key)} is not a field of a '${kind}' update (known: ${fields.join(', ')})`);
      }
    }
    if (!Object.keys(u).some((key) => key !== 'kind' && u[key] !== undefined)) {
      throw new InvalidArgumentError(OP, 'update', `update changes nothing: give at least one of ${fields.filter((f) => f !== 'kind').join(', ')}`);
    }
    // The new record, checked with the graph's own checks (refusals naming this call): the node is
    // rebuilt alone from its fields with the update's in place, then compared as an update would.
    const next = this.#updated(OP, node, u);
    const c = compareNode(node, next, this.rules);
    if (c !== null && c !== 'params') throw new GraphError('UpdateNotPossible', GraphErrorCode.UpdateNotPossible, `${OP}: ${c.reason} (${c.result})`);
    this.#nodes[v] = next;
    this.#updates++;
  }

  /** `node` with the fields of `u` (already known to be the kind's) in place, checked as `addNode` checks a spec. */
  #updated(op: string, node: GraphNode, u: Record<string, unknown>): GraphNode {
    const { id: _id, stream: _stream, cost: _cost, ...fields } = node;
    const spec: Record<string, unknown> = { ...fields };
    // A field left out keeps its value; one given (null included) is checked.
    for (const [key, value] of Object.entries(u)) if (key !== 'kind' && value !== undefined) spec[key] = value;
    // A kernel's default name is its function's: keep the node's own name.
    const probe = new GraphStore();
    appendNodeSpec(probe, op, 'update.', spec);
    const read = probe.readNode(0);
    // A child graph's copy is the new one; the node keeps its id, stream and cost.
    return { ...read, id: node.id, stream: node.stream, cost: node.cost } as GraphNode;
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


/** An executable's edges: keys `from · n + to`, ascending (exact below 2^53), and each edge's data code. */
interface EdgeKeys {
  readonly pairs: Float64Array;
  readonly codes: Uint8Array;
}

/** The edges of `graph` as `EdgeKeys`. */
function edgeKeys(graph: ComputeGraph): EdgeKeys {
  const n = graph.nodeCount();
  const edges = graph.edgeRecords();
  const pairs = new Float64Array(edges.length);
  const codes = new Uint8Array(edges.length);
  for (let i = 0; i < edges.length; i++) {
    const e = edges[i]!;
    pairs[i] = e.from * n + e.to;
    codes[i] = edgeCode(e.kind, e.port);
  }
  return { pairs, codes };
}

/** True when two edge sets hold the same edges with the same data. */
function sameKeys(a: EdgeKeys, b: EdgeKeys): boolean {
  if (a.pairs.length !== b.pairs.length) return false;
  for (let i = 0; i < a.pairs.length; i++) if (a.pairs[i] !== b.pairs[i] || a.codes[i] !== b.codes[i]) return false;
  return true;
}
