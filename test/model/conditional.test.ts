/**
 * Conditional nodes built by hand (`addNode`, `GraphBuilder.conditional`): their records and
 * defaults, CUDA's rules for bodies, handles and child graphs, the cost rule and the queries that
 * see a conditional as one node, copies, JSON, DOT and `ExecGraph` updates.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import {
  ComputeGraph,
  ExecGraph,
  GraphBuilder,
  GraphError,
  InvalidArgumentError,
  NodeId,
  StreamCapture,
  StreamId,
  GRAPH_JSON_VERSION,
  type ConditionalNodeRecord,
  type ConditionalNodeSpec,
  type GraphNode,
} from '../../src/index.js';
import { refused } from '../support/refused.js';

const OP = 'ComputeGraph.addNode';

/** A chain of kernels with the given costs (the critical path is their sum). */
function chain(...costs: number[]): ComputeGraph {
  const g = new ComputeGraph();
  costs.forEach((cost, i) => {
    const k = g.addNode({ kind: 'kernel', functionName: `k${i}`, grid: 1, block: 32, cost });
    if (i > 0) g.addEdge(NodeId(i - 1), k);
  });
  return g;
}

/** memset → while(step → check) → if(then: fix | else: empty) → switch(3 cases) → empty. */
function sample(): ComputeGraph {
  const g = new ComputeGraph();
  const pre = g.addNode({ kind: 'memset', sizeBytes: 4, value: 1 });
  const loop = g.addNode({ kind: 'conditional', type: 'while', bodies: [chain(3, 2)], estimate: 10, name: 'solve', handle: { default: 1 } });
  const branch = g.addNode({ kind: 'conditional', type: 'if', bodies: [chain(4), new ComputeGraph()], estimate: 0.5 });
  const pick = g.addNode({ kind: 'conditional', type: 'switch', bodies: [chain(1), chain(1, 1, 1), chain(2)], handle: { id: 7, assignDefault: false } });
  const post = g.addNode({ kind: 'empty', name: 'done' });
  g.addEdges([
    [pre, loop],
    [loop, branch],
    [branch, pick],
    [pick, post],
  ]);
  return g;
}

const asConditional = (n: GraphNode): ConditionalNodeRecord => {
  assert.equal(n.kind, 'conditional');
  return n as ConditionalNodeRecord;
};

test('a conditional node is built and read back with its type, handle, estimate, bodies and default cost', () => {
  const g = sample();
  const loop = asConditional(g.node(NodeId(1)));
  assert.deepEqual(
    { ...loop, bodies: loop.bodies.length },
    { id: 1, kind: 'conditional', name: 'solve', stream: null, cost: 50, type: 'while', handle: { id: 0, default: 1, assignDefault: true }, estimate: 10, bodies: 1 },
  );
  assert.equal(loop.bodies[0]!.nodeCount(), 2);
  const branch = asConditional(g.node(NodeId(2)));
  // Handle ids count on from the largest one the graph has; assignDefault defaults to true.
  assert.deepEqual(branch.handle, { id: 1, default: 0, assignDefault: true });
  assert.equal(branch.name, 'conditional', 'the default name is the kind');
  assert.equal(branch.cost, 0.5 * 4, 'estimate × the largest body’s critical path (the empty else costs 0)');
  const pick = asConditional(g.node(NodeId(3)));
  assert.deepEqual(pick.handle, { id: 7, default: 0, assignDefault: false });
  assert.equal(pick.cost, 3, 'the largest body of a switch is the longest, not the first');
  assert.equal(pick.estimate, 1);
  // The next handle id follows the largest one used.
  const next = g.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1)] });
  assert.equal(asConditional(g.node(next)).handle.id, 8);
  // A given cost replaces the default, as for a child graph.
  const priced = g.addNode({ kind: 'conditional', type: 'while', bodies: [chain(5)], estimate: 3, cost: 2 });
  assert.equal(g.node(priced).cost, 2);
  assert.equal(g.hasConditionalNodes(), true);
  assert.equal(chain(1).hasConditionalNodes(), false);
  assert.equal(new ComputeGraph().addNode({ kind: 'conditional', type: 'switch', bodies: [new ComputeGraph()] }), 0, 'an empty body is allowed');
});

