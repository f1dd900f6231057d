/**
 * How large a graph `render` lays out as SVG or PNG, and how large a PNG it rasterises.
 *
 * Why there are limits: the layout is Graphviz compiled to WebAssembly, which recurses on the JS
 * thread's stack (about 1 MB in Node). A 300,000-node graph ended in `internal error: Maximum call
 * stack size exceeded`. Measured on Node 20.20 (x86-64, default stack), `@hpcc-js/wasm-graphviz`
 * 1.x, the DOT `toDot` writes (`render -o x.svg`, critical path highlighted):
 *
 * | shape | laid out | stack overflow at |
 * |---|---|---|
 * | chain, one stream | 11,000 nodes in 2.5 s | 11,500 nodes |
 * | chain, no stream | 11,000 nodes in 1.1 s | 12,000 nodes |
 * | chain, 8 streams round robin | 10,000 nodes in 6.5 s | 20,000 nodes |
 * | wide fan (1 → n → 1), one stream | 14,000 nodes in 77 s | 16,000 nodes |
 * | wide fan, no stream | 10,000 nodes | 14,000 nodes |
 * | random DAG (1–2 edges back ≤ 50 ids), 4 streams | 20,000 nodes in 78 s (10,000 in 33 s, 5,000 in 10 s) | — |
 * | random DAG, no stream | 10,000 nodes in 146 s (5,000 in 21 s) | — |
 * | dense DAG, 300 nodes, 10 edges each back anywhere (35,000 bends) | 95 s | — |
 * | dense DAG, 500 nodes, 4 edges each back anywhere (10,900 bends) | 8.3 s | — |
 *
 * The overflow follows the longest chain and the widest level (each at least ~11,000), so a bound
 * on the nodes bounds both: 5,000 nodes is under half the smallest overflow measured. The time
 * follows the nodes plus the bends of long edges (Graphviz draws an edge that spans k levels through
 * k − 1 virtual nodes): the dense 300-node graph has 35,000 bends and took 95 s. So a layout may
 * have at most 12,000 nodes and bends together (`layoutSize`): the slowest measured layout within
 * both limits, the 5,000-node random DAG without streams, took 21 s.
 *
 * A PNG's pixels live in the rasteriser's WebAssembly memory: 228 × 720,098 px (164 M pixels) was
 * drawn, 900,000 × 642 px (578 M) failed inside resvg (`recursive use of an object detected…`).
 * So a PNG may have at most 2^27 (134 M) pixels, and one side at most 2^20.
 */
import type { ComputeGraph } from '../index.js';
import { UsageError } from './usage-error.js';

/** The most nodes an SVG or PNG is laid out for (see the file comment for the measurements). */
export const LAYOUT_MAX_NODES = 5_000;
/** The most nodes plus bends of long edges (virtual nodes) a layout may have. */
export const LAYOUT_MAX_SIZE = 12_000;
/** The most pixels a PNG may have (width × height). */
export const PNG_MAX_PIXELS = 2 ** 27;
/** The longest side a PNG may have, in pixels. */
export const PNG_MAX_SIDE = 2 ** 20;

/** What to write instead of a picture too large to lay out here. */
const INSTEAD =
  'write DOT instead (-o <name>.dot; any size, and a native Graphviz lays it out: dot -Tsvg <name>.dot) or Mermaid (-o <name>.mmd), ' +
  'or see its shape with cudagraph inspect';

/**
 * The size of the layout Graphviz would make: the nodes plus, for every edge, the levels it skips
 * (each is a virtual node the edge bends through). Levels are the longest-path levels, a ranking at
 * least as spread as Graphviz's own (it minimises the total edge length), so this never counts low.
 */
export function layoutSize(graph: ComputeGraph): number {
  const n = graph.nodeCount();
  if (n === 0) return 0;
  const level = new Uint32Array(n);
  graph.levels().forEach((ids, l) => {
    for (const id of ids) level[id] = l;
  });
  let bends = 0;
  for (const [u, v] of graph.edges()) bends += level[v]! - level[u]! - 1;
  return n + bends;
}

/**
 * Why a graph is beyond \`LAYOUT_MAX_NODES\` or \`LAYOUT_MAX_SIZE\`, in one line that says what to
 * write instead; null when it can be laid out. Cheap next to the layout: O(n + m).
 */
export function layoutRefusal(graph: ComputeGraph, format: 'svg' | 'png'): string | null {
  const n = graph.nodeCount();
  const what = format.toUpperCase();
  if (n > LAYOUT_MAX_NODES) {
    return (
      `${n.toLocaleString('en-US')} nodes are too many to lay out as ${what} here (at most ${LAYOUT_MAX_NODES.toLocaleString('en-US')}: ` +
      `the WebAssembly Graphviz runs out of stack from about 11,000); ${INSTEAD}`
    );
  }
  const size = layoutSize(graph);
  if (size > LAYOUT_MAX_SIZE) {
    return (
      `this graph is too large to lay out as ${what} here: its ${n.toLocaleString('en-US')} nodes and the ${(size - n).toLocaleString('en-US')} bends ` +
      `of its long edges make ${size.toLocaleString('en-US')} (at most ${LAYOUT_MAX_SIZE.toLocaleString('en-US')}, a layout of under half a minute); ${INSTEAD}`
    );
  }
  return null;
}

/**
 * Refuses to lay out a graph beyond \`LAYOUT_MAX_NODES\` or \`LAYOUT_MAX_SIZE\` (\`layoutRefusal\`).
 * @throws UsageError naming the format, the graph's size and the limit.
 */
export function refuseLargeLayout(graph: ComputeGraph, format: 'svg' | 'png'): void {
  const refusal = layoutRefusal(graph, format);
  if (refusal !== null) throw new UsageError(refusal);
}

/** The one-line error for a layout that ran out of stack although the limits let it through. */
export function layoutOverflowError(cause: unknown): UsageError {
  return new UsageError(`the WebAssembly Graphviz ran out of stack laying out this graph; ${INSTEAD}`, { cause });
}

/**
 * Refuses a PNG of `width` × `height` pixels beyond `PNG_MAX_PIXELS` or `PNG_MAX_SIDE`, saying which
 * `--scale` would fit (when one of at least 0.1 does) or to write SVG.
 * @throws UsageError.
 */
export function refuseLargePng(width: number, height: number, scale: number): void {
  if (width * height <= PNG_MAX_PIXELS && width <= PNG_MAX_SIDE && height <= PNG_MAX_SIDE) return;
  const fit = scale * Math.min(Math.sqrt(PNG_MAX_PIXELS / (width * height)), PNG_MAX_SIDE / width, PNG_MAX_SIDE / height);
  const fix = fit >= 0.1 ? `pass --scale ${Math.floor(fit * 100) / 100} or less, or write SVG (-o <name>.svg)` : 'write SVG (-o <name>.svg) instead';
  throw new UsageError(
    `the PNG would be ${Math.round(width).toLocaleString('en-US')} × ${Math.round(height).toLocaleString('en-US')} pixels, more than the rasteriser can hold ` +
      `(at most ${PNG_MAX_PIXELS.toLocaleString('en-US')} pixels and ${PNG_MAX_SIDE.toLocaleString('en-US')} a side); ${fix}`,
  );
}

/**
 * True for the error a WebAssembly layout throws when it runs out of stack: V8's RangeError, which
 * the Graphviz wrapper passes on as a plain Error with the same message.
 */
export function isStackOverflow(e: unknown): boolean {
  return e instanceof Error && /^Maximum call stack size exceeded/.test(e.message);
}
