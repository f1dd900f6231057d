/**
 * The scale rows of `bench:model` for edges added by hand and for very large captures, each beside
 * a naive reference run on the same input in the same process:
 *
 * - `addEdge` one edge at a time, with cycle refusal, in forward, reverse topological and random
 *   order (a chain plus edges up to 64 ranks forward; ids follow the ranks, run against them, or are
 *   shuffled) at 5k, 40k and 1M edges, and on a 2,000-node complete DAG in random order (1,999,000
 *   edges). The reference keeps successor arrays and a Set of pair keys, and refuses a cycle by a
 *   search from the edge's head on every call; it runs on a prefix of the edges within a time budget.
 * - `hasEdge` on the complete DAG, against the reference's Set.
 * - a 10M-op capture (the 8-stream workload of bench/model.ts, at ten times the size): bytes a node
 *   with its reachability index and ops a second, beside one JS object a node with a successor array
 *   (at 1M nodes: at 10M it would not fit a small machine). About 3 GB and a minute at most on a
 *   2-core machine; `--skip-10m` leaves it out. Run alone with `node --expose-gc dist/bench/model-edges.js`.
 */
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { ComputeGraph, StreamCapture, MemcpyDir, StreamId, CaptureEvent, NodeId } from '../src/index.js';
import { mulberry32 } from '../src/util/random.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const memory = (): number => {
  // Twice: after one collection a dead array of tens of MB (the capture's edges before its final
  // cut) could still be counted in `arrayBuffers`, 33 bytes a node at 1M ops; a second frees it.
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const fmt = (x: number, d = 2): string => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const int = (x: number): string => x.toLocaleString('en-US');

/** Naive budget per row, ms: the reference is quadratic in the worst orders. */
const NAIVE_BUDGET_MS = 1500;

/** Edge pairs [u, v] by rank, and the id of each rank. */
interface EdgeInput {
  readonly n: number;
  readonly from: Uint32Array;
  readonly to: Uint32Array;
}

/** A chain over n = m/2 ranks plus distinct random edges 2–64 ranks forward, in `order`; ids as the order says. */
function sparseInput(m: number, order: 'forward' | 'reverse' | 'random', seed: number): EdgeInput {
  const rand = mulberry32(seed);
  const n = Math.max(2, m >> 1);
  const pairs: [number, number][] = [];
  for (let i = 0; i + 1 < n; i++) pairs.push([i, i + 1]);
  const drawn = new Set<number>();
  while (pairs.length < m) {
    const i = Math.floor(rand() * (n - 2));
    const j = Math.min(n - 1, i + 2 + Math.floor(rand() * 63));
    if (drawn.has(i * n + j)) continue; // every edge once: the rows count new edges
    drawn.add(i * n + j);
    pairs.push([i, j]);
  }
  if (order === 'forward') pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  else if (order === 'reverse') pairs.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  else shuffle(pairs, rand);
  // Forward: id = rank. Reverse: id = n − 1 − rank, so every edge runs from a newer node to an older one.
  const id = Array.from({ length: n }, (_, i) => (order === 'reverse' ? n - 1 - i : i));
  if (order === 'random') shuffle(id, rand);
  return toInput(n, pairs, id);
}

/** Every edge of the complete DAG on n ranks, in random order, ids shuffled. */
function denseInput(n: number, seed: number): EdgeInput {
  const rand = mulberry32(seed);
  const pairs: [number, number][] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) pairs.push([i, j]);
  shuffle(pairs, rand);
  return toInput(n, pairs, shuffle(Array.from({ length: n }, (_, i) => i), rand));
}

function toInput(n: number, pairs: readonly [number, number][], id: readonly number[]): EdgeInput {
  const from = new Uint32Array(pairs.length);
  const to = new Uint32Array(pairs.length);
  pairs.forEach(([a, b], i) => {
    from[i] = id[a]!;
    to[i] = id[b]!;
  });
  return { n, from, to };
}

function shuffle<T>(a: T[], rand: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}

/** The naive reference: successor arrays, a Set of pair keys, a search from v on every edge. */
class NaiveDag {
  readonly succ: number[][];
  readonly keys = new Set<number>();
  private readonly seen: Uint32Array;
  private stamp = 0;
  constructor(readonly n: number) {
    this.succ = Array.from({ length: n }, () => []);
    this.seen = new Uint32Array(n);
  }
  /** 'added', 'duplicate' or 'cycle', as `addEdge` decides. */
  add(u: number, v: number): string {
    if (u === v) return 'cycle';
    const key = u * this.n + v;
    if (this.keys.has(key)) return 'duplicate';
    const mark = ++this.stamp;
    const stack = [v];
    this.seen[v] = mark;
    while (stack.length > 0) {
      const x = stack.pop()!;
      if (x === u) return 'cycle';
      for (const y of this.succ[x]!) if (this.seen[y] !== mark) (this.seen[y] = mark, stack.push(y));
    }
    this.keys.add(key);
    this.succ[u]!.push(v);
    return 'added';
  }
}

