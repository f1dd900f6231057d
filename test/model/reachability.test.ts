/**
 * Every structure behind `isReachable` — the chain index, its rows at chain exits, and the
 * reachability labels with their search — against a naive reference, every pair of nodes, on
 * random DAGs of every shape: hand-built with edges in any order, layered, wide bipartite, and
 * capture-like (streams joined at random). A hook forces each structure on small graphs; the
 * labels are also built with few chains and coarse rounding so that every test they make, sound
 * or not, decides some queries.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CaptureEvent, NodeId, StreamCapture, StreamId } from '../../src/model/index.js';
import { forceReachabilityKindForTesting, ReachabilityIndex, setChainIndexLimitForTesting, type ReachabilityKind } from '../../src/model/reachability.js';
import { ReachLabels } from '../../src/model/reach-labels.js';
import { GraphStore } from '../../src/model/graph-store.js';
import { DynamicOrder } from '../../src/model/dynamic-order.js';
import { KIND_EMPTY } from '../../src/model/node.js';

/** Every node's descendants (itself included), by search over `succ`. */
function reference(n: number, succ: readonly number[][]): Set<number>[] {
  return Array.from({ length: n }, (_, a) => {
    const seen = new Set([a]);
    const stack = [a];
    while (stack.length > 0) for (const x of succ[stack.pop()!]!) if (!seen.has(x)) (seen.add(x), stack.push(x));
    return seen;
  });
}

/** A DAG as a store plus its successor lists; `slot[v]` is v's stream (−1: none). */
interface Dag {
  store: GraphStore;
  succ: number[][];
}

/** Builds the store for `n` nodes on `slots` and `edges` (acyclic), added in the given order. */
function dag(n: number, slots: readonly number[], edges: readonly [number, number][]): Dag {
  const store = new GraphStore();
  for (let v = 0; v < n; v++) store.appendNode(KIND_EMPTY, slots[v]! < 0 ? -1 : store.streamSlot(slots[v]!), 0);
  const r = new DynamicOrder().addEdges(
    store,
    edges.map((e) => e[0]),
    edges.map((e) => e[1]),
  );
  assert.ok(r.ok, 'the generated edges are acyclic');
  const succ = Array.from({ length: n }, () => [] as number[]);
  for (let e = 1; e <= store.m; e++) succ[store.edgeFrom(e)]!.push(store.edgeTo(e));
  return { store, succ };
}

/** Hand-built: a random topological order (`rank`), edges between random pairs from the lower rank, in any order. */
const randomDag = fc
  .integer({ min: 1, max: 36 })
  .chain((n) => fc.tuple(fc.constant(n), fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 4 * n })))
  .map(([n, rank, pairs]) => {
    const byRank = rank;
    const edges: [number, number][] = [];
    for (const [x, y] of pairs) if (x !== y) edges.push([byRank[Math.min(x, y)]!, byRank[Math.max(x, y)]!]);
    return dag(n, new Array<number>(n).fill(-1), edges);
  });

/** Layers of random width, edges only between neighbouring layers (two layers: wide bipartite). */
const layeredDag = fc
  .tuple(fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 2, maxLength: 5 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.integer())
  .map(([widths, density, seed]) => {
    let s = seed >>> 0;
    const rand = (): number => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
    const starts = widths.map((_, i) => widths.slice(0, i).reduce((a, b) => a + b, 0));
    const n = widths.reduce((a, b) => a + b, 0);
    const edges: [number, number][] = [];
    for (let l = 0; l + 1 < widths.length; l++)
      for (let i = 0; i < widths[l]!; i++) for (let j = 0; j < widths[l + 1]!; j++) if (rand() < density) edges.push([starts[l]! + i, starts[l + 1]! + j]);
    return dag(n, new Array<number>(n).fill(-1), edges);
  });

/** Capture-like: each node on a random stream after the stream's last node; some first join another stream's last node. */
const captureDag = fc
  .tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 8 }), fc.double({ min: 0, max: 0.6, noNaN: true }), fc.integer())
  .map(([n, streams, joins, seed]) => {
    let s = seed >>> 0;
    const rand = (): number => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
    const last = new Array<number>(streams).fill(-1);
    const slots: number[] = [];
    const edges: [number, number][] = [];
    for (let v = 0; v < n; v++) {
      const st = Math.floor(rand() * streams);
      slots.push(st);
      if (last[st]! >= 0) edges.push([last[st]!, v]);
      if (rand() < joins) {
        const other = last[Math.floor(rand() * streams)]!;
        if (other >= 0 && other !== last[st]) edges.push([other, v]);
      }
      last[st] = v;
    }
    return dag(n, slots, edges);
  });

/**
 * Few wide layers, as bench:model's layered graphs: each node has 1–3 edges into the next layer
 * (or, now and then, one further on), ids in random order so that levels and ids disagree.
 */
const wideLayers = fc
  .tuple(fc.integer({ min: 2, max: 4 }), fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 3 }), fc.double({ min: 0, max: 0.3, noNaN: true }), fc.integer())
  .map(([layers, width, degree, skip, seed]) => {
    let s = seed >>> 0;
    const rand = (): number => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
    const n = layers * width;
    const id = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [id[i], id[j]] = [id[j]!, id[i]!];
    }
    const edges: [number, number][] = [];
    const seen = new Set<number>();
    for (let l = 0; l + 1 < layers; l++) {
      for (let i = 0; i < width; i++) {
        for (let d = 0; d < degree; d++) {
          const to = l + 1 + (l + 2 < layers && rand() < skip ? 1 : 0);
          const u = id[l * width + i]!;
          const v = id[to * width + Math.floor(rand() * width)]!;
          if (!seen.has(u * n + v)) (seen.add(u * n + v), edges.push([u, v]));
        }
      }
    }
    return dag(n, new Array<number>(n).fill(-1), edges);
  });

