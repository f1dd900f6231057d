/**
 * Building a `Graph` node by node (`graph.add…Node`, `addDependencies`, `removeNode`, `clone`):
 * each call checks everything before the driver sees it, so a refusal changes nothing; the node
 * it adds holds what its work uses (modules, buffers, events, host functions, child graphs).
 * CUDA's extra rules for graphs with allocation or free nodes (no node or edge removal, no clone,
 * no use as a child, one instantiation at a time) are refused here with the rule's text.
 */
import { InvalidArgumentError, CudagraphError } from '../../errors/base.js';
import { describe, requireInt, requireInstance, requireOptions, requireName } from '../../util/validate.js';
import { graph as gr, graphBuild as gb, launchEx as lx } from '../../driver/result/index.js';
import { CU_GRAPH_DEPENDENCY_TYPE, CU_GRAPH_KERNEL_NODE_PORT } from '../../driver/layouts.js';
import { readEdgeSpec, edgeDataOf, PLAIN_EDGE } from '../../model/edge-data.js';
import type { EdgeSpec } from '../../model/node.js';
import { LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import type { Lifetime } from '../core/lifetime.js';
import { brands } from '../core/brands.js';
import { HostFunction, hostTrampoline } from '../host/host-function.js';
import type { Kernel } from '../kernel/kernel.js';
import type { Event } from '../device/event.js';
import { CudaNode, dependencyHandles, nodeHandleIn, nodeKeyIn } from './cuda-node.js';
import { kernelFunction, resolveCopy, resolveFill, resolveKernel } from './node-params.js';
import type { Graph } from './graph.js';
import type { GraphNodeType } from './node-info.js';
import { refuseChildInBody, refuseConditionalGraph, refuseInBody } from './conditional.js';

/** One edge for `addDependencies` / `removeDependencies`: `to` runs after `from`; `data` as the model's edges (`{ kind, port }`). */
export type NodeEdge = readonly [from: CudaNode, to: CudaNode] | readonly [from: CudaNode, to: CudaNode, data: EdgeSpec];

/** The text of CUDA's rule for graphs with memory nodes, for refusals. */
export const MEMORY_NODE_RULE = 'a graph with allocation or free nodes cannot have nodes or edges removed, be cloned or be a child graph, and has at most one instantiation at a time (CUDA rule)';

/** Refused for a graph with memory nodes: `what` names the operation. */
export function refuseMemoryGraph(op: string, name: string, graph: Graph, what: string): void {
  if (graph.hasMemoryNodes(op)) throw new InvalidArgumentError(op, name, `${what}: the graph has allocation or free nodes, and ${MEMORY_NODE_RULE}`);
}

function begin(op: string, graph: Graph, deps: unknown, kind: GraphNodeType): BigUint64Array | null {
  graph[LIFETIME].assertAlive(op);
  refuseInBody(op, graph, kind);
  return dependencyHandles(op, deps, graph);
}

/** `graph.addKernelNode`. */
export function addKernel(graph: Graph, kernel: Kernel, config: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addKernelNode';
  graph[LIFETIME].assertAlive(op);
  refuseInBody(op, graph, 'kernel');
  // The usual call names one dependency (a chain) or none: its handle is kept as the node keeps it
  // (a number), with no array or BigInt made for it.
  let one: number | bigint | null = null;
  let many: BigUint64Array | null = null;
  if (Array.isArray(deps) && deps.length === 1) one = nodeKeyIn(op, 'dependencies[0]', deps[0], graph);
  else many = dependencyHandles(op, deps, graph);
  if (!brands.Kernel.is(kernel)) {
    throw new InvalidArgumentError(op, 'kernel', `kernel must be a Kernel (module.function(name)), got ${describe(kernel)}`);
  }
  kernel.module[LIFETIME].assertAlive(op);
  const k = resolveKernel(op, kernelFunction(kernel), config, graph.device);
  makeCurrent(op, graph.device.context);
  const handle = many === null ? gb.addKernelNodeKey(op, graph.handle, k.input, one) : gb.addKernelNode(op, graph.handle, k.input, many);
  if (k.attributes !== null) {
    const h = typeof handle === 'number' ? BigInt(handle) : handle;
    try {
      lx.setKernelNodeAttributes(op, h, k.attributes);
    } catch (e) {
      gb.destroyNode(op, h);
      throw e;
    }
  }
  return graph.attach(handle, 'kernel', k.holds);
}

/** `graph.addMemcpyNode`. */
export function addCopy(graph: Graph, params: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addMemcpyNode';
  const d = begin(op, graph, deps, 'memcpy');
  const c = resolveCopy(op, params, graph.device);
  makeCurrent(op, graph.device.context);
  return graph.attach(gb.addCopyNode(op, graph.handle, c.input, graph.device.context, d), 'memcpy', c.holds);
}

/** `graph.addMemsetNode`. */
export function addFill(graph: Graph, params: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addMemsetNode';
  const d = begin(op, graph, deps, 'memset');
  const f = resolveFill(op, params, graph.device);
  makeCurrent(op, graph.device.context);
  return graph.attach(gb.addFillNode(op, graph.handle, f.input, graph.device.context, d), 'memset', f.holds);
}

/** `graph.addHostNode`: a plain function becomes a `HostFunction` the graph owns. */
export function addHost(graph: Graph, fn: unknown, deps: unknown, options: unknown): CudaNode {
  const op = 'Graph.addHostNode';
  const d = begin(op, graph, deps, 'hostCallback');
  const o = requireOptions<{ label: string }>(op, options, ['label']);
  const label = o.label === undefined ? undefined : requireName(op, 'label', o.label);
  let hf: HostFunction;
  let made = false;
  if (brands.HostFunction.is(fn)) {
    if (label !== undefined) throw new InvalidArgumentError(op, 'options', 'label is for a plain function; a HostFunction has its own');
    fn[LIFETIME].assertAlive(op);
    hf = fn;
  } else if (typeof fn === 'function') {
    hf = HostFunction.create(fn as () => void, label === undefined ? undefined : { label });
    made = true;
  } else throw new InvalidArgumentError(op, 'fn', `fn must be a function or a HostFunction, got ${describe(fn)}`);
  let handle: bigint;
  try {
    makeCurrent(op, graph.device.context);
    handle = gb.addHostNode(op, graph.handle, hostTrampoline(), BigInt(hf.id), d);
  } catch (e) {
    if (made) hf.dispose();
    throw e;
  }
  const node = graph.attach(handle, 'hostCallback', [hf[LIFETIME]]);
  if (made) graph.own(hf);
  return node;
}

/** `graph.addEmptyNode`. */
export function addEmpty(graph: Graph, deps: unknown): CudaNode {
  const op = 'Graph.addEmptyNode';
  const d = begin(op, graph, deps, 'empty');
  makeCurrent(op, graph.device.context);
  return graph.attach(gb.addEmptyNode(op, graph.handle, d), 'empty', []);
}

/** `graph.addEventRecordNode` / `graph.addEventWaitNode`. */
export function addEventNode(graph: Graph, record: boolean, event: unknown, deps: unknown): CudaNode {
  const op = record ? 'Graph.addEventRecordNode' : 'Graph.addEventWaitNode';
  const d = begin(op, graph, deps, record ? 'eventRecord' : 'waitEvent');
  const e = checkEvent(op, event, graph);
  makeCurrent(op, graph.device.context);
  const h = e.handleFor(op);
  const handle = record ? gb.addEventRecordNode(op, graph.handle, h, d) : gb.addEventWaitNode(op, graph.handle, h, d);
  return graph.attach(handle, record ? 'eventRecord' : 'waitEvent', [e[LIFETIME]]);
}

/** An Event of the graph's device. */
export function checkEvent(op: string, event: unknown, graph: Graph): Event {
  const e = requireInstance(op, 'event', event, brands.Event);
  e[LIFETIME].assertAlive(op);
  if (e.device !== graph.device) throw new InvalidArgumentError(op, 'event', `the event belongs to ${e.device}; the graph runs on ${graph.device}`);
  return e;
}

/** A graph that can be a child of `graph`: alive, another graph, on its device, without memory nodes. */
export function checkChild(op: string, child: unknown, graph: Graph): Graph {
  const c = requireInstance(op, 'child', child, brands.Graph);
  c[LIFETIME].assertAlive(op);
  if (c === graph) throw new InvalidArgumentError(op, 'child', 'a graph cannot be its own child');
  if (c.device !== graph.device) throw new InvalidArgumentError(op, 'child', `the child graph runs on ${c.device}; this graph on ${graph.device}`);
  refuseMemoryGraph(op, 'child', c, 'the child');
  refuseConditionalGraph(op, 'child', c, 'the child');
  refuseChildInBody(op, graph, c);
  return c;
}

/** `graph.addChildGraphNode`: the driver clones `child`; the graph holds `child` (and so what its work uses). */
export function addChild(graph: Graph, child: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addChildGraphNode';
  const d = begin(op, graph, deps, 'graph');
  const c = checkChild(op, child, graph);
  makeCurrent(op, graph.device.context);
  return graph.attach(gb.addChildGraphNode(op, graph.handle, c.handle, d), 'graph', [c[LIFETIME]]);
}

/** `graph.addMemAllocNode`. */
export function addAlloc(graph: Graph, params: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addMemAllocNode';
  const d = begin(op, graph, deps, 'memAlloc');
  const o = requireOptions<{ byteLength: number }>(op, params, ['byteLength'], 'params');
  if (params === undefined) throw new InvalidArgumentError(op, 'params', 'params { byteLength } are required');
  const bytes = requireInt(op, 'byteLength', o.byteLength, 1, Number.MAX_SAFE_INTEGER);
  makeCurrent(op, graph.device.context);
  const a = gb.addMemAllocNode(op, graph.handle, bytes, graph.device.ordinal, d);
  return graph.attach(a.node, 'memAlloc', [], { address: a.dptr, byteLength: bytes, device: graph.device.ordinal });
}

/** Which graph frees each allocation node's memory (CUDA allows one free, in one graph). */
const freedIn = new WeakMap<CudaNode, Graph>();

/** @internal True when a free node cudagraph added to a graph other than the allocation's frees it. */
export function isFreedElsewhere(alloc: CudaNode): boolean {
  const g = freedIn.get(alloc);
  return g !== undefined && g !== alloc.graph;
}

/** `graph.addMemFreeNode`: frees the memory of an allocation node (of this graph or another). */
export function addFree(graph: Graph, alloc: unknown, deps: unknown): CudaNode {
  const op = 'Graph.addMemFreeNode';
  const d = begin(op, graph, deps, 'memFree');
  if (!CudaNode.is(alloc) || alloc.allocation === null) {
    throw new InvalidArgumentError(op, 'alloc', `alloc must be an allocation node (graph.addMemAllocNode), got ${CudaNode.is(alloc) ? String(alloc) : describe(alloc)}`);
  }
  alloc.handleFor(op);
  const other = freedIn.get(alloc);
  if (other !== undefined) {
    throw new InvalidArgumentError(op, 'alloc', `the allocation is already freed ${other === graph ? 'in this graph' : 'in another graph'}; CUDA frees an allocation once`);
  }
  makeCurrent(op, graph.device.context);
  const node = graph.attach(gb.addMemFreeNode(op, graph.handle, alloc.allocation.address, d), 'memFree', []);
  freedIn.set(alloc, graph);
  return node;
}

/** The driver's `[fromPort, type]` of a model edge code. */
function driverEdge(code: number): readonly [number, number] {
  const e = edgeDataOf(code);
  const port = e.port === 'trigger' ? CU_GRAPH_KERNEL_NODE_PORT.PROGRAMMATIC : e.port === 'launchOrder' ? CU_GRAPH_KERNEL_NODE_PORT.LAUNCH_ORDER : CU_GRAPH_KERNEL_NODE_PORT.DEFAULT;
  return [port, e.kind === 'programmatic' ? CU_GRAPH_DEPENDENCY_TYPE.PROGRAMMATIC : CU_GRAPH_DEPENDENCY_TYPE.DEFAULT];
}

interface CheckedEdges {
  readonly from: BigUint64Array;
  readonly to: BigUint64Array;
  readonly data: Array<readonly [number, number]> | null;
}

function checkEdges(op: string, graph: Graph, edges: unknown): CheckedEdges {
  graph[LIFETIME].assertAlive(op);
  if (!Array.isArray(edges)) throw new InvalidArgumentError(op, 'edges', `edges must be an array of [from, to] or [from, to, { kind, port }], got ${describe(edges)}`);
  const from = new BigUint64Array(edges.length);
  const to = new BigUint64Array(edges.length);
  const codes: number[] = [];
  // An index loop, not forEach: a hole in the array is refused as the undefined it reads as.
  for (let i = 0; i < edges.length; i++) {
    const e: unknown = edges[i];
    if (!Array.isArray(e) || e.length < 2 || e.length > 3) throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] must be [from, to] or [from, to, { kind, port }], got ${describe(e)}`);
    from[i] = nodeHandleIn(op, `edges[${i}][0]`, e[0], graph);
    to[i] = nodeHandleIn(op, `edges[${i}][1]`, e[1], graph);
    if (from[i] === to[i]) throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] joins ${e[0]} to itself`);
    const code = readEdgeSpec(op, `edges[${i}][2]`, e[2]);
    if (code !== PLAIN_EDGE) {
      const a = e[0] as CudaNode;
      const b = e[1] as CudaNode;
      const d = edgeDataOf(code);
      if (a.type !== 'kernel') throw new InvalidArgumentError(op, `edges[${i}][2]`, `edges[${i}] leaves ${a} by port '${d.port}'; only kernel nodes have ports other than completion (CUDA rule)`);
      if (d.kind === 'programmatic' && b.type !== 'kernel') throw new InvalidArgumentError(op, `edges[${i}][2]`, `edges[${i}] is programmatic but ends at ${b}; a programmatic edge joins two kernel nodes (CUDA rule)`);
    }
    codes.push(code);
  }
  const data = codes.some((c) => c !== PLAIN_EDGE) ? codes.map(driverEdge) : null;
  return { from, to, data };
}

