/**
 * One small instance of each structure the model's hot code reads, kept for the life of the
 * process. Two places make them, each where the private parts it needs are: the first
 * `ComputeGraph` builds a small graph through the public calls and hands it to `keepShapes` (which
 * adds the edge set and the indexes over its store), and the first `StreamCapture` keeps a capture
 * in progress through `keepAlive` (stream-capture.ts).
 *
 * Why. V8's optimised code holds the hidden classes ("maps") of the objects it reads only weakly:
 * a map lives while some object has it. When a program drops its last graph — or its last
 * reachability index, order list, edge set or capture — and the collector runs, those maps die,
 * and every compiled function that read them is thrown away ("deoptimized: weak objects"). The
 * next graph's first edges and queries then run in V8's slower tiers while it compiles the same
 * functions again: a program that builds graph after graph (a benchmark, a server that models each
 * request's graph) paid that on every graph. docs/model.md ("Compiled code kept across graphs")
 * has the measurements.
 *
 * A live instance keeps its map, and so the compiled code: a graph of eight nodes with edges
 * against its order (its order list, the two-way search, a move), its edge set, one reachability
 * index of each kind with every pair queried (each kind's search and labels), and a capture of two
 * streams with a node of each kind and an event, left open; some tens of kilobytes in all.
 */
import type { GraphStore } from './graph-store.js';
import { EdgeSet } from './edge-set.js';
import { ReachabilityIndex, type ReachabilityKind } from './reachability.js';

const kept: object[] = [];

/** Keeps `x` for the life of the process (a small object, once per class: see the file comment). */
export function keepAlive(x: object): void {
  kept.push(x);
}

/** Edges of the kept graph (ids 0–7): against id order at first, so the order becomes a list and searches move nodes. */
export const KEPT_EDGES: readonly (readonly [number, number])[] = [
  [7, 6],
  [6, 5],
  [5, 4],
  [7, 3],
  [3, 2],
  [2, 1],
  [1, 0],
  [6, 2],
  [3, 5],
  [5, 1],
  [2, 4],
  [4, 0],
];

/**
 * Keeps `graph` (a small graph of the caller's class with `KEPT_EDGES` added and every pair
 * queried, which built its chain index) and, over its store, an edge set and the two other kinds
 * of reachability index with every pair queried.
 */
export function keepShapes(graph: object, store: GraphStore): void {
  keepAlive(graph);
  const set = new EdgeSet(store.ins, store.outs, store.m);
  for (const [u, v] of KEPT_EDGES) set.find(store.ins, store.outs, u, v);
  keepAlive(set);
  // The chain index is the one the graph's own queries built (a graph of eight nodes gets it).
  for (const kind of ['exits', 'labels'] as const satisfies readonly ReachabilityKind[]) {
    const index = ReachabilityIndex.build(store, kind);
    for (let a = 0; a < store.n; a++) for (let b = 0; b < store.n; b++) index.reachable(a, b);
    keepAlive(index);
  }
}