test('every query sees a conditional as one node of the outer graph, with its cost', () => {
  const g = sample();
  assert.equal(g.nodeCount(), 5, 'the bodies’ nodes are not nodes of the graph');
  assert.deepEqual(g.topologicalOrder(), [0, 1, 2, 3, 4]);
  assert.deepEqual(g.levels(), [[0], [1], [2], [3], [4]]);
  assert.equal(g.isReachable(NodeId(0), NodeId(4)), true);
  assert.deepEqual(g.successors(NodeId(1)), [2]);
  const cp = g.criticalPath();
  assert.deepEqual(cp, { cost: 1 + 50 + 2 + 3 + 1, nodes: [0, 1, 2, 3, 4] });
  const t = g.timing();
  assert.equal(t.length, cp.cost);
  assert.deepEqual(t.nodes[2], { id: 2, asap: 51, alap: 51, slack: 0, critical: true });
  const m = g.boundedMakespan(2);
  assert.equal(m.totalCost, cp.cost);
  assert.equal(m.makespan, cp.cost);
  // A conditional beside other work: the schedule sees its cost as one block.
  const wide = new ComputeGraph();
  wide.addNode({ kind: 'conditional', type: 'while', bodies: [chain(2, 2)], estimate: 4 });
  wide.addNode({ kind: 'kernel', functionName: 'side', grid: 1, block: 1, cost: 5 });
  assert.deepEqual(wide.widestLevel(), { level: 0, width: 2 });
  assert.equal(wide.criticalPath().cost, 16);
  assert.equal(wide.boundedMakespan(1).makespan, 21);
  // A huge estimate overflows the schedules, which say so, instead of returning Infinity.
  const huge = new ComputeGraph();
  const a = huge.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1e300)], estimate: 1e300 });
  const b = huge.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1e300)], estimate: 1e300 });
  huge.addEdge(a, b);
  assert.equal(huge.node(a).cost, Number.MAX_VALUE);
  const e = refused(() => huge.criticalPath(), GraphError, 'ComputeGraph.criticalPath', /add up to more than the largest number/);
  assert.equal((e as GraphError).code, 'GRAPH_COST_OVERFLOW');
});

test('bodies are read-only copies; records are fresh; clone() shares the read-only bodies', () => {
  const body = chain(1);
  const g = new ComputeGraph();
  g.addNode({ kind: 'conditional', type: 'while', bodies: [body] });
  body.addNode({ kind: 'empty' });
  const rec = asConditional(g.node(NodeId(0)));
  assert.equal(rec.bodies[0]!.nodeCount(), 1, 'later changes to the source do not reach the node');
  assert.equal(rec.bodies[0]!.readOnly, true);
  refused(() => rec.bodies[0]!.addNode({ kind: 'empty' }), GraphError, 'ComputeGraph.addNode', /cannot change; clone\(\) it/);
  assert.ok(Object.isFrozen(rec.handle), 'the handle record cannot be changed through a record');
  const copy = rec.bodies[0];
  (rec.bodies as ComputeGraph[]).pop();
  assert.equal(asConditional(g.node(NodeId(0))).bodies.length, 1, 'a record’s bodies array is its own');
  const c = g.clone();
  assert.equal(asConditional(c.node(NodeId(0))).bodies[0], copy, 'the clone shares the read-only body');
  // The clone keeps the handle bookkeeping: the same id is refused there too, and the next id follows.
  refused(() => c.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1)], handle: { id: 0 } }), InvalidArgumentError, OP, /spec\.handle\.id 0 is already the handle of node 0/);
  assert.equal(asConditional(c.node(c.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1)] }))).handle.id, 1);
  assert.equal(g.nodeCount(), 1);
});

