/**
 * Reachability on one graph, as `bench:model` reports it: the index build (the first query),
 * then two query sets timed apart — random pairs (mostly unreachable or settled by the
 * topological order) and pairs known to be reachable (b found by a random walk from a), since a
 * figure for easy negatives alone says little — and a naive breadth-first search on the same
 * graph as the reference, on fewer sampled queries, whose answers must agree.
 *
 * Mean: one untimed-per-call loop over all queries. Percentiles: each query timed on its own
 * (the timer's own cost, well under a microsecond, is included).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { ComputeGraph, NodeId } from '../src/index.js';
import { mulberry32 } from '../src/util/random.js';
import { hugePageMiB, hugePageSetting } from './huge-pages.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
/**
 * Bytes held after a full GC (JS heap + array buffers). Twice: the buffers of objects a GC finds
 * dead (a capture's recording state) are counted until the next one, which made the index of a
 * capture look negative.
 */
function held(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** One graph's figures (times in microseconds, build in milliseconds). */
export interface ReachRow {
  graph: string;
  nodes: number;
  edges: number;
  buildMs: number;
  /** What the index holds, bytes a node (the search's per-node marks, made by the first search, included). */
  indexBytesPerNode: number;
  random: QueryStats;
  positive: QueryStats;
  /** The naive search on the sampled queries: mean µs per query (random, positive). */
  naiveRandomUs: number;
  naivePositiveUs: number;
  /** MiB of the process on transparent huge pages after the queries (null: not reported): see huge-pages.ts. */
  hugePageMiB: number | null;
}

/** Timing of one query set. */
export interface QueryStats {
  queries: number;
  reachable: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

/** Successor lists, packed: v's successors are `to[start[v]]` … `to[start[v + 1] − 1]`. */
interface Adjacency {
  start: Uint32Array;
  to: Uint32Array;
}

/** The graph's successor lists read through its public API, for the random walks and the naive search. */
function adjacency(g: ComputeGraph): Adjacency {
  const n = g.nodeCount();
  const start = new Uint32Array(n + 1);
  const to = new Uint32Array(g.edgeCount());
  let e = 0;
  for (let v = 0; v < n; v++) {
    for (const x of g.successors(v as NodeId)) to[e++] = x;
    start[v + 1] = e;
  }
  return { start, to };
}

/** Pairs (a, b) with b reached from a by a random walk of 1–`maxSteps` steps (a ≠ b). */
function positivePairs(succ: Adjacency, count: number, maxSteps: number, rand: () => number): [Uint32Array, Uint32Array] {
  const n = succ.start.length - 1;
  const as = new Uint32Array(count);
  const bs = new Uint32Array(count);
  for (let i = 0; i < count; ) {
    const a = Math.floor(rand() * n);
    let v = a;
    const steps = 1 + Math.floor(rand() * maxSteps);
    for (let s = 0; s < steps; s++) {
      const first = succ.start[v]!;
      const degree = succ.start[v + 1]! - first;
      if (degree === 0) break;
      v = succ.to[first + Math.floor(rand() * degree)]!;
    }
    if (v === a) continue;
    as[i] = a;
    bs[i++] = v;
  }
  return [as, bs];
}

/** Plain breadth-first search from a, no pruning: the reference. */
function naive(succ: Adjacency, seen: Uint8Array, queue: Uint32Array, a: number, b: number): boolean {
  if (a === b) return true;
  seen.fill(0);
  seen[a] = 1;
  queue[0] = a;
  let tail = 1;
  for (let head = 0; head < tail; head++) {
    const v = queue[head]!;
    for (let i = succ.start[v]!; i < succ.start[v + 1]!; i++) {
      const x = succ.to[i]!;
      if (x === b) return true;
      if (seen[x] === 0) {
        seen[x] = 1;
        queue[tail++] = x;
      }
    }
  }
  return false;
}

function stats(g: ComputeGraph, as: Uint32Array, bs: Uint32Array): QueryStats {
  const count = as.length;
  let reachable = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) if (g.isReachable(as[i]! as NodeId, bs[i]! as NodeId)) reachable++;
  const meanUs = Number(process.hrtime.bigint() - t0) / 1e3 / count;
  const each = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const s = process.hrtime.bigint();
    g.isReachable(as[i]! as NodeId, bs[i]! as NodeId);
    each[i] = Number(process.hrtime.bigint() - s) / 1e3;
  }
  each.sort();
  const at = (q: number): number => each[Math.min(count - 1, Math.floor(q * count))]!;
  return { queries: count, reachable, meanUs, p50Us: at(0.5), p99Us: at(0.99), maxUs: each[count - 1]! };
}

