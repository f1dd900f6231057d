/**
 * What the CLI prints about a graph: counts by kind and stream, depth and width (levels), the
 * critical path, and the cross-stream joins.
 */
import type { ComputeGraph, NodeKind } from '../index.js';
import { NODE_KINDS } from '../model/node.js';
import { nameForTerminal } from './terminal-text.js';
import { textList } from './text-lists.js';

/** A node as the summary names it. */
export interface NodeRef {
  readonly id: number;
  readonly name: string;
  readonly stream: number | null;
}

/** A graph's summary, as `--json` prints it. */
export interface GraphSummary {
  nodes: number;
  edges: number;
  /** Edges between nodes of different streams: the fork/join dependencies. */
  crossStreamEdges: number;
  byKind: Record<NodeKind, number>;
  streams: { stream: number | null; nodes: number }[];
  /** Number of levels (wavefronts): the longest chain of dependent nodes. */
  levels: number;
  /** The widest level: the most nodes that can run at once, level by level. */
  widestLevel: { level: number; width: number };
  criticalPath: { cost: number; nodes: { id: number; name: string }[] };
}

/** Counts, levels and the critical path of `graph` (zeros for an empty graph). */
export function summarize(graph: ComputeGraph): GraphSummary {
  const nodes = graph.nodes();
  const byKind = Object.fromEntries(NODE_KINDS.map((k) => [k, 0])) as Record<NodeKind, number>;
  const perStream = new Map<number | null, number>();
  for (const n of nodes) {
    byKind[n.kind]++;
    perStream.set(n.stream, (perStream.get(n.stream) ?? 0) + 1);
  }
  const empty = nodes.length === 0;
  const path = empty ? { cost: 0, nodes: [] } : graph.criticalPath();
  return {
    nodes: nodes.length,
    edges: graph.edgeCount(),
    crossStreamEdges: crossStreamJoins(graph).length,
    byKind,
    streams: [...perStream.entries()]
      .sort(([a], [b]) => (a ?? -1) - (b ?? -1))
      .map(([stream, count]) => ({ stream, nodes: count })),
    levels: empty ? 0 : graph.levels().length,
    widestLevel: empty ? { level: 0, width: 0 } : graph.widestLevel(),
    criticalPath: { cost: path.cost, nodes: path.nodes.map((id) => ({ id, name: nodes[id]!.name })) },
  };
}

/** The edges whose ends lie on different streams: the fork/joins made through events. */
export function crossStreamJoins(graph: ComputeGraph): { from: NodeRef; to: NodeRef }[] {
  const nodes = graph.nodes();
  const ref = (id: number): NodeRef => ({ id, name: nodes[id]!.name, stream: nodes[id]!.stream });
  return graph
    .edges()
    .filter(([u, v]) => nodes[u]!.stream !== nodes[v]!.stream)
    .map(([u, v]) => ({ from: ref(u), to: ref(v) }));
}

/** `stream 2`, or `no stream`. */
export function streamLabel(s: number | null): string {
  return s === null ? 'no stream' : `stream ${s}`;
}

/** The summary as aligned text lines (names escaped for a terminal where they need it). */
export function formatSummary(s: GraphSummary): string[] {
  const kinds = NODE_KINDS.filter((k) => s.byKind[k] > 0).map((k) => `${k} ${s.byKind[k]}`);
  const streams = textList(s.streams, (x) => `${streamLabel(x.stream)}: ${x.nodes}`);
  const cp = s.criticalPath;
  return [
    `nodes:          ${s.nodes}${kinds.length ? ` (${kinds.join(', ')})` : ''}`,
    `edges:          ${s.edges} (${s.crossStreamEdges} across streams: the fork/joins)`,
    `streams:        ${s.streams.length}${s.streams.length ? ` (${streams})` : ''}`,
    `levels:         ${s.levels} (widest: level ${s.widestLevel.level}, ${s.widestLevel.width} nodes can run at once)`,
    `critical path:  ${cp.nodes.length} nodes, cost ${cp.cost}${cp.nodes.length ? `: ${textList(cp.nodes, (n) => nameForTerminal(n.name), ' → ')}` : ''}`,
  ];
}

