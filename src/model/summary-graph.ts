/**
 * A small graph that stands for a large one: each of its nodes is a group of the large graph's
 * ops, each of its edges the edges between two groups. `render` lays it out when the whole graph
 * is beyond what the WebAssembly layout can draw.
 *
 * How ops are grouped, finest first:
 *
 * - by stream segment, for a graph whose every op is on a stream (a capture): a segment is a run of
 *   one stream's ops, in topological order, that no cross-stream edge enters or leaves in between
 *   (an incoming cross-stream edge starts a segment, an outgoing one ends it). The segments of a
 *   stream are its work between event joins.
 * - when there are more segments than `maxNodes` (or ops without a stream), by stream and level
 *   band: the levels are cut into bands of about equal op counts, as many as fit `maxNodes` with
 *   one group per stream in each.
 *
 * Why segments, and why bands are merged where they depend on each other both ways: the summary
 * must be a DAG to be drawn as one (every edge pointing down the page). Segments always form one:
 * an edge between two segments goes from every op of one to after every op of the other in the
 * topological order (see `summarizeGraph`'s proof). Two groups of one band on different streams
 * can wait on each other in turn (a ping-pong of joins), and no grouping that keeps streams apart
 * can hide such a ping-pong in fewer groups than it has joins; so groups that form a cycle are
 * merged into one group of several streams.
 */
import type { ComputeGraph } from './compute-graph.js';
import type { NodeKind } from './node.js';
import { NODE_KINDS } from './node.js';
import type { StreamId } from './ids.js';

/** Options of `summarizeGraph`. */
export interface SummaryOptions {
  /** The most groups the summary may have (default 200; at least 1). */
  readonly maxNodes?: number;
  /**
   * The most groups plus bends of long edges (an edge between groups k levels apart bends through
   * k − 1 virtual nodes) the summary's layout may have (default 3,000): fewer bands are drawn
   * when the edges between them would make a larger one.
   */
  readonly maxLayoutSize?: number;
}

/** One group of ops. */
export interface SummaryNode {
  /** Its index in `SummaryGraph.nodes`. */
  readonly id: number;
  /** The stream all its ops are on; null when they have none or are on several (`streams`). */
  readonly stream: StreamId | null;
  /** The streams of its ops, ascending (empty when none has one). */
  readonly streams: readonly StreamId[];
  /** How many ops it holds. */
  readonly ops: number;
  /** Its ops by kind, most first (ties in `NODE_KINDS` order). */
  readonly kinds: readonly { readonly kind: NodeKind; readonly count: number }[];
  /** The sum of its ops' costs. */
  readonly cost: number;
  /** The lowest and highest level (`graph.levelOf`) of its ops. */
  readonly levels: readonly [number, number];
  /** True when it holds an op of the critical path. */
  readonly critical: boolean;
}

/** The edges from one group to another. */
export interface SummaryEdge {
  readonly from: number;
  readonly to: number;
  /** How many edges of the graph it stands for. */
  readonly count: number;
  /** How many of those join two streams (ends on different streams, or one end without a stream). */
  readonly crossStream: number;
}

/** A summary of a graph (see the file comment). */
export interface SummaryGraph {
  /** How the ops were grouped. */
  readonly by: 'segment' | 'band';
  readonly nodes: readonly SummaryNode[];
  /** One per pair of groups with edges between them, by `from` then `to`. */
  readonly edges: readonly SummaryEdge[];
  /** The group of each op, by op id. */
  readonly groupOf: Uint32Array;
  /** The groups the critical path passes through, in its order (a group once per visit). */
  readonly criticalPath: readonly number[];
  /** The streams of the graph in order of first use (lowest op id), as the full picture colours them. */
  readonly streamOrder: readonly StreamId[];
}

/** The default `maxNodes`: a picture that can still be read. */
export const SUMMARY_MAX_NODES = 200;
/** The default `maxLayoutSize`: a layout of a few seconds at most. */
export const SUMMARY_MAX_LAYOUT_SIZE = 3_000;