/** `graph.addDependencies`: refuses an edge that exists already or would close a cycle. */
export function addEdges(graph: Graph, edges: unknown): void {
  const op = 'Graph.addDependencies';
  const c = checkEdges(op, graph, edges);
  if (c.from.length === 0) return;
  const existing = gr.graphEdges(op, graph.handle);
  const succ = new Map<bigint, bigint[]>();
  const key = (a: bigint, b: bigint): string => `${a}:${b}`;
  const have = new Set<string>();
  const link = (a: bigint, b: bigint): void => {
    let list = succ.get(a);
    if (list === undefined) succ.set(a, (list = []));
    list.push(b);
  };
  for (const e of existing) {
    link(e.from, e.to);
    have.add(key(e.from, e.to));
  }
  for (let i = 0; i < c.from.length; i++) {
    const k = key(c.from[i]!, c.to[i]!);
    if (have.has(k)) throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] exists already (${graph.nodeOf(op, c.from[i]!)} → ${graph.nodeOf(op, c.to[i]!)})`);
    have.add(k);
    link(c.from[i]!, c.to[i]!);
  }
  // A cycle through a new edge from → to means `from` is reachable from `to`.
  for (let i = 0; i < c.from.length; i++) {
    if (reaches(succ, c.to[i]!, c.from[i]!)) {
      throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] (${graph.nodeOf(op, c.from[i]!)} → ${graph.nodeOf(op, c.to[i]!)}) would make a dependency cycle; a graph is acyclic`);
    }
  }
  makeCurrent(op, graph.device.context);
  gb.addDependencies(op, graph.handle, c.from, c.to, c.data);
}

