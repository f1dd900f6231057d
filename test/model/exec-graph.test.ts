/** ExecGraph: snapshot, diff, update with reasons, updateNode; the update cases of the conformance suite. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ComputeGraph, ExecGraph, GraphError, MemcpyDir, NodeId, type NodeSpec } from '../../src/index.js';
import { updateCases } from '../conformance/cases.js';
import { ModelRecorder } from '../conformance/model-recorder.js';
import { runScript } from '../conformance/run.js';

function diamond(specB: NodeSpec = { kind: 'kernel', functionName: 'b', grid: 2, block: 32 }): ComputeGraph {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'kernel', functionName: 'a', grid: 1, block: 32 });
  const b = g.addNode(specB);
  const c = g.addNode({ kind: 'memset', sizeBytes: 64, value: 0 });
  const d = g.addNode({ kind: 'memcpy', dir: MemcpyDir.DeviceToHost, sizeBytes: 64 });
  g.addEdges([
    [a, b],
    [a, c],
    [b, d],
    [c, d],
  ]);
  return g;
}

test('instantiate snapshots nodes, edges and an execution order; an empty graph is refused', () => {
  const g = diamond();
  const e = ExecGraph.instantiate(g);
  assert.equal(e.nodeCount(), 4);
  assert.equal(e.edgeCount(), 4);
  assert.deepEqual(e.executionOrder(), g.topologicalOrder());
  assert.ok(e.hasEdge(NodeId(0), NodeId(1)) && !e.hasEdge(NodeId(1), NodeId(2)));
  g.addNode({ kind: 'empty' }); // later changes do not reach the executable
  assert.equal(e.nodeCount(), 4);
  assert.throws(() => ExecGraph.instantiate(new ComputeGraph()), (x: unknown) => x instanceof GraphError && x.kind === 'EmptyGraph');
  assert.throws(() => ExecGraph.instantiate({} as never), /graph must be a ComputeGraph/);
  assert.throws(() => ExecGraph.instantiate(g, { rules: 'strict' as never }), /rules must be one of 'cuda', 'fixed-size'/);
  assert.equal(e.toString(), 'ExecGraph(4 nodes, 4 edges)');
});

test('diff: identical; parameter changes; kind, direction and topology changes with the driver result', () => {
  const e = ExecGraph.instantiate(diamond());
  const same = e.diff(diamond());
  assert.ok(same.identical && same.updatable);
  assert.equal(same.result, 'CU_GRAPH_EXEC_UPDATE_SUCCESS');

  const grid = e.diff(diamond({ kind: 'kernel', functionName: 'b', grid: 8, block: 64, sharedMem: 16 }));
  assert.deepEqual(grid.changedParams, [1]);
  assert.ok(grid.updatable && !grid.identical);

  const fn = e.diff(diamond({ kind: 'kernel', functionName: 'other', grid: 2, block: 32 }));
  assert.deepEqual([fn.updatable, fn.changedParams], [true, [1]]);

  const kind = e.diff(diamond({ kind: 'memset', sizeBytes: 8, value: 1 }));
  assert.equal(kind.updatable, false);
  assert.equal(kind.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED');
  assert.match(kind.reason!, /node 1: its kind changed \(kernel → memset\)/);

  const g2 = diamond();
  const dir = new ComputeGraph();
  for (const n of g2.nodes()) {
    const { id, ...spec } = n;
    void id;
    dir.addNode(n.kind === 'memcpy' ? { ...(spec as NodeSpec & { kind: 'memcpy' }), dir: MemcpyDir.HostToDevice } : (spec as NodeSpec));
  }
  dir.addEdges(g2.edges());
  const d = e.diff(dir);
  assert.equal(d.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED');
  assert.match(d.reason!, /memcpy cannot change direction \(DeviceToHost → HostToDevice\)/);

  const more = diamond();
  more.addNode({ kind: 'empty' });
  const count = e.diff(more);
  assert.ok(count.nodeCountChanged && count.topologyChanged && !count.updatable);
  assert.equal(count.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED');

  const moved = diamond();
  moved.addEdge(NodeId(1), NodeId(2));
  const topo = e.diff(moved);
  assert.ok(topo.topologyChanged && !topo.nodeCountChanged);
  assert.match(topo.reason!, /dependencies changed/);
  assert.throws(() => e.diff(new ComputeGraph()), (x: unknown) => x instanceof GraphError && x.kind === 'EmptyGraph');
});

test('a peer-to-peer direction change is named as the seed prints it: PeerToPeer(dev0→dev1)', () => {
  const copy = (dir: MemcpyDir): ComputeGraph => {
    const g = new ComputeGraph();
    g.addNode({ kind: 'memcpy', dir, sizeBytes: 64 });
    return g;
  };
  const d = ExecGraph.instantiate(copy(MemcpyDir.PeerToPeer(0, 1))).diff(copy(MemcpyDir.PeerToPeer(1, 0)));
  assert.equal(d.updatable, false);
  assert.match(d.reason!, /node 0: a memcpy cannot change direction \(PeerToPeer\(dev0→dev1\) → PeerToPeer\(dev1→dev0\)\)/);
});

test('size changes: updatable under the CUDA rules, refused under the seed rules', () => {
  const g = diamond();
  const bigger = new ComputeGraph();
  for (const n of g.nodes()) {
    const { id, ...spec } = n;
    void id;
    bigger.addNode(n.kind === 'memset' || n.kind === 'memcpy' ? ({ ...spec, sizeBytes: 128 } as NodeSpec) : (spec as NodeSpec));
  }
  bigger.addEdges(g.edges());
  const cuda = ExecGraph.instantiate(g).diff(bigger);
  assert.deepEqual([cuda.updatable, cuda.changedParams], [true, [2, 3]]);
  const seed = ExecGraph.instantiate(g, { rules: 'fixed-size' }).diff(bigger);
  assert.equal(seed.updatable, false);
  assert.deepEqual(seed.nonUpdatable.map((x) => x.node), [2, 3]);
  assert.equal(seed.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED');
});

test('update applies a possible update and refuses an impossible one with its reason, unchanged', () => {
  const e = ExecGraph.instantiate(diamond());
  const d = e.update(diamond({ kind: 'kernel', functionName: 'b', grid: 16, block: 32 }));
  assert.deepEqual(d.changedParams, [1]);
  const k = e.node(NodeId(1));
  assert.ok(k.kind === 'kernel' && k.grid[0] === 16);
  assert.equal(e.updateCount, 1);
  assert.throws(
    () => e.update(diamond({ kind: 'empty' })),
    (x: unknown) => x instanceof GraphError && x.kind === 'UpdateNotPossible' && x.code === 'UPDATE_NOT_POSSIBLE' && /NODE_TYPE_CHANGED/.test(x.message),
  );
  const still = e.node(NodeId(1));
  assert.ok(still.kind === 'kernel' && still.grid[0] === 16 && e.updateCount === 1);
});

test('updateNode: kernel shape and memset value; another kind or an unknown node is refused', () => {
  const e = ExecGraph.instantiate(diamond());
  e.updateNode(NodeId(1), { kind: 'kernel', functionName: 'b2', grid: [4, 2, 1] });
  const k = e.node(NodeId(1));
  assert.ok(k.kind === 'kernel' && k.functionName === 'b2' && k.grid[1] === 2 && k.block[0] === 32);
  e.updateNode(NodeId(2), { kind: 'memset', value: 9 });
  const m = e.node(NodeId(2));
  assert.ok(m.kind === 'memset' && m.value === 9 && m.sizeBytes === 64);
  assert.throws(() => e.updateNode(NodeId(2), { kind: 'kernel', grid: [1, 1, 1] }), /is a 'memset' node but the update targets 'kernel'/);
  assert.throws(() => e.updateNode(NodeId(99), { kind: 'memset', value: 1 }), (x: unknown) => x instanceof GraphError && x.kind === 'NodeNotFound');
  assert.throws(() => e.updateNode(NodeId(2), { kind: 'memset', value: 300 }), /value must be an integer in 0\.\.255/);
  assert.throws(() => e.updateNode(NodeId(1), { kind: 'kernel', block: [2048, 1, 1] }), /block/);
  assert.equal(e.updateCount, 2);
});

test('the update cases of the conformance suite: the model predicts one result per case (checked on the GPU)', () => {
  const predicted: Record<string, string> = {};
  for (const c of updateCases()) {
    const from = runScript(new ModelRecorder('cuda'), c.from);
    const to = runScript(new ModelRecorder('cuda'), c.to);
    assert.ok(from.kind === 'graph' && to.kind === 'graph', c.name);
    if (from.kind !== 'graph' || to.kind !== 'graph') continue;
    predicted[c.name] = ExecGraph.instantiate(from.graph).diff(to.graph).result;
  }
  assert.deepEqual(predicted, {
    identical: 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'kernel grid changed': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'kernel block and shared memory changed': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'kernel function changed': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memset value changed': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memset size shrunk': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memset size grown': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memcpy size shrunk': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memcpy size grown': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'memcpy direction changed': 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED',
    'host callback changed': 'CU_GRAPH_EXEC_UPDATE_SUCCESS',
    'node kind changed': 'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED',
    'node added': 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED',
    'dependencies changed': 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED',
  });
});

test('a 10,000-node graph (each node after the two before it): self-diff identical, a parameter diff found, both fast', () => {
  const make = (gridOf: (i: number) => number): ComputeGraph => {
    const g = new ComputeGraph();
    for (let i = 0; i < 10_000; i++) g.addNode({ kind: 'kernel', functionName: 'k', grid: gridOf(i), block: 32 });
    const edges: [NodeId, NodeId][] = [];
    for (let i = 1; i < 10_000; i++) {
      edges.push([NodeId(i - 1), NodeId(i)]);
      if (i >= 2) edges.push([NodeId(i - 2), NodeId(i)]);
    }
    g.addEdges(edges);
    return g;
  };
  const g = make(() => 1);
  const changed = make((i) => (i % 10 === 0 ? 2 : 1));
  // The best of three tries, each on a fresh instantiation: one slow try on a loaded machine (a
  // collection, another process) is not a slow update.
  let ms = Infinity;
  for (let attempt = 0; attempt < 3 && !(ms < 50); attempt++) {
    const e = ExecGraph.instantiate(g);
    assert.ok(e.diff(g).identical);
    const t0 = performance.now();
    const d = e.update(changed);
    ms = Math.min(ms, performance.now() - t0);
    assert.equal(d.changedParams.length, 1000);
  }
  // A re-instantiation of 10,000 kernel nodes costs about 17 ms on the H200 (measured: 1.74 µs a
  // node); the model's diff and update must stay well below that even on a 2-core machine.
  assert.ok(ms < 50, `diff+update took ${ms.toFixed(1)} ms (best of three)`);
});
