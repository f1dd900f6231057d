/**
 * Graphviz DOT text for a `ComputeGraph`: one cluster per stream (outlined in the stream's
 * colour), node shape and fill by kind, cross-stream edges dashed (they are the event
 * fork/joins), programmatic edges bold and hollow-headed, child graphs drawn as clusters holding
 * their own nodes, conditional nodes as clusters of their bodies, and optionally a highlighted path
 * (e.g. the critical path) drawn thick and red.
 */
import { memcpyDirLabel } from './memcpy-dir.js';
import { edgeCode, edgeDataOf, edgeDataText, PLAIN_EDGE } from './edge-data.js';
import { bodyLabel, conditionalText } from './conditional.js';
import type { ConditionalNodeRecord, GraphNode } from './node.js';
import type { ComputeGraph } from './compute-graph.js';

/** Options of `ComputeGraph.toDot`. */
export interface DotOptions {
  /** The graph's title, drawn at the top (default none). */
  readonly title?: string;
  /** Nodes to highlight, e.g. `graph.criticalPath().nodes`; edges between consecutive ones are highlighted too. */
  readonly highlight?: readonly number[];
}

const KIND_STYLE: Record<GraphNode['kind'], { shape: string; fill: string }> = {
  kernel: { shape: 'box', fill: '#ffe0a3' },
  memcpy: { shape: 'parallelogram', fill: '#cfe2f3' },
  memset: { shape: 'hexagon', fill: '#d9ead3' },
  hostCallback: { shape: 'ellipse', fill: '#ead1dc' },
  empty: { shape: 'diamond', fill: '#eeeeee' },
  eventRecord: { shape: 'house', fill: '#fce5cd' },
  eventWait: { shape: 'invhouse', fill: '#fce5cd' },
  // Drawn as a cluster of its nodes; the shape is for an empty child, which has none to draw.
  childGraph: { shape: 'box3d', fill: '#f3f3f3' },
  memAlloc: { shape: 'cylinder', fill: '#d0e0e3' },
  memFree: { shape: 'folder', fill: '#d0e0e3' },
  // The condition: drawn at the top of the cluster of its bodies.
  conditional: { shape: 'Mdiamond', fill: '#fff2cc' },
};

/** The fill of a child graph's cluster. */
export const CHILD_FILL = '#f8f8f8';
/** The outline of the nodes inside a child graph. */
const CHILD_COLOUR = '#777777';
/** The fill of a conditional node's cluster (its bodies' clusters are `CHILD_FILL`). */
export const CONDITIONAL_FILL = '#fffbea';
/** The colour of programmatic edges. */
export const PROGRAMMATIC_COLOUR = '#1f5fa8';

/** Stream colours. */
// Distinct, print-safe colours (Tableau 10), one per stream in order of first use. Tableau's red
// is left out: it is the highlight colour, and a red stream would read as the critical path.
export const STREAM_COLOURS: readonly string[] = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
/** The colour of a highlighted path (the critical path). */
export const HIGHLIGHT = '#d62728';

/**
 * Quotes `s` as a DOT label string, so that any name is drawn as written and cannot add to the
 * graph: quotes are escaped (a name cannot end the string); every backslash is doubled, so a name
 * such as `C:\N` is drawn as written instead of Graphviz expanding `\N` to the node's id; `&` is
 * written `&amp;`, because Graphviz decodes entities in labels (`&lt;b&gt;` would be drawn as
 * `<b>`, `&#65;` as `A`). Line breaks become `\n`; other control characters become spaces.
 */
export function dotString(s: string): string {
  let out = '"';
  for (const ch of s) {
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '&') out += '&amp;';
    else if (ch === '\n') out += '\\n';
    else if (ch < ' ' || ch === '\u007f') out += ' ';
    else out += ch;
  }
  return out + '"';
}

