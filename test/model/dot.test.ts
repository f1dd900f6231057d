import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { ComputeGraph, StreamCapture, StreamId, CaptureEvent, MemcpyDir, NodeId, InvalidArgumentError } from '../../src/index.js';
import { HIGHLIGHT, STREAM_COLOURS } from '../../src/model/dot.js';

// What Graphviz's own parser makes of our DOT (the `json` output): the real check that the text
// is valid and escaped right.
interface GvObject {
  name: string;
  label?: string;
  shape?: string;
  fillcolor?: string;
  color?: string;
  nodes?: number[];
  subgraphs?: number[];
}
interface GvEdge {
  tail: number;
  head: number;
  style?: string;
  color?: string;
}
const graphviz = await Graphviz.load();
function parse(dot: string): { objects: GvObject[]; edges: GvEdge[] } {
  const j = JSON.parse(graphviz.dot(dot, 'json')) as { objects?: GvObject[]; edges?: GvEdge[] };
  return { objects: j.objects ?? [], edges: j.edges ?? [] };
}
/** Graphviz label escapes: \n, \l, \r end a line; \\ is a backslash; \" a quote. */
const unescapeLabel = (s: string): string => s.replace(/\\(.)/g, (_, c: string) => ('nlr'.includes(c) ? '\n' : c));

function workload(): ComputeGraph {
  const cap = new StreamCapture();
  const [s0, s1] = [StreamId(0), StreamId(5)];
  cap.beginCapture(s0);
  cap.beginCapture(s1);
  cap.recordMemcpy(s0, 'upload', MemcpyDir.HostToDevice, 4096);
  cap.recordEvent(s0, CaptureEvent(0));
  cap.waitEvent(s1, CaptureEvent(0));
  cap.recordKernel(s1, 'relu', 4, 256, 0);
  cap.recordMemset(s1, 'zero', 1536, 0);
  cap.recordEvent(s1, CaptureEvent(1));
  cap.waitEvent(s0, CaptureEvent(1));
  cap.recordHostCallback(s0, 'log');
  const g = cap.endCapture(s0);
  const e = g.addNode({ kind: 'empty', name: 'barrier' });
  g.addEdge(NodeId(3), e);
  return g;
}

test('toDot is valid Graphviz: every node and edge, shape by kind, one cluster per stream', () => {
  const g = workload();
  const { objects, edges } = parse(g.toDot());
  const nodes = objects.filter((o) => /^n\d+$/.test(o.name));
  assert.equal(nodes.length, g.nodeCount());
  const shapes: Record<string, string> = { kernel: 'box', memcpy: 'parallelogram', memset: 'hexagon', hostCallback: 'ellipse', empty: 'diamond' };
  for (const rec of g.nodes()) {
    const o = nodes.find((x) => x.name === `n${rec.id}`)!;
    assert.equal(o.shape, shapes[rec.kind], rec.kind);
    assert.ok(unescapeLabel(o.label!).startsWith(`${rec.name}\n`), o.label);
  }
  assert.equal(edges.length, g.edgeCount());
  const byIndex = (i: number): string => objects[i]!.name;
  const pairs = edges.map((e) => `${byIndex(e.tail)}>${byIndex(e.head)}`).sort();
  assert.deepEqual(pairs, g.edges().map(([u, v]) => `n${u}>n${v}`).sort());
  // Cross-stream edges (the fork and the join) are dashed; same-stream edges are not.
  const dashed = edges.filter((e) => e.style === 'dashed').map((e) => `${byIndex(e.tail)}>${byIndex(e.head)}`).sort();
  assert.deepEqual(dashed, ['n0>n1', 'n2>n3', 'n3>n4'].sort());
  // Clusters: stream 0 holds nodes 0 and 3, stream 5 holds 1 and 2; the stream-less barrier is outside.
  const cluster = (name: string): string[] => objects.find((o) => o.name === name)!.nodes!.map(byIndex).sort();
  assert.deepEqual(cluster('cluster_s0'), ['n0', 'n3']);
  assert.deepEqual(cluster('cluster_s5'), ['n1', 'n2']);
  assert.ok(!objects.some((o) => o.name.startsWith('cluster_') && o.nodes?.includes(objects.findIndex((x) => x.name === 'n4'))));
});

