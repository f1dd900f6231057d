/**
 * The DOT text of a graph (dot.ts) written a piece at a time, so that a graph of any size can be
 * written to a file: the whole text of a few million nodes is longer than V8's largest string.
 * `renderDot` joins these pieces, so the streamed text and `toDot()` are the same text.
 *
 * What is held at once: one piece, the nodes of each stream as ids (to write them cluster by
 * cluster), and a drawing only for the child graph and conditional nodes, whose edges attach to a
 * node inside their cluster; every other node is drawn as `n<id>` and edges attach to it there.
 */
import { describeWork, drawNode, edgeDataAttrs, edgeLine, HIGHLIGHT, STREAM_COLOURS, dotString, type Drawing, type DotOptions } from './dot.js';
import { outEdges, outEdgeScratch } from './edge-walk.js';
import { CHUNK_CHARS } from './graph-json-stream.js';
import type { GraphStore } from './graph-store.js';
import { GraphError } from '../errors/graph-error.js';
import { GraphErrorCode } from './error-codes.js';

/** Options of `ComputeGraph.toDotChunks` and `writeDot`: `toDot`'s, and a progress callback. */
export interface DotChunkOptions extends DotOptions {
  /** Called after each piece with the nodes and edges written so far and in all. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * The pieces of the DOT text of `store` (options already checked). As with the JSON pieces, the
 * graph must not change while they are read: a piece read after a change throws `GRAPH_BUSY`.
 */
export function* dotChunks(store: GraphStore, options: DotChunkOptions, op = 'ComputeGraph.toDotChunks'): Generator<string, void, undefined> {
  const version = store.version;
  const total = store.n + store.m;
  const check = (): void => {
    if (store.version !== version) {
      throw new GraphError('Internal', GraphErrorCode.Busy, `${op}: the graph changed while its DOT was being read; read the pieces to the end before changing it`);
    }
  };
  let buf = 'digraph ComputeGraph {\n';
  // newrank: Graphviz ranks each cluster on its own by default, so with a cluster per stream an
  // edge between streams can point upwards; ranking the whole graph at once keeps every edge
  // pointing down the page. compound: edges clipped to a child graph's or conditional's cluster (lhead, ltail).
  const compound = store.children.size > 0 || store.conditionals.size > 0 ? ', compound=true' : '';
  buf += `  graph [rankdir=TB, newrank=true${compound}, fontname="Helvetica", fontsize=12];\n`;
  buf += '  node [fontname="Helvetica", fontsize=10, style=filled, penwidth=1.2];\n';
  buf += '  edge [color="#555555", arrowsize=0.7];\n';
  if (options.title !== undefined) buf += `  label=${dotString(options.title)}; labelloc=t;\n`;

  const highlighted = new Set(options.highlight ?? []);
  // Highlighted edges by their upstream node: a lookup per edge that builds no key.
  const hlNext = new Map<number, number[]>();
  const h = options.highlight ?? [];
  for (let i = 1; i < h.length; i++) {
    const next = hlNext.get(h[i - 1]!);
    if (next === undefined) hlNext.set(h[i - 1]!, [h[i]!]);
    else next.push(h[i]!);
  }

  // Drawings kept for the nodes whose edges attach inside a cluster; a plain node is `n<id>`.
  const clusters = new Map<number, Drawing>();
  const drawingOf = (v: number): Drawing => clusters.get(v) ?? { lines: [], entry: `n${v}`, exit: `n${v}`, cluster: null };
  const noExtra: readonly string[] = [];
  const hlExtra: readonly string[] = ['penwidth=3'];
  // A plain node's line is `n<id>` and a text that depends only on its label, colour and
  // highlight: kept per distinct text (names repeat), it is quoted for DOT once, not per node.
  const lineTails = new Map<string, string>();
  const draw = (v: number, indent: string, colour: string): string => {
    const hl = highlighted.size > 0 && highlighted.has(v);
    const node = store.readNode(v);
    const id = `n${v}`;
    const plain = node.kind !== 'conditional' && (node.kind !== 'childGraph' || node.graph.nodeCount() === 0);
    const key = plain ? `${hl ? 'h' : colour}\u0000${node.kind}\u0000${node.name}\u0000${describeWork(node)}` : '';
    const tail = plain ? lineTails.get(key) : undefined;
    if (tail !== undefined) return `${indent}${id}${tail}`;
    const d = drawNode(node, id, indent, hl ? HIGHLIGHT : colour, hl ? hlExtra : noExtra);
    if (d.cluster !== null) clusters.set(v, d);
    if (plain && lineTails.size < 65_536) lineTails.set(key, `${d.lines[0]!.slice(indent.length + id.length)}\n`);
    if (d.lines.length === 1) return `${d.lines[0]}\n`;
    let text = '';
    for (const line of d.lines) text += `${line}\n`;
    return text;
  };

  // Streams in order of first use, each a cluster; nodes without a stream at top level.
  const counts = new Uint32Array(store.streamIds.length + 1);
  for (let v = 0; v < store.n; v++) counts[store.slot[v]! + 1]!++;
  // The nodes grouped by slot (slot −1, no stream, first), in id order within each: a counting sort.
  const starts = new Uint32Array(counts.length + 1);
  for (let s = 0; s < counts.length; s++) starts[s + 1] = starts[s]! + counts[s]!;
  const bySlot = new Uint32Array(store.n);
  const fill = starts.slice(0, counts.length);
  for (let v = 0; v < store.n; v++) bySlot[fill[store.slot[v]! + 1]!++] = v;

  let written = 0;
  /** The text so far once it is a piece's worth (and progress told), else null. */
  const takeFull = (): string | null => {
    if (buf.length < CHUNK_CHARS) return null;
    options.onProgress?.(written, total);
    const piece = buf;
    buf = '';
    return piece;
  };
  let colourIndex = 0;
  for (let s = 0; s < store.streamIds.length; s++) {
    const from = starts[s + 1]!;
    const to = starts[s + 2]!;
    if (from === to) continue;
    const colour = STREAM_COLOURS[colourIndex++ % STREAM_COLOURS.length]!;
    const id = store.streamIds[s]!;
    buf += `  subgraph cluster_s${id} {\n`;
    buf += `    label=${dotString(`stream ${id}`)}; labeljust=l; style="rounded,dashed"; color="${colour}"; fontcolor="${colour}";\n`;
    for (let i = from; i < to; i++) {
      buf += draw(bySlot[i]!, '    ', colour);
      written++;
      const piece = takeFull();
      if (piece !== null) {
        yield piece;
        check();
      }
    }
    buf += '  }\n';
  }
  for (let i = 0; i < starts[1]!; i++) {
    buf += draw(bySlot[i]!, '  ', '#555555');
    written++;
    const piece = takeFull();
    if (piece !== null) {
      yield piece;
      check();
    }
  }

  const out = outEdgeScratch();
  for (let u = 0; u < store.n; u++) {
    if (store.firstOut[u] === 0) continue;
    outEdges(store, u, out);
    const a = drawingOf(u);
    const hl = hlNext.get(u);
    for (let i = 0; i < out.to.length; i++) {
      const v = out.to[i]!;
      const attrs = edgeDataAttrs(out.codes[i]!, store.slot[u] !== store.slot[v]);
      if (hl !== undefined && hl.includes(v)) attrs.push(`color="${HIGHLIGHT}"`, 'penwidth=2.5');
      buf += `  ${edgeLine(a, drawingOf(v), attrs)}\n`;
    }
    written += out.to.length;
    const piece = takeFull();
    if (piece !== null) {
      yield piece;
      check();
    }
  }
  buf += '}\n';
  options.onProgress?.(total, total);
  yield buf;
}

/** The DOT text of `store` (options already checked by `ComputeGraph.toDot`): the pieces of `dotChunks`, joined. */
export function renderDot(store: GraphStore, options: DotOptions): string {
  let text = '';
  for (const piece of dotChunks(store, options)) text += piece;
  return text;
}
