import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ComputeGraph,
  GraphError,
  InvalidArgumentError,
  MemcpyDir,
  NodeId,
  StreamId,
  type NodeSpec,
} from '../../src/index.js';

function isGraphError(kind: string, code: string, prefix: string) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof GraphError, `expected GraphError, got ${String(e)}`);
    assert.equal(e.kind, kind);
    assert.equal(e.code, code);
    assert.ok(e.message.startsWith(prefix), `"${e.message}" should start with "${prefix}"`);
    return true;
  };
}

/** A graph of `n` empty nodes and the given edges. */
function build(n: number, edges: [number, number][]): ComputeGraph {
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: `n${i}` });
  for (const [u, v] of edges) g.addEdge(NodeId(u), NodeId(v));
  return g;
}

test('addNode: each kind, with defaults filled in and ids dense in creation order', () => {
  const g = new ComputeGraph();
  const k = g.addNode({ kind: 'kernel', functionName: 'gemm', grid: [8, 4], block: [16, 16], stream: StreamId(2), cost: 40 });
  const c = g.addNode({ kind: 'memcpy', name: 'upload', dir: MemcpyDir.HostToDevice, sizeBytes: 1 << 20 });
  const m = g.addNode({ kind: 'memset', name: 'fill', sizeBytes: 64, value: 0x3f800000, elementSize: 4 });
  const h = g.addNode({ kind: 'hostCallback', label: 'tick' });
  const e = g.addNode({ kind: 'empty' });
  const k1 = g.addNode({ kind: 'kernel', functionName: 'relu', name: 'layer1.relu', grid: 4, block: [256], sharedMem: 128 });
  assert.deepEqual([k, c, m, h, e, k1], [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(g.nodes(), [
    { id: 0, kind: 'kernel', name: 'gemm', stream: 2, cost: 40, functionName: 'gemm', grid: [8, 4, 1], block: [16, 16, 1], sharedMem: 0 },
    { id: 1, kind: 'memcpy', name: 'upload', stream: null, cost: 1, dir: 'HostToDevice', sizeBytes: 1 << 20 },
    { id: 2, kind: 'memset', name: 'fill', stream: null, cost: 1, sizeBytes: 64, value: 0x3f800000, elementSize: 4 },
    { id: 3, kind: 'hostCallback', name: 'tick', stream: null, cost: 1, label: 'tick' },
    { id: 4, kind: 'empty', name: 'empty', stream: null, cost: 1 },
    { id: 5, kind: 'kernel', name: 'layer1.relu', stream: null, cost: 1, functionName: 'relu', grid: [4, 1, 1], block: [256, 1, 1], sharedMem: 128 },
  ]);
  assert.equal(g.nodeCount(), 6);
  assert.deepEqual(g.streams(), [2]);
});

test('a node record is a copy: changing it does not change the graph', () => {
  const g = build(1, []);
  const rec = g.node(NodeId(0)) as { name: string };
  rec.name = 'changed';
  assert.equal(g.node(NodeId(0)).name, 'n0');
});

test('addNode refuses bad specs naming the field, and adds nothing', () => {
  const g = new ComputeGraph();
  const bad: [unknown, string][] = [
    [null, 'spec'],
    [{ kind: 'barrier' }, 'spec.kind'],
    [{ kind: 'empty', extra: 1 }, 'spec.extra'],
    [{ kind: 'empty', name: '' }, 'spec.name'],
    [{ kind: 'empty', stream: -1 }, 'spec.stream'],
    [{ kind: 'empty', cost: -1 }, 'spec.cost'],
    [{ kind: 'empty', cost: NaN }, 'spec.cost'],
    [{ kind: 'empty', cost: Infinity }, 'spec.cost'],
    [{ kind: 'kernel', grid: 1, block: 1 }, 'spec.functionName'],
    [{ kind: 'kernel', functionName: 'k', grid: 0, block: 1 }, 'spec.grid'],
    [{ kind: 'kernel', functionName: 'k', grid: [1, 65536], block: 1 }, 'spec.grid[1]'],
    [{ kind: 'kernel', functionName: 'k', grid: [1, 1, 1, 1], block: 1 }, 'spec.grid'],
    [{ kind: 'kernel', functionName: 'k', grid: [1.5], block: 1 }, 'spec.grid[0]'],
    [{ kind: 'kernel', functionName: 'k', grid: 1, block: [1, 1, 65] }, 'spec.block[2]'],
    [{ kind: 'kernel', functionName: 'k', grid: 1, block: [64, 32] }, 'spec.block'],
    [{ kind: 'kernel', functionName: 'k', grid: 1, block: 1, sharedMem: -1 }, 'spec.sharedMem'],
    [{ kind: 'memcpy', dir: 'Sideways', sizeBytes: 1 }, 'spec.dir'],
    [{ kind: 'memcpy', dir: { kind: 'PeerToPeer', srcDevice: 0 }, sizeBytes: 1 }, 'spec.dir.dstDevice'],
    [{ kind: 'memcpy', dir: { kind: 'PeerToPeer', srcDevice: 0, dstDevice: 1, x: 1 }, sizeBytes: 1 }, 'spec.dir'],
    [{ kind: 'memcpy', dir: 'HostToDevice', sizeBytes: -1 }, 'spec.sizeBytes'],
    [{ kind: 'memset', sizeBytes: 4, value: 256 }, 'spec.value'],
    [{ kind: 'memset', sizeBytes: 4, value: 65536, elementSize: 2 }, 'spec.value'],
    [{ kind: 'memset', sizeBytes: 6, value: 0, elementSize: 4 }, 'spec.sizeBytes'],
    [{ kind: 'memset', sizeBytes: 4, value: 0, elementSize: 3 }, 'spec.elementSize'],
    [{ kind: 'hostCallback', label: '' }, 'spec.label'],
    [{ kind: 'hostCallback', label: 'x', functionName: 'y' }, 'spec.functionName'],
  ];
  for (const [spec, field] of bad) {
    assert.throws(
      () => g.addNode(spec as NodeSpec),
      (e: unknown) =>
        e instanceof InvalidArgumentError && e.parameter === field && e.message.startsWith(`ComputeGraph.addNode: ${field} `),
      JSON.stringify(spec),
    );
  }
  assert.equal(g.nodeCount(), 0);
  assert.deepEqual(g.streams(), []);
});

test('addEdge: duplicates are ignored, self-loops and cycles throw CycleDetected and change nothing', () => {
  const g = build(3, []);
  assert.equal(g.addEdge(NodeId(0), NodeId(1)), true);
  assert.equal(g.addEdge(NodeId(0), NodeId(1)), false);
  assert.equal(g.addEdge(NodeId(1), NodeId(2)), true);
  assert.equal(g.edgeCount(), 2);
  assert.throws(() => g.addEdge(NodeId(1), NodeId(1)), isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdge: '));
  assert.throws(() => g.addEdge(NodeId(2), NodeId(0)), isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdge: '));
  assert.equal(g.edgeCount(), 2);
  assert.deepEqual(g.edges(), [
    [0, 1],
    [1, 2],
  ]);
  assert.ok(!g.isReachable(NodeId(2), NodeId(0)));
});

test('edges added from newer to older nodes work (the numbering is repaired) and cycles are still caught', () => {
  // 5 → 4 → 3 → 2 → 1 → 0, added in a scrambled order.
  const g = build(6, []);
  for (const [u, v] of [
    [3, 2],
    [5, 4],
    [1, 0],
    [4, 3],
    [2, 1],
  ] as [number, number][]) {
    g.addEdge(NodeId(u), NodeId(v));
  }
  assert.ok(g.isReachable(NodeId(5), NodeId(0)));
  assert.ok(!g.isReachable(NodeId(0), NodeId(5)));
  assert.deepEqual(g.topologicalOrder(), [5, 4, 3, 2, 1, 0]);
  assert.throws(() => g.addEdge(NodeId(0), NodeId(5)), isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdge: '));
  assert.throws(() => g.addEdge(NodeId(2), NodeId(4)), isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdge: '));
  assert.equal(g.addEdge(NodeId(5), NodeId(0)), true); // a shortcut, not a cycle
  assert.equal(g.edgeCount(), 6);
});

test('addEdges: many edges in any order, duplicates ignored; a cycle adds nothing and is named', () => {
  const g = build(5, [[0, 1]]);
  // 4 → 3 → 2 → 1, listed backwards, plus a duplicate of [0, 1] and one within the batch.
  assert.equal(g.addEdges([[2, 1], [3, 2], [0, 1], [4, 3], [3, 2]].map(([u, v]) => [NodeId(u!), NodeId(v!)] as const)), 3);
  assert.equal(g.edgeCount(), 4);
  assert.deepEqual(g.topologicalOrder(), [0, 4, 3, 2, 1]);
  assert.ok(g.isReachable(NodeId(4), NodeId(1)));
  const before = g.edges();
  assert.throws(
    () => g.addEdges([[NodeId(0), NodeId(4)], [NodeId(1), NodeId(4)]]),
    (e: unknown) =>
      isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdges: ')(e) &&
      /edges\[1\] 1 → 4 closes a cycle \(1 → 4 → 3 → 2 → 1\); no edge was added/.test((e as Error).message),
  );
  assert.throws(() => g.addEdges([[NodeId(2), NodeId(2)]]), isGraphError('CycleDetected', 'GRAPH_CYCLE', 'ComputeGraph.addEdges: edges[0] 2 → 2'));
  assert.deepEqual(g.edges(), before);
  assert.deepEqual(g.topologicalOrder(), [0, 4, 3, 2, 1]);
  assert.throws(() => g.addEdges([[NodeId(0), 9 as NodeId]]), isGraphError('NodeNotFound', 'GRAPH_NODE_NOT_FOUND', 'ComputeGraph.addEdges: node 9 not found (edges[0][1]'));
  assert.throws(() => g.addEdges([[NodeId(0)]] as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.addEdges: edges[0] must be a pair'));
  assert.throws(() => g.addEdges(5 as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.addEdges: edges must be an iterable'));
  assert.deepEqual(g.edges(), before);
  assert.equal(g.addEdges([]), 0);
});

test('every method that takes an id throws NodeNotFound for an unknown one, and InvalidArgumentError for a non-id', () => {
  const g = build(2, [[0, 1]]);
  const nine = 9 as NodeId;
  const zero = NodeId(0);
  const calls: [string, (id: NodeId) => unknown][] = [
    ['node', (id) => g.node(id)],
    ['successors', (id) => g.successors(id)],
    ['predecessors', (id) => g.predecessors(id)],
    ['isReachable', (id) => g.isReachable(id, zero)],
    ['isReachable', (id) => g.isReachable(zero, id)],
    ['hasEdge', (id) => g.hasEdge(zero, id)],
    ['addEdge', (id) => g.addEdge(id, zero)],
    ['addEdge', (id) => g.addEdge(zero, id)],
    ['addEdges', (id) => g.addEdges([[zero, id]])],
    ['levelOf', (id) => g.levelOf(id)],
    ['toDot', (id) => g.toDot({ highlight: [zero, id] })],
  ];
  for (const [method, call] of calls) {
    assert.throws(() => call(nine), isGraphError('NodeNotFound', 'GRAPH_NODE_NOT_FOUND', `ComputeGraph.${method}: node 9 not found`));
    for (const bad of [-1, 0.5, NaN, '0', null, 0n, { valueOf: () => 0 }]) {
      assert.throws(
        () => call(bad as NodeId),
        (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`ComputeGraph.${method}: `),
        `${method}(${String(bad)})`,
      );
    }
  }
  assert.equal(g.edgeCount(), 1);
  assert.throws(() => new ComputeGraph().node(zero), isGraphError('NodeNotFound', 'GRAPH_NODE_NOT_FOUND', 'ComputeGraph.node: '));
});

test('successors, predecessors, sources and sinks are ascending whatever the insertion order', () => {
  const g = build(5, [
    [0, 4],
    [0, 2],
    [3, 4],
    [0, 3],
    [1, 4],
  ]);
  assert.deepEqual(g.successors(NodeId(0)), [2, 3, 4]);
  assert.deepEqual(g.predecessors(NodeId(4)), [0, 1, 3]);
  assert.deepEqual(g.sources(), [0, 1]);
  assert.deepEqual(g.sinks(), [2, 4]);
  assert.ok(g.hasEdge(NodeId(3), NodeId(4)));
  assert.ok(!g.hasEdge(NodeId(4), NodeId(3)));
});

test('topologicalOrder: FIFO Kahn seeded by ascending id; the same edge set gives the same order', () => {
  const edges: [number, number][] = [
    [0, 2],
    [1, 2],
    [2, 3],
    [0, 4],
    [4, 3],
    [5, 3],
  ];
  const g1 = build(6, edges);
  const g2 = build(6, [...edges].reverse());
  assert.deepEqual(g1.topologicalOrder(), [0, 1, 5, 4, 2, 3]);
  assert.deepEqual(g2.topologicalOrder(), g1.topologicalOrder());
  // Isolated nodes: ascending ids.
  assert.deepEqual(build(3, []).topologicalOrder(), [0, 1, 2]);
});

test('an empty graph: ordering and scheduling throw EmptyGraph; counts and lists are empty', () => {
  const g = new ComputeGraph();
  for (const [name, call] of [
    ['topologicalOrder', () => g.topologicalOrder()],
    ['levels', () => g.levels()],
    ['widestLevel', () => g.widestLevel()],
    ['criticalPath', () => g.criticalPath()],
  ] as [string, () => unknown][]) {
    assert.throws(call, isGraphError('EmptyGraph', 'GRAPH_EMPTY', `ComputeGraph.${name}: `));
  }
  assert.equal(g.nodeCount(), 0);
  assert.equal(g.edgeCount(), 0);
  assert.deepEqual(g.nodes(), []);
  assert.deepEqual(g.edges(), []);
  assert.deepEqual(g.sources(), []);
  assert.deepEqual(g.sinks(), []);
  assert.equal(String(g), 'ComputeGraph(0 nodes, 0 edges, 0 streams)');
});

test('levels: a diamond has levels 0, 1, 1, 2; nodes of one level are never mutually reachable', () => {
  const g = build(4, [
    [0, 1],
    [0, 2],
    [1, 3],
    [2, 3],
  ]);
  assert.deepEqual(g.levels(), [[0], [1, 2], [3]]);
  assert.deepEqual([0, 1, 2, 3].map((i) => g.levelOf(NodeId(i))), [0, 1, 1, 2]);
  assert.deepEqual(g.widestLevel(), { level: 1, width: 2 });
  // A longer path wins: 0 → 1 → 2 and 0 → 2 put 2 on level 2.
  const h = build(4, [
    [0, 1],
    [1, 2],
    [0, 2],
  ]);
  assert.deepEqual(h.levels(), [[0, 3], [1], [2]]);
  assert.deepEqual(h.widestLevel(), { level: 0, width: 2 });
});

test('levels are recomputed after the graph changes', () => {
  const g = build(3, [[0, 1]]);
  assert.deepEqual(g.levels(), [[0, 2], [1]]);
  g.addEdge(NodeId(1), NodeId(2));
  assert.deepEqual(g.levels(), [[0], [1], [2]]);
  assert.ok(g.isReachable(NodeId(0), NodeId(2)));
  g.addNode({ kind: 'empty' });
  assert.deepEqual(g.levels(), [[0, 3], [1], [2]]);
});

test('criticalPath: by node cost (default 1), or by a cost function; ties go to smaller ids', () => {
  const chain = new ComputeGraph();
  const costs = [1, 10, 1];
  const ids = costs.map((cost, i) => chain.addNode({ kind: 'empty', name: `c${i}`, cost }));
  chain.addEdge(ids[0]!, ids[1]!);
  chain.addEdge(ids[1]!, ids[2]!);
  assert.deepEqual(chain.criticalPath(), { cost: 12, nodes: [0, 1, 2] });

  // 1 + max(5, 20) + 1 = 22 through the 20.
  const branch = new ComputeGraph();
  const [a, b, c, d] = [1, 5, 20, 1].map((cost) => branch.addNode({ kind: 'empty', cost }));
  branch.addEdge(a!, b!);
  branch.addEdge(a!, c!);
  branch.addEdge(b!, d!);
  branch.addEdge(c!, d!);
  assert.deepEqual(branch.criticalPath(), { cost: 22, nodes: [a, c, d] });
  // Unit costs: both branches have 3 nodes; the smaller id wins.
  assert.deepEqual(branch.criticalPath(() => 1), { cost: 3, nodes: [a, b, d] });
  // A cost function sees the records.
  assert.deepEqual(branch.criticalPath((n) => (n.id === b ? 100 : 0)), { cost: 100, nodes: [a, b, d] });
  assert.throws(() => branch.criticalPath(() => -1), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.criticalPath: costOf(node 0)'));
  assert.throws(() => branch.criticalPath(() => NaN), InvalidArgumentError);
  assert.throws(() => branch.criticalPath(5 as never), InvalidArgumentError);
});

test('isReachable agrees with a search on hand-built graphs, including ones too wide for the chain index', () => {
  // A wide graph: 6000 nodes in many short chains, so the chain cover needs thousands of chains
  // and queries use the pruned search.
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const n = 6000;
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty' });
  const succ: number[][] = Array.from({ length: n }, () => []);
  for (let k = 0; k < 3000; k++) {
    const u = rand(n);
    const v = rand(n);
    if (u === v) continue;
    try {
      if (g.addEdge(NodeId(u), NodeId(v))) succ[u]!.push(v);
    } catch (e) {
      assert.ok(e instanceof GraphError && e.kind === 'CycleDetected');
    }
  }
  const reaches = (a: number, b: number): boolean => {
    const seen = new Set([a]);
    const stack = [a];
    while (stack.length) {
      const x = stack.pop()!;
      if (x === b) return true;
      for (const y of succ[x]!) if (!seen.has(y)) (seen.add(y), stack.push(y));
    }
    return false;
  };
  for (let q = 0; q < 2000; q++) {
    const a = rand(n);
    // Half the queries go to a node reachable from a, when there is one.
    let b = rand(n);
    if (q % 2 === 0 && succ[a]!.length > 0) b = succ[a]![0]!;
    assert.equal(g.isReachable(NodeId(a), NodeId(b)), reaches(a, b), `${a} → ${b}`);
  }
});

test('toString summarises the graph', () => {
  const g = build(2, [[0, 1]]);
  assert.equal(String(g), 'ComputeGraph(2 nodes, 1 edges, 0 streams)');
});
