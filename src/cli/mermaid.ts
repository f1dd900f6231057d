/**
 * Mermaid flowchart text for a `ComputeGraph`, for Markdown viewers that draw Mermaid (GitHub,
 * GitLab, many editors). It mirrors the DOT picture: a subgraph (lane) and a colour per stream, a
 * shape per kind (kernel box, memcpy parallelogram, memset hexagon, host callback stadium, empty
 * diamond), cross-stream edges dashed, highlighted nodes and edges thick and red.
 */
import type { ComputeGraph, GraphNode } from '../index.js';
import { HIGHLIGHT, STREAM_COLOURS, describeWork } from '../model/dot.js';

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
 * Escapes text for a quoted Mermaid label (`n0["…"]`), so that any name is shown as written and
 * cannot add a statement. Mermaid reads `#…;` as an entity code and labels as HTML, so `#`, quotes,
 * `&` and angle brackets are written as numeric entity codes, and so are the characters that mean
 * something before the label is parsed: `` ` `` (a "`…`" label is Markdown) and `%` (`%%` starts a
 * comment, and `%%{…}%%` a directive that can change the configuration, wherever it stands). Line
 * breaks become `<br>`; other control characters spaces.
 */
export function mermaidText(s: string): string {
  let out = '';
  for (const ch of s) {
    if (ch === '#' || ch === '"' || ch === '<' || ch === '>' || ch === '&' || ch === '`' || ch === '%') out += `#${ch.codePointAt(0)};`;
    else if (ch === '\n') out += '<br>';
    else if (ch < ' ' || ch === '\u007f') out += ' ';
    else out += ch;
  }
  return out;
}

/** Characters a title keeps as they are: letters, digits, spaces and punctuation that means nothing to YAML's quoted strings or to Mermaid. */
const TITLE_PLAIN = /[A-Za-z0-9 _.,:;!?()[\]{}\/+=*@$^~|'-]/;

/**
 * The title as a YAML double-quoted string for Mermaid's front matter (`title: "…"`). Mermaid reads
 * the whole text for `%%` comments and directives and `#…;` entity codes before it parses the YAML,
 * so only plain characters are written as they are: everything else (quotes, backslashes, line
 * breaks, `%`, `#`, `<`, `&`, backticks, control characters) is a `\uXXXX` escape, which YAML decodes
 * back to the title exactly. Letters beyond ASCII stay readable, except invisible formatting and
 * line-separator characters.
 */
export function mermaidTitle(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    const plain = TITLE_PLAIN.test(ch) || (code >= 0xa0 && !/[\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/u.test(ch));
    out += plain ? ch : `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
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
  if (options.title !== undefined) lines.push('---', `title: ${mermaidTitle(options.title)}`, '---');
  lines.push('flowchart TB');
  for (const [kind, fill] of Object.entries(KIND_FILL)) lines.push(`  classDef ${kind} fill:${fill},stroke:#555555,color:#000000`);

  const nodeLine = (n: GraphNode, indent: string): string =>
    `${indent}n${n.id}${shape(n, mermaidText(`${n.name}\n${describeWork(n)}`))}:::${n.kind}`;
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