/**
 * Measures `g` (whose index must not be built yet): build, `queries` random and `queries` positive
 * pairs, and the naive search on `sampled` of each, checked against the index.
 */
export function measureReach(name: string, g: ComputeGraph, queries: number, sampled: number, seed: number): ReachRow {
  const n = g.nodeCount();
  const rand = mulberry32(seed);
  const succ = adjacency(g);
  const ra = new Uint32Array(queries);
  const rb = new Uint32Array(queries);
  for (let i = 0; i < queries; i++) {
    ra[i] = Math.floor(rand() * n);
    rb[i] = Math.floor(rand() * n);
  }
  const [pa, pb] = positivePairs(succ, queries, 100, rand);

  const before = held();
  const t0 = process.hrtime.bigint();
  g.isReachable(0 as NodeId, 0 as NodeId);
  const buildMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const random = stats(g, ra, rb);
  const indexBytesPerNode = (held() - before) / n;
  const positive = stats(g, pa, pb);
  const huge = hugePageMiB();
  if (positive.reachable !== queries) throw new Error(`bench: ${name}: a walked pair was reported unreachable`);

  const seen = new Uint8Array(n);
  const queue = new Uint32Array(n);
  const naiveMean = (as: Uint32Array, bs: Uint32Array): number => {
    const k = Math.min(sampled, as.length);
    let us = 0;
    for (let i = 0; i < k; i++) {
      const s = process.hrtime.bigint();
      const want = naive(succ, seen, queue, as[i]!, bs[i]!);
      us += Number(process.hrtime.bigint() - s) / 1e3;
      if (g.isReachable(as[i]! as NodeId, bs[i]! as NodeId) !== want) throw new Error(`bench: ${name}: isReachable(${as[i]}, ${bs[i]}) disagrees with the naive search`);
    }
    return us / k;
  };
  return { graph: name, nodes: n, edges: g.edgeCount(), buildMs, indexBytesPerNode, random, positive, naiveRandomUs: naiveMean(ra, rb), naivePositiveUs: naiveMean(pa, pb), hugePageMiB: huge };
}

/** The rows as a Markdown table. */
export function reachTable(rows: readonly ReachRow[]): string {
  const f = (x: number, d = 2): string => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const lines = [
    '| graph | nodes | edges | build ms | ms per M edges | index B/node | random: mean µs | p99 µs | reachable | positive: mean µs | p99 µs | max µs | naive BFS µs (random / positive) | MiB on huge pages |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.graph} | ${r.nodes.toLocaleString('en-US')} | ${r.edges.toLocaleString('en-US')} | ${f(r.buildMs, 0)} | ${f((r.buildMs * 1e6) / Math.max(r.edges, 1), 0)} | ${f(r.indexBytesPerNode, 0)} | ${f(r.random.meanUs)} | ${f(r.random.p99Us)} | ${f((100 * r.random.reachable) / r.random.queries, 1)} % | ${f(r.positive.meanUs)} | ${f(r.positive.p99Us)} | ${f(r.positive.maxUs, 0)} | ${f(r.naiveRandomUs, 0)} / ${f(r.naivePositiveUs, 0)} | ${r.hugePageMiB === null ? '–' : f(r.hugePageMiB, 0)} |`,
    );
  }
  lines.push('', hugePageSetting());
  return lines.join('\n');
}
