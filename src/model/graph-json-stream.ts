/**
 * The graph document (graph-json.ts) written a piece at a time: the same text as
 * `JSON.stringify(graph)` (or `JSON.stringify(graph, null, space)`), byte for byte, without ever
 * holding it whole. V8 refuses strings past 2^29 − 24 characters (512 MiB), which a graph reaches
 * at about 3.5 million nodes; pieces of about 64 KiB have no such limit, and the largest thing held
 * at once is one piece and one node's record.
 *
 * Why templates instead of `JSON.stringify` per node: stringify walks a fresh object's properties
 * each time; the record's fields and their order are fixed by kind (graph-store.ts `readNode`), so a
 * template writes the same text several times faster. Strings (names, labels) go through
 * `JSON.stringify`, once per distinct string, so escaping is exactly JSON's. The two kinds that
 * hold whole graphs (child graph, conditional) and every indented document go through
 * `JSON.stringify` itself.
 */
import { GraphError } from '../errors/graph-error.js';
import { GraphErrorCode } from './error-codes.js';
import { EDGE_DATA_BY_CODE, PLAIN_EDGE } from './edge-data.js';
import { outEdges, outEdgeScratch } from './edge-walk.js';
import { GRAPH_JSON_FORMAT, GRAPH_JSON_VERSION, type GraphJsonNode } from './graph-json.js';
import type { GraphNode } from './node.js';
import type { GraphStore } from './graph-store.js';

/** Options of `ComputeGraph.toJSONChunks` and `writeJSON`. */
export interface JsonChunkOptions {
  /**
   * Indentation, as `JSON.stringify`'s third argument takes it: a number of spaces (at most 10) or
   * a string (its first 10 characters). Default none: the compact text of `JSON.stringify(graph)`.
   */
  readonly space?: number | string;
  /** Called after each piece with the nodes and edges written so far and in all (a progress bar's input). */
  readonly onProgress?: (done: number, total: number) => void;
}

/** About how many characters a piece holds: large enough that a write per piece costs little, small enough to hold many. */
export const CHUNK_CHARS = 1 << 16;

/** The indentation `JSON.stringify` uses for `space` (its own rules: numbers clamp to 0..10, strings cut to 10). */
export function gapOf(space: unknown): string {
  if (typeof space === 'number') return ' '.repeat(Math.max(0, Math.min(10, Math.trunc(space))));
  if (typeof space === 'string') return space.slice(0, 10);
  return '';
}

/** A node record as the document holds it: a child graph's graph and a conditional's bodies as documents of their own. */
export function documentNode(n: GraphNode): GraphJsonNode {
  if (n.kind === 'childGraph') return { ...n, graph: n.graph.toJSON() };
  if (n.kind === 'conditional') return { ...n, bodies: n.bodies.map((b) => b.toJSON()) };
  return n;
}

/** JSON text of strings, cached: names repeat (they are interned), and escaping one is the costly part of a record. */
class StringTexts {
  readonly #cache = new Map<string, string>();

