/**
 * The node kinds beyond kernel, copy, fill, host and empty (event record and wait, child graph,
 * graph memory allocation and free) and edge data (programmatic edges, ports): building, CUDA's
 * rules, queries, copies, JSON (version 2, and version 1 still loading) and the pictures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CaptureEvent, ComputeGraph, ExecGraph, GraphError, InvalidArgumentError, NodeId, StreamCapture, StreamId, GRAPH_JSON_VERSION, type GraphNode } from '../../src/index.js';
import { toMermaid } from '../../src/cli/mermaid.js';
import { refused } from '../support/refused.js';


const codeOf = (e: Error): string => (e as GraphError).code;

/** A kernel → kernel chain and a child graph of two kernels. */
function sample(): { g: ComputeGraph; child: ComputeGraph } {
  const child = new ComputeGraph();
  const c0 = child.addNode({ kind: 'kernel', functionName: 'a', grid: 1, block: 32, cost: 3 });
  const c1 = child.addNode({ kind: 'kernel', functionName: 'b', grid: 1, block: 32, cost: 4 });
  child.addEdge(c0, c1, { kind: 'programmatic' });
  const g = new ComputeGraph();
  const alloc = g.addNode({ kind: 'memAlloc', sizeBytes: 4096, device: 0 });
  const rec = g.addNode({ kind: 'eventRecord', event: 7 });
  const sub = g.addNode({ kind: 'childGraph', graph: child, name: 'body' });
  const wait = g.addNode({ kind: 'eventWait', event: 7 });
  const free = g.addNode({ kind: 'memFree', alloc });
  g.addEdges([
    [alloc, rec],
    [rec, sub],
    [sub, wait],
    [wait, free],
  ]);
  return { g, child };
}

test('each new kind is built and read back with its fields and defaults', () => {
  const { g } = sample();
  const [alloc, rec, sub, wait, free] = g.nodes() as [GraphNode, GraphNode, GraphNode, GraphNode, GraphNode];
  assert.deepEqual(alloc, { id: 0, kind: 'memAlloc', name: 'memAlloc', stream: null, cost: 1, sizeBytes: 4096, device: 0 });
  assert.deepEqual(rec, { id: 1, kind: 'eventRecord', name: 'eventRecord', stream: null, cost: 1, event: 7 });
  assert.deepEqual(wait, { id: 3, kind: 'eventWait', name: 'eventWait', stream: null, cost: 1, event: 7 });
  assert.deepEqual(free, { id: 4, kind: 'memFree', name: 'memFree', stream: null, cost: 1, alloc: 0 });
  assert.equal(sub.kind, 'childGraph');
  if (sub.kind !== 'childGraph') return;
  assert.equal(sub.name, 'body');
  assert.equal(sub.graph.nodeCount(), 2);
  // The default cost of a child graph is its critical path by its own costs (3 + 4).
  assert.equal(sub.cost, 7);
  assert.equal(g.criticalPath().cost, 1 + 1 + 7 + 1 + 1);
  const outside = new ComputeGraph().addNode({ kind: 'memFree' });
  assert.equal(outside, 0);
  const h = new ComputeGraph();
  h.addNode({ kind: 'memFree', alloc: null });
  assert.equal((h.node(NodeId(0)) as { alloc: unknown }).alloc, null);
  assert.equal(new ComputeGraph().addNode({ kind: 'childGraph', graph: new ComputeGraph() }), 0, 'an empty child is allowed');
});