/**
 * Many streams with random joins across them, as a capture of hundreds of streams: each node on a
 * random stream after the stream's last node, joined from up to three other streams' last nodes.
 */
const manyStreams = fc
  .tuple(fc.integer({ min: 2, max: 120 }), fc.integer({ min: 2, max: 40 }), fc.double({ min: 0, max: 0.4, noNaN: true }), fc.integer())
  .map(([n, streams, joins, seed]) => {
    let s = seed >>> 0;
    const rand = (): number => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
    const last = new Array<number>(streams).fill(-1);
    const slots: number[] = [];
    const edges: [number, number][] = [];
    for (let v = 0; v < n; v++) {
      const st = Math.floor(rand() * streams);
      slots.push(st);
      const from = new Set<number>();
      if (last[st]! >= 0) from.add(last[st]!);
      for (let j = 0; j < 3; j++) if (rand() < joins) {
        const other = last[Math.floor(rand() * streams)]!;
        if (other >= 0) from.add(other);
      }
      for (const u of from) edges.push([u, v]);
      last[st] = v;
    }
    return dag(n, slots, edges);
  });

const anyDag = fc.oneof(randomDag, layeredDag, captureDag, wideLayers, manyStreams);

function checkAll(n: number, succ: readonly number[][], reachable: (a: number, b: number) => boolean): void {
  const reach = reference(n, succ);
  for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) assert.equal(reachable(a, b), reach[a]!.has(b), `reachable(${a}, ${b})`);
}

function withKind<T>(kind: ReachabilityKind | null, body: () => T): T {
  const before = forceReachabilityKindForTesting(kind);
  try {
    return body();
  } finally {
    forceReachabilityKindForTesting(before);
  }
}

for (const kind of ['chains', 'exits', 'labels'] as const) {
  test(`the ${kind} structure answers every pair exactly, on DAGs of every shape`, () => {
    fc.assert(
      fc.property(anyDag, ({ store, succ }) => {
        const index = withKind(kind, () => ReachabilityIndex.build(store));
        assert.equal(index.kind, kind);
        checkAll(store.n, succ, (a, b) => index.reachable(a, b));
      }),
      { numRuns: 400 },
    );
  });
}

test('the labels answer every pair exactly with any number of chains and coarse rounding of chain positions', () => {
  fc.assert(
    fc.property(anyDag, fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 6 }), ({ store, succ }, chains, maxStored) => {
      const labels = ReachLabels.build(store, { chains, maxStored });
      checkAll(store.n, succ, (a, b) => labels.reachable(a, b));
    }),
    { numRuns: 400 },
  );
});

test('the labels search alone (no chain hubs, so no pair is settled before it) answers every pair on wide layers and many-stream captures', () => {
  fc.assert(
    fc.property(fc.oneof(wideLayers, manyStreams), fc.boolean(), ({ store, succ }, withCover) => {
      // Either the cover reachability.ts makes (streams) or the labels' own greedy one.
      const index = withCover ? withKind('labels', () => ReachabilityIndex.build(store)) : null;
      const labels = withCover ? null : ReachLabels.build(store, { chains: 0 });
      checkAll(store.n, succ, (a, b) => (index ? index.reachable(a, b) : labels!.reachable(a, b)));
    }),
    { numRuns: 600 },
  );
});

test('wide graphs past the chain-index limit: a capture keeps rows at its exits, a graph built by hand gets the labels', () => {
  const before = setChainIndexLimitForTesting(3000);
  try {
    // 40 streams, a few joins: too wide for the chain index at this limit, few exits.
    const slots = Array.from({ length: 400 }, (_, v) => v % 40);
    const edges: [number, number][] = [];
    for (let v = 40; v < 400; v++) edges.push([v - 40, v]);
    for (let v = 45; v < 400; v += 50) edges.push([v - 41, v]);
    const capture = dag(400, slots, edges);
    assert.equal(ReachabilityIndex.build(capture.store).kind, 'exits');
    // 40 chains with an edge out of every node to another chain: every node is an exit.
    for (let v = 41; v < 400; v++) edges.push([v - 41, v]);
    const tangled = dag(400, new Array<number>(400).fill(-1), edges);
    assert.equal(ReachabilityIndex.build(tangled.store).kind, 'labels');
    checkAll(400, capture.succ, (a, b) => ReachabilityIndex.build(capture.store).reachable(a, b));
  } finally {
    setChainIndexLimitForTesting(before);
  }
  // Below the limit, ≤ 32 streams: the chain index.
  assert.equal(ReachabilityIndex.build(dag(3, [0, 0, 1], [[0, 1]]).store).kind, 'chains');
});

test('isReachable through each structure on a capture of many streams, every query exact', () => {
  // 40 streams forked from one, with joins across them.
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
  const succ = Array.from({ length: n }, (_, v) => g.successors(NodeId(v)).map((x) => x as number));
  for (const kind of ['chains', 'exits', 'labels'] as const) {
    // A copy per structure: each graph keeps the index its first query built.
    const copy = withKind(kind, () => {
      const c = g.clone();
      c.isReachable(NodeId(0), NodeId(0));
      return c;
    });
    checkAll(n, succ, (a, b) => copy.isReachable(NodeId(a), NodeId(b)));
  }
});