  text(s: string): string {
    let t = this.#cache.get(s);
    if (t === undefined) {
      t = JSON.stringify(s);
      // A graph of distinct names would grow the cache as large as the graph: past this, escape each anew.
      if (this.#cache.size < 65_536) this.#cache.set(s, t);
    }
    return t;
  }
}

const EDGE_DATA_TEXT = EDGE_DATA_BY_CODE.map((d) => JSON.stringify(d));

/** The compact JSON text of node record `n`, as `JSON.stringify(documentNode(n))` writes it. */
function nodeText(n: GraphNode, strings: StringTexts): string {
  // Numbers: `${x}` is JSON's text of every finite number (costs, sizes and ids are finite).
  const head = `{"id":${n.id},"kind":"${n.kind}","name":${strings.text(n.name)},"stream":${n.stream === null ? 'null' : n.stream},"cost":${n.cost}`;
  switch (n.kind) {
    case 'kernel':
      return `${head},"functionName":${strings.text(n.functionName)},"grid":[${n.grid[0]},${n.grid[1]},${n.grid[2]}],"block":[${n.block[0]},${n.block[1]},${n.block[2]}],"sharedMem":${n.sharedMem}}`;
    case 'memcpy':
      return `${head},"dir":${typeof n.dir === 'string' ? `"${n.dir}"` : JSON.stringify(n.dir)},"sizeBytes":${n.sizeBytes}}`;
    case 'memset':
      return `${head},"sizeBytes":${n.sizeBytes},"value":${n.value},"elementSize":${n.elementSize}}`;
    case 'hostCallback':
      return `${head},"label":${strings.text(n.label)}}`;
    case 'empty':
      return `${head}}`;
    case 'eventRecord':
    case 'eventWait':
      return `${head},"event":${n.event}}`;
    case 'memAlloc':
      return `${head},"sizeBytes":${n.sizeBytes},"device":${n.device}}`;
    case 'memFree':
      return `${head},"alloc":${n.alloc === null ? 'null' : n.alloc}}`;
    default:
      return JSON.stringify(documentNode(n));
  }
}

/**
 * The pieces of the document of `store`; `op` names the call in a refusal. The graph must not
 * change while the pieces are read: a piece read after a change throws GraphError `GRAPH_BUSY`
 * (the text would mix two graphs).
 */
export function* graphJsonChunks(store: GraphStore, op: string, options: JsonChunkOptions = {}): Generator<string, void, undefined> {
  const gap = gapOf(options.space);
  const version = store.version;
  const total = store.n + store.m;
  let done = 0;
  const check = (): void => {
    if (store.version !== version) {
      throw new GraphError('Internal', GraphErrorCode.Busy, `${op}: the graph changed while its JSON was being read; read the pieces to the end before changing it`);
    }
  };
  // Indented: `JSON.stringify(value, null, gap)` of each element, shifted right by two levels.
  const inner = `\n${gap}${gap}`;
  const indented = (value: unknown): string => JSON.stringify(value, null, gap).replace(/\n/g, inner);
  const open = (key: string, count: number): string =>
    gap === '' ? `"${key}":[` : `\n${gap}"${key}": [${count === 0 ? '' : inner}`;
  const close = (count: number): string => (gap === '' || count === 0 ? ']' : `\n${gap}]`);
  const comma = gap === '' ? ',' : `,${inner}`;

  let buf =
    gap === ''
      ? `{"format":"${GRAPH_JSON_FORMAT}","version":${GRAPH_JSON_VERSION},${open('nodes', store.n)}`
      : `{\n${gap}"format": "${GRAPH_JSON_FORMAT}",\n${gap}"version": ${GRAPH_JSON_VERSION},${open('nodes', store.n)}`;
  const strings = new StringTexts();
  for (let v = 0; v < store.n; v++) {
    const n = store.readNode(v);
    if (v > 0) buf += comma;
    buf += gap === '' ? nodeText(n, strings) : indented(documentNode(n));
    if (buf.length >= CHUNK_CHARS) {
      done = v + 1;
      options.onProgress?.(done, total);
      yield buf;
      check();
      buf = '';
    }
  }
  done = store.n;
  buf += `${close(store.n)},${open('edges', store.m)}`;
  const out = outEdgeScratch();
  let k = 0;
  for (let u = 0; u < store.n; u++) {
    if (store.firstOut[u] === 0) continue;
    outEdges(store, u, out);
    for (let i = 0; i < out.to.length; i++) {
      const v = out.to[i]!;
      const code = out.codes[i]!;
      if (k++ > 0) buf += comma;
      if (gap !== '') buf += indented(code === PLAIN_EDGE ? [u, v] : [u, v, EDGE_DATA_BY_CODE[code]]);
      else buf += code === PLAIN_EDGE ? `[${u},${v}]` : `[${u},${v},${EDGE_DATA_TEXT[code]}]`;
    }
    if (buf.length >= CHUNK_CHARS) {
      options.onProgress?.(store.n + k, total);
      yield buf;
      check();
      buf = '';
    }
  }
  buf += `${close(store.m)}${gap === '' ? '' : '\n'}}`;
  options.onProgress?.(total, total);
  yield buf;
}