test('a child graph is a read-only copy: later changes to the source do not reach it, and changing it is refused', () => {
  const { g, child } = sample();
  child.addNode({ kind: 'empty' });
  const sub = g.node(NodeId(2));
  assert.ok(sub.kind === 'childGraph');
  assert.equal(sub.graph.nodeCount(), 2, 'the node keeps the copy taken when it was added');
  assert.equal(sub.graph.readOnly, true);
  assert.equal(child.readOnly, false);
  const e = refused(() => sub.graph.addNode({ kind: 'empty' }), GraphError, 'ComputeGraph.addNode', /child graph node's copy and cannot change; clone\(\) it/);
  assert.equal(codeOf(e), 'GRAPH_READ_ONLY');
  refused(() => sub.graph.addEdge(NodeId(1), NodeId(0)), GraphError, 'ComputeGraph.addEdge', /cannot change/);
  refused(() => sub.graph.addEdges([[NodeId(0), NodeId(1)]]), GraphError, 'ComputeGraph.addEdges', /cannot change/);
  assert.equal(sub.graph.nodeCount(), 2);
  const copy = sub.graph.clone();
  assert.equal(copy.readOnly, false);
  copy.addNode({ kind: 'empty' });
  assert.equal(copy.nodeCount(), 3);
  assert.equal(sub.graph.nodeCount(), 2);
  // A read-only child given again is shared, not copied (it cannot change).
  const again = new ComputeGraph();
  again.addNode({ kind: 'childGraph', graph: sub.graph });
  assert.equal((again.node(NodeId(0)) as { graph: unknown }).graph, sub.graph);
});

test('CUDA rules for child graphs and memory nodes are refused naming the call, and change nothing', () => {
  const { g } = sample();
  const before = JSON.stringify(g);
  refused(() => g.addNode({ kind: 'childGraph', graph: g }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.graph holds a 'memAlloc' node \(node 0\); CUDA does not clone a graph holding allocation or free nodes into a child graph node/);
  refused(() => g.addNode({ kind: 'childGraph', graph: {} as ComputeGraph }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.graph must be a ComputeGraph/);
  refused(() => g.addNode({ kind: 'childGraph', graph: Object.create(ComputeGraph.prototype) }), InvalidArgumentError, 'ComputeGraph.addNode', /must be a ComputeGraph/);
  refused(() => g.addNode({ kind: 'memFree', alloc: NodeId(0) }), InvalidArgumentError, 'ComputeGraph.addNode', /node 0's allocation is already freed by node 4; CUDA refuses to free an allocation twice/);
  refused(() => g.addNode({ kind: 'memFree', alloc: NodeId(1) }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.alloc must name a 'memAlloc' node, but node 1 is a 'eventRecord' node/);
  refused(() => g.addNode({ kind: 'memFree', alloc: NodeId(99) }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.alloc names node 99, but the graph has 5 node/);
  refused(() => g.addNode({ kind: 'memFree', alloc: -1 as NodeId }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.alloc/);
  refused(() => g.addNode({ kind: 'memAlloc', sizeBytes: 0 }), InvalidArgumentError, 'ComputeGraph.addNode', /sizeBytes must be at least 1/);
  refused(() => g.addNode({ kind: 'memAlloc', sizeBytes: 1.5 }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.sizeBytes/);
  refused(() => g.addNode({ kind: 'memAlloc', sizeBytes: 8, device: NaN }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.device/);
  refused(() => g.addNode({ kind: 'eventRecord', event: -1 }), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.event/);
  refused(() => g.addNode({ kind: 'eventWait' } as never), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.event/);
  refused(() => g.addNode({ kind: 'eventWait', event: 1, label: 'x' } as never), InvalidArgumentError, 'ComputeGraph.addNode', /spec\.label is not a field of 'eventWait' nodes/);
  assert.equal(JSON.stringify(g), before, 'no refusal changed the graph');
});

test('child graphs nest, up to a depth limit', () => {
  let inner = new ComputeGraph();
  inner.addNode({ kind: 'empty' });
  for (let d = 2; d <= 64; d++) {
    const outer = new ComputeGraph();
    outer.addNode({ kind: 'childGraph', graph: inner });
    inner = outer;
  }
  const top = new ComputeGraph();
  refused(() => top.addNode({ kind: 'childGraph', graph: inner }), InvalidArgumentError, 'ComputeGraph.addNode', /nests child graphs 64 deep; a child may nest at most 63 deep/);
  assert.equal(top.nodeCount(), 0);
  // 64 levels round-trip through JSON.
  assert.equal(JSON.stringify(ComputeGraph.fromJSON(JSON.stringify(inner))), JSON.stringify(inner));
});

test('edge data: programmatic edges join kernels; ports follow CUDA’s rules; conflicts are refused', () => {
  const g = new ComputeGraph();
  const k0 = g.addNode({ kind: 'kernel', functionName: 'p', grid: 1, block: 32 });
  const k1 = g.addNode({ kind: 'kernel', functionName: 'q', grid: 1, block: 32 });
  const k2 = g.addNode({ kind: 'kernel', functionName: 'r', grid: 1, block: 32 });
  const m = g.addNode({ kind: 'memset', sizeBytes: 4, value: 0 });
  assert.equal(g.addEdge(k0, k1, { kind: 'programmatic' }), true);
  assert.deepEqual(g.edgeData(k0, k1), { kind: 'programmatic', port: 'trigger' });
  assert.equal(g.addEdge(k0, k1, { kind: 'programmatic', port: 'trigger' }), false, 'the same edge with the same data is a duplicate');
  assert.equal(g.addEdge(k1, k2, { kind: 'programmatic', port: 'launchOrder' }), true);
  assert.equal(g.addEdge(k2, m, { port: 'launchOrder' }), true, 'a plain edge may leave a kernel by launch order');
  assert.deepEqual(g.edgeData(k2, m), { kind: 'plain', port: 'launchOrder' });
  assert.equal(g.edgeData(m, k0), null);
  const before = JSON.stringify(g);
  refused(() => g.addEdge(k0, m, { kind: 'programmatic' }), InvalidArgumentError, 'ComputeGraph.addEdge', /edge 0 → 3: a programmatic edge joins two kernel nodes, but node 3 is a 'memset' node/);
  refused(() => g.addEdge(m, k0, { port: 'launchOrder' }), InvalidArgumentError, 'ComputeGraph.addEdge', /only a kernel node has a 'launchOrder' port, but node 3 is a 'memset' node/);
  refused(() => g.addEdge(k0, k2, { port: 'trigger' }), InvalidArgumentError, 'ComputeGraph.addEdge', /data\.port 'trigger' is only for programmatic edges/);
  refused(() => g.addEdge(k0, k2, { kind: 'programmatic', port: 'completion' }), InvalidArgumentError, 'ComputeGraph.addEdge', /data\.port must be 'trigger' or 'launchOrder' for a programmatic edge, got 'completion'/);
  refused(() => g.addEdge(k0, k2, { kind: 'weird' } as never), InvalidArgumentError, 'ComputeGraph.addEdge', /data\.kind must be one of 'plain', 'programmatic'/);
  refused(() => g.addEdge(k0, k2, { colour: 1 } as never), InvalidArgumentError, 'ComputeGraph.addEdge', /unknown field of data 'colour'/);
  refused(() => g.addEdge(k0, k2, 5 as never), InvalidArgumentError, 'ComputeGraph.addEdge', /data must be an object/);
  const c = refused(() => g.addEdge(k0, k1), GraphError, 'ComputeGraph.addEdge', /edge 0 → 1 already exists as a programmatic edge; it cannot also be plain/);
  assert.equal(codeOf(c), 'GRAPH_EDGE_CONFLICT');
  // Batches: all or none, the data checked for each edge, a pair repeated with other data refused.
  refused(() => g.addEdges([[k0, k2], [m, k0, { kind: 'programmatic' }]] as never), InvalidArgumentError, 'ComputeGraph.addEdges', /edge 3 → 0: a programmatic edge/);
  refused(() => g.addEdges([[k0, k2, { kind: 'programmatic' }], [k0, k2]]), GraphError, 'ComputeGraph.addEdges', /edges\[1\] 0 → 2 is plain, but edges\[0\] adds it as programmatic; no edge was added/);
  refused(() => g.addEdges([[k0, k2, { kind: 'programmatic' }], [m, k0]]), GraphError, 'ComputeGraph.addEdges', /closes a cycle/);
  assert.equal(JSON.stringify(g), before, 'no refused edge or batch changed the graph');
  assert.equal(g.addEdges([[k0, k2, { kind: 'programmatic', port: 'launchOrder' }], [k0, m]]), 2);
  assert.deepEqual(g.edgeData(k0, k2), { kind: 'programmatic', port: 'launchOrder' });
  assert.deepEqual(g.edgeData(k0, m), { kind: 'plain', port: 'completion' });
  assert.deepEqual(
    g.edgeRecords().map((e) => [e.from, e.to, e.kind, e.port]),
    [
      [0, 1, 'programmatic', 'trigger'],
      [0, 2, 'programmatic', 'launchOrder'],
      [0, 3, 'plain', 'completion'],
      [1, 2, 'programmatic', 'launchOrder'],
      [2, 3, 'plain', 'launchOrder'],
    ],
  );
  // Every query treats every edge as a dependency.
  assert.equal(g.isReachable(k0, m), true);
  assert.deepEqual(g.levels(), [[0], [1], [2], [3]]);
  assert.deepEqual(g.criticalPath().nodes, [0, 1, 2, 3]);
});

test('edges added against the numbering keep their data (the reordering path)', () => {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'kernel', functionName: 'a', grid: 1, block: 1 });
  const b = g.addNode({ kind: 'kernel', functionName: 'b', grid: 1, block: 1 });
  const c = g.addNode({ kind: 'kernel', functionName: 'c', grid: 1, block: 1 });
  g.addEdge(c, b, { kind: 'programmatic' });
  g.addEdges([[b, a, { kind: 'programmatic', port: 'launchOrder' }], [c, a]]);
  assert.deepEqual(g.topologicalOrder(), [2, 1, 0]);
  assert.deepEqual(g.edgeData(c, b), { kind: 'programmatic', port: 'trigger' });
  assert.deepEqual(g.edgeData(b, a), { kind: 'programmatic', port: 'launchOrder' });
  assert.deepEqual(g.edgeData(c, a), { kind: 'plain', port: 'completion' });
});

test('clone() copies nodes, edges, edge data and costs; the two graphs change apart', () => {
  const { g } = sample();
  const k = g.addNode({ kind: 'kernel', functionName: 'k', grid: 1, block: 1, cost: 5, stream: 3 as never });
  const k2 = g.addNode({ kind: 'kernel', functionName: 'k2', grid: 1, block: 1 });
  g.addEdge(k, k2, { kind: 'programmatic' });
  const c = g.clone();
  assert.equal(JSON.stringify(c), JSON.stringify(g));
  assert.deepEqual(c.streams(), g.streams());
  c.addNode({ kind: 'empty' });
  c.addEdge(NodeId(6), NodeId(7));
  assert.equal(g.nodeCount(), 7);
  assert.equal(g.edgeCount(), 5);
  assert.equal(c.edgeCount(), 6);
  // Nor do changes to the original reach the clone.
  g.addNode({ kind: 'empty' });
  g.addEdge(NodeId(0), NodeId(7));
  assert.equal(c.nodeCount(), 8);
  assert.equal(c.hasEdge(NodeId(0), NodeId(7)), false);
  // The clone's double-free check carries over.
  assert.throws(() => c.addNode({ kind: 'memFree', alloc: NodeId(0) }), /already freed by node 4/);
});

test('JSON version 2 round-trips every kind, nested child graphs and edge data', () => {
  const { g } = sample();
  const text = JSON.stringify(g);
  const doc = JSON.parse(text);
  assert.equal(doc.version, GRAPH_JSON_VERSION);
  assert.equal(doc.version, 2);
  assert.equal(doc.nodes[2].graph.format, 'cudagraph.ComputeGraph');
  assert.deepEqual(doc.nodes[2].graph.edges, [[0, 1, { kind: 'programmatic', port: 'trigger' }]]);
  const back = ComputeGraph.fromJSON(text);
  assert.equal(JSON.stringify(back), text);
  const sub = back.node(NodeId(2));
  assert.ok(sub.kind === 'childGraph' && sub.graph.readOnly, 'a child read from a document is read-only too');
  assert.deepEqual(back.node(NodeId(4)), g.node(NodeId(4)));
});

test('version 1 documents still load; they know only the first five kinds and plain edges', () => {
  const v1 = {
    format: 'cudagraph.ComputeGraph',
    version: 1,
    nodes: [
      { id: 0, kind: 'kernel', name: 'k', stream: 0, cost: 1, functionName: 'k', grid: [1, 1, 1], block: [32, 1, 1], sharedMem: 0 },
      { id: 1, kind: 'empty', name: 'e', stream: null, cost: 1 },
    ],
    edges: [[0, 1]],
  };
  const g = ComputeGraph.fromJSON(v1);
  assert.equal(g.nodeCount(), 2);
  assert.equal(g.toJSON().version, 2, 'written back as version 2');
  const op = 'ComputeGraph.fromJSON';
  const e = refused(() => ComputeGraph.fromJSON({ ...v1, nodes: [{ id: 0, kind: 'eventRecord', event: 1 }], edges: [] }), GraphError, op, /nodes\[0\]\.kind must be one of 'kernel', 'memcpy', 'memset', 'hostCallback', 'empty'/);
  assert.equal(codeOf(e), 'GRAPH_JSON_INVALID');
  refused(() => ComputeGraph.fromJSON({ ...v1, edges: [[0, 1, { kind: 'plain' }]] }), GraphError, op, /edges\[0\] must be a pair \[from, to\], got/);
});

test('bad version 2 documents are refused naming the field, nested ones from the outer document', () => {
  const op = 'ComputeGraph.fromJSON';
  const { g } = sample();
  const doc = (): Record<string, any> => JSON.parse(JSON.stringify(g));
  const cases: [(d: Record<string, any>) => void, RegExp][] = [
    [(d) => (d.nodes[2].graph.nodes[0].grid = [0, 1, 1]), /nodes\[2\]\.graph\.nodes\[0\]\.grid\[0\] must be an integer in 1\.\./],
    [(d) => (d.nodes[2].graph.version = 9), /nodes\[2\]\.graph\.version must be 1 or 2/],
    [(d) => (d.nodes[2].graph = 'x'), /nodes\[2\]\.graph must be an object, got "x"/],
    [(d) => (d.nodes[2].graph.edges = [[0, 1, { kind: 'programmatic', port: 'completion' }]]), /nodes\[2\]\.graph\.edges\[0\]\[2\]\.port/],
    [(d) => ((d.nodes[2].graph.nodes[0] = { id: 0, kind: 'memAlloc', sizeBytes: 8 }), (d.nodes[2].graph.edges = [])), /nodes\[2\]\.graph holds a 'memAlloc' node \(node 0\); CUDA does not clone/],
    [(d) => (d.nodes[4].alloc = 1), /nodes\[4\]\.alloc must name a 'memAlloc' node/],
    [(d) => (d.nodes[4].alloc = 9), /nodes\[4\]\.alloc names node 9/],
    [(d) => (d.edges = [[1, 2, { kind: 'programmatic' }]]), /edges\[0\] \[1, 2\]: a programmatic edge joins two kernel nodes, but node 1 is a 'eventRecord' node/],
    [(d) => (d.edges = [[1, 2, { kind: 'plain', extra: 1 }]]), /edges\[0\]\[2\]/],
    [(d) => (d.edges = [[1, 2, 3, 4]]), /edges\[0\] must be a pair \[from, to\] or a triple/],
  ];
  for (const [mutate, re] of cases) {
    const d = doc();
    mutate(d);
    const e = refused(() => ComputeGraph.fromJSON(d), GraphError, op, re);
    assert.equal(codeOf(e), 'GRAPH_JSON_INVALID', e.message);
  }
});

test('a deeply nested hostile document is refused at the depth limit, not by overflowing the stack', () => {
  let text = '{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":[]}';
  for (let i = 0; i < 5000; i++) text = `{"format":"cudagraph.ComputeGraph","version":2,"nodes":[{"id":0,"kind":"childGraph","graph":${text}}],"edges":[]}`;
  const e = refused(() => ComputeGraph.fromJSON(text), GraphError, 'ComputeGraph.fromJSON', /nests child graphs more than 64 deep/);
  assert.equal(codeOf(e), 'GRAPH_JSON_INVALID');
});

test('DOT draws a child graph as a cluster of its nodes, edges clipped to it, and programmatic edges bold', () => {
  const { g } = sample();
  const dot = g.toDot();
  assert.match(dot, /compound=true/);
  assert.match(dot, /subgraph cluster_n2 \{/);
  assert.match(dot, /n2_0 \[label="a\\n<<<1, 32>>>"/);
  assert.match(dot, /n2_0 -> n2_1 \[style=bold, tooltip="programmatic", arrowhead=onormal, color="#1f5fa8"\];/);
  // Across streams a programmatic edge is dashed and bold (one style attribute: Graphviz keeps only the last).
  const two = new ComputeGraph();
  const p = two.addNode({ kind: 'kernel', functionName: 'p', grid: 1, block: 1, stream: StreamId(0) });
  const q = two.addNode({ kind: 'kernel', functionName: 'q', grid: 1, block: 1, stream: StreamId(1) });
  two.addEdge(p, q, { kind: 'programmatic', port: 'launchOrder' });
  assert.match(two.toDot(), /n0 -> n1 \[style="dashed,bold", tooltip="programmatic, launchOrder", arrowhead=onormal, color="#1f5fa8", label="launch order", fontsize=8\];/);
  assert.match(dot, /n1 -> n2_0 \[lhead=cluster_n2\];/);
  assert.match(dot, /n2_1 -> n3 \[ltail=cluster_n2\];/);
  assert.match(dot, /n0 \[label="memAlloc\\nalloc 4 KiB on device 0", shape=cylinder/);
  assert.match(dot, /n4 \[label="memFree\\nfree node 0's memory"/);
  assert.match(dot, /n1 \[label="eventRecord\\nrecord event 7", shape=house/);
  // A graph without children or edge data draws as before (no compound attribute).
  const plain = new ComputeGraph();
  plain.addNode({ kind: 'empty' });
  assert.doesNotMatch(plain.toDot(), /compound/);
  // An empty child is drawn as one node.
  const e = new ComputeGraph();
  e.addNode({ kind: 'childGraph', graph: new ComputeGraph() });
  assert.match(e.toDot(), /n0 \[label="childGraph\\nchild graph: 0 nodes, 0 edges", shape=box3d/);
});

test('Mermaid draws a child graph as a subgraph and programmatic edges thick; linkStyle counts the child’s links', () => {
  const { g } = sample();
  const m = toMermaid(g, { highlight: [1, 2] });
  assert.match(m, /subgraph n2\["body<br>child graph: 2 nodes, 1 edge"\]/);
  assert.match(m, /n2_0 ==> n2_1/);
  assert.match(m, /n1 --> n2\n/);
  assert.match(m, /n0\[\("memAlloc<br>alloc 4 KiB on device 0"\)\]:::memAlloc/);
  // Link 0 is the child's; the highlighted edge 1 → 2 is link 2 (after 0 → 1).
  assert.match(m, /linkStyle 2 stroke/);
});

test('StreamCapture records external events, graph memory, child graphs and programmatic kernels as their node kinds', () => {
  for (const semantics of ['per-stream', 'cuda'] as const) {
    const cap = new StreamCapture({ semantics });
    const s = StreamId(0);
    cap.beginCapture(s);
    const body = new ComputeGraph();
    body.addNode({ kind: 'kernel', functionName: 'inner', grid: 1, block: 32 });
    const alloc = cap.recordMemAlloc(s, 1 << 20);
    const k0 = cap.recordKernel(s, 'produce', 4, 256, 0);
    const k1 = cap.recordKernel(s, 'consume', 4, 256, 0, { programmatic: true });
    const rec = cap.recordExternalEvent(s, CaptureEvent(9));
    const child = cap.recordChildGraph(s, body, 'body');
    const wait = cap.waitExternalEvent(s, CaptureEvent(9));
    const free = cap.recordMemFree(s, alloc);
    const k2 = cap.recordKernel(s, 'after-free', 1, 1, 0, { programmatic: true });
    // Refusals name the call and record nothing.
    const n = cap.nodeCount();
    assert.throws(() => cap.recordMemFree(s, alloc), /^InvalidArgumentError: StreamCapture\.recordMemFree: node 0's allocation is already freed by node 6/);
    assert.throws(() => cap.recordMemFree(s, k0), /StreamCapture\.recordMemFree: alloc must name a 'memAlloc' node, but node 1 is a 'kernel' node/);
    assert.throws(() => cap.recordMemAlloc(s, 0), /StreamCapture\.recordMemAlloc: sizeBytes must be at least 1/);
    assert.throws(() => cap.recordExternalEvent(s, -1 as CaptureEvent), /StreamCapture\.recordExternalEvent: event/);
    assert.throws(() => cap.recordChildGraph(s, {} as ComputeGraph), /StreamCapture\.recordChildGraph: graph must be a ComputeGraph/);
    assert.throws(() => cap.recordKernel(s, 'k', 1, 1, 0, { programmatic: 1 } as never), /StreamCapture\.recordKernel: programmatic must be a boolean/);
    assert.throws(() => cap.recordKernel(s, 'k', 1, 1, 0, { pdl: true } as never), /StreamCapture\.recordKernel: unknown option 'pdl'/);
    assert.throws(() => cap.recordMemAlloc(StreamId(5), 8), (e: unknown) => e instanceof GraphError && e.code === 'CAPTURE_NOT_ACTIVE');
    assert.equal(cap.nodeCount(), n);
    const g = cap.endCapture(s);
    assert.deepEqual(
      g.nodes().map((x) => x.kind),
      ['memAlloc', 'kernel', 'kernel', 'eventRecord', 'childGraph', 'eventWait', 'memFree', 'kernel'],
    );
    assert.equal(g.node(child).name, 'body');
    assert.equal(g.node(rec).stream, 0);
    assert.deepEqual(g.edgeData(k0, k1), { kind: 'programmatic', port: 'trigger' }, 'programmatic stream serialization after a kernel');
    assert.deepEqual(g.edgeData(free, k2), { kind: 'plain', port: 'completion' }, 'after a non-kernel node the edge stays plain');
    assert.deepEqual(g.edgeData(alloc, k0), { kind: 'plain', port: 'completion' });
    assert.equal(g.isReachable(wait, free), true);
    ExecGraph.instantiate(g);
  }
});

test('property: random graphs of every kind with edge data round-trip through JSON and clone(), and diff as identical', () => {
  const kinds = ['kernel', 'kernel', 'empty', 'eventRecord', 'eventWait', 'childGraph', 'memAlloc', 'memFree', 'memset', 'conditional'] as const;
  const body = new ComputeGraph();
  const b0 = body.addNode({ kind: 'kernel', functionName: 'b0', grid: 2, block: 64 });
  const b1 = body.addNode({ kind: 'kernel', functionName: 'b1', grid: 2, block: 64 });
  body.addEdge(b0, b1, { kind: 'programmatic', port: 'launchOrder' });
  // A child inside the child.
  body.addNode({ kind: 'childGraph', graph: body.clone() });
  const program = fc.record({
    nodes: fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 24 }),
    edges: fc.array(fc.tuple(fc.nat(23), fc.nat(23), fc.constantFrom('plain', 'programmatic', 'launchOrder')), { maxLength: 60 }),
  });
  fc.assert(
    fc.property(program, ({ nodes, edges }) => {
      const g = new ComputeGraph();
      const open: number[] = [];
      nodes.forEach((kind, i) => {
        switch (kind) {
          case 'kernel':
            g.addNode({ kind, functionName: `k${i}`, grid: i + 1, block: 32 });
            break;
          case 'memset':
            g.addNode({ kind, sizeBytes: 8, value: i });
            break;
          case 'eventRecord':
          case 'eventWait':
            g.addNode({ kind, event: i });
            break;
          case 'childGraph':
            g.addNode({ kind, graph: body });
            break;
          case 'conditional':
            // The child graph body (with its nested child) is a valid conditional body too.
            g.addNode({ kind, type: (['if', 'while', 'switch'] as const)[i % 3]!, bodies: i % 3 === 1 ? [body] : [body, body], estimate: i % 3 === 1 ? i : 1 });
            break;
          case 'memAlloc':
            open.push(g.addNode({ kind, sizeBytes: 64 * (i + 1) }));
            break;
          case 'memFree': {
            const alloc = open.shift();
            const id = g.addNode({ kind, alloc: alloc === undefined ? null : NodeId(alloc) });
            if (alloc !== undefined) g.addEdge(NodeId(alloc), id);
            break;
          }
          default:
            g.addNode({ kind });
        }
      });
      const n = g.nodeCount();
      for (const [a, b, want] of edges) {
        const u = Math.min(a, b) % n;
        const v = Math.max(a, b) % n;
        if (u >= v) continue;
        const ku = g.node(NodeId(u)).kind;
        const kv = g.node(NodeId(v)).kind;
        const data =
          want === 'programmatic' && ku === 'kernel' && kv === 'kernel'
            ? ({ kind: 'programmatic' } as const)
            : want === 'launchOrder' && ku === 'kernel'
              ? ({ port: 'launchOrder' } as const)
              : undefined;
        const existing = g.edgeData(NodeId(u), NodeId(v));
        if (existing !== null) continue;
        g.addEdge(NodeId(u), NodeId(v), data);
      }
      // A batch in reverse order, against the numbering, with its own duplicates: the data lands on the right edges.
      const batch: Array<readonly [NodeId, NodeId, { kind: 'programmatic' }] | readonly [NodeId, NodeId]> = [];
      for (let v = n - 1; v > 0; v--) {
        const u = v - 1;
        if (g.edgeData(NodeId(u), NodeId(v)) !== null) continue;
        const kernels = g.node(NodeId(u)).kind === 'kernel' && g.node(NodeId(v)).kind === 'kernel';
        const edge = kernels ? ([NodeId(u), NodeId(v), { kind: 'programmatic' }] as const) : ([NodeId(u), NodeId(v)] as const);
        batch.push(edge, edge);
      }
      const before = g.edgeCount();
      assert.equal(g.addEdges(batch), batch.length / 2);
      assert.equal(g.edgeCount(), before + batch.length / 2);
      for (const e of batch) {
        const d = g.edgeData(e[0], e[1]);
        assert.deepEqual(d, e.length === 3 ? { kind: 'programmatic', port: 'trigger' } : { kind: 'plain', port: 'completion' });
      }
      const text = JSON.stringify(g);
      assert.equal(JSON.stringify(ComputeGraph.fromJSON(g.toJSON())), text, 'the object form round-trips too');
      const back = ComputeGraph.fromJSON(text);
      assert.equal(JSON.stringify(back), text);
      assert.deepEqual(back.edgeRecords(), g.edgeRecords(), 'edge data survives the document');
      const c = g.clone();
      assert.equal(JSON.stringify(c), text);
      assert.deepEqual(c.edgeRecords(), g.edgeRecords());
      assert.deepEqual(
        g.edgeRecords().map((e) => [e.from, e.to]),
        g.edges(),
      );
      assert.equal(ExecGraph.instantiate(g).diff(c).identical, true);
    }),
    { numRuns: 200 },
  );
});

test('toJSON() is plain data: fromJSON and structuredClone take it as it is, child graphs included', () => {
  const { g } = sample();
  const doc = g.toJSON();
  const sub = doc.nodes[2]!;
  assert.ok(sub.kind === 'childGraph' && sub.graph.format === 'cudagraph.ComputeGraph', 'the child is a nested document');
  assert.equal(JSON.stringify(ComputeGraph.fromJSON(doc)), JSON.stringify(g));
  assert.equal(JSON.stringify(ComputeGraph.fromJSON(structuredClone(doc))), JSON.stringify(g));
});

test('shared read-only children cannot make a small graph stand for an exponentially large one', () => {
  let level = new ComputeGraph();
  level.addNode({ kind: 'empty' });
  let refusedAt = -1;
  for (let depth = 1; depth <= 20 && refusedAt < 0; depth++) {
    const next = new ComputeGraph();
    try {
      for (let i = 0; i < 3; i++) next.addNode({ kind: 'childGraph', graph: level });
    } catch (e) {
      assert.ok(e instanceof InvalidArgumentError);
      assert.match((e as Error).message, /^ComputeGraph\.addNode: spec\.graph holds \d+ node\(s\) with its own child graphs; with the \d+ the graph's child graphs hold already, that is more than 1048576/);
      refusedAt = depth;
      assert.ok(next.nodeCount() < 3, 'the refused node was not added');
    }
    level = next;
  }
  assert.ok(refusedAt > 10 && refusedAt <= 13, `refused at depth ${refusedAt}`);
  // A large child draws without overflowing the stack (its lines are not spread into one call).
  const big = new ComputeGraph();
  for (let i = 0; i < 150_000; i++) big.addNode({ kind: 'empty' });
  const holder = new ComputeGraph();
  holder.addNode({ kind: 'childGraph', graph: big });
  assert.ok(holder.toDot().length > 150_000);
});

test('refusals of the new calls name the argument and the batch entry', () => {
  const g = new ComputeGraph();
  const k = g.addNode({ kind: 'kernel', functionName: 'k', grid: 1, block: 1 });
  const m = g.addNode({ kind: 'memset', sizeBytes: 4, value: 0 });
  refused(() => g.addEdges([[k, m], [m, k, { kind: 'programmatic' }]] as never), InvalidArgumentError, 'ComputeGraph.addEdges', /^ComputeGraph\.addEdges: edges\[1\]: edge 1 → 0: a programmatic edge joins two kernel nodes/);
  g.addEdge(k, m);
  refused(() => g.addEdges([[k, m, { port: 'launchOrder' }]]), GraphError, 'ComputeGraph.addEdges', /^ComputeGraph\.addEdges: edges\[0\]: edge 0 → 1 already exists as a plain edge; it cannot also be plain, launchOrder/);
  const cap = new StreamCapture();
  cap.beginCapture(StreamId(0));
  cap.recordMemAlloc(StreamId(0), 64);
  refused(() => cap.recordMemFree(StreamId(0), undefined as never), InvalidArgumentError, 'StreamCapture.recordMemFree', /alloc must be the allocation node to free, or null/);
  assert.equal(cap.nodeCount(), 1);
});
