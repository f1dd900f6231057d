/**
 * The workload in the CPU model, and the bridge from a captured CUDA graph back to a
 * `ComputeGraph`: `recordProgram` records a `Program` with `StreamCapture`; `graphFromReadBack`
 * turns the driver's read-back of the captured graph (node kinds, kernel names, launch shapes, real
 * edges) into a `ComputeGraph`, labelled with the program's step names and streams.
 *
 * `graphFromReadBack` keeps the program's own step names and streams on the nodes, which the
 * library's `Graph.toComputeGraph()` (the driver's view: kernel names and real edges) cannot know.
 */
import {
  CaptureEvent,
  ComputeGraph,
  MemcpyDir,
  NodeId,
  StreamCapture,
  StreamId,
  type GraphReadBack,
  type NodeSpec,
} from '../index.js';
import { bufferBytes, bufferSpec, nodeSteps, type Lane, type NodeStep, type Program } from './workload.js';

/** The streams `program` uses, ascending. */
export function programLanes(program: Program): Lane[] {
  const lanes = new Set<Lane>();
  for (const s of program.steps) {
    if (s.op === 'join') s.edges.forEach(([f, t]) => lanes.add(f).add(t));
    else lanes.add(s.stream);
  }
  return [...lanes].sort((a, b) => a - b);
}

/** Records `program` on `cap` (beginning every stream it uses); kernels are named by their step. */
export function recordProgram(cap: StreamCapture, program: Program): void {
  for (const lane of programLanes(program)) cap.beginCapture(StreamId(lane));
  let nextEvent = 0;
  for (const step of program.steps) {
    switch (step.op) {
      case 'upload':
      case 'download': {
        const dir = step.op === 'upload' ? MemcpyDir.HostToDevice : MemcpyDir.DeviceToHost;
        cap.recordMemcpy(StreamId(step.stream), step.name, dir, bufferBytes(bufferSpec(program, step.buffer)));
        break;
      }
      case 'kernel':
        cap.recordKernel(StreamId(step.stream), step.name, step.grid, step.block, 0);
        break;
      case 'join': {
        // As on the GPU: every event is recorded before any stream waits.
        const events = new Map<Lane, CaptureEvent>();
        for (const [from] of step.edges) {
          if (events.has(from)) continue;
          const e = CaptureEvent(nextEvent++);
          cap.recordEvent(StreamId(from), e);
          events.set(from, e);
        }
        for (const [from, to] of step.edges) cap.waitEvent(StreamId(to), events.get(from)!);
        break;
      }
    }
  }
}

/** `program` recorded in the CPU model, ended on stream 0 with every fork joined back. */
export function modelGraph(program: Program): ComputeGraph {
  const cap = new StreamCapture();
  recordProgram(cap, program);
  return cap.endCapture(StreamId(0), { requireJoined: true });
}

/** What `graphFromReadBack` made of a read-back. */
export interface ReadBackGraph {
  readonly graph: ComputeGraph;
  /**
   * True when node i of the read-back is step i of the program (same kind, same kernel, same
   * shape): the nodes then carry the steps' names and streams. False: named by kernel or kind,
   * without streams.
   */
  readonly matchesProgram: boolean;
}

function matches(node: GraphReadBack['nodes'][number], step: NodeStep): boolean {
  switch (step.op) {
    case 'kernel':
      return node.kernel !== undefined && node.kernel.name === step.fn && node.kernel.grid[0] === step.grid && node.kernel.block[0] === step.block;
    case 'upload':
      return node.memcpy?.direction === 'HostToDevice';
    case 'download':
      return node.memcpy?.direction === 'DeviceToHost';
  }
}

/**
 * A `ComputeGraph` of a graph read back from the driver (`graph.readBack()`): one node per driver
 * node with its kind and parameters, and the driver's edges. A copy between host buffers and node
 * types the model has no kind for (event, child graph, allocation, …) become `empty` nodes named
 * by their type.
 */
export function graphFromReadBack(readBack: GraphReadBack, program: Program): ReadBackGraph {
  const steps = nodeSteps(program);
  const matchesProgram = readBack.nodes.length === steps.length && readBack.nodes.every((n, i) => matches(n, steps[i]!));
  const g = new ComputeGraph();
  readBack.nodes.forEach((n, i) => {
    const step = matchesProgram ? steps[i]! : undefined;
    const where = step === undefined ? {} : { name: step.name, stream: StreamId(step.stream) };
    let spec: NodeSpec;
    if (n.kernel !== undefined) {
      const k = n.kernel;
      spec = { kind: 'kernel', name: k.name, functionName: k.name, grid: k.grid, block: k.block, sharedMem: k.sharedMem, ...where };
    } else if (n.memcpy !== undefined && n.memcpy.direction !== 'HostToHost') {
      spec = { kind: 'memcpy', name: `memcpy ${n.memcpy.direction}`, dir: MemcpyDir[n.memcpy.direction], sizeBytes: n.memcpy.byteLength, ...where };
    } else if (n.memset !== undefined) {
      const m = n.memset;
      spec = { kind: 'memset', name: 'memset', sizeBytes: m.byteLength, value: m.value, elementSize: m.elementSize as 1 | 2 | 4, ...where };
    } else {
      spec = { kind: 'empty', name: n.memcpy !== undefined ? 'memcpy HostToHost' : n.type, ...where };
    }
    g.addNode(spec);
  });
  g.addEdges(readBack.edges.map(([a, b]) => [NodeId(a), NodeId(b)] as const));
  return { graph: g, matchesProgram };
}

/** True when `a` and `b` have the same nodes (by kind and stream, in id order) and the same edges. */
export function sameDag(a: ComputeGraph, b: ComputeGraph): boolean {
  if (a.nodeCount() !== b.nodeCount() || a.edgeCount() !== b.edgeCount()) return false;
  const an = a.nodes();
  const bn = b.nodes();
  if (an.some((n, i) => n.kind !== bn[i]!.kind || n.stream !== bn[i]!.stream)) return false;
  const be = b.edges();
  return a.edges().every(([u, v], i) => be[i]![0] === u && be[i]![1] === v);
}
