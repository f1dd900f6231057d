/**
 * summarizeGraph against a naive reference, on random capture-like graphs (streams joined by
 * events), hand-built DAGs without streams, and graphs that mix the two: every op in exactly one
 * group, counts and costs adding up, a summary edge exactly where graph edges cross between
 * groups (with their counts), a DAG, the group limits kept, segments that no join cuts through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CaptureEvent, ComputeGraph, MemcpyDir, NodeId, StreamCapture, StreamId } from '../../src/index.js';
import { summarizeGraph, type SummaryGraph } from '../../src/model/summary-graph.js';

type Op = { stream: number; join: number | null; kind: 'kernel' | 'memcpy' | 'memset' | 'host'; cost: number };

/** A capture of `ops` over `streams` streams; an op with `join` first waits on that stream's work. */
function captured(streams: number, ops: readonly Op[]): ComputeGraph {
  const cap = new StreamCapture();
  const ids = Array.from({ length: streams }, (_, i) => StreamId(i));
  for (const s of ids) cap.beginCapture(s);
  let event = 0;
  for (const op of ops) {
    const s = ids[op.stream % streams]!;
    if (op.join !== null && op.join % streams !== op.stream % streams) {
      const e = CaptureEvent(event++);
      cap.recordEvent(ids[op.join % streams]!, e);
      cap.waitEvent(s, e);
    }
    if (op.kind === 'kernel') cap.recordKernel(s, 'k', 1, 32, 0);
    else if (op.kind === 'memcpy') cap.recordMemcpy(s, 'c', MemcpyDir.DeviceToDevice, 64);
    else if (op.kind === 'memset') cap.recordMemset(s, 'z', 64, 0);
    else cap.recordHostCallback(s, 'h');
  }
  // A capture's ops cost 1; the ops' costs are set through the graph's document.
  const doc = cap.endCapture(ids[0]!).toJSON() as unknown as { nodes: { cost?: number }[] };
  doc.nodes.forEach((node, i) => (node.cost = ops[i]!.cost));
  return ComputeGraph.fromJSON(doc);
}

/** A DAG built by hand: node v after up to 3 earlier ones; `streams` 0 for none, else some nodes on one of that many. */
function handBuilt(n: number, picks: readonly number[], streams: number): ComputeGraph {
  const g = new ComputeGraph();
  for (let v = 0; v < n; v++) {
    const p = picks[v % picks.length]!;
    const stream = streams === 0 || p % 3 === 0 ? null : StreamId(p % streams);
    const common = { cost: (p % 5) + 0.5, ...(stream === null ? {} : { stream }) };
    g.addNode(p % 2 === 0 ? { kind: 'kernel', functionName: 'k', grid: 1, block: 1, ...common } : { kind: 'empty', ...common });
  }
  const edges: [NodeId, NodeId][] = [];
  for (let v = 1; v < n; v++) for (let j = 0; j < 3; j++) {
    const p = picks[(v * 3 + j) % picks.length]!;
    if (p % 4 !== 0) edges.push([NodeId((p * 7 + j) % v), NodeId(v)]);
  }
  g.addEdges(edges);
  return g;
}

