/**
 * The reachability index's path for graphs too wide for a chain index (a search pruned by the
 * topological numbering): forced on for small graphs, every query against a naive reference, on
 * random DAGs of every shape (hand-built in any edge order, wide bipartite layers, a capture of
 * many streams).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CaptureEvent, ComputeGraph, NodeId, StreamCapture, StreamId } from '../../src/model/index.js';
import { setChainIndexLimitForTesting } from '../../src/model/reachability.js';

/** Every node's descendants (itself included), by search over `succ`. */
function reference(n: number, succ: readonly Set<number>[]): Set<number>[] {
  return Array.from({ length: n }, (_, a) => {
    const seen = new Set([a]);
    const stack = [a];
    while (stack.length > 0) for (const x of succ[stack.pop()!]!) if (!seen.has(x)) (seen.add(x), stack.push(x));
    return seen;
  });
}

function checkAll(g: ComputeGraph, n: number, succ: readonly Set<number>[]): void {
  const reach = reference(n, succ);
  for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) assert.equal(g.isReachable(NodeId(a), NodeId(b)), reach[a]!.has(b), `isReachable(${a}, ${b})`);
}

/** Runs `body` with the chain index off (the pruned search for every graph). */
function labelsOnly(body: () => void): void {
  const before = setChainIndexLimitForTesting(0);
  try {
    body();
  } finally {
    setChainIndexLimitForTesting(before);
  }
}

test('without the chain index: random DAGs with edges in any order, every query exact', () => {
  labelsOnly(() =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(fc.tuple(fc.nat(39), fc.nat(39)), { maxLength: 160 }), (n, pairs) => {
        const g = new ComputeGraph();
        for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: `v${i}` });
        const succ = Array.from({ length: n }, () => new Set<number>());
        for (const [u0, v0] of pairs) {
          const u = u0 % n;
          const v = v0 % n;
          // Keep it acyclic without relying on the graph's refusal: only edges that close no cycle.
          if (u === v || reference(n, succ)[v]!.has(u)) continue;
          g.addEdge(NodeId(u), NodeId(v));
          succ[u]!.add(v);
        }
        checkAll(g, n, succ);
      }),
      { numRuns: 300 },
    ),
  );
});

test('without the chain index: wide bipartite layers and a capture of many streams, every query exact', () => {
  labelsOnly(() => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), fc.array(fc.tuple(fc.nat(11), fc.nat(11)), { maxLength: 80 }), (left, right, pairs) => {
        const g = new ComputeGraph();
        const n = left + right;
        for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: `v${i}` });
        const succ = Array.from({ length: n }, () => new Set<number>());
        const edges: [NodeId, NodeId][] = [];
        for (const [a, b] of pairs) {
          const u = a % left;
          const v = left + (b % right);
          if (succ[u]!.has(v)) continue;
          succ[u]!.add(v);
          edges.push([NodeId(u), NodeId(v)]);
        }
        g.addEdges(edges);
        checkAll(g, n, succ);
      }),
      { numRuns: 100 },
    );
    // 40 streams forked from one, with joins across them: a capture's graph, through the same path.
    const cap = new StreamCapture();
    const main = StreamId(0);
    const streams = Array.from({ length: 40 }, (_, i) => StreamId(i + 1));
    cap.beginCapture(main);
    for (const s of streams) cap.beginCapture(s);
    cap.recordKernel(main, 'first', 1, 32, 0);
    let event = 0;
    cap.recordEvent(main, CaptureEvent(event));
    for (const s of streams) cap.waitEvent(s, CaptureEvent(event));
    for (let r = 0; r < 3; r++) {
      for (const s of streams) cap.recordKernel(s, `k${r}`, 1, 32, 0);
      for (let i = 0; i + 1 < streams.length; i += 3) {
        cap.recordEvent(streams[i]!, CaptureEvent(++event));
        cap.waitEvent(streams[i + 1]!, CaptureEvent(event));
      }
    }
    for (const s of streams) {
      cap.recordEvent(s, CaptureEvent(++event));
      cap.waitEvent(main, CaptureEvent(event));
    }
    cap.recordKernel(main, 'last', 1, 32, 0);
    const g = cap.endCapture(main);
    const n = g.nodeCount();
    const succ = Array.from({ length: n }, (_, v) => new Set<number>(g.successors(NodeId(v)).map((x) => x as number)));
    checkAll(g, n, succ);
  });
});
