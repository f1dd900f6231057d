/**
 * Mermaid flowchart text for a `ComputeGraph`, for Markdown viewers that draw Mermaid (GitHub,
 * GitLab, many editors). It mirrors the DOT picture: a subgraph (lane) and a colour per stream, a
 * shape per kind (kernel box, memcpy parallelogram, memset hexagon, host callback stadium, empty
 * diamond), cross-stream edges dashed, highlighted nodes and edges thick and red.
 */
import type { ComputeGraph, GraphNode } from '../index.js';
import { HIGHLIGHT, STREAM_COLOURS, formatBytes } from '../model/dot.js';
import { memcpyDirLabel } from '../model/memcpy-dir.js';

/** Options of `toMermaid`. */
export interface MermaidOptions {
  readonly title?: string | undefined;
  /** A path to highlight (e.g. the critical path): its nodes and the edges between consecutive ones. */
  readonly highlight?: readonly number[];
}

const KIND_FILL: Record<GraphNode['kind'], string> = {
  kernel: '#ffe0a3',
  memcpy: '#cfe2f3',
  memset: '#d9ead3',
  hostCallback: '#ead1dc',
  empty: '#eeeeee',
};

/**
 * Escapes text for a quoted Mermaid label: Mermaid reads `#…;` as an entity code and labels as
 * HTML, so `#`, quotes and angle brackets are written as numeric entity codes; line breaks as `<br>`.
 */
export function mermaidText(s: string): string {
  let out = '';
  for (const ch of s) {
    if (ch === '#' || ch === '"' || ch === '<' || ch === '>' || ch === '&') out += `#${ch.codePointAt(0)};`;
    else if (ch === '\n') out += '<br>';
    else if (ch < ' ' || ch === '\u007f') out += ' ';
    else out += ch;
  }
  return out;
}

function dim(d: readonly number[]): string {
  return d[1] === 1 && d[2] === 1 ? String(d[0]) : `(${d.join(',')})`;
}

/** The second line of a node's label: what it does. */
function work(n: GraphNode): string {
  switch (n.kind) {
    case 'kernel':
      return `${n.functionName === n.name ? '' : n.functionName}<<<${dim(n.grid)}, ${dim(n.block)}${n.sharedMem > 0 ? `, ${n.sharedMem}` : ''}>>>`;
    case 'memcpy':
      return `memcpy ${memcpyDirLabel(n.dir)} ${formatBytes(n.sizeBytes)}`;
    case 'memset':
      return `memset ${formatBytes(n.sizeBytes)} = 0x${n.value.toString(16).padStart(n.elementSize * 2, '0')}`;
    case 'hostCallback':
      return 'host callback';
    case 'empty':
      return 'empty';
  }
}

function shape(n: GraphNode, label: string): string {
  const q = `"${label}"`;
  switch (n.kind) {
    case 'kernel':
      return `[${q}]`;
    case 'memcpy':
      return `[/${q}/]`;
    case 'memset':
      return `{{${q}}}`;
    case 'hostCallback':
      return `([${q}])`;
    case 'empty':
      return `{${q}}`;
  }
}

/** The graph as a Mermaid flowchart (top to bottom). */
export function toMermaid(graph: ComputeGraph, options: MermaidOptions = {}): string {
  const nodes = graph.nodes();
  const lines: string[] = [];
  if (options.title !== undefined) lines.push('---', `title: "${options.title.replace(/["\\]/g, "'")}"`, '---');
  lines.push('flowchart TB');
  for (const [kind, fill] of Object.entries(KIND_FILL)) lines.push(`  classDef ${kind} fill:${fill},stroke:#555555,color:#000000`);

  const nodeLine = (n: GraphNode, indent: string): string =>
    `${indent}n${n.id}${shape(n, mermaidText(`${n.name}\n${work(n)}`))}:::${n.kind}`;
  const streams = graph.streams();
  streams.forEach((s, i) => {
    lines.push(`  subgraph stream${s}["stream ${s}"]`, '    direction TB');
    for (const n of nodes) if (n.stream === s) lines.push(nodeLine(n, '    '));
    lines.push('  end');
    lines.push(`  style stream${s} fill:none,stroke:${STREAM_COLOURS[i % STREAM_COLOURS.length]},stroke-dasharray:5 5`);
  });
  for (const n of nodes) if (n.stream === null) lines.push(nodeLine(n, '  '));

  const h = options.highlight ?? [];
  const onPath = new Set(h);
  const pathEdges = new Set<string>();
  for (let i = 1; i < h.length; i++) pathEdges.add(`${h[i - 1]}>${h[i]}`);
  const highlighted: number[] = [];
  graph.edges().forEach(([u, v], i) => {
    const cross = nodes[u]!.stream !== nodes[v]!.stream;
    lines.push(`  n${u} ${cross ? '-.->' : '-->'} n${v}`);
    if (pathEdges.has(`${u}>${v}`)) highlighted.push(i);
  });
  for (const id of onPath) lines.push(`  style n${id} stroke:${HIGHLIGHT},stroke-width:3px`);
  if (highlighted.length > 0) lines.push(`  linkStyle ${highlighted.join(',')} stroke:${HIGHLIGHT},stroke-width:3px`);
  return lines.join('\n') + '\n';
}