/** A byte count in short human form: 512 B, 4 KiB, 1.5 MiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

function dim(d: readonly number[]): string {
  return d[1] === 1 && d[2] === 1 ? String(d[0]) : `(${d.join(',')})`;
}

/** The second line of a node's label: what it does. */
export function describeWork(node: GraphNode): string {
  switch (node.kind) {
    case 'kernel': {
      const fn = node.functionName === node.name ? '' : `${node.functionName}`;
      const smem = node.sharedMem > 0 ? `, ${node.sharedMem}` : '';
      return `${fn}<<<${dim(node.grid)}, ${dim(node.block)}${smem}>>>`;
    }
    case 'memcpy':
      return `memcpy ${memcpyDirLabel(node.dir)} ${formatBytes(node.sizeBytes)}`;
    case 'memset': {
      const hex = node.value.toString(16).padStart(node.elementSize * 2, '0');
      const el = node.elementSize === 1 ? '' : ` (${node.elementSize}-byte)`;
      return `memset ${formatBytes(node.sizeBytes)} = 0x${hex}${el}`;
    }
    case 'hostCallback':
      return node.label === node.name ? 'host callback' : `host: ${node.label}`;
    case 'empty':
      return 'empty';
    case 'eventRecord':
      return `record event ${node.event}`;
    case 'eventWait':
      return `wait event ${node.event}`;
    case 'childGraph': {
      const n = node.graph.nodeCount();
      const m = node.graph.edgeCount();
      return `child graph: ${n} node${n === 1 ? '' : 's'}, ${m} edge${m === 1 ? '' : 's'}`;
    }
    case 'memAlloc':
      return `alloc ${formatBytes(node.sizeBytes)} on device ${node.device}`;
    case 'memFree':
      return node.alloc === null ? 'free (allocated outside)' : `free node ${node.alloc}'s memory`;
    case 'conditional':
      return conditionalText(node.type, node.bodies.length, node.handle, node.estimate);
  }
}

/** An edge's attributes: dashed across streams, and what shows its data (nothing for a plain edge). */
export function edgeDataAttrs(code: number, crossStream = false): string[] {
  if (code === PLAIN_EDGE) return crossStream ? ['style=dashed'] : [];
  const d = edgeDataOf(code);
  const styles = [...(crossStream ? ['dashed'] : []), ...(d.kind === 'programmatic' ? ['bold'] : [])];
  const attrs = styles.length === 0 ? [] : [styles.length === 1 ? `style=${styles[0]}` : `style="${styles.join(',')}"`];
  attrs.push(`tooltip=${dotString(edgeDataText(code))}`, 'arrowhead=onormal');
  if (d.kind === 'programmatic') attrs.push(`color="${PROGRAMMATIC_COLOUR}"`);
  if (d.port === 'launchOrder') attrs.push(`label=${dotString('launch order')}`, 'fontsize=8');
  return attrs;
}

/** How one node is drawn: its lines, and where edges into and out of it attach. */
export interface Drawing {
  readonly lines: string[];
  /** The DOT node an incoming edge points at. */
  readonly entry: string;
  /** The DOT node an outgoing edge leaves from. */
  readonly exit: string;
  /** The cluster a child graph is drawn as (edges are clipped to it), or null for a plain node. */
  readonly cluster: string | null;
}

/**
 * Draws `node` as DOT node `id`. A child graph with nodes becomes a cluster of them (ids `n3_0`,
 * `n3_1`, …; a nested child goes on, `n3_1_0`); edges into it point at one of its sources and are
 * clipped to the cluster (`lhead`), edges out of it leave one of its sinks (`ltail`).
 */
export function drawNode(node: GraphNode, id: string, indent: string, colour: string, extra: readonly string[]): Drawing {
  const label = dotString(`${node.name}\n${describeWork(node)}`);
  if (node.kind === 'conditional') return drawConditional(node, id, label, indent, colour, extra);
  if (node.kind !== 'childGraph' || node.graph.nodeCount() === 0) {
    const style = KIND_STYLE[node.kind];
    const attrs = [`label=${label}`, `shape=${style.shape}`, `fillcolor="${style.fill}"`, `color="${colour}"`, ...extra];
    return { lines: [`${indent}${id} [${attrs.join(', ')}];`], entry: id, exit: id, cluster: null };
  }
  const cluster = `cluster_${id}`;
  const penwidth = extra.includes('penwidth=3') ? ' penwidth=3;' : '';
  const lines = [`${indent}subgraph ${cluster} {`, `${indent}  label=${label}; labeljust=l; style="rounded,filled"; fillcolor="${CHILD_FILL}"; color="${colour}";${penwidth}`];
  const inner = drawGraph(node.graph, id, `${indent}  `, lines);
  lines.push(`${indent}}`);
  return { lines, entry: inner.entry!, exit: inner.exit!, cluster };
}