function reaches(succ: ReadonlyMap<bigint, readonly bigint[]>, start: bigint, goal: bigint): boolean {
  const seen = new Set<bigint>([start]);
  const stack = [start];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n === goal) return true;
    for (const m of succ.get(n) ?? []) {
      if (!seen.has(m)) {
        seen.add(m);
        stack.push(m);
      }
    }
  }
  return false;
}

/** `graph.removeDependencies`: each edge must exist with the data given. */
export function removeEdges(graph: Graph, edges: unknown): void {
  const op = 'Graph.removeDependencies';
  const c = checkEdges(op, graph, edges);
  if (c.from.length === 0) return;
  refuseMemoryGraph(op, 'edges', graph, 'removing edges');
  const existing = new Map<string, readonly [number, number]>();
  for (const e of gr.graphEdges(op, graph.handle)) existing.set(`${e.from}:${e.to}`, [e.fromPort, e.type]);
  const listed = new Set<string>();
  for (let i = 0; i < c.from.length; i++) {
    const key = `${c.from[i]}:${c.to[i]}`;
    if (listed.has(key)) throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] repeats an edge already listed; list each edge once`);
    listed.add(key);
    const have = existing.get(key);
    const want = c.data?.[i] ?? [0, 0];
    if (have === undefined || have[0] !== want[0] || have[1] !== want[1]) {
      throw new InvalidArgumentError(op, `edges[${i}]`, `edges[${i}] (${graph.nodeOf(op, c.from[i]!)} → ${graph.nodeOf(op, c.to[i]!)}) is not an edge of the graph${have !== undefined ? ' with that edge data' : ''}`);
    }
  }
  makeCurrent(op, graph.device.context);
  gb.removeDependencies(op, graph.handle, c.from, c.to, c.data);
}

/** `graph.removeNode`. */
export function removeNode(graph: Graph, node: unknown): void {
  const op = 'Graph.removeNode';
  graph[LIFETIME].assertAlive(op);
  const h = nodeHandleIn(op, 'node', node, graph);
  graph.refuseWhileCapturing(op, 'remove nodes');
  refuseMemoryGraph(op, 'node', graph, 'removing a node');
  const stranded = graph.handlesInBodies(node as CudaNode);
  if (stranded.length > 0) {
    throw new InvalidArgumentError(op, 'node', `${stranded.map(String).join(', ')} ${stranded.length === 1 ? 'was' : 'were'} made for a body of ${String(node)}: removing it would leave ${stranded.length === 1 ? 'that handle' : 'them'} unused for ever, and CUDA refuses to instantiate a graph with an unused handle (CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED)`);
  }
  if (graph.bodyCapturing(node as CudaNode)) {
    throw new InvalidArgumentError(op, 'node', `a stream capture is recording into a body of ${String(node)}; remove it after the capture ends (its bodies go with it)`);
  }
  makeCurrent(op, graph.device.context);
  gb.destroyNode(op, h);
  graph.forget(h);
}

/** `graph.clone`: the copy's handle, and what it must hold (retained here on its behalf: what the original holds). */
export function cloneOf(graph: Graph): { handle: bigint; held: Lifetime[] } {
  const op = 'Graph.clone';
  graph[LIFETIME].assertAlive(op);
  refuseMemoryGraph(op, 'graph', graph, 'cloning');
  refuseConditionalGraph(op, 'graph', graph, 'cloning');
  makeCurrent(op, graph.device.context);
  const handle = gb.cloneGraph(op, graph.handle);
  const held: Lifetime[] = graph.heldLifetimes();
  for (const l of held) l.retain();
  return { handle, held };
}

/** `clone.clonedNode(original)`: the node of this clone that `original` became. */
export function clonedNode(clone: Graph, original: unknown): CudaNode {
  const op = 'Graph.clonedNode';
  clone[LIFETIME].assertAlive(op);
  if (!CudaNode.is(original)) throw new InvalidArgumentError(op, 'original', `original must be a CudaNode, got ${describe(original)}`);
  const h = original.handleFor(op);
  makeCurrent(op, clone.device.context);
  try {
    return clone.nodeOf(op, gb.findInClone(op, h, clone.handle));
  } catch (e) {
    if (e instanceof CudagraphError && !(e instanceof InvalidArgumentError)) {
      throw new InvalidArgumentError(op, 'original', `${original} is not a node of the graph this one was cloned from (${e.message})`);
    }
    throw e;
  }
}
