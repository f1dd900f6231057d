/**
 * ExecGraph and the node kinds beyond kernel, copy, fill, host and empty: what `cuGraphExecUpdate`
 * and the per-node setters take (cuda.h's rules), enabling and disabling nodes, and graph memory
 * across launches.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ComputeGraph, ExecGraph, GraphError, InvalidArgumentError, NodeId } from '../../src/index.js';
import { refused } from '../support/refused.js';


/** A child of two kernels (the second's shape is `grid`), joined plainly or programmatically. */
function child(grid = 1, programmatic = false, extra = false): ComputeGraph {
  const c = new ComputeGraph();
  const a = c.addNode({ kind: 'kernel', functionName: 'a', grid: 1, block: 32 });
  const b = c.addNode({ kind: 'kernel', functionName: 'b', grid, block: 32 });
  c.addEdge(a, b, programmatic ? { kind: 'programmatic' } : undefined);
  if (extra) c.addNode({ kind: 'empty' });
  return c;
}

interface Shape {
  event?: number;
  child?: ComputeGraph;
  size?: number;
  programmatic?: boolean;
}

/** alloc → record(event) → child → wait(event) → free, and k0 → k1 (data per `programmatic`). */
function graph(s: Shape = {}): ComputeGraph {
  const g = new ComputeGraph();
  const alloc = g.addNode({ kind: 'memAlloc', sizeBytes: s.size ?? 256 });
  const rec = g.addNode({ kind: 'eventRecord', event: s.event ?? 1 });
  const sub = g.addNode({ kind: 'childGraph', graph: s.child ?? child() });
  const wait = g.addNode({ kind: 'eventWait', event: s.event ?? 1 });
  const free = g.addNode({ kind: 'memFree', alloc });
  const k0 = g.addNode({ kind: 'kernel', functionName: 'k0', grid: 1, block: 32 });
  const k1 = g.addNode({ kind: 'kernel', functionName: 'k1', grid: 1, block: 32 });
  g.addEdges([
    [alloc, rec],
    [rec, sub],
    [sub, wait],
    [wait, free],
  ]);
  g.addEdge(k0, k1, s.programmatic ? { kind: 'programmatic' } : undefined);
  return g;
}

