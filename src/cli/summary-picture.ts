/**
 * The DOT text of a `SummaryGraph` (src/model/summary-graph.ts), drawn as the full picture is: a
 * lane (cluster) and colour per stream in the same order, cross-stream edges dashed, the critical
 * path thick and red. Each node is a group of ops, labelled with its op count, kinds, cost and
 * levels; each edge with the number of edges it stands for when that is more than one.
 */
import { dotString, HIGHLIGHT, STREAM_COLOURS } from '../model/dot.js';
import type { SummaryGraph, SummaryNode } from '../model/summary-graph.js';

/** Numbers as the labels write them: 1,234,567 and costs to 4 significant digits. */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

function costText(c: number): string {
  return Number.isInteger(c) ? count(c) : c.toPrecision(4);
}

/** A group's label: "412 ops: 300 kernel, 112 memcpy", its cost, and where it lies. */
export function summaryNodeLabel(node: SummaryNode): string {
  const kinds = node.kinds.map((k) => `${count(k.count)} ${k.kind}`).join(', ');
  const where = node.levels[0] === node.levels[1] ? `level ${node.levels[0]}` : `levels ${node.levels[0]}–${node.levels[1]}`;
  const streams = node.streams.length > 1 ? `\nstreams ${node.streams.join(', ')}` : '';
  return `${count(node.ops)} op${node.ops === 1 ? '' : 's'}: ${kinds}\ncost ${costText(node.cost)}, ${where}${streams}`;
}

/** Options of `summaryToDot`. */
export interface SummaryDotOptions {
  readonly title?: string;
  /** Highlight the groups and edges of the critical path (default true). */
  readonly criticalPath?: boolean;
}

/** The summary as Graphviz DOT text. */
export function summaryToDot(summary: SummaryGraph, options: SummaryDotOptions = {}): string {
  const hl = options.criticalPath !== false;
  const lines = ['digraph SummaryGraph {'];
  // newrank, as the full picture: edges between lanes keep pointing down the page.
  lines.push('  graph [rankdir=TB, newrank=true, fontname="Helvetica", fontsize=12];');
  lines.push('  node [fontname="Helvetica", fontsize=10, style=filled, penwidth=1.2, shape=box, fillcolor="#ffe0a3"];');
  lines.push('  edge [color="#555555", arrowsize=0.7, fontname="Helvetica", fontsize=8];');
  if (options.title !== undefined) lines.push(`  label=${dotString(options.title)}; labelloc=t;`);
  const colour = new Map(summary.streamOrder.map((s, i) => [s, STREAM_COLOURS[i % STREAM_COLOURS.length]!]));
  const nodeLine = (node: SummaryNode, indent: string): string => {
    const red = hl && node.critical;
    const c = red ? HIGHLIGHT : node.stream === null ? '#555555' : colour.get(node.stream)!;
    // A group of several streams is grey: it is where those streams wait on each other in turn.
    const fill = node.streams.length > 1 ? ', fillcolor="#eeeeee"' : '';
    return `${indent}g${node.id} [label=${dotString(summaryNodeLabel(node))}, color="${c}"${fill}${red ? ', penwidth=3' : ''}];`;
  };
  const byStream = new Map<number, SummaryNode[]>();
  const loose: SummaryNode[] = [];
  for (const node of summary.nodes) {
    if (node.stream === null) loose.push(node);
    else {
      const list = byStream.get(node.stream);
      if (list === undefined) byStream.set(node.stream, [node]);
      else list.push(node);
    }
  }
  for (const s of summary.streamOrder) {
    const list = byStream.get(s);
    if (list === undefined) continue;
    const c = colour.get(s)!;
    lines.push(`  subgraph cluster_s${s} {`);
    lines.push(`    label=${dotString(`stream ${s}`)}; labeljust=l; style="rounded,dashed"; color="${c}"; fontcolor="${c}";`);
    for (const node of list) lines.push(nodeLine(node, '    '));
    lines.push('  }');
  }
  for (const node of loose) lines.push(nodeLine(node, '  '));
  const onPath = new Set<string>();
  const p = summary.criticalPath;
  for (let i = 1; i < p.length; i++) onPath.add(`${p[i - 1]}>${p[i]}`);
  for (const e of summary.edges) {
    const attrs: string[] = [];
    if (e.crossStream > 0) attrs.push('style=dashed');
    if (e.count > 1) attrs.push(`label=${dotString(`×${count(e.count)}`)}`);
    if (hl && onPath.has(`${e.from}>${e.to}`)) attrs.push(`color="${HIGHLIGHT}"`, 'penwidth=2.5');
    lines.push(`  g${e.from} -> g${e.to}${attrs.length > 0 ? ` [${attrs.join(', ')}]` : ''};`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