/**
 * Groups the ops of `graph` into at most `maxNodes` groups (see the file comment); an empty graph
 * has an empty summary. O(n + m) plus sorting the summary's edges.
 *
 * Why segments form a DAG: let `pos` be the topological position. An edge u → v between segments
 * S ≠ T on one stream has S before T in that stream's order, so every op of S precedes every op of
 * T; across streams, u is the last op of S and v the first of T (a cross-stream edge ends and
 * starts segments), so again max pos(S) < min pos(T). So max pos rises along every summary edge.
 * @throws RangeError when `maxNodes` is not a positive integer or `maxLayoutSize` is below 1.
 */
export function summarizeGraph(graph: ComputeGraph, options: SummaryOptions = {}): SummaryGraph {
  const maxNodes = options.maxNodes ?? SUMMARY_MAX_NODES;
  if (!Number.isInteger(maxNodes) || maxNodes < 1) throw new RangeError(`maxNodes must be a positive integer, got ${maxNodes}`);
  const maxSize = options.maxLayoutSize ?? SUMMARY_MAX_LAYOUT_SIZE;
  if (!(maxSize >= 1)) throw new RangeError(`maxLayoutSize must be at least 1, got ${maxSize}`);
  const n = graph.nodeCount();
  if (n === 0) return { by: 'segment', nodes: [], edges: [], groupOf: new Uint32Array(0), criticalPath: [], streamOrder: [] };
  const nodes = graph.nodes();
  const edges = graph.edges();
  const order = graph.topologicalOrder();

  // Lanes: one per stream in order of first use, and one (the last) for ops without a stream.
  const laneOf = new Map<StreamId, number>();
  const streamOrder: StreamId[] = [];
  let unstreamed = false;
  const lane = new Int32Array(n);
  for (const node of nodes) {
    if (node.stream === null) {
      unstreamed = true;
      lane[node.id] = -1;
      continue;
    }
    let l = laneOf.get(node.stream);
    if (l === undefined) {
      l = streamOrder.length;
      laneOf.set(node.stream, l);
      streamOrder.push(node.stream);
    }
    lane[node.id] = l;
  }
  const lanes = streamOrder.length + (unstreamed ? 1 : 0);
  for (let v = 0; v < n; v++) if (lane[v] === -1) lane[v] = streamOrder.length;

  const seg = unstreamed ? null : segments(n, edges, order, lane, lanes, maxNodes);
  if (seg !== null) {
    const groupOf = mergeCycles(seg.groupOf, seg.count, edges, order);
    if (groupLayoutSize(groupOf, edges) <= maxSize) return finish(graph, 'segment', nodes, edges, groupOf, lane, streamOrder);
  }
  const levels = graph.levels();
  const perBand = lanes <= maxNodes ? lanes : 1;
  const banded = (count: number): Uint32Array => mergeCycles(bands(levels, n, lane, perBand, count), count * perBand, edges, order);
  // The most bands that fit: groups merged where streams wait on each other in turn leave room for
  // more bands, so the count doubles while the groups still fit; long edges between far bands
  // bend through every band between, so it halves while the layout would be too large.
  let count = Math.max(1, Math.min(levels.length, Math.floor(maxNodes / perBand)));
  let groupOf = banded(count);
  for (let tries = 0; tries < 16 && count * 2 <= levels.length; tries++) {
    const more = banded(count * 2);
    if (groupCount(more) > maxNodes || groupLayoutSize(more, edges) > maxSize) break;
    count *= 2;
    groupOf = more;
  }
  while (count > 1 && groupLayoutSize(groupOf, edges) > maxSize) {
    count = Math.floor(count / 2);
    groupOf = banded(count);
  }
  return finish(graph, 'band', nodes, edges, groupOf, lane, streamOrder);
}

/** The number of groups of a grouping numbered 0, 1, …. */
function groupCount(groupOf: Uint32Array): number {
  let count = 0;
  for (let v = 0; v < groupOf.length; v++) if (groupOf[v]! >= count) count = groupOf[v]! + 1;
  return count;
}