test('diff: events change in place; child graphs follow the rules recursively; memory nodes and edge data cannot change', () => {
  const e = ExecGraph.instantiate(graph());
  assert.equal(e.diff(graph()).identical, true);

  const ev = e.diff(graph({ event: 2 }));
  assert.deepEqual([ev.updatable, ev.changedParams, ev.result], [true, [1, 3], 'CU_GRAPH_EXEC_UPDATE_SUCCESS']);

  const inChild = e.diff(graph({ child: child(4) }));
  assert.deepEqual([inChild.updatable, inChild.changedParams], [true, [2]], 'a kernel shape inside the child is a parameter change of the child node');

  const topo = e.diff(graph({ child: child(1, false, true) }));
  assert.equal(topo.updatable, false);
  assert.equal(topo.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED');
  assert.match(topo.reason!, /node 2 \(a child graph\): the node count changed \(2 → 3\)/);

  const childEdge = e.diff(graph({ child: child(1, true) }));
  assert.equal(childEdge.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED');
  assert.match(childEdge.reason!, /node 2 \(a child graph\): the dependencies changed/);

  const mem = e.diff(graph({ size: 512 }));
  assert.deepEqual([mem.updatable, mem.changedParams], [true, [0]], 'a new allocation size is a parameter change (measured on CUDA 13.0)');
  const moved = graph();
  const other = new ComputeGraph();
  for (const n of moved.nodes()) {
    const { id: _id, ...spec } = n as typeof n & { graph?: unknown };
    other.addNode((n.kind === 'memAlloc' ? { ...spec, device: 1 } : spec) as never);
  }
  other.addEdges(moved.edgeRecords().map((x) => [x.from, x.to, { kind: x.kind, port: x.port }] as const));
  const dev = e.diff(other);
  assert.equal(dev.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED');
  assert.match(dev.reason!, /node 0: an allocation node cannot move to another device \(0 → 1\)/);

  const data = e.diff(graph({ programmatic: true }));
  assert.equal(data.topologyChanged, true);
  assert.equal(data.result, 'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED');
  assert.throws(() => e.update(graph({ programmatic: true })), (x: unknown) => x instanceof GraphError && x.kind === 'UpdateNotPossible');
  assert.equal(e.updateCount, 0);
  e.update(graph({ event: 5, child: child(8) }));
  assert.equal(e.updateCount, 1);
  assert.equal((e.node(NodeId(1)) as { event: number }).event, 5);
  const sub = e.node(NodeId(2));
  assert.ok(sub.kind === 'childGraph');
  assert.deepEqual((sub.graph.node(NodeId(1)) as { grid: unknown }).grid, [8, 1, 1], 'node() copies a child record without losing its graph');
});

test('updateNode: events, host labels, copy sizes, child graphs; memory nodes and empty nodes take none', () => {
  const g = graph();
  const h = g.addNode({ kind: 'hostCallback', label: 'log' });
  const c = g.addNode({ kind: 'memcpy', dir: 'DeviceToDevice', sizeBytes: 64 });
  const x = g.addNode({ kind: 'empty' });
  const e = ExecGraph.instantiate(g);
  const OP = 'ExecGraph.updateNode';
  e.updateNode(NodeId(1), { kind: 'eventRecord', event: 9 });
  e.updateNode(NodeId(3), { kind: 'eventWait', event: 9 });
  e.updateNode(h, { kind: 'hostCallback', label: 'trace' });
  e.updateNode(c, { kind: 'memcpy', sizeBytes: 128 });
  e.updateNode(NodeId(2), { kind: 'childGraph', graph: child(16) });
  assert.equal(e.updateCount, 5);
  assert.equal((e.node(NodeId(1)) as { event: number }).event, 9);
  assert.equal((e.node(h) as { label: string }).label, 'trace');
  assert.equal((e.node(h) as { name: string }).name, 'log', 'the node keeps its name');
  assert.equal((e.node(c) as { sizeBytes: number }).sizeBytes, 128);
  const before = JSON.stringify([0, 1, 2, 3, 4, 7, 8, 9].map((i) => e.node(NodeId(i))));
  refused(() => e.updateNode(NodeId(2), { kind: 'childGraph', graph: child(1, false, true) }), GraphError, OP, /node 2 \(a child graph\): the node count changed \(2 → 3\).*TOPOLOGY_CHANGED/);
  refused(() => e.updateNode(NodeId(2), { kind: 'childGraph', graph: {} as ComputeGraph }), InvalidArgumentError, OP, /update\.graph must be a ComputeGraph/);
  refused(() => e.updateNode(NodeId(0), { kind: 'memAlloc' } as never), GraphError, OP, /'memAlloc' nodes take no parameter update: CUDA has no update for allocation nodes/);
  refused(() => e.updateNode(NodeId(4), { kind: 'memFree' } as never), GraphError, OP, /'memFree' nodes take no parameter update/);
  refused(() => e.updateNode(x, { kind: 'empty' } as never), GraphError, OP, /'empty' nodes take no parameter update: an empty node has no parameters/);
  refused(() => e.updateNode(NodeId(1), { kind: 'eventRecord', event: -3 }), InvalidArgumentError, OP, /update\.event/);
  refused(() => e.updateNode(NodeId(1), { kind: 'eventRecord' } as never), InvalidArgumentError, OP, /update changes nothing: give at least one of event/);
  refused(() => e.updateNode(c, { kind: 'memcpy', sizeBytes: 64, dir: 'HostToDevice' } as never), InvalidArgumentError, OP, /update\.dir is not a field of a 'memcpy' update/);
  refused(() => e.updateNode(h, { kind: 'hostCallback', label: '' }), InvalidArgumentError, OP, /update\.label/);
  assert.equal(JSON.stringify([0, 1, 2, 3, 4, 7, 8, 9].map((i) => e.node(NodeId(i)))), before, 'refusals change nothing');
  assert.equal(e.updateCount, 5, 'and are not counted');
  const fixed = ExecGraph.instantiate(g, { rules: 'fixed-size' });
  refused(() => fixed.updateNode(c, { kind: 'memcpy', sizeBytes: 32 }), GraphError, OP, /a memcpy cannot change its size \(64 → 32 bytes\)/);
});

test('setNodeEnabled: kernels, memsets and copies only; updates keep the setting', () => {
  const g = graph();
  const m = g.addNode({ kind: 'memset', sizeBytes: 4, value: 0 });
  const e = ExecGraph.instantiate(g);
  const OP = 'ExecGraph.setNodeEnabled';
  assert.equal(e.isNodeEnabled(NodeId(5)), true);
  e.setNodeEnabled(NodeId(5), false);
  e.setNodeEnabled(m, false);
  assert.equal(e.isNodeEnabled(NodeId(5)), false);
  const next = graph({ event: 3 });
  next.addNode({ kind: 'memset', sizeBytes: 4, value: 1 });
  e.update(next);
  assert.equal(e.isNodeEnabled(NodeId(5)), false, 'an update keeps a disabled node disabled');
  e.setNodeEnabled(NodeId(5), true);
  assert.equal(e.isNodeEnabled(NodeId(5)), true);
  refused(() => e.setNodeEnabled(NodeId(2), false), GraphError, OP, /node 2 is a 'childGraph' node; CUDA enables and disables only kernel, memset and memcpy nodes/);
  refused(() => e.setNodeEnabled(NodeId(1), false), GraphError, OP, /'eventRecord'/);
  refused(() => e.setNodeEnabled(NodeId(5), 0 as never), InvalidArgumentError, OP, /enabled must be a boolean/);
  refused(() => e.setNodeEnabled(NodeId(99), false), GraphError, OP, /node 99 not found/);
  refused(() => e.isNodeEnabled(NodeId(99)), GraphError, 'ExecGraph.isNodeEnabled', /node 99 not found/);
});

test('graph memory: a free must follow its allocation; an allocation the graph does not free must be freed before the next launch', () => {
  // A free node not ordered after its allocation is refused at instantiation.
  const bad = new ComputeGraph();
  const a = bad.addNode({ kind: 'memAlloc', sizeBytes: 64 });
  bad.addNode({ kind: 'memFree', alloc: a });
  const order = refused(() => ExecGraph.instantiate(bad), GraphError, 'ExecGraph.instantiate', /free node 1 is not ordered after allocation node 0/);
  assert.equal((order as GraphError).code, 'GRAPH_MEMORY_ORDER');
  bad.addEdge(NodeId(0), NodeId(1));
  const inside = ExecGraph.instantiate(bad);
  assert.deepEqual(inside.unfreedAllocations(), []);
  inside.launch();
  inside.launch();
  assert.equal(inside.launchCount, 2, 'a graph that frees what it allocates relaunches freely');
  refused(() => inside.freeAllocation(NodeId(0)), GraphError, 'ExecGraph.freeAllocation', /the graph frees node 0's memory itself/);

  const g = new ComputeGraph();
  const keep = g.addNode({ kind: 'memAlloc', sizeBytes: 64 });
  const k = g.addNode({ kind: 'kernel', functionName: 'fill', grid: 1, block: 32 });
  g.addEdge(keep, k);
  const e = ExecGraph.instantiate(g);
  assert.deepEqual(e.unfreedAllocations(), [0]);
  refused(() => e.freeAllocation(keep), GraphError, 'ExecGraph.freeAllocation', /never launched/);
  e.launch();
  assert.deepEqual(e.outstandingAllocations(), [0]);
  const again = refused(() => e.launch(), GraphError, 'ExecGraph.launch', /allocation node 0's memory from the last launch is not freed \(1 allocation\(s\) outstanding\); free it first, or instantiate with autoFreeOnLaunch/);
  assert.equal((again as GraphError).code, 'GRAPH_ALLOCATION_NOT_FREED');
  assert.equal(e.launchCount, 1, 'a refused launch is not counted');
  refused(() => e.freeAllocation(k), GraphError, 'ExecGraph.freeAllocation', /node 1 is a 'kernel' node, not an allocation node/);
  e.freeAllocation(keep);
  refused(() => e.freeAllocation(keep), GraphError, 'ExecGraph.freeAllocation', /it was freed already/);
  e.launch();
  assert.equal(e.launchCount, 2);

  const auto = ExecGraph.instantiate(g, { autoFreeOnLaunch: true });
  assert.equal(auto.autoFreeOnLaunch, true);
  auto.launch();
  auto.launch();
  assert.deepEqual(auto.outstandingAllocations(), [0]);
  refused(() => ExecGraph.instantiate(g, { autoFreeOnLaunch: 'yes' } as never), InvalidArgumentError, 'ExecGraph.instantiate', /autoFreeOnLaunch must be a boolean/);
});
