/**
 * Reading a `CUgraph` back from the driver (every node with its kind and parameters, every edge
 * with its data, child graphs recursively) and turning what was read into the model's
 * `ComputeGraph`. `Graph.readBack` and `Graph.toComputeGraph` are built on it.
 */
import { graph as gr, graphBuild as gb, module as mod, memory as mem } from '../../driver/result/index.js';
import { CU_GRAPH_DEPENDENCY_TYPE, CU_GRAPH_KERNEL_NODE_PORT, CU_GRAPH_NODE_TYPE, CU_MEMORYTYPE } from '../../driver/layouts.js';
import { hostFunctionLabel, isHostTrampoline } from '../host/host-function.js';
import { ComputeGraph } from '../../model/compute-graph.js';
import { NodeId } from '../../model/ids.js';
import { MAX_GRAPH_DEPTH, type EdgeSpec, type NodeSpec } from '../../model/node.js';
import type { CapturedNodeInfo, EdgeInfo, GraphNodeType, GraphReadBack, MemcpyNodeInfo } from './node-info.js';
import { conditionalRecord } from './conditional-records.js';

/** What one read-back shares across its nested child graphs: kernel names, and events numbered in order of first sight. */
export interface ReadContext {
  readonly names: Map<bigint, string>;
  readonly events: Map<bigint, number>;
}

/** A fresh context for one read-back. */
export function readContext(): ReadContext {
  return { names: new Map(), events: new Map() };
}

/**
 * Reads graph `handle` back (`cuGraphGetNodes`, the per-kind `…GetParams` calls, `cuGraphGetEdges_v2`),
 * child graphs included. `depth` counts the graphs around it; the driver's nesting is bounded
 * anyway, but a bound here keeps a corrupt graph from recursing without end.
 */
export function readBackHandle(op: string, handle: bigint, ctx: ReadContext = readContext(), depth = 1): GraphReadBack {
  const handles = gr.graphNodes(op, handle);
  const index = new Map<bigint, number>();
  handles.forEach((h, i) => index.set(h, i));
  const nodes = handles.map((h, i) => readNode(op, h, i, ctx, depth));
  const read: Array<{ pair: readonly [number, number]; data: EdgeInfo }> = [];
  for (const e of gr.graphEdges(op, handle)) {
    const a = index.get(e.from);
    const b = index.get(e.to);
    if (a !== undefined && b !== undefined) read.push({ pair: [a, b], data: { fromPort: e.fromPort, type: e.type } });
  }
  read.sort((x, y) => x.pair[0] - y.pair[0] || x.pair[1] - y.pair[1]);
  return { nodes, edges: read.map((e) => e.pair), edgeData: read.map((e) => e.data) };
}

function direction(op: string, srcType: number, src: bigint, dstType: number, dst: bigint): MemcpyNodeInfo['direction'] {
  // Unified-addressing copies name memory by address only: ask the driver what each side is.
  const kind = (t: number, p: bigint): number => (t === CU_MEMORYTYPE.UNIFIED ? mem.pointerMemoryType(op, p) || 1 : t);
  const s = kind(srcType, src) === CU_MEMORYTYPE.HOST ? 'Host' : 'Device';
  const d = kind(dstType, dst) === CU_MEMORYTYPE.HOST ? 'Host' : 'Device';
  return `${s}To${d}` as MemcpyNodeInfo['direction'];
}

/** The number of event `handle` in this read-back (0, 1, … in order of first sight). */
function eventNumber(ctx: ReadContext, handle: bigint): number {
  let n = ctx.events.get(handle);
  if (n === undefined) {
    n = ctx.events.size;
    ctx.events.set(handle, n);
  }
  return n;
}

/** Reads one node: its kind and, for the kinds the model knows, its parameters. */
export function readNode(op: string, h: bigint, index: number, ctx: ReadContext, depth = 1): CapturedNodeInfo {
  const t = gr.graphNodeType(op, h);
  const type: GraphNodeType = CU_GRAPH_NODE_TYPE[t] ?? 'unknown';
  switch (type) {
    case 'kernel': {
      const p = gr.kernelNodeParams(op, h);
      const fn = p.func !== 0n ? p.func : p.kern;
      let name = ctx.names.get(fn);
      if (name === undefined) {
        try {
          name = mod.functionName(op, fn, p.func === 0n);
        } catch {
          name = '';
        }
        ctx.names.set(fn, name);
      }
      return { index, type, kernel: { name, grid: p.grid, block: p.block, sharedMem: p.sharedMem } };
    }
    case 'memset': {
      const p = gr.memsetNodeParams(op, h);
      const height = Math.max(1, p.height);
      return { index, type, memset: { ...p, height, byteLength: p.width * height * p.elementSize } };
    }
    case 'memcpy': {
      const p = gr.memcpyNodeParams(op, h);
      return {
        index,
        type,
        memcpy: {
          direction: direction(op, p.srcMemoryType, p.src, p.dstMemoryType, p.dst),
          byteLength: p.width * Math.max(1, p.height) * Math.max(1, p.depth),
          src: p.src,
          dst: p.dst,
        },
      };
    }
    case 'hostCallback': {
      const p = gb.hostNodeParams(op, h);
      return { index, type, host: { ...p, label: hostFunctionLabel(p.fn, p.userData) } };
    }
    case 'eventRecord':
    case 'waitEvent': {
      const handle = type === 'eventRecord' ? gr.eventRecordNodeEvent(op, h) : gr.eventWaitNodeEvent(op, h);
      return { index, type, event: { handle, number: eventNumber(ctx, handle) } };
    }
    case 'graph': {
      if (depth >= MAX_GRAPH_DEPTH) return { index, type };
      return { index, type, child: readBackHandle(op, gr.childGraphNodeGraph(op, h), ctx, depth + 1) };
    }
    case 'conditional': {
      const c = conditionalRecord(h);
      if (c === null || depth >= MAX_GRAPH_DEPTH) return { index, type };
      return { index, type, conditional: { kind: c.kind, bodies: c.bodies.map((b) => readBackHandle(op, b, ctx, depth + 1)) } };
    }
    case 'memAlloc': {
      const p = gr.memAllocNodeParams(op, h);
      return { index, type, memAlloc: { byteLength: p.bytesize, device: p.device, dptr: p.dptr } };
    }
    case 'memFree':
      return { index, type, memFree: { dptr: gr.memFreeNodeParams(op, h) } };
    default:
      return { index, type };
  }
}