test('toDot labels say what each node does', () => {
  const g = workload();
  const { objects } = parse(g.toDot());
  const label = (id: number): string => unescapeLabel(objects.find((o) => o.name === `n${id}`)!.label!);
  assert.equal(label(0), 'upload\nmemcpy HtoD 4 KiB');
  assert.equal(label(1), 'relu\n<<<4, 256>>>');
  assert.equal(label(2), 'zero\nmemset 1.5 KiB = 0x00');
  assert.equal(label(3), 'log\nhost callback');
  assert.equal(label(4), 'barrier\nempty');
});

test("a peer-to-peer copy's label follows the seed's Display: PeerToPeer(dev0→dev1)", () => {
  const g = new ComputeGraph();
  g.addNode({ kind: 'memcpy', name: 'halo', dir: MemcpyDir.PeerToPeer(0, 1), sizeBytes: 2048 });
  const { objects } = parse(g.toDot());
  assert.equal(unescapeLabel(objects.find((o) => o.name === 'n0')!.label!), 'halo\nmemcpy PeerToPeer(dev0→dev1) 2 KiB');
});

test('toDot escapes names: quotes, backslashes (no \\N expansion), line breaks, control characters, braces', () => {
  const g = new ComputeGraph();
  const names = ['say "hi"', 'C:\\path\\N', 'two\nlines', 'tab\there', '} digraph x {', 'ünïcödé → ∑'];
  for (const name of names) g.addNode({ kind: 'empty', name });
  const { objects } = parse(g.toDot({ title: 'a "title"' }));
  names.forEach((name, i) => {
    const expected = name.replace(/\t/g, ' ');
    assert.equal(unescapeLabel(objects.find((o) => o.name === `n${i}`)!.label!), `${expected}\nempty`);
  });
  const svg = graphviz.dot(g.toDot());
  assert.ok(svg.includes('say &quot;hi&quot;'));
  assert.ok(svg.includes('C:\\path\\N'), 'a backslash-N in a name is drawn as written');
});

test('toDot highlight draws the given path (e.g. the critical path) in red', () => {
  const g = workload();
  const path = g.criticalPath().nodes;
  assert.deepEqual(path, [0, 1, 2, 3, 4]);
  const { objects, edges } = parse(g.toDot({ highlight: path }));
  for (const id of path) assert.equal(objects.find((o) => o.name === `n${id}`)!.color, '#d62728');
  const red = edges.filter((e) => e.color === '#d62728').map((e) => `${objects[e.tail]!.name}>${objects[e.head]!.name}`).sort();
  assert.deepEqual(red, ['n0>n1', 'n1>n2', 'n2>n3', 'n3>n4']);
});

test('toDot of an empty graph is a valid empty digraph; bad options are refused', () => {
  const { objects } = parse(new ComputeGraph().toDot());
  assert.equal(objects.length, 0);
  const g = workload();
  assert.throws(() => g.toDot({ title: 5 } as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.toDot: title'));
  assert.throws(() => g.toDot({ colour: 'x' } as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.toDot: unknown option'));
  assert.throws(() => g.toDot({ highlight: 3 } as never), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('ComputeGraph.toDot: highlight'));
  // A hole is refused by its index, as any other id that is not a node (it used to be skipped).
  for (const [op, call] of [
    ['ComputeGraph.toDot', () => g.toDot({ highlight: [0, , 2] as never })],
    ['ComputeGraph.toDotChunks', () => g.toDotChunks({ highlight: [, 1] as never })],
  ] as const) {
    assert.throws(call, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: highlight[`) && /must be an integer in 0\.\.4294967295, got undefined$/.test(e.message), op);
  }
});

test('toDot ranks the whole graph at once (edges between stream clusters point down) and no stream wears the highlight colour', () => {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'empty', name: 'a', stream: StreamId(0) });
  const b = g.addNode({ kind: 'empty', name: 'b', stream: StreamId(1) });
  g.addEdge(a, b);
  assert.match(g.toDot(), /newrank=true/);
  assert.ok(!STREAM_COLOURS.includes(HIGHLIGHT));
});