/** Checks `s` against `g` the long way. */
function checkSummary(g: ComputeGraph, s: SummaryGraph, maxNodes: number): void {
  const n = g.nodeCount();
  const k = s.nodes.length;
  assert.ok(k <= maxNodes, `${k} groups, at most ${maxNodes}`);
  assert.equal(s.groupOf.length, n);
  // Every op in exactly one group, and the groups' counts, kinds, costs and streams are theirs.
  const members: number[][] = Array.from({ length: k }, () => []);
  for (let v = 0; v < n; v++) {
    assert.ok(s.groupOf[v]! < k, `op ${v} in a group`);
    members[s.groupOf[v]!]!.push(v);
  }
  let ops = 0;
  let cost = 0;
  for (const node of s.nodes) {
    const mine = members[node.id]!.map((v) => g.node(NodeId(v)));
    assert.ok(mine.length > 0, 'no empty group');
    assert.equal(node.ops, mine.length);
    const kinds = new Map<string, number>();
    for (const m of mine) kinds.set(m.kind, (kinds.get(m.kind) ?? 0) + 1);
    assert.deepEqual(new Map(node.kinds.map((x) => [x.kind, x.count])), kinds);
    for (let i = 1; i < node.kinds.length; i++) assert.ok(node.kinds[i - 1]!.count >= node.kinds[i]!.count, 'kinds most first');
    const c = mine.reduce((a, m) => a + m.cost, 0);
    assert.ok(Math.abs(node.cost - c) <= 1e-9 * Math.max(1, c));
    const streams = [...new Set(mine.filter((m) => m.stream !== null).map((m) => m.stream!))].sort((a, b) => a - b);
    assert.deepEqual(node.streams, streams);
    const pure = mine.every((m) => m.stream !== null && m.stream === mine[0]!.stream);
    assert.equal(node.stream, pure ? mine[0]!.stream : null);
    const levels = mine.map((m) => g.levelOf(m.id));
    assert.deepEqual(node.levels, [Math.min(...levels), Math.max(...levels)]);
    ops += node.ops;
    cost += node.cost;
  }
  assert.equal(ops, n);
  const total = g.nodes().reduce((a, m) => a + m.cost, 0);
  assert.ok(Math.abs(cost - total) <= 1e-9 * Math.max(1, total));
  // A summary edge exactly where graph edges cross between two groups, counted.
  const want = new Map<string, { count: number; crossStream: number }>();
  for (const [u, v] of g.edges()) {
    const a = s.groupOf[u]!;
    const b = s.groupOf[v]!;
    if (a === b) continue;
    const e = want.get(`${a}>${b}`) ?? { count: 0, crossStream: 0 };
    e.count++;
    if (g.node(u).stream !== g.node(v).stream) e.crossStream++;
    want.set(`${a}>${b}`, e);
  }
  assert.deepEqual(new Map(s.edges.map((e) => [`${e.from}>${e.to}`, { count: e.count, crossStream: e.crossStream }])), want);
  // A DAG: a topological order of the groups exists (Kahn's algorithm visits every group).
  const indeg = new Array<number>(k).fill(0);
  for (const e of s.edges) indeg[e.to]!++;
  const queue = s.nodes.filter((x) => indeg[x.id] === 0).map((x) => x.id);
  for (let i = 0; i < queue.length; i++) for (const e of s.edges) if (e.from === queue[i] && --indeg[e.to]! === 0) queue.push(e.to);
  assert.equal(queue.length, k, 'the summary is a DAG');
  // The critical path's groups, in its order, and only those marked.
  const path: number[] = [];
  for (const v of g.criticalPath().nodes) if (path[path.length - 1] !== s.groupOf[v]) path.push(s.groupOf[v]!);
  assert.deepEqual(s.criticalPath, path);
  assert.deepEqual(s.nodes.filter((x) => x.critical).map((x) => x.id), [...new Set(path)].sort((a, b) => a - b));
  if (s.by === 'segment') {
    // A segment is one stream's; a join enters only at its first op (by level) and leaves only from its last.
    for (const node of s.nodes) assert.notEqual(node.stream, null);
    for (const [u, v] of g.edges()) {
      if (g.node(u).stream === g.node(v).stream) continue;
      const from = s.nodes[s.groupOf[u]!]!;
      const to = s.nodes[s.groupOf[v]!]!;
      assert.equal(g.levelOf(u), from.levels[1], 'a join leaves a segment from its last op');
      assert.equal(g.levelOf(v), to.levels[0], 'a join enters a segment at its first op');
    }
  }
}

const op: fc.Arbitrary<Op> = fc.record({
  stream: fc.nat(7),
  join: fc.option(fc.nat(7), { freq: 4 }),
  kind: fc.constantFrom('kernel', 'memcpy', 'memset', 'host'),
  cost: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 100, noNaN: true })),
});

test('summarizeGraph on random captures: partition, counts, costs, edges and a DAG, by segment or by band', () => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 60 }), (streams, ops, maxNodes) => {
      const g = captured(streams, ops);
      const s = summarizeGraph(g, { maxNodes });
      checkSummary(g, s, maxNodes);
      seen.add(s.by);
      if (s.nodes.some((x) => x.streams.length > 1)) seen.add('merged');
    }),
    { numRuns: 300 },
  );
  // Each way of grouping was tried, cycles between streams merged included.
  assert.deepEqual([...seen].sort(), ['band', 'merged', 'segment']);
});