/**
 * The size of the summary's layout, as \`layoutSize\` counts a graph's (src/cli/layout-limits.ts):
 * its groups plus, for each edge between groups, the levels it skips. Groups are numbered in
 * topological order of their first ops, which need not be an order of the group DAG, so the
 * levels come from a Kahn pass over it.
 */
function groupLayoutSize(groupOf: Uint32Array, edges: readonly (readonly [number, number])[]): number {
  const k = groupCount(groupOf);
  const seen = new Set<number>();
  const out: number[][] = Array.from({ length: k }, () => []);
  const indeg = new Uint32Array(k);
  for (const [u, v] of edges) {
    const a = groupOf[u]!;
    const b = groupOf[v]!;
    if (a === b || seen.has(a * k + b)) continue;
    seen.add(a * k + b);
    out[a]!.push(b);
    indeg[b]!++;
  }
  const level = new Uint32Array(k);
  const queue: number[] = [];
  for (let g = 0; g < k; g++) if (indeg[g] === 0) queue.push(g);
  for (let i = 0; i < queue.length; i++) {
    const a = queue[i]!;
    for (const b of out[a]!) {
      if (level[a]! + 1 > level[b]!) level[b] = level[a]! + 1;
      if (--indeg[b]! === 0) queue.push(b);
    }
  }
  let size = k;
  for (let a = 0; a < k; a++) for (const b of out[a]!) size += level[b]! - level[a]! - 1;
  return size;
}

/** Groups by stream segment, numbered in topological order; null when there are more than `max`. */
function segments(
  n: number,
  edges: readonly (readonly [number, number])[],
  order: readonly number[],
  lane: Int32Array,
  lanes: number,
  max: number,
): { groupOf: Uint32Array; count: number } | null {
  const crossIn = new Uint8Array(n);
  const crossOut = new Uint8Array(n);
  for (const [u, v] of edges) {
    if (lane[u] === lane[v]) continue;
    crossOut[u] = 1;
    crossIn[v] = 1;
  }
  const current = new Int32Array(lanes).fill(-1);
  const closed = new Uint8Array(lanes);
  const groupOf = new Uint32Array(n);
  let count = 0;
  for (const v of order) {
    const l = lane[v]!;
    if (current[l] === -1 || crossIn[v] === 1 || closed[l] === 1) {
      if (count === max) return null;
      current[l] = count++;
    }
    groupOf[v] = current[l]!;
    closed[l] = crossOut[v]!;
  }
  return { groupOf, count };
}

/**
 * Groups by lane and level band: the levels cut into \`count\` bands of about n / count ops, with
 * \`perBand\` groups in each (one per lane, or 1 for one group per band).
 */
function bands(levels: readonly (readonly number[])[], n: number, lane: Int32Array, perBand: number, count: number): Uint32Array {
  const groupOf = new Uint32Array(n);
  let band = 0;
  let seen = 0;
  for (const ids of levels) {
    // A new band once this one holds its share: the ops seen reach the band's end.
    if (seen >= ((band + 1) * n) / count && band < count - 1) band++;
    for (const v of ids) groupOf[v] = band * perBand + (perBand === 1 ? 0 : lane[v]!);
    seen += ids.length;
  }
  return groupOf;
}

/**
 * Merges groups that lie on a cycle of the group graph (its strongly connected components) and
 * renumbers the groups left, non-empty ones only, in the order of their first op in `order`.
 */
function mergeCycles(groupOf: Uint32Array, count: number, edges: readonly (readonly [number, number])[], order: readonly number[]): Uint32Array {
  const adj: Set<number>[] = Array.from({ length: count }, () => new Set());
  for (const [u, v] of edges) if (groupOf[u] !== groupOf[v]) adj[groupOf[u]!]!.add(groupOf[v]!);
  const comp = components(adj.map((s) => [...s]));
  const rename = new Int32Array(count).fill(-1);
  let next = 0;
  const out = new Uint32Array(groupOf.length);
  for (const v of order) {
    const c = comp[groupOf[v]!]!;
    if (rename[c] === -1) rename[c] = next++;
    out[v] = rename[c]!;
  }
  return out;
}