/**
 * Draws the nodes and edges of `graph` (a child graph or a body, with nodes) into `lines`, as DOT
 * nodes `${id}_0`, `${id}_1`, …; returns where edges into and out of it attach (a source, a sink).
 */
function drawGraph(graph: ComputeGraph, id: string, indent: string, lines: string[]): { entry: string | null; exit: string | null } {
  const inner = graph.nodes().map((c) => drawNode(c, `${id}_${c.id}`, indent, CHILD_COLOUR, []));
  // One line at a time: spreading a large child's lines into push() would overflow the stack.
  for (const d of inner) for (const line of d.lines) lines.push(line);
  for (const e of graph.edgeRecords()) lines.push(`${indent}${edgeLine(inner[e.from]!, inner[e.to]!, edgeDataAttrs(edgeCode(e.kind, e.port)))}`);
  if (inner.length === 0) return { entry: null, exit: null };
  return { entry: inner[graph.sources()[0]!]!.entry, exit: inner[graph.sinks()[0]!]!.exit };
}

/**
 * Draws a conditional node as a cluster (`cluster_n3`): the condition at its top (DOT node `n3`,
 * where edges into the node point), then one cluster per body (`cluster_n3_b0`, labelled `while
 * body`, `if then`, `if else`, `switch case 2`) holding the body's nodes (`n3_b0_0`, …), each reached
 * from the condition by a dotted edge; a while body loops back to it. An empty body is one node.
 * Edges out of the node leave a sink of its largest body, so successors are drawn below the bodies.
 */
function drawConditional(node: ConditionalNodeRecord, id: string, label: string, indent: string, colour: string, extra: readonly string[]): Drawing {
  const cluster = `cluster_${id}`;
  const penwidth = extra.includes('penwidth=3') ? ' penwidth=3;' : '';
  const style = KIND_STYLE.conditional;
  const lines = [
    `${indent}subgraph ${cluster} {`,
    `${indent}  label=""; style="rounded,filled"; fillcolor="${CONDITIONAL_FILL}"; color="${colour}";${penwidth}`,
    `${indent}  ${id} [label=${label}, shape=${style.shape}, fillcolor="${style.fill}", color="${colour}"${extra.length ? `, ${extra.join(', ')}` : ''}];`,
  ];
  let exit = id;
  let largest = -1;
  node.bodies.forEach((body, b) => {
    const bodyId = `${id}_b${b}`;
    const bodyCluster = `cluster_${bodyId}`;
    const title = dotString(bodyLabel(node.type, b));
    lines.push(`${indent}  subgraph ${bodyCluster} {`, `${indent}    label=${title}; labeljust=l; style="rounded,filled"; fillcolor="${CHILD_FILL}"; color="${CHILD_COLOUR}";`);
    let ends = drawGraph(body, bodyId, `${indent}    `, lines);
    if (ends.entry === null) {
      // Graphviz draws no empty cluster: an empty body is a node saying so.
      lines.push(`${indent}    ${bodyId} [label=${dotString('empty body')}, shape=${KIND_STYLE.childGraph.shape}, fillcolor="${KIND_STYLE.childGraph.fill}", color="${CHILD_COLOUR}"];`);
      ends = { entry: bodyId, exit: bodyId };
    }
    lines.push(`${indent}  }`);
    lines.push(`${indent}  ${id} -> ${ends.entry} [style=dotted, lhead=${bodyCluster}];`);
    if (node.type === 'while') lines.push(`${indent}  ${ends.exit} -> ${id} [style=dotted, constraint=false, ltail=${bodyCluster}];`);
    if (body.nodeCount() > largest) {
      largest = body.nodeCount();
      exit = ends.exit!;
    }
  });
  lines.push(`${indent}}`);
  return { lines, entry: id, exit, cluster };
}

/** `a -> b [...]`, clipped to the clusters of child graphs at its ends. */
export function edgeLine(a: Drawing, b: Drawing, attrs: string[]): string {
  const all = [...attrs];
  if (a.cluster !== null) all.push(`ltail=${a.cluster}`);
  if (b.cluster !== null) all.push(`lhead=${b.cluster}`);
  return `${a.exit} -> ${b.entry}${all.length ? ` [${all.join(', ')}]` : ''};`;
}