test('CUDA’s rules are refused naming the call and the field, and change nothing', () => {
  const g = sample();
  const before = JSON.stringify(g);
  const host = new ComputeGraph();
  host.addNode({ kind: 'kernel', functionName: 'k', grid: 1, block: 1 });
  host.addNode({ kind: 'hostCallback', label: 'log' });
  const nested = new ComputeGraph();
  nested.addNode({ kind: 'empty' });
  nested.addNode({ kind: 'childGraph', graph: host });
  const event = new ComputeGraph();
  event.addNode({ kind: 'eventRecord', event: 1 });
  const memory = new ComputeGraph();
  memory.addNode({ kind: 'memAlloc', sizeBytes: 8 });
  const ok = chain(1);
  const cases: [unknown, RegExp][] = [
    [{ type: 'loop', bodies: [ok] }, /spec\.type must be one of 'if', 'while', 'switch', got "loop"/],
    [{ type: 'while' }, /spec\.bodies must be an array of graphs, got undefined/],
    [{ type: 'while', bodies: ok }, /spec\.bodies must be an array of graphs, got an object \(ComputeGraph\)/],
    [{ type: 'while', bodies: [] }, /spec\.bodies must hold exactly 1 body for a 'while' node, got 0/],
    [{ type: 'while', bodies: [ok, ok] }, /exactly 1 body for a 'while' node, got 2/],
    [{ type: 'if', bodies: [] }, /spec\.bodies must hold 1 or 2 bodies \(then, and an optional else\) for an 'if' node, got 0/],
    [{ type: 'if', bodies: [ok, ok, ok] }, /for an 'if' node, got 3/],
    [{ type: 'switch', bodies: [] }, /spec\.bodies must hold 1\.\.65535 bodies \(one per case\) for a 'switch' node, got 0/],
    [{ type: 'switch', bodies: [ok, { nodes: [] }] }, /spec\.bodies\[1\] must be a ComputeGraph, got an object \(Object\)/],
    [{ type: 'if', bodies: [ok, host] }, /spec\.bodies\[1\] holds a 'hostCallback' node \(node 1\); a conditional body may hold only kernel, empty, childGraph, memset, memcpy and conditional nodes, also inside its child graphs \(CUDA rule\)/],
    [{ type: 'while', bodies: [nested] }, /spec\.bodies\[0\] holds a 'hostCallback' node \(node 1 of child graph node 1\)/],
    [{ type: 'while', bodies: [event] }, /spec\.bodies\[0\] holds a 'eventRecord' node \(node 0\)/],
    [{ type: 'while', bodies: [memory] }, /spec\.bodies\[0\] holds a 'memAlloc' node \(node 0\)/],
    [{ type: 'while', bodies: [ok], handle: 3 }, /spec\.handle must be an object \{ id\?, default\?, assignDefault\? \}, got 3/],
    [{ type: 'while', bodies: [ok], handle: null }, /spec\.handle must be an object/],
    [{ type: 'while', bodies: [ok], handle: { value: 1 } }, /spec\.handle\.value is not a field of a conditional handle \(known: id, default, assignDefault\)/],
    [{ type: 'while', bodies: [ok], handle: { id: 0 } }, /spec\.handle\.id 0 is already the handle of node 1; a conditional handle serves one conditional node \(CUDA rule\)/],
    [{ type: 'while', bodies: [ok], handle: { id: -1 } }, /spec\.handle\.id must be an integer in 0\.\.4294967295, got -1/],
    [{ type: 'while', bodies: [ok], handle: { id: 1.5 } }, /spec\.handle\.id must be an integer/],
    [{ type: 'while', bodies: [ok], handle: { default: NaN } }, /spec\.handle\.default must be an integer in 0\.\.4294967295, got NaN/],
    [{ type: 'while', bodies: [ok], handle: { assignDefault: 1 } }, /spec\.handle\.assignDefault must be a boolean, got 1/],
    [{ type: 'while', bodies: [ok], estimate: NaN }, /spec\.estimate must be a finite number ≥ 0, got NaN/],
    [{ type: 'while', bodies: [ok], estimate: -1 }, /spec\.estimate must be a finite number ≥ 0, got -1/],
    [{ type: 'while', bodies: [ok], estimate: Infinity }, /spec\.estimate must be a finite number ≥ 0, got Infinity/],
    [{ type: 'while', bodies: [ok], estimate: '2' }, /spec\.estimate must be a finite number ≥ 0, got "2"/],
    [{ type: 'if', bodies: [ok], estimate: 2 }, /spec\.estimate of an 'if' node is the chance that a body runs \(at most once\), so at most 1, got 2/],
    [{ type: 'switch', bodies: [ok], estimate: 1.5 }, /spec\.estimate of a 'switch' node is the chance/],
    [{ type: 'while', bodies: [ok], graph: ok }, /spec\.graph is not a field of 'conditional' nodes \(known: kind, name, stream, cost, type, handle, estimate, bodies\)/],
    [{ type: 'while', bodies: [ok], cost: -1 }, /spec\.cost must be a finite number ≥ 0/],
  ];
  for (const [spec, re] of cases) {
    const e = refused(() => g.addNode({ kind: 'conditional', ...(spec as object) } as ConditionalNodeSpec), InvalidArgumentError, OP, re);
    assert.ok((e as InvalidArgumentError).parameter.startsWith('spec.'), e.message);
  }
  // A graph holding a conditional node cannot be a child graph (CUDA rule), by any call.
  refused(() => g.addNode({ kind: 'childGraph', graph: sample() }), InvalidArgumentError, OP, /spec\.graph holds a 'conditional' node \(node 1\); CUDA does not allow a graph holding conditional nodes as a child graph/);
  const b = new GraphBuilder();
  const e = refused(() => b.childGraph(sample()), InvalidArgumentError, 'GraphBuilder.childGraph', /child holds a 'conditional' node \(node 1\)/);
  assert.equal((e as InvalidArgumentError).parameter, 'child');
  const cap = new StreamCapture();
  cap.beginCapture(StreamId(0));
  refused(() => cap.recordChildGraph(StreamId(0), sample()), InvalidArgumentError, 'StreamCapture.recordChildGraph', /graph holds a 'conditional' node/);
  assert.equal(cap.nodeCount(), 0);
  assert.equal(JSON.stringify(g), before, 'no refusal changed the graph');
});

