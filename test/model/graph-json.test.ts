import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ComputeGraph,
  GraphError,
  MemcpyDir,
  StreamCapture,
  StreamId,
  CaptureEvent,
  NodeId,
  GRAPH_JSON_FORMAT,
  GRAPH_JSON_VERSION,
} from '../../src/index.js';

function sample(): ComputeGraph {
  const cap = new StreamCapture();
  const [a, b] = [StreamId(0), StreamId(3)];
  cap.beginCapture(a);
  cap.beginCapture(b);
  cap.recordMemcpy(a, 'upload "x"', MemcpyDir.HostToDevice, 2 ** 33 + 5);
  cap.recordEvent(a, CaptureEvent(0));
  cap.waitEvent(b, CaptureEvent(0));
  cap.recordKernel(b, 'gemm', 64, 256, 1024);
  cap.recordMemset(b, 'zero', 4096, 7);
  cap.recordMemcpy(b, 'p2p', MemcpyDir.PeerToPeer(1, 2), 128);
  cap.recordEvent(b, CaptureEvent(1));
  cap.waitEvent(a, CaptureEvent(1));
  cap.recordHostCallback(a, 'done');
  const g = cap.endCapture(a);
  g.addNode({ kind: 'empty', name: 'barrier', cost: 0.5 });
  g.addEdge(NodeId(4), NodeId(5));
  return g;
}

const invalid = (field: RegExp) => (e: unknown): boolean => {
  assert.ok(e instanceof GraphError, `expected GraphError, got ${String(e)}`);
  assert.equal(e.kind, 'ValidationFailed');
  assert.equal(e.code, 'GRAPH_JSON_INVALID');
  assert.ok(e.message.startsWith('ComputeGraph.fromJSON: '), e.message);
  assert.match(e.message, field);
  return true;
};

test('toJSON: a versioned document whose nodes are the node records and whose edges are sorted pairs', () => {
  const g = sample();
  const doc = g.toJSON();
  assert.equal(doc.format, 'cudagraph.ComputeGraph');
  assert.equal(doc.format, GRAPH_JSON_FORMAT);
  assert.equal(doc.version, GRAPH_JSON_VERSION);
  assert.deepEqual(doc.nodes, g.nodes());
  assert.deepEqual(doc.edges, g.edges());
  assert.deepEqual(JSON.parse(JSON.stringify(g)), JSON.parse(JSON.stringify(doc)));
});

test('fromJSON(toJSON()) and fromJSON(text) give the same graph: nodes, edges, reachability, order', () => {
  const g = sample();
  for (const input of [g.toJSON(), JSON.stringify(g), JSON.parse(JSON.stringify(g)) as unknown]) {
    const back = ComputeGraph.fromJSON(input);
    assert.deepEqual(back.nodes(), g.nodes());
    assert.deepEqual(back.edges(), g.edges());
    assert.deepEqual(back.topologicalOrder(), g.topologicalOrder());
    assert.deepEqual(back.streams(), g.streams());
    for (let a = 0; a < g.nodeCount(); a++) {
      for (let b = 0; b < g.nodeCount(); b++) {
        assert.equal(back.isReachable(NodeId(a), NodeId(b)), g.isReachable(NodeId(a), NodeId(b)));
      }
    }
  }
});

test('fromJSON accepts what addNode accepts: optional fields may be left out', () => {
  const g = ComputeGraph.fromJSON({
    format: GRAPH_JSON_FORMAT,
    version: 1,
    nodes: [
      { id: 0, kind: 'kernel', functionName: 'k', grid: 2, block: [32, 2] },
      { id: 1, kind: 'empty' },
    ],
    edges: [[0, 1]],
  });
  assert.deepEqual(g.node(NodeId(0)), { id: 0, kind: 'kernel', name: 'k', stream: null, cost: 1, functionName: 'k', grid: [2, 1, 1], block: [32, 2, 1], sharedMem: 0 });
  assert.equal(g.edgeCount(), 1);
});

