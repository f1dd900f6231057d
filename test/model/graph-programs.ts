/**
 * Random graphs for the save and load tests (graph-json-stream, graph-binary): every node kind,
 * odd names (quotes, escapes, emoji, a lone surrogate), streams, costs and edge data, with edges
 * in both directions so that some graphs' edges disagree with the id order.
 */
import fc from 'fast-check';
import { ComputeGraph, MemcpyDir, NodeId, type EdgeSpec, type NodeSpec } from '../../src/index.js';

/** A small child graph and a conditional body, shared by the generated graphs. */
function bodies(): { child: ComputeGraph; body: ComputeGraph } {
  const body = new ComputeGraph();
  const a = body.addNode({ kind: 'kernel', functionName: 'b0', grid: [2, 3, 1], block: 64, name: 'body "a"' });
  const b = body.addNode({ kind: 'memset', sizeBytes: 16, value: 0xffff, elementSize: 2 });
  body.addEdge(a, b, { port: 'launchOrder' });
  const child = body.clone();
  child.addNode({ kind: 'childGraph', graph: body.clone(), name: 'nested' });
  return { child, body };
}

export const NAMES = ['gemm', 'a "quoted" name', 'back\\slash', 'line\nbreak', 'tab\there', 'ünïcödé ✓', '\u2028sep\u2029', 'emoji 🚀', '\u0001ctl', '\ud800lone'];
export const KINDS = ['kernel', 'kernel3d', 'memcpy', 'p2p', 'memset', 'host', 'empty', 'eventRecord', 'eventWait', 'childGraph', 'memAlloc', 'memFree', 'conditional'] as const;

export interface Program {
  nodes: { kind: (typeof KINDS)[number]; name: number | null; stream: number | null; cost: number | null; x: number }[];
  edges: [number, number, 'plain' | 'programmatic' | 'launchOrder'][];
}

export const program: fc.Arbitrary<Program> = fc.record({
  nodes: fc.array(
    fc.record({
      kind: fc.constantFrom(...KINDS),
      name: fc.option(fc.nat(NAMES.length - 1)),
      stream: fc.option(fc.oneof(fc.nat(3), fc.constantFrom(255, 256, 70000, 2 ** 32 - 1))),
      cost: fc.option(fc.oneof(fc.constantFrom(0, 0.5, 1e-7, 1e21, 123.456), fc.double({ min: 0, max: 1e6, noNaN: true }))),
      x: fc.nat(1000),
    }),
    { maxLength: 30 },
  ),
  edges: fc.array(fc.tuple(fc.nat(29), fc.nat(29), fc.constantFrom('plain' as const, 'programmatic' as const, 'launchOrder' as const)), { maxLength: 80 }),
});

/** Builds the graph a program describes: every node kind, odd names, streams, costs and edge data. */
export function build(p: Program): ComputeGraph {
  const { child, body } = bodies();
  const g = new ComputeGraph();
  const open: number[] = [];
  for (const [i, n] of p.nodes.entries()) {
    const common = {
      ...(n.name === null ? {} : { name: NAMES[n.name]! }),
      ...(n.stream === null ? {} : { stream: n.stream as never }),
      ...(n.cost === null ? {} : { cost: n.cost }),
    };
    let spec: NodeSpec;
    switch (n.kind) {
      case 'kernel':
        spec = { kind: 'kernel', functionName: NAMES[n.x % NAMES.length]!, grid: n.x + 1, block: 32, sharedMem: n.x, ...common };
        break;
      case 'kernel3d':
        spec = { kind: 'kernel', functionName: 'k3', grid: [2, n.x + 1, 3], block: [8, 4, 2], ...common };
        break;
      case 'memcpy':
        spec = { kind: 'memcpy', dir: (['HostToDevice', 'DeviceToHost', 'DeviceToDevice'] as const)[n.x % 3]!, sizeBytes: 2 ** 40 + n.x, ...common };
        break;
      case 'p2p':
        spec = { kind: 'memcpy', dir: MemcpyDir.PeerToPeer(n.x % 4, 3), sizeBytes: n.x, ...common };
        break;
      case 'memset':
        spec = { kind: 'memset', sizeBytes: 4 * n.x, value: n.x, elementSize: 4, ...common };
        break;
      case 'host':
        spec = { kind: 'hostCallback', label: NAMES[n.x % NAMES.length]!, ...common };
        break;
      case 'eventRecord':
      case 'eventWait':
        spec = { kind: n.kind, event: n.x, ...common };
        break;
      case 'childGraph':
        spec = { kind: 'childGraph', graph: child, ...common };
        break;
      case 'memAlloc':
        spec = { kind: 'memAlloc', sizeBytes: n.x + 1, device: n.x % 2, ...common };
        break;
      case 'memFree': {
        const alloc = open.shift();
        spec = { kind: 'memFree', alloc: alloc === undefined ? null : NodeId(alloc), ...common };
        break;
      }
      case 'conditional':
        spec = { kind: 'conditional', type: (['if', 'while', 'switch'] as const)[n.x % 3]!, bodies: n.x % 3 === 1 ? [body] : [body, body], ...common };
        break;
      default:
        spec = { kind: 'empty', ...common };
    }
    const id = g.addNode(spec);
    if (n.kind === 'memAlloc') open.push(id);
    void i;
  }
  const count = g.nodeCount();
  for (const [a, b, want] of p.edges) {
    if (count < 2) break;
    // Both directions, so that some graphs' edges disagree with the id order.
    const u = a % count;
    const v = b % count;
    if (u === v || g.edgeData(NodeId(u), NodeId(v)) !== null || g.isReachable(NodeId(v), NodeId(u))) continue;
    const kernels = g.node(NodeId(u)).kind === 'kernel' && g.node(NodeId(v)).kind === 'kernel';
    const data: EdgeSpec | undefined =
      want === 'programmatic' && kernels ? { kind: 'programmatic' } : want === 'launchOrder' && g.node(NodeId(u)).kind === 'kernel' ? { port: 'launchOrder' } : undefined;
    g.addEdge(NodeId(u), NodeId(v), data);
  }
  return g;
}

