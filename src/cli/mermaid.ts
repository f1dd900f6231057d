/**
 * Mermaid flowchart text for a `ComputeGraph`, for Markdown viewers that draw Mermaid (GitHub,
 * GitLab, many editors). It mirrors the DOT picture: a subgraph (lane) and a colour per stream, a
 * shape per kind (kernel box, memcpy parallelogram, memset hexagon, host callback stadium, empty
 * diamond, event record and wait trapezoids, memory nodes cylinders), child graphs as subgraphs of
 * their own nodes, cross-stream edges dashed, programmatic edges thick, highlighted nodes and edges
 * thick and red.
 */
import type { ComputeGraph, GraphEdge, GraphNode } from '../index.js';
import { CHILD_FILL, CONDITIONAL_FILL, HIGHLIGHT, STREAM_COLOURS, describeWork } from '../model/dot.js';
import { bodyLabel } from '../model/conditional.js';

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
  eventRecord: '#fce5cd',
  eventWait: '#fce5cd',
  childGraph: '#f3f3f3',
  memAlloc: '#d0e0e3',
  memFree: '#d0e0e3',
  conditional: '#fff2cc',
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
    case 'eventRecord':
      return `[/${q}\\]`;
    case 'eventWait':
      return `[\\${q}/]`;
    case 'childGraph':
      return `[[${q}]]`;
    case 'memAlloc':
      return `[(${q})]`;
    case 'memFree':
      return `[(${q})]`;
    case 'conditional':
      // A decision: Mermaid's rhombus.
      return `{${q}}`;
  }
}

/** The arrow of an edge: thick for programmatic, dashed across streams, labelled when it leaves by launch order. */
function arrow(e: GraphEdge, cross: boolean): string {
  const a = e.kind === 'programmatic' ? '==>' : cross ? '-.->' : '-->';
  return e.port === 'launchOrder' ? `${a}|launch order|` : a;
}

/** The graph as a Mermaid flowchart (top to bottom). */
export function toMermaid(graph: ComputeGraph, options: MermaidOptions = {}): string {
  const nodes = graph.nodes();
  const lines: string[] = [];
  if (options.title !== undefined) lines.push('---', `title: ${mermaidTitle(options.title)}`, '---');
  lines.push('flowchart TB');
  for (const [kind, fill] of Object.entries(KIND_FILL)) lines.push(`  classDef ${kind} fill:${fill},stroke:#555555,color:#000000`);

  // Every link, in the order written: `linkStyle` numbers them so.
  let links = 0;
  const childLinks: string[] = [];
  const nodeLines = (n: GraphNode, id: string, indent: string): string[] => {
    const label = mermaidText(`${n.name}\n${describeWork(n)}`);
    if (n.kind === 'conditional') {
      // A subgraph of one subgraph per body (`while body`, `if then`, `switch case 2`); edges to and from the node attach to it.
      const out = [`${indent}subgraph ${id}["${label}"]`, `${indent}  direction TB`];
      n.bodies.forEach((body, b) => {
        const bid = `${id}_b${b}`;
        out.push(`${indent}  subgraph ${bid}["${mermaidText(bodyLabel(n.type, b))}"]`, `${indent}    direction TB`);
        if (body.nodeCount() === 0) out.push(`${indent}    ${bid}_empty[["empty body"]]:::childGraph`);
        for (const c of body.nodes()) out.push(...nodeLines(c, `${bid}_${c.id}`, `${indent}    `));
        for (const e of body.edgeRecords()) childLinks.push(`  ${bid}_${e.from} ${arrow(e, false)} ${bid}_${e.to}`);
        out.push(`${indent}  end`, `${indent}  style ${bid} fill:${CHILD_FILL},stroke:#777777`);
      });
      out.push(`${indent}end`, `${indent}style ${id} fill:${CONDITIONAL_FILL},stroke:#777777`);
      return out;
    }
    if (n.kind !== 'childGraph' || n.graph.nodeCount() === 0) return [`${indent}${id}${shape(n, label)}:::${n.kind}`];
    // A child graph with nodes is a subgraph of them; edges to and from it attach to the subgraph.
    const out = [`${indent}subgraph ${id}["${label}"]`, `${indent}  direction TB`];
    for (const c of n.graph.nodes()) out.push(...nodeLines(c, `${id}_${c.id}`, `${indent}  `));
    for (const e of n.graph.edgeRecords()) childLinks.push(`  ${id}_${e.from} ${arrow(e, false)} ${id}_${e.to}`);
    out.push(`${indent}end`, `${indent}style ${id} fill:${CHILD_FILL},stroke:#777777`);
    return out;
  };
  const nodeLine = (n: GraphNode, indent: string): string => nodeLines(n, `n${n.id}`, indent).join('\n');
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
  for (const link of childLinks) {
    lines.push(link);
    links++;
  }
  for (const e of graph.edgeRecords()) {
    const cross = nodes[e.from]!.stream !== nodes[e.to]!.stream;
    lines.push(`  n${e.from} ${arrow(e, cross)} n${e.to}`);
    if (pathEdges.has(`${e.from}>${e.to}`)) highlighted.push(links);
    links++;
  }
  for (const id of onPath) lines.push(`  style n${id} stroke:${HIGHLIGHT},stroke-width:3px`);
  if (highlighted.length > 0) lines.push(`  linkStyle ${highlighted.join(',')} stroke:${HIGHLIGHT},stroke-width:3px`);
  return lines.join('\n') + '\n';
}