test('fromJSON refuses bad documents with GRAPH_JSON_INVALID naming the bad field', () => {
  const good = sample().toJSON();
  const mutate = (f: (d: { format?: unknown; version?: unknown; nodes: Record<string, unknown>[]; edges: unknown[]; [k: string]: unknown }) => void): unknown => {
    const d = JSON.parse(JSON.stringify(good));
    f(d);
    return d;
  };
  const cases: [unknown, RegExp][] = [
    ['{ not json', /not JSON text/],
    [null, /the document must be an object, got null/],
    [[], /the document must be an object/],
    [mutate((d) => (d.format = 'other')), /format must be 'cudagraph.ComputeGraph', got "other"/],
    [mutate((d) => delete d.format), /format must be/],
    [mutate((d) => (d.version = 3)), /version must be 1 or 2 .* got 3/],
    [mutate((d) => (d.extra = 1)), /unknown field 'extra'/],
    [mutate((d) => (d.nodes = {} as never)), /nodes must be an array/],
    [mutate((d) => (d.edges = 'x' as never)), /edges must be an array, got "x"/],
    [mutate((d) => (d.nodes[2] = 5 as never)), /nodes\[2\] must be an object, got 5/],
    [mutate((d) => (d.nodes[2]!.id = 7)), /nodes\[2\]\.id must be 2/],
    [mutate((d) => delete d.nodes[2]!.id), /nodes\[2\]\.id must be 2 .*got undefined/],
    [mutate((d) => (d.nodes[1]!.kind = 'conv')), /nodes\[1\]\.kind must be one of/],
    [mutate((d) => (d.nodes[1]!.grid = [1, 0, 1])), /nodes\[1\]\.grid\[1\] must be an integer in 1\.\.65535, got 0/],
    [mutate((d) => (d.nodes[1]!.block = [2048, 1, 1])), /nodes\[1\]\.block\[0\]/],
    [mutate((d) => (d.nodes[1]!.sharedMem = -1)), /nodes\[1\]\.sharedMem/],
    [mutate((d) => (d.nodes[1]!.functionName = '')), /nodes\[1\]\.functionName must be a non-empty string/],
    [mutate((d) => (d.nodes[0]!.dir = 'Up')), /nodes\[0\]\.dir must be/],
    [mutate((d) => (d.nodes[0]!.sizeBytes = 1.5)), /nodes\[0\]\.sizeBytes/],
    [mutate((d) => (d.nodes[3]!.dir = { kind: 'PeerToPeer', srcDevice: 'a', dstDevice: 1 })), /nodes\[3\]\.dir\.srcDevice/],
    [mutate((d) => (d.nodes[2]!.value = 300)), /nodes\[2\]\.value must be an integer in 0\.\.255/],
    [mutate((d) => (d.nodes[4]!.label = null)), /nodes\[4\]\.label/],
    [mutate((d) => (d.nodes[4]!.stream = -3)), /nodes\[4\]\.stream/],
    [mutate((d) => (d.nodes[5]!.cost = 'high')), /nodes\[5\]\.cost/],
    [mutate((d) => (d.nodes[5]!.colour = 'red')), /nodes\[5\]\.colour is not a field of 'empty' nodes/],
    [mutate((d) => d.edges.push([0])), /edges\[\d+\] must be a pair/],
    [mutate((d) => d.edges.push([0, 99])), /edges\[\d+\] \[0, 99\] names node 99, but the document has 6 node/],
    [mutate((d) => d.edges.push([0, -1])), /edges\[\d+\]\[1\] must be an integer/],
    [mutate((d) => d.edges.push([0, 1])), /edges\[\d+\] \[0, 1\] repeats an earlier edge/],
    [mutate((d) => d.edges.push([5, 0])), /edges\[6\] \[5, 0\] closes a cycle \(5 → 0 → 1 → 2 → 3 → 4 → 5\)/],
    [mutate((d) => d.edges.push([2, 2])), /edges\[6\] \[2, 2\] closes a cycle \(2 → 2\)/],
    // The cycle is found whatever the order of the edges.
    [mutate((d) => d.edges.unshift([3, 0])), /edges\[4\] \[2, 3\] closes a cycle \(2 → 3 → 0 → 1 → 2\)/],
  ];
  for (const [doc, field] of cases) {
    assert.throws(() => ComputeGraph.fromJSON(doc), invalid(field), String(field));
  }
});

test('a refused document keeps the underlying error as the cause', () => {
  try {
    ComputeGraph.fromJSON({ format: GRAPH_JSON_FORMAT, version: 1, nodes: [{ id: 0, kind: 'memset', sizeBytes: 3, value: 0 }, { id: 1, kind: 'memset', sizeBytes: 3, value: 0, elementSize: 2 }], edges: [] });
    assert.fail('should throw');
  } catch (e) {
    assert.ok(e instanceof GraphError);
    assert.match(e.message, /^ComputeGraph\.fromJSON: nodes\[1\]\.sizeBytes \(3\) must be a multiple of elementSize \(2\)$/);
    assert.ok(e.cause instanceof Error);
  }
});

test('a version 2 document written before conditional nodes existed loads and is written back as it was', () => {
  // Text an earlier build wrote: a child graph and a programmatic edge, no conditional node.
  const old =
    '{"format":"cudagraph.ComputeGraph","version":2,"nodes":[' +
    '{"id":0,"kind":"kernel","name":"p","stream":0,"cost":1,"functionName":"p","grid":[1,1,1],"block":[32,1,1],"sharedMem":0},' +
    '{"id":1,"kind":"kernel","name":"q","stream":0,"cost":1,"functionName":"q","grid":[1,1,1],"block":[32,1,1],"sharedMem":0},' +
    '{"id":2,"kind":"childGraph","name":"tail","stream":null,"cost":1,"graph":{"format":"cudagraph.ComputeGraph","version":2,' +
    '"nodes":[{"id":0,"kind":"empty","name":"empty","stream":null,"cost":1}],"edges":[]}}],' +
    '"edges":[[0,1,{"kind":"programmatic","port":"trigger"}],[1,2]]}';
  const g = ComputeGraph.fromJSON(old);
  assert.equal(JSON.stringify(g), old);
  assert.equal(g.hasConditionalNodes(), false);
});

test('JSON round-trips a conditional node: its type, handle, estimate and bodies as nested documents of the same version', () => {
  const g = sample();
  const body = new ComputeGraph();
  body.addNode({ kind: 'kernel', functionName: 'step', grid: 4, block: 128 });
  const loop = g.addNode({ kind: 'conditional', type: 'while', bodies: [body], estimate: 7, handle: { id: 4, default: 2 }, name: 'loop "x"' });
  g.addEdge(NodeId(5), loop);
  const doc = g.toJSON();
  assert.equal(doc.version, GRAPH_JSON_VERSION);
  const node = doc.nodes[loop]!;
  assert.ok(node.kind === 'conditional');
  assert.deepEqual(node.handle, { id: 4, default: 2, assignDefault: true });
  assert.deepEqual(node.bodies[0], body.toJSON());
  const back = ComputeGraph.fromJSON(JSON.stringify(g));
  assert.equal(JSON.stringify(back), JSON.stringify(g));
  assert.deepEqual(back.edges(), g.edges());
  assert.equal(back.node(loop).cost, 7);
  // The node's handle id stays taken in the graph read back.
  assert.throws(() => back.addNode({ kind: 'conditional', type: 'if', bodies: [body], handle: { id: 4 } }), /handle\.id 4 is already the handle of node 6/);
});