/** The ids of cudagraph's JS host functions that graph `handle` calls, child graphs included. */
export function jsHostFunctionIdsOf(op: string, handle: bigint, depth = 1): number[] {
  const ids: number[] = [];
  for (const h of gr.graphNodes(op, handle)) {
    const type = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)];
    if (type === 'hostCallback') {
      const p = gb.hostNodeParams(op, h);
      if (isHostTrampoline(p.fn)) ids.push(Number(p.userData));
    } else if (type === 'graph' && depth < MAX_GRAPH_DEPTH) {
      ids.push(...jsHostFunctionIdsOf(op, gr.childGraphNodeGraph(op, h), depth + 1));
    }
  }
  return ids;
}

/**
 * The model's `ComputeGraph` of a read-back (see `Graph.toComputeGraph`): node `i` is
 * `readBack.nodes[i]`, child graphs become nested `ComputeGraph`s, edges keep their data.
 */
export function computeGraphOf(r: GraphReadBack): ComputeGraph {
  const g = new ComputeGraph();
  const allocs = new Map<bigint, number>();
  for (const n of r.nodes) {
    const id = g.addNode(specOf(n, allocs));
    if (n.memAlloc) allocs.set(n.memAlloc.dptr, id);
  }
  g.addEdges(r.edges.map((e, i) => [NodeId(e[0]), NodeId(e[1]), edgeSpecOf(r.edgeData[i] ?? PLAIN)] as const));
  return g;
}

const PLAIN: EdgeInfo = { fromPort: 0, type: 0 };

/** The model's edge data of a driver edge; data the model has no name for reads as a plain edge. */
function edgeSpecOf(e: EdgeInfo): EdgeSpec {
  const port =
    e.fromPort === CU_GRAPH_KERNEL_NODE_PORT.PROGRAMMATIC ? 'trigger' : e.fromPort === CU_GRAPH_KERNEL_NODE_PORT.LAUNCH_ORDER ? 'launchOrder' : 'completion';
  if (e.type === CU_GRAPH_DEPENDENCY_TYPE.PROGRAMMATIC && port !== 'completion') return { kind: 'programmatic', port };
  return { kind: 'plain', port: port === 'launchOrder' ? 'launchOrder' : 'completion' };
}

/** The model's spec of a read-back node; `allocs` maps the addresses of the allocation nodes read so far to their ids. */
function specOf(n: CapturedNodeInfo, allocs: ReadonlyMap<bigint, number>): NodeSpec {
  if (n.kernel) {
    const k = n.kernel;
    return { kind: 'kernel', functionName: k.name || '(unnamed kernel)', grid: k.grid, block: k.block, sharedMem: k.sharedMem };
  }
  if (n.memcpy && n.memcpy.direction !== 'HostToHost') {
    return { kind: 'memcpy', name: 'memcpy', dir: n.memcpy.direction, sizeBytes: n.memcpy.byteLength };
  }
  if (n.memset) {
    const m = n.memset;
    return { kind: 'memset', name: 'memset', sizeBytes: m.byteLength, value: m.value, elementSize: m.elementSize as 1 | 2 | 4 };
  }
  if (n.event) return { kind: n.type === 'eventRecord' ? 'eventRecord' : 'eventWait', event: n.event.number };
  if (n.child) return { kind: 'childGraph', graph: computeGraphOf(n.child) };
  if (n.conditional) return { kind: 'conditional', type: n.conditional.kind, bodies: n.conditional.bodies.map(computeGraphOf) };
  if (n.memAlloc) return { kind: 'memAlloc', sizeBytes: n.memAlloc.byteLength, device: n.memAlloc.device };
  if (n.memFree) {
    const alloc = allocs.get(n.memFree.dptr);
    return { kind: 'memFree', alloc: alloc === undefined ? null : NodeId(alloc) };
  }
  if (n.type === 'hostCallback') return { kind: 'hostCallback', label: n.host?.label ?? 'host' };
  if (n.type === 'empty') return { kind: 'empty' };
  if (n.type === 'conditional') return { kind: 'empty', name: 'conditional (not added by cudagraph: its kind and bodies cannot be read before CUDA 13.2)' };
  return { kind: 'empty', name: n.memcpy ? 'memcpy (HostToHost)' : n.type };
}
