/** Messages that quote what the user built stay short however large the graph: a few items and a count. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ComputeGraph, GraphBuilder, GraphError, InvalidArgumentError, NodeId, StreamCapture, StreamId, CaptureEvent } from '../../src/index.js';

/** A message fit for one line of a terminal and a log: well under a kilobyte. */
const SHORT = 600;

/** `n` empty nodes chained 0 → 1 → … → n−1. */
function chain(n: number): ComputeGraph {
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty' });
  const edges: [NodeId, NodeId][] = [];
  for (let i = 1; i < n; i++) edges.push([NodeId(i - 1), NodeId(i)]);
  g.addEdges(edges);
  return g;
}

test('a cycle through a million nodes is refused with a short message: its length, first and last nodes', () => {
  const n = 1_000_000;
  const g = chain(n);
  assert.throws(
    () => g.addEdges([[NodeId(n - 1), NodeId(0)]]),
    (e: unknown) => {
      assert.ok(e instanceof GraphError && e.kind === 'CycleDetected');
      assert.ok(e.message.length < SHORT, `${e.message.length} characters`);
      assert.match(e.message, /^ComputeGraph\.addEdges: edges\[0\] 999999 → 0 closes a cycle \(1,000,000 nodes: 999999 → 0 → 1 → 2 → 3 → … 999,993 more … → 999997 → 999998 → 999999\); no edge was added$/);
      return true;
    },
  );
  assert.equal(g.edgeCount(), n - 1, 'nothing was added');
});

test('fromJSON: a document with a long cycle is refused with a short message', () => {
  const n = 200_000;
  const doc = chain(n).toJSON();
  const edges = [...doc.edges, [n - 1, 0] as const];
  assert.throws(
    () => ComputeGraph.fromJSON({ ...doc, edges }),
    (e: unknown) => e instanceof GraphError && e.code === 'GRAPH_JSON_INVALID' && e.message.length < SHORT && /closes a cycle \(200,000 nodes: /.test(e.message),
  );
  // A field name from the document is quoted cut, too.
  const key = 'k'.repeat(100_000);
  assert.throws(
    () => ComputeGraph.fromJSON({ ...doc, [key]: 1 }),
    (e: unknown) => e instanceof GraphError && e.message.length < SHORT && /unknown field 'k+…'/.test(e.message),
  );
  assert.throws(
    () => ComputeGraph.fromJSON({ format: doc.format, version: 1, nodes: [{ id: 0, kind: 'empty', [key]: 1 }], edges: [] }),
    (e: unknown) => e instanceof GraphError && e.message.length < SHORT && /nodes\[0\]\.k+… is not a field of 'empty' nodes/.test(e.message),
  );
  assert.throws(
    () => new ComputeGraph().addNode({ kind: 'empty', [key]: 1 } as never),
    (e: unknown) => e instanceof InvalidArgumentError && e.message.length < SHORT,
  );
});

test('endCapture with thousands of unjoined streams names a few of them and the count', () => {
  const cap = new StreamCapture();
  const streams = 5000;
  cap.beginCapture(StreamId(0));
  cap.recordKernel(StreamId(0), 'root', 1, 32, 0);
  cap.recordEvent(StreamId(0), CaptureEvent(0));
  for (let s = 1; s <= streams; s++) {
    cap.beginCapture(StreamId(s));
    cap.waitEvent(StreamId(s), CaptureEvent(0));
    cap.recordKernel(StreamId(s), 'side', 1, 32, 0);
  }
  assert.throws(
    () => cap.endCapture(StreamId(0), { requireJoined: true }),
    (e: unknown) => {
      assert.ok(e instanceof GraphError && e.code === 'CAPTURE_UNJOINED');
      assert.ok(e.message.length < SHORT, `${e.message.length} characters`);
      assert.match(e.message, /: 5,000 streams \(stream 1, stream 2, stream 3, stream 4, stream 5, … 4,992 more …, stream 4998, stream 4999, stream 5000\) have work not joined back/);
      return true;
    },
  );
  assert.equal(cap.nodeCount(), streams + 1, 'the session is unchanged');
});

test('builder messages quote a long buffer name cut', () => {
  const b = new GraphBuilder();
  const name = 'buffer'.repeat(50_000);
  b.buffer(name, 8);
  assert.throws(() => b.buffer(name, 8), (e: unknown) => e instanceof InvalidArgumentError && e.message.length < SHORT && /a buffer named 'buffer[a-z]*…' already exists/.test(e.message));
  const h = b.hostBuffer('h', 64);
  assert.throws(() => b.memset(b.hostBuffer(name.slice(1), 8), 0), (e: unknown) => e instanceof InvalidArgumentError && e.message.length < SHORT);
  assert.throws(() => b.memcpy({ src: h, dst: b.buffer(`d${name}`, 8), sizeBytes: 64 }), (e: unknown) => e instanceof InvalidArgumentError && e.message.length < SHORT);
});

test('a long unknown field of a peer-to-peer direction is quoted cut', () => {
  const key = 'f'.repeat(100_000);
  assert.throws(
    () => new ComputeGraph().addNode({ kind: 'memcpy', sizeBytes: 8, dir: { kind: 'PeerToPeer', srcDevice: 0, dstDevice: 1, [key]: 1 } as never }),
    (e: unknown) => e instanceof InvalidArgumentError && e.message.length < SHORT && /spec\.dir has an unknown field 'f+…'/.test(e.message),
  );
});