/** The summary's layout size the long way: groups plus, per edge, the levels it skips (longest-path levels). */
function layoutSize(s: SummaryGraph): number {
  const level = new Array<number>(s.nodes.length).fill(0);
  // Relaxing every edge as often as there are groups reaches the longest-path levels of a DAG.
  for (let i = 0; i < s.nodes.length; i++) for (const e of s.edges) level[e.to] = Math.max(level[e.to]!, level[e.from]! + 1);
  return s.edges.reduce((size, e) => size + level[e.to]! - level[e.from]! - 1, s.nodes.length);
}

test('summarizeGraph on hand-built DAGs without streams and with some: level bands, cycles merged, the layout size kept', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 200 }),
      fc.array(fc.nat(1000), { minLength: 1, maxLength: 60 }),
      fc.nat(4),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 80 }),
      (n, picks, streams, maxNodes, maxLayoutSize) => {
        const g = handBuilt(n, picks, streams);
        const s = summarizeGraph(g, { maxNodes, maxLayoutSize });
        if (streams === 0 || g.nodes().some((x) => x.stream === null)) assert.equal(s.by, 'band');
        checkSummary(g, s, maxNodes);
        // Without streams one band is one group, so fewer bands can always bring the layout within the limit.
        if (streams === 0) assert.ok(layoutSize(s) <= maxLayoutSize, `layout size ${layoutSize(s)}, at most ${maxLayoutSize}`);
      },
    ),
    { numRuns: 300 },
  );
});

test('a capture with few joins is summarised by segment: one group per run of a stream between joins', () => {
  // Stream 0: a, b; stream 1 waits on b, runs c, d; stream 0 waits on d and runs e.
  const cap = new StreamCapture();
  const [s0, s1] = [StreamId(0), StreamId(1)];
  cap.beginCapture(s0);
  cap.beginCapture(s1);
  cap.recordKernel(s0, 'a', 1, 1, 0);
  cap.recordMemcpy(s0, 'b', MemcpyDir.HostToDevice, 8);
  cap.recordEvent(s0, CaptureEvent(1));
  cap.waitEvent(s1, CaptureEvent(1));
  cap.recordKernel(s1, 'c', 1, 1, 0);
  cap.recordKernel(s1, 'd', 1, 1, 0);
  cap.recordEvent(s1, CaptureEvent(2));
  cap.waitEvent(s0, CaptureEvent(2));
  cap.recordKernel(s0, 'e', 1, 1, 0);
  const g = cap.endCapture(s0);
  const s = summarizeGraph(g);
  assert.equal(s.by, 'segment');
  assert.deepEqual(
    s.nodes.map((x) => [x.stream, x.ops, x.kinds.map((k) => `${k.count} ${k.kind}`).join(', '), x.cost]),
    [
      [0, 2, '1 kernel, 1 memcpy', 2],
      [1, 2, '2 kernel', 2],
      [0, 1, '1 kernel', 1],
    ],
  );
  assert.deepEqual(s.edges, [
    { from: 0, to: 1, count: 1, crossStream: 1 },
    { from: 0, to: 2, count: 1, crossStream: 0 },
    { from: 1, to: 2, count: 1, crossStream: 1 },
  ]);
  assert.deepEqual(s.criticalPath, [0, 1, 2]);
  assert.deepEqual(s.streamOrder, [0, 1]);
});

test('summarizeGraph: an empty graph has an empty summary; maxNodes must be a positive integer, maxLayoutSize at least 1', () => {
  assert.deepEqual(summarizeGraph(new ComputeGraph()).nodes, []);
  assert.throws(() => summarizeGraph(new ComputeGraph(), { maxNodes: 0 }), RangeError);
  assert.throws(() => summarizeGraph(new ComputeGraph(), { maxNodes: 1.5 }), RangeError);
  assert.throws(() => summarizeGraph(new ComputeGraph(), { maxLayoutSize: 0 }), RangeError);
});