/** Strongly connected components (Tarjan, without recursion: a summary can have thousands of groups). */
function components(adj: readonly (readonly number[])[]): Int32Array {
  const k = adj.length;
  const index = new Int32Array(k).fill(-1);
  const low = new Int32Array(k);
  const onStack = new Uint8Array(k);
  const comp = new Int32Array(k).fill(-1);
  const stack: number[] = [];
  let counter = 0;
  let comps = 0;
  for (let root = 0; root < k; root++) {
    if (index[root] !== -1) continue;
    const work: [number, number][] = [[root, 0]];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const [v, i] = top;
      if (i < adj[v]!.length) {
        top[1]++;
        const w = adj[v]![i]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          work.push([w, 0]);
        } else if (onStack[w] === 1) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]![0];
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] === index[v]) {
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          comp[w] = comps;
        } while (w !== v);
        comps++;
      }
    }
  }
  return comp;
}

/** The summary's nodes and edges from the final grouping. */
function finish(
  graph: ComputeGraph,
  by: SummaryGraph['by'],
  nodes: ReturnType<ComputeGraph['nodes']>,
  edges: readonly (readonly [number, number])[],
  groupOf: Uint32Array,
  lane: Int32Array,
  streamOrder: readonly StreamId[],
): SummaryGraph {
  const count = groupCount(groupOf);
  const ops = new Float64Array(count);
  const cost = new Float64Array(count);
  const lo = new Float64Array(count).fill(Infinity);
  const hi = new Float64Array(count).fill(-1);
  const kinds = Array.from({ length: count }, () => new Uint32Array(NODE_KINDS.length));
  const streams = Array.from({ length: count }, () => new Set<number>());
  const kindCode = new Map(NODE_KINDS.map((k, i) => [k, i]));
  graph.levels().forEach((ids, l) => {
    for (const v of ids) {
      const g = groupOf[v]!;
      if (l < lo[g]!) lo[g] = l;
      if (l > hi[g]!) hi[g] = l;
    }
  });
  for (const node of nodes) {
    const g = groupOf[node.id]!;
    ops[g]!++;
    cost[g]! += node.cost;
    kinds[g]![kindCode.get(node.kind)!]!++;
    streams[g]!.add(lane[node.id]!);
  }
  const path = graph.criticalPath().nodes;
  const critical = new Uint8Array(count);
  const criticalPath: number[] = [];
  for (const v of path) {
    const g = groupOf[v]!;
    critical[g] = 1;
    if (criticalPath[criticalPath.length - 1] !== g) criticalPath.push(g);
  }
  const summaryNodes: SummaryNode[] = [];
  for (let g = 0; g < count; g++) {
    const onStreams = [...streams[g]!].filter((l) => l < streamOrder.length).map((l) => streamOrder[l]!);
    onStreams.sort((a, b) => a - b);
    const pure = streams[g]!.size === 1 && onStreams.length === 1;
    const byKind = NODE_KINDS.map((kind, i) => ({ kind, count: kinds[g]![i]! })).filter((k) => k.count > 0);
    byKind.sort((a, b) => b.count - a.count);
    summaryNodes.push({
      id: g,
      stream: pure ? onStreams[0]! : null,
      streams: onStreams,
      ops: ops[g]!,
      kinds: byKind,
      cost: cost[g]!,
      levels: [lo[g]!, hi[g]!],
      critical: critical[g] === 1,
    });
  }
  const between = new Map<number, { count: number; crossStream: number }>();
  for (const [u, v] of edges) {
    const a = groupOf[u]!;
    const b = groupOf[v]!;
    if (a === b) continue;
    const key = a * count + b;
    let e = between.get(key);
    if (e === undefined) between.set(key, (e = { count: 0, crossStream: 0 }));
    e.count++;
    if (lane[u] !== lane[v]) e.crossStream++;
  }
  const summaryEdges = [...between].map(([key, e]) => ({ from: Math.floor(key / count), to: key % count, ...e }));
  summaryEdges.sort((x, y) => x.from - y.from || x.to - y.to);
  return { by, nodes: summaryNodes, edges: summaryEdges, groupOf, criticalPath, streamOrder };
}
