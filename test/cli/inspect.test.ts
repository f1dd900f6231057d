import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph, NodeId, StreamId } from '../../src/index.js';
import { MLP_PROGRAM } from '../../src/cli/workload.js';
import { modelGraph } from '../../src/cli/workload-model.js';
import { assertUserError, cudagraph, graph50, tempDir } from './helpers.js';

function withFile(graph: ComputeGraph, body: (file: string) => void): void {
  const dir = tempDir();
  try {
    const file = join(dir, 'graph.json');
    writeFileSync(file, JSON.stringify(graph));
    body(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('inspect: nodes by kind, streams, depth, width, critical path, and every cross-stream join', () => {
  const graph = modelGraph(MLP_PROGRAM);
  withFile(graph, (file) => {
    const r = cudagraph(['inspect', file]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trimEnd().split('\n');
    const field = (name: string): string => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    assert.equal(lines[0], `${file}: 39 nodes, ${graph.edgeCount()} edges`);
    assert.equal(field('nodes'), '39 (kernel 34, memcpy 5)');
    assert.equal(field('streams'), '3 (stream 0: 9, stream 1: 15, stream 2: 15)');
    assert.equal(field('depth'), `${graph.levels().length} (levels: the longest chain of dependent nodes)`);
    assert.equal(field('width'), `${graph.widestLevel().width} (the most nodes that can run at once, level by level)`);
    assert.equal(field('sources'), 'upload x');
    assert.equal(field('sinks'), 'download loss+accuracy');
    const names = graph.nodes().map((n) => n.name);
    assert.match(field('critical path'), new RegExp(`: ${graph.criticalPath().nodes.map((id) => names[id]!.replace(/[+.]/g, '\\$&')).join(' → ')}$`));
    // The joins: the fork after the normalisation, the A ↔ B exchanges, the joins back into main.
    const cross = graph.edges().filter(([u, v]) => graph.node(u).stream !== graph.node(v).stream);
    assert.equal(field('cross-stream joins (' + cross.length + ')'), '');
    const joinLines = lines.slice(lines.findIndex((l) => l.startsWith('cross-stream joins')) + 1);
    assert.equal(joinLines.length, cross.length);
    assert.ok(joinLines.includes('  stream 0 → stream 1: normalize x → layer1.gemm a'));
    assert.ok(joinLines.includes('  stream 2 → stream 1: layer1.relu b → layer2.gemm a'));
    assert.ok(joinLines.includes('  stream 1 → stream 0: argmax rows 0-31 → cross_entropy'));
  });
});

test('inspect --json: the same facts as data', () => {
  const graph = graph50();
  withFile(graph, (file) => {
    const r = cudagraph(['inspect', '--json', file]);
    assert.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as {
      file: string;
      nodes: number;
      edges: number;
      byKind: Record<string, number>;
      streams: { stream: number; nodes: number }[];
      depth: number;
      width: number;
      criticalPath: { cost: number; nodes: { id: number; name: string }[] };
      sources: number[];
      sinks: number[];
      joins: { from: { id: number; stream: number }; to: { id: number; stream: number } }[];
    };
    assert.equal(doc.file, file);
    assert.equal(doc.nodes, 50);
    assert.equal(doc.edges, graph.edgeCount());
    assert.equal(Object.values(doc.byKind).reduce((a, b) => a + b, 0), 50);
    assert.deepEqual(doc.streams.map((s) => s.stream), [0, 1, 2, 3]);
    assert.equal(doc.depth, graph.levels().length);
    assert.equal(doc.width, graph.widestLevel().width);
    assert.deepEqual(doc.criticalPath.nodes.map((n) => n.id), graph.criticalPath().nodes);
    assert.deepEqual(doc.sources, graph.sources());
    assert.deepEqual(doc.sinks, graph.sinks());
    for (const j of doc.joins) {
      assert.notEqual(j.from.stream, j.to.stream);
      assert.ok(graph.hasEdge(j.from.id as never, j.to.id as never));
    }
    assert.equal(doc.joins.length, graph.edges().filter(([u, v]) => graph.node(u).stream !== graph.node(v).stream).length);
  });
});

test('inspect: a hand-built graph (some nodes without a stream), and an empty graph', () => {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'kernel', functionName: 'k', grid: 1, block: 32, stream: StreamId(4) });
  const b = g.addNode({ kind: 'empty', name: 'barrier' });
  g.addEdge(a, b);
  withFile(g, (file) => {
    const r = cudagraph(['inspect', file]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^streams: {8}2 \(no stream: 1, stream 4: 1\)$/m);
    assert.match(r.stdout, /^ {2}stream 4 → no stream: k → barrier$/m);
  });
  withFile(new ComputeGraph(), (file) => {
    const r = cudagraph(['inspect', file]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /: 0 nodes, 0 edges\n/);
    assert.match(r.stdout, /^depth: {10}0 /m);
    assert.match(r.stdout, /^cross-stream joins \(0\):$/m);
  });
});

test('inspect: user mistakes are one line, no stack trace, status 1', () => {
  const dir = tempDir();
  try {
    const notJson = join(dir, 'x.json');
    writeFileSync(notJson, 'digraph {}');
    const wrong = join(dir, 'y.json');
    writeFileSync(wrong, JSON.stringify({ format: 'something.else', version: 1, nodes: [], edges: [] }));
    const cases: [string[], RegExp][] = [
      [['inspect', join(dir, 'nope.json')], /^cudagraph: cannot read .*nope\.json: no such file or folder\n$/],
      [['inspect', notJson], /^cudagraph: .*x\.json is not JSON: /],
      [['inspect', wrong], /^cudagraph: .*y\.json is not a cudagraph graph file: .*format/],
      [['inspect'], /^cudagraph: missing required argument 'graph'/],
      [['inspect', notJson, 'extra'], /^cudagraph: too many arguments/],
    ];
    for (const [args, message] of cases) assertUserError(cudagraph(args), message, args.join(' '));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('inspect: a graph of 100,000 sources and joins prints short lines, a cyclic file a one-line short error', () => {
  // A wide fan on 2 streams: every middle node is a source and a cross-stream join.
  const n = 100_000;
  const g = new ComputeGraph();
  const sink = g.addNode({ kind: 'empty', name: 'sink', stream: StreamId(0) });
  const edges: [NodeId, NodeId][] = [];
  for (let i = 0; i < n; i++) edges.push([g.addNode({ kind: 'empty', name: `src${i}`, stream: StreamId(1 + (i % 2)) }), sink]);
  g.addEdges(edges);
  withFile(g, (file) => {
    const r = cudagraph(['inspect', file]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.ok(lines.length < 80, `${lines.length} lines`);
    for (const l of lines) assert.ok(l.length < 2000, `a line of ${l.length} characters: ${l.slice(0, 80)}…`);
    assert.match(r.stdout, /^sources: {8}src0, src1, .*, … 99,950 more …, .*src99999 \(100,000 in all; --json lists every one\)$/m);
    assert.match(r.stdout, /^cross-stream joins \(100000; --json lists every one\):$/m);
    assert.match(r.stdout, /^ {2}… 99,950 more …$/m);
    const doc = JSON.parse(cudagraph(['inspect', '--json', file]).stdout) as { sources: number[]; joins: unknown[] };
    assert.equal(doc.sources.length, n, '--json lists every source');
    assert.equal(doc.joins.length, n);
  });
  const ring = new ComputeGraph();
  for (let i = 0; i < n; i++) ring.addNode({ kind: 'empty' });
  const ringEdges: [number, number][] = [];
  for (let i = 0; i < n; i++) ringEdges.push([i, (i + 1) % n]);
  withFile(ring, (file) => {
    writeFileSync(file, JSON.stringify({ ...ring.toJSON(), edges: ringEdges }));
    const r = cudagraph(['inspect', file]);
    assertUserError(r, /is not a cudagraph graph file: edges\[\d+\] .* closes a cycle \(100,000 nodes: /, 'a 100,000-node cycle');
    assert.ok(r.stderr.length < 1000 && r.stderr.split('\n').length === 2, `${r.stderr.length} characters`);
  });
});