test('conditionals nest in bodies, within the depth and size bounds child graphs have', () => {
  // A child graph at the bottom, then bodies holding bodies: 64 levels.
  let inner = new ComputeGraph();
  inner.addNode({ kind: 'childGraph', graph: chain(1) });
  for (let d = 3; d <= 64; d++) {
    const outer = new ComputeGraph();
    outer.addNode({ kind: 'conditional', type: d % 2 === 0 ? 'while' : 'if', bodies: [inner] });
    inner = outer;
  }
  const top = new ComputeGraph();
  refused(() => top.addNode({ kind: 'conditional', type: 'while', bodies: [inner] }), InvalidArgumentError, OP, /spec\.bodies\[0\] nests child graphs 64 deep; a child may nest at most 63 deep/);
  assert.equal(top.nodeCount(), 0);
  assert.equal(JSON.stringify(ComputeGraph.fromJSON(JSON.stringify(inner))), JSON.stringify(inner), '64 levels round-trip');
  // The bodies of one node count together against the bound on nested nodes.
  const big = new ComputeGraph();
  for (let i = 0; i < 600_000; i++) big.addNode({ kind: 'empty' });
  const g = new ComputeGraph();
  refused(() => g.addNode({ kind: 'conditional', type: 'if', bodies: [big, big] }), InvalidArgumentError, OP, /spec\.bodies\[1\] holds 600000 node\(s\) with its own child graphs; with the 600000 the graph's child graphs hold already, that is more than 1048576/);
  assert.equal(g.nodeCount(), 0);
});

test('JSON round-trips conditional nodes and their bodies as nested documents, still version 2', () => {
  const g = sample();
  // A conditional inside a body, with a child graph beside it.
  const body = new ComputeGraph();
  const c = body.addNode({ kind: 'childGraph', graph: chain(1, 2) });
  const w = body.addNode({ kind: 'conditional', type: 'while', bodies: [chain(5)], estimate: 2, handle: { id: 3 } });
  body.addEdge(c, w);
  g.addNode({ kind: 'conditional', type: 'switch', bodies: [body, chain(1)], stream: StreamId(2) });
  const doc = g.toJSON();
  assert.equal(doc.version, GRAPH_JSON_VERSION);
  assert.equal(doc.version, 2, 'conditional nodes add a kind; documents without one are as before');
  const loop = doc.nodes[1]!;
  assert.ok(loop.kind === 'conditional');
  assert.deepEqual(Object.keys(loop), ['id', 'kind', 'name', 'stream', 'cost', 'type', 'handle', 'estimate', 'bodies']);
  assert.equal(loop.bodies[0]!.format, 'cudagraph.ComputeGraph');
  const text = JSON.stringify(g);
  for (const input of [doc, text, structuredClone(doc)]) {
    const back = ComputeGraph.fromJSON(input);
    assert.equal(JSON.stringify(back), text);
    const rec = asConditional(back.node(NodeId(5)));
    assert.equal(rec.bodies[0]!.readOnly, true, 'a body read from a document is read-only too');
    assert.deepEqual(asConditional(rec.bodies[0]!.node(NodeId(1))).handle, { id: 3, default: 0, assignDefault: true });
    assert.equal(back.hasConditionalNodes(), true);
    assert.deepEqual(back.criticalPath(), g.criticalPath());
  }
  // Left-out fields take addNode's defaults in a document too.
  const minimal = ComputeGraph.fromJSON({ format: 'cudagraph.ComputeGraph', version: 2, nodes: [{ id: 0, kind: 'conditional', type: 'while', bodies: [chain(2).toJSON()] }], edges: [] });
  assert.deepEqual({ ...asConditional(minimal.node(NodeId(0))), bodies: 1 }, { id: 0, kind: 'conditional', name: 'conditional', stream: null, cost: 2, type: 'while', handle: { id: 0, default: 0, assignDefault: true }, estimate: 1, bodies: 1 });
});

test('bad conditional documents are refused naming the field from the outer document', () => {
  const op = 'ComputeGraph.fromJSON';
  const doc = (): Record<string, any> => JSON.parse(JSON.stringify(sample()));
  const cases: [(d: Record<string, any>) => void, RegExp][] = [
    [(d) => (d.nodes[1].bodies[0].nodes[0].grid = [0, 1, 1]), /nodes\[1\]\.bodies\[0\]\.nodes\[0\]\.grid\[0\] must be an integer in 1\.\./],
    [(d) => (d.nodes[1].bodies[0].nodes[0] = { id: 0, kind: 'hostCallback', label: 'x' }), /nodes\[1\]\.bodies\[0\] holds a 'hostCallback' node \(node 0\); a conditional body may hold only/],
    [(d) => (d.nodes[1].bodies[0].version = 7), /nodes\[1\]\.bodies\[0\]\.version must be 1 or 2/],
    [(d) => (d.nodes[1].bodies = []), /nodes\[1\]\.bodies must hold exactly 1 body for a 'while' node, got 0/],
    [(d) => (d.nodes[1].bodies = [1]), /nodes\[1\]\.bodies\[0\] must be an object, got 1/],
    [(d) => (d.nodes[2].handle.id = 0), /nodes\[2\]\.handle\.id 0 is already the handle of node 1/],
    [(d) => (d.nodes[2].handle.extra = 1), /nodes\[2\]\.handle\.extra is not a field of a conditional handle/],
    [(d) => (d.nodes[1].estimate = -3), /nodes\[1\]\.estimate must be a finite number ≥ 0, got -3/],
    [(d) => (d.nodes[1].type = 'until'), /nodes\[1\]\.type must be one of 'if', 'while', 'switch'/],
    [(d) => (d.nodes[4] = { id: 4, kind: 'childGraph', graph: JSON.parse(JSON.stringify(sample())) }), /nodes\[4\]\.graph holds a 'conditional' node \(node 1\)/],
    [(d) => (d.edges = [[1, 2, { kind: 'programmatic' }]]), /edges\[0\] \[1, 2\]: a programmatic edge joins two kernel nodes, but node 1 is a 'conditional' node/],
  ];
  for (const [mutate, re] of cases) {
    const d = doc();
    mutate(d);
    const e = refused(() => ComputeGraph.fromJSON(d), GraphError, op, re);
    assert.equal((e as GraphError).code, 'GRAPH_JSON_INVALID', e.message);
  }
  // A hostile document nesting bodies thousands deep is refused at the depth limit, not by overflowing the stack.
  let text = '{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":[]}';
  for (let i = 0; i < 5000; i++) text = `{"format":"cudagraph.ComputeGraph","version":2,"nodes":[{"id":0,"kind":"conditional","type":"while","bodies":[${text}]}],"edges":[]}`;
  refused(() => ComputeGraph.fromJSON(text), GraphError, op, /nests child graphs more than 64 deep/);
  // A version 1 document knows the first five kinds only.
  const v1 = { format: 'cudagraph.ComputeGraph', version: 1, nodes: [{ id: 0, kind: 'conditional', type: 'while', bodies: [] }], edges: [] };
  refused(() => ComputeGraph.fromJSON(v1), GraphError, op, /nodes\[0\]\.kind must be one of 'kernel', 'memcpy', 'memset', 'hostCallback', 'empty'/);
});

const graphviz = await Graphviz.load();

test('DOT draws a conditional as a cluster of its bodies, labelled by type and case, nested ones nested', () => {
  const g = sample();
  const body = new ComputeGraph();
  const k = body.addNode({ kind: 'kernel', functionName: 'inner "k"', grid: 1, block: 1 });
  const w = body.addNode({ kind: 'conditional', type: 'while', bodies: [chain(1)], name: 'a\\N "loop"' });
  body.addEdge(k, w);
  g.addNode({ kind: 'conditional', type: 'if', bodies: [body] });
  g.addEdge(NodeId(4), NodeId(5));
  const dot = g.toDot({ highlight: [0, 1, 2] });
  assert.match(dot, /compound=true/);
  assert.match(dot, /subgraph cluster_n1 \{/);
  assert.match(dot, /n1 \[label="solve\\nwhile on handle 0, default 1, ~10 trips", shape=Mdiamond, fillcolor="#fff2cc", color="#d62728", penwidth=3\];/);
  assert.match(dot, /subgraph cluster_n1_b0 \{\n\s+label="while body";/);
  assert.match(dot, /n1_b0_0 -> n1_b0_1;/);
  assert.match(dot, /n1 -> n1_b0_0 \[style=dotted, lhead=cluster_n1_b0\];/);
  assert.match(dot, /n1_b0_1 -> n1 \[style=dotted, constraint=false, ltail=cluster_n1_b0\];/, 'a while body loops back to its condition');
  assert.match(dot, /label="if then";/);
  assert.match(dot, /label="if else";/);
  assert.match(dot, /n2_b1 \[label="empty body", shape=box3d/, 'an empty body is one node');
  assert.doesNotMatch(dot, /n2_b0_0 -> n2 \[/, 'only a while loops back');
  for (const c of [0, 1, 2]) assert.match(dot, new RegExp(`label="switch case ${c}";`));
  assert.match(dot, /n3 \[label="conditional\\nswitch, 3 cases on handle 7"/);
  // Edges into a conditional point at its condition; edges out leave its largest body.
  assert.match(dot, /n0 -> n1 \[color="#d62728", penwidth=2\.5, lhead=cluster_n1\];/);
  assert.match(dot, /n3_b1_2 -> n4 \[ltail=cluster_n3\];/);
  // Nested: the body's own conditional is a cluster inside the body's cluster; names are escaped.
  assert.match(dot, /subgraph cluster_n5_b0_1 \{/);
  assert.match(dot, /n5_b0_1 \[label="a\\\\N \\"loop\\"\\nwhile on handle 0, default 0, ~1 trip"/);
  assert.match(dot, /n5_b0_0 -> n5_b0_1 \[lhead=cluster_n5_b0_1\];/);
  // Graphviz reads it: every body node is drawn, in the clusters named.
  const j = JSON.parse(graphviz.dot(dot, 'json')) as { objects: { name: string; label?: string; nodes?: number[] }[] };
  const names = new Set(j.objects.map((o) => o.name));
  for (const name of ['cluster_n1', 'cluster_n1_b0', 'n1_b0_0', 'n1_b0_1', 'cluster_n5_b0_1_b0', 'n5_b0_1_b0_0', 'n2_b1']) assert.ok(names.has(name), name);
  const nested = j.objects.find((o) => o.name === 'n5_b0_1')!;
  // Graphviz label escapes: \\ is a backslash, \" a quote, \n a line break.
  const label = nested.label!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  assert.ok(label.startsWith('a\\N "loop"\n'), label);
});

test('ExecGraph: a conditional keeps its type, body count and handle; its handle default and its bodies’ parameters update', () => {
  const e = ExecGraph.instantiate(sample());
  assert.equal(e.diff(sample()).identical, true);
  const changed = (edit: (specs: ConditionalNodeSpec[]) => void): ComputeGraph => {
    const specs: ConditionalNodeSpec[] = [
      { kind: 'conditional', type: 'while', bodies: [chain(3, 2)], estimate: 10, name: 'solve', handle: { default: 1 } },
      { kind: 'conditional', type: 'if', bodies: [chain(4), new ComputeGraph()], estimate: 0.5 },
      { kind: 'conditional', type: 'switch', bodies: [chain(1), chain(1, 1, 1), chain(2)], handle: { id: 7, assignDefault: false } },
    ];
    edit(specs);
    const g = new ComputeGraph();
    g.addNode({ kind: 'memset', sizeBytes: 4, value: 1 });
    for (const s of specs) g.addNode(s);
    g.addNode({ kind: 'empty', name: 'done' });
    g.addEdges([[NodeId(0), NodeId(1)], [NodeId(1), NodeId(2)], [NodeId(2), NodeId(3)], [NodeId(3), NodeId(4)]]);
    return g;
  };
  assert.equal(e.diff(changed(() => {})).identical, true);
  // The estimate and the cost are the model's, not CUDA's: no change at all.
  assert.equal(e.diff(changed((s) => (s[0] = { ...s[0]!, estimate: 3 }))).identical, true);
  const dflt = e.diff(changed((s) => (s[0] = { ...s[0]!, handle: { default: 5, assignDefault: false } })));
  assert.deepEqual([dflt.updatable, dflt.changedParams], [true, [1]], 'handle flags and default values are updated (cuda.h)');
  const inBody = e.diff(changed((s) => (s[2] = { ...s[2]!, bodies: [chain(1), chain(1, 1, 1), (() => { const g = new ComputeGraph(); g.addNode({ kind: 'kernel', functionName: 'other', grid: 8, block: 32 }); return g; })()] })));
  assert.deepEqual([inBody.updatable, inBody.changedParams], [true, [3]], 'a kernel change in a body is a parameter change of the node');
  const refusedBy = (edit: (specs: ConditionalNodeSpec[]) => void, result: string, re: RegExp): void => {
    const d = e.diff(changed(edit));
    assert.equal(d.updatable, false);
    assert.equal(d.result, result);
    assert.match(d.reason!, re);
  };
  const P = 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED';
  refusedBy((s) => (s[1] = { ...s[1]!, type: 'switch' }), P, /node 2: a conditional node cannot change its type \('if' → 'switch'\); CUDA does not update a conditional node's parameters/);
  refusedBy((s) => (s[1] = { ...s[1]!, bodies: [chain(4)] }), P, /node 2: a conditional node cannot change its number of bodies \(2 → 1\)/);
  refusedBy((s) => (s[2] = { ...s[2]!, handle: { id: 9, assignDefault: false } }), P, /node 3: a conditional node cannot change its handle \(7 → 9\)/);
  refusedBy((s) => (s[0] = { ...s[0]!, bodies: [chain(3, 2, 1)] }), 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED', /node 1 \(a conditional node\), its while body \(bodies\[0\]\): the node count changed \(2 → 3\)/);
  refusedBy(
    (s) => (s[2] = { ...s[2]!, bodies: [chain(1), (() => { const g = chain(1, 1, 1); return g; })(), (() => { const g = new ComputeGraph(); g.addNode({ kind: 'memset', sizeBytes: 4, value: 0 }); return g; })()] }),
    'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED',
    /node 3 \(a conditional node\), its switch case 2 \(bodies\[2\]\): node 0: its kind changed \(kernel → memset\)/,
  );
  const before = e.updateCount;
  e.update(changed((s) => (s[0] = { ...s[0]!, handle: { default: 9 } })));
  assert.equal(e.updateCount, before + 1);
  assert.deepEqual(asConditional(e.node(NodeId(1))).handle, { id: 0, default: 9, assignDefault: true });
  assert.equal(asConditional(e.node(NodeId(1))).bodies[0]!.nodeCount(), 2, 'node() copies a conditional record without losing its bodies');
  refused(() => e.updateNode(NodeId(1), { kind: 'conditional' } as never), GraphError, 'ExecGraph.updateNode', /'conditional' nodes take no parameter update: CUDA has no per-node update for conditional nodes/);
  refused(() => e.setNodeEnabled(NodeId(1), false), GraphError, 'ExecGraph.setNodeEnabled', /node 1 is a 'conditional' node; CUDA enables and disables only kernel, memset and memcpy nodes/);
  assert.equal(e.updateCount, before + 1);
});

test('GraphBuilder.conditional: bodies as graphs or build() results, their bindings per body, edges from the buffers', () => {
  const step = new GraphBuilder();
  const sx = step.buffer('x', 64);
  step.kernel('step', { grid: 1, block: 32, args: [sx] });
  const stepBuilt = step.build();
  const b = new GraphBuilder();
  const x = b.buffer('x', 64);
  const y = b.buffer('y', 64);
  const init = b.memset(x, 0);
  const loop = b.conditional('while', [stepBuilt], { reads: [x], writes: [x], estimate: 8, name: 'iterate', handle: { default: 1 } });
  const other = b.conditional('if', [chain(1), new ComputeGraph()], { writes: [y] });
  const after = b.kernel('after', { grid: 1, block: 1, args: [x] });
  const { graph, bindings } = b.build();
  assert.deepEqual(graph.edges(), [[init, loop], [loop, after]], 'the while reads and writes x; the if writes only y');
  assert.deepEqual(graph.predecessors(other), []);
  const rec = asConditional(graph.node(loop));
  assert.deepEqual([rec.name, rec.estimate, rec.handle, rec.cost], ['iterate', 8, { id: 0, default: 1, assignDefault: true }, 8]);
  const binding = bindings.get(loop);
  assert.ok(binding?.kind === 'conditional' && binding.bodies.length === 1 && binding.bodies[0]!.size === 1);
  assert.deepEqual(bindings.get(other), { kind: 'conditional', bodies: [null, null] });
  const c = new GraphBuilder();
  const OPB = 'GraphBuilder.conditional';
  refused(() => c.conditional('while', chain(1) as never), InvalidArgumentError, OPB, /bodies must be an array of graphs/);
  refused(() => c.conditional('while', [{ graph: chain(1), bindings: new Map() }] as never), InvalidArgumentError, OPB, /bodies\[0\] must be a ComputeGraph or what GraphBuilder\.build\(\) returned/);
  refused(() => c.conditional('while', [chain(1), chain(1)]), InvalidArgumentError, OPB, /bodies must hold exactly 1 body for a 'while' node, got 2/);
  refused(() => c.conditional('do' as never, [chain(1)]), InvalidArgumentError, OPB, /type must be one of 'if', 'while', 'switch'/);
  refused(() => c.conditional('while', [chain(1)], { estimate: -1 }), InvalidArgumentError, OPB, /estimate must be a finite number ≥ 0/);
  refused(() => c.conditional('while', [chain(1)], { colour: 1 } as never), InvalidArgumentError, OPB, /unknown option 'colour'/);
  const withHost = new GraphBuilder();
  withHost.host('log');
  refused(() => c.conditional('if', [withHost.build()]), InvalidArgumentError, OPB, /^GraphBuilder\.conditional: bodies\[0\] holds a 'hostCallback' node \(node 0\)/);
  refused(() => c.childGraph(graph), InvalidArgumentError, 'GraphBuilder.childGraph', /child holds a 'conditional' node \(node 1\)/);
  assert.equal(c.build().graph.nodeCount(), 0, 'no refusal added a node');
});

// ── a property against a reference ──────────────────────────────────────────────────────────

/** The reference cost of a graph given as plain data: the longest path by cost, the obvious way (memoised DFS). */
interface RefGraph {
  readonly nodes: RefNode[];
  readonly edges: [number, number][];
}
type RefNode = { kind: 'kernel'; cost: number } | { kind: 'conditional'; type: 'if' | 'while' | 'switch'; estimate: number; bodies: RefGraph[]; cost?: number };

function refNodeCost(n: RefNode): number {
  if (n.kind === 'kernel') return n.cost;
  if (n.cost !== undefined) return n.cost;
  return n.estimate * Math.max(0, ...n.bodies.map(refLongest));
}

function refLongest(g: RefGraph): number {
  const memo = new Map<number, number>();
  const from = (v: number): number => {
    if (memo.has(v)) return memo.get(v)!;
    const next = g.edges.filter(([a]) => a === v).map(([, b]) => from(b));
    const c = refNodeCost(g.nodes[v]!) + Math.max(0, ...next);
    memo.set(v, c);
    return c;
  };
  return Math.max(0, ...g.nodes.map((_, v) => from(v)));
}

function build(g: RefGraph): ComputeGraph {
  const out = new ComputeGraph();
  g.nodes.forEach((n, i) => {
    if (n.kind === 'kernel') out.addNode({ kind: 'kernel', functionName: `k${i}`, grid: 1, block: 32, cost: n.cost });
    else out.addNode({ kind: 'conditional', type: n.type, estimate: n.estimate, bodies: n.bodies.map(build), ...(n.cost !== undefined ? { cost: n.cost } : {}) });
  });
  out.addEdges(g.edges.map(([a, b]) => [NodeId(a), NodeId(b)] as const));
  return out;
}

const { graph: refGraph } = fc.letrec<{ graph: RefGraph; node: RefNode }>((tie) => ({
  graph: fc
    .record({ nodes: fc.array(tie('node'), { maxLength: 5 }), pairs: fc.array(fc.tuple(fc.nat(4), fc.nat(4)), { maxLength: 8 }) })
    .map(({ nodes, pairs }) => {
      const edges = new Map<string, [number, number]>();
      for (const [a, b] of pairs) if (a < b && b < nodes.length) edges.set(`${a}>${b}`, [a, b]);
      return { nodes, edges: [...edges.values()] };
    }),
  node: fc.oneof(
    { maxDepth: 3, depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('kernel' as const), cost: fc.integer({ min: 0, max: 20 }) }),
    fc
      .record({
        type: fc.constantFrom('if' as const, 'while' as const, 'switch' as const),
        count: fc.integer({ min: 1, max: 3 }),
        trips: fc.integer({ min: 0, max: 8 }),
        bodies: fc.array(tie('graph'), { minLength: 3, maxLength: 3 }),
        cost: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
      })
      .map(({ type, count, trips, bodies, cost }) => ({
        kind: 'conditional' as const,
        type,
        estimate: type === 'while' ? trips : trips / 8,
        bodies: bodies.slice(0, type === 'while' ? 1 : type === 'if' ? Math.min(count, 2) : count),
        ...(cost !== undefined ? { cost } : {}),
      })),
  ),
}));

test('property: the critical path with nested conditionals matches the reference cost rule; JSON, clone and diff agree', () => {
  fc.assert(
    fc.property(refGraph, (ref) => {
      const g = build(ref);
      if (g.nodeCount() === 0) return;
      assert.equal(g.criticalPath().cost, refLongest(ref));
      g.nodes().forEach((n, v) => assert.equal(n.cost, refNodeCost(ref.nodes[v]!)));
      assert.equal(g.hasConditionalNodes(), ref.nodes.some((n) => n.kind === 'conditional'));
      const text = JSON.stringify(g);
      const back = ComputeGraph.fromJSON(text);
      assert.equal(JSON.stringify(back), text);
      assert.equal(back.criticalPath().cost, g.criticalPath().cost);
      const c = g.clone();
      assert.equal(JSON.stringify(c), text);
      assert.equal(ExecGraph.instantiate(g).diff(back).identical, true);
      assert.equal(ExecGraph.instantiate(g).diff(c).identical, true);
      // Graphviz reads the picture.
      graphviz.dot(g.toDot(), 'json');
    }),
    { numRuns: 150 },
  );
});
