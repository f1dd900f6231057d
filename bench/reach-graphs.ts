/**
 * The graphs `bench:model` asks reachability questions of, beyond its 8-stream capture: shapes
 * that a chain index of ≤ 32 chains does not cover (many streams, random DAGs built by hand, wide
 * layers). Each is generated from a fixed seed, so every run and every machine sees the same graph.
 */
import { ComputeGraph, StreamCapture, StreamId, CaptureEvent, NodeId } from '../src/index.js';
import { mulberry32 } from '../src/util/random.js';

/** A capture of `n` kernels over `streams` streams, where 5 % of ops first join another stream's work. */
export function captureGraph(n: number, streams: number, seed: number): ComputeGraph {
  const rand = mulberry32(seed);
  const ids = Array.from({ length: streams }, (_, i) => StreamId(i));
  const events = Array.from({ length: 1024 }, (_, i) => CaptureEvent(i));
  const cap = new StreamCapture();
  for (const s of ids) cap.beginCapture(s);
  for (let i = 0; i < n; i++) {
    const s = Math.floor(rand() * streams);
    if (rand() < 0.05) {
      const from = (s + 1 + Math.floor(rand() * (streams - 1))) % streams;
      const e = events[Math.floor(rand() * events.length)]!;
      cap.recordEvent(ids[from]!, e);
      cap.waitEvent(ids[s]!, e);
    }
    cap.recordKernel(ids[s]!, 'k', 128, 256, 0);
  }
  return cap.endCapture(ids[0]!);
}

/** `n` empty nodes, ids in order. */
function nodes(n: number): ComputeGraph {
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: 'v' });
  return g;
}

/**
 * A DAG built by hand: `n` nodes whose topological order is a random permutation of their ids (so
 * ids say nothing about order), and `m` edge draws (a repeated pair is one edge) from a lower rank to a higher one. With
 * `span` 0 both ends are uniform over all ranks; otherwise the edge goes 1 + a geometric number of
 * mean `span` ranks forward (locality: most work depends on recent work).
 */
export function randomDag(n: number, m: number, span: number, seed: number): ComputeGraph {
  const rand = mulberry32(seed);
  const idOfRank = new Uint32Array(n);
  for (let i = 0; i < n; i++) idOfRank[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = idOfRank[i]!;
    idOfRank[i] = idOfRank[j]!;
    idOfRank[j] = t;
  }
  const edges: [NodeId, NodeId][] = [];
  const q = span > 0 ? 1 / span : 0;
  while (edges.length < m) {
    let u: number;
    let v: number;
    if (span === 0) {
      u = Math.floor(rand() * n);
      v = Math.floor(rand() * n);
      if (u === v) continue;
      if (u > v) [u, v] = [v, u];
    } else {
      u = Math.floor(rand() * n);
      v = u + 1 + Math.floor(Math.log(1 - rand()) / Math.log(1 - q));
      if (v >= n) continue;
    }
    edges.push([NodeId(idOfRank[u]!), NodeId(idOfRank[v]!)]);
  }
  const g = nodes(n);
  g.addEdges(edges);
  return g;
}

/**
 * `layers` layers of `width` nodes; each node has an edge to each node of the next layer with
 * probability `density` (1: complete bipartite between neighbouring layers), or, when `degree`
 * is given, to `degree` random nodes of the next layer.
 */
export function layeredDag(layers: number, width: number, density: number, seed: number, degree = 0): ComputeGraph {
  const rand = mulberry32(seed);
  const edges: [NodeId, NodeId][] = [];
  for (let l = 0; l + 1 < layers; l++) {
    const base = l * width;
    const next = base + width;
    for (let i = 0; i < width; i++) {
      if (degree > 0) {
        const picked = new Set<number>();
        while (picked.size < Math.min(degree, width)) picked.add(Math.floor(rand() * width));
        for (const j of picked) edges.push([NodeId(base + i), NodeId(next + j)]);
      } else {
        for (let j = 0; j < width; j++) if (density >= 1 || rand() < density) edges.push([NodeId(base + i), NodeId(next + j)]);
      }
    }
  }
  const g = nodes(layers * width);
  g.addEdges(edges);
  return g;
}