interface EdgeRow {
  name: string;
  n: number;
  m: number;
  modelMs: number;
  naiveEdges: number;
  naiveMs: number;
  refuseUs: number;
}

/** Adds `input`'s edges one by one to a model graph and to the reference (within its budget), checking they agree. */
function measureEdges(name: string, input: EdgeInput): EdgeRow {
  const { n, from, to } = input;
  const m = from.length;
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: 'v' });
  gc();
  const t0 = performance.now();
  for (let i = 0; i < m; i++) g.addEdge(from[i]! as NodeId, to[i]! as NodeId);
  const modelMs = performance.now() - t0;
  if (g.edgeCount() !== m) throw new Error(`bench: ${name}: ${g.edgeCount()} edges, expected ${m}`);
  // 1,000 edges against the grain: each closes a cycle and must be refused, changing nothing.
  const t1 = performance.now();
  const rand = mulberry32(m);
  let refused = 0;
  for (let k = 0; k < 1000; k++) {
    const i = Math.floor(rand() * m);
    try {
      g.addEdge(to[i]! as NodeId, from[i]! as NodeId);
    } catch {
      refused++;
    }
  }
  const refuseUs = ((performance.now() - t1) * 1000) / 1000;
  if (refused !== 1000 || g.edgeCount() !== m) throw new Error(`bench: ${name}: a cycle was accepted`);

  const naive = new NaiveDag(n);
  gc();
  const t2 = performance.now();
  let k = 0;
  for (; k < m; k++) {
    if (naive.add(from[k]!, to[k]!) !== 'added') throw new Error(`bench: ${name}: the reference refused edge ${k}`);
    if ((k & 63) === 0 && performance.now() - t2 > NAIVE_BUDGET_MS) break;
  }
  return { name, n, m, modelMs, naiveEdges: Math.min(k + 1, m), naiveMs: performance.now() - t2, refuseUs };
}

/** hasEdge on `g` against the reference's Set, every query asked both ways. */
function measureHasEdge(input: EdgeInput): string {
  const { n, from, to } = input;
  const g = new ComputeGraph();
  for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: 'v' });
  g.addEdges(Array.from(from, (u, i) => [u as NodeId, to[i]! as NodeId] as const));
  const keys = new Set<number>();
  for (let i = 0; i < from.length; i++) keys.add(from[i]! * n + to[i]!);
  const Q = 1_000_000;
  const time = (f: (u: number, v: number) => boolean): [number, number] => {
    gc();
    let hits = 0;
    const t = performance.now();
    for (let q = 0; q < Q; q++) {
      const i = q % from.length;
      if (f(from[i]!, to[i]!)) hits++;
      if (f(to[i]!, from[i]!)) hits++;
    }
    return [((performance.now() - t) * 1e6) / (2 * Q), hits];
  };
  time((u, v) => g.hasEdge(u as NodeId, v as NodeId)); // the first lookups build the edge set
  const [modelNs, a] = time((u, v) => g.hasEdge(u as NodeId, v as NodeId));
  const [naiveNs, b] = time((u, v) => keys.has(u * n + v));
  if (a !== b) throw new Error('bench: hasEdge disagrees with the reference');
  return `| hasEdge, ${int(n)}-node complete DAG (${int(from.length)} edges), ${int(2 * Q)} lookups | ${fmt(modelNs, 1)} ns | ${fmt(naiveNs, 1)} ns (JS Set of pair keys) |`;
}

/** The capture workload of bench/model.ts (8 streams, 5 % joins, four kinds, 64 names), `n` ops, generated before timing. */
function captureRun(n: number): { ms: number; bytesPerNode: number; nodes: number } {
  const rand = mulberry32(2026);
  const op = new Uint8Array(n); // bits 0–2 stream, 3–4 kind
  const name = new Uint8Array(n);
  const join = new Int16Array(n); // −1, or the stream joined from; event in `event`
  const event = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    const s = Math.floor(rand() * 8);
    const r = rand();
    op[i] = s | ((r < 0.8 ? 0 : r < 0.9 ? 1 : r < 0.95 ? 2 : 3) << 3);
    name[i] = Math.floor(rand() * 64);
    join[i] = rand() < 0.05 ? (s + 1 + Math.floor(rand() * 7)) % 8 : -1;
    event[i] = join[i]! >= 0 ? Math.floor(rand() * 1024) : 0;
  }
  const streams = Array.from({ length: 8 }, (_, i) => StreamId(i));
  const events = Array.from({ length: 1024 }, (_, i) => CaptureEvent(i));
  const names = Array.from({ length: 64 }, (_, i) => `kernel_${i}`);
  const base = memory();
  const t0 = performance.now();
  const cap = new StreamCapture();
  for (const s of streams) cap.beginCapture(s);
  for (let i = 0; i < n; i++) {
    const s = streams[op[i]! & 7]!;
    if (join[i]! >= 0) {
      cap.recordEvent(streams[join[i]!]!, events[event[i]!]!);
      cap.waitEvent(s, events[event[i]!]!);
    }
    const k = op[i]! >> 3;
    const nm = names[name[i]!]!;
    if (k === 0) cap.recordKernel(s, nm, 128, 256, 0);
    else if (k === 1) cap.recordMemcpy(s, nm, MemcpyDir.DeviceToDevice, 1 << 20);
    else if (k === 2) cap.recordMemset(s, nm, 4096, 0);
    else cap.recordHostCallback(s, nm);
  }
  const graph = cap.endCapture(streams[0]!);
  const ms = performance.now() - t0;
  graph.isReachable(0 as NodeId, 1 as NodeId); // builds the index
  return { ms, bytesPerNode: (memory() - base) / n, nodes: graph.nodeCount() };
}

/** The reference representation: one object a node with its fields and a successor array. */
function naiveObjects(n: number): number {
  const base = memory();
  const nodes: { kind: string; name: string; stream: number; grid: number; block: number; succ: number[] }[] = [];
  for (let i = 0; i < n; i++) {
    nodes.push({ kind: 'kernel', name: `kernel_${i & 63}`, stream: i & 7, grid: 128, block: 256, succ: [] });
    if (i >= 8) nodes[i - 8]!.succ.push(i);
  }
  const bytes = (memory() - base) / n;
  if (nodes.length !== n) throw new Error('unreachable');
  return bytes;
}

/** Runs every row and returns the tables (markdown). */
export function edgeTables(argv: readonly string[] = process.argv): string {
  const out: string[] = [];
  out.push('addEdge one at a time with cycle refusal; the reference (successor arrays, a Set of pair keys, a search from the head on every edge) runs on a prefix within 1.5 s');
  out.push('');
  out.push('| order | nodes / edges | model ms | model µs/edge | reference: edges done | reference µs/edge | model µs per refused cycle |');
  out.push('|---|---|---:|---:|---:|---:|---:|');
  const inputs: [string, () => EdgeInput][] = [];
  for (const m of [5_000, 40_000, 1_000_000]) for (const o of ['forward', 'reverse', 'random'] as const) inputs.push([`${o}, ${int(m)}`, () => sparseInput(m, o, m)]);
  inputs.push(['complete DAG, random order', () => denseInput(2000, 7)]);
  for (const [name, make] of inputs) {
    const r = measureEdges(name, make());
    out.push(
      `| ${r.name} | ${int(r.n)} / ${int(r.m)} | ${fmt(r.modelMs, 1)} | ${fmt((r.modelMs * 1000) / r.m)} | ${int(r.naiveEdges)}${r.naiveEdges < r.m ? ' (budget)' : ''} | ${fmt((r.naiveMs * 1000) / r.naiveEdges)} | ${fmt(r.refuseUs)} |`,
    );
  }
  out.push('');
  out.push('| lookup | model | reference |');
  out.push('|---|---:|---:|');
  out.push(measureHasEdge(denseInput(2000, 7)));
  out.push('');
  out.push('| capture (8 streams, 5 % joins) | nodes | record + endCapture ms | M ops/s | B/node with reachability index | reference B/node (an object a node, successor array, 1M nodes) |');
  out.push('|---|---:|---:|---:|---:|---:|');
  const naive = naiveObjects(1_000_000);
  for (const n of argv.includes('--skip-10m') ? [1_000_000] : [1_000_000, 10_000_000]) {
    const r = captureRun(n);
    out.push(`| ${int(n)} ops | ${int(r.nodes)} | ${fmt(r.ms, 0)} | ${fmt(n / r.ms / 1000)} | ${fmt(r.bytesPerNode, 1)} | ${fmt(naive, 1)} |`);
  }
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(edgeTables());
