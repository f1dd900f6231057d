/**
 * Pictures of a `ComputeGraph`: Graphviz DOT (the model's `toDot`: a cluster, i.e. a lane, and a
 * colour per stream, a shape per kind, the critical path thick and red), SVG laid out by Graphviz
 * compiled to WebAssembly (no system Graphviz needed), PNG rasterised from that SVG by resvg (also
 * WebAssembly), and Mermaid text for Markdown viewers.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import type { ComputeGraph } from '../index.js';
import { loadFont, type LoadedFont } from './fonts.js';
import { isStackOverflow, layoutOverflowError, refuseLargeLayout, refuseLargePng } from './layout-limits.js';
import { toMermaid } from './mermaid.js';
import { OptionError } from './usage-error.js';

/** The picture formats, by file extension. */
export const PICTURE_FORMATS = ['svg', 'png', 'dot', 'mmd'] as const;
/** A picture format. */
export type PictureFormat = (typeof PICTURE_FORMATS)[number];

const EXTENSIONS: Record<string, PictureFormat> = { '.svg': 'svg', '.png': 'png', '.dot': 'dot', '.gv': 'dot', '.mmd': 'mmd', '.mermaid': 'mmd' };

/** The format of an output path, from its extension. @throws UsageError for an unknown extension. */
export function formatOf(path: string): PictureFormat {
  const f = EXTENSIONS[extname(path).toLowerCase()];
  if (f === undefined) {
    throw new OptionError(`cannot tell the picture format from '${path}': the output must end in .svg, .png, .dot or .mmd`);
  }
  return f;
}

/** How to draw a graph. */
export interface PictureOptions {
  /** Drawn at the top. Default: none. */
  readonly title?: string;
  /** Highlight the critical path (default true). */
  readonly criticalPath?: boolean;
  /** PNG only: the font for the text, a file or one already loaded by `loadFont` (default: found on the system). */
  readonly font?: string | LoadedFont;
  /** PNG only: pixels per SVG point (default 1.5). */
  readonly scale?: number;
}

/** The nodes to highlight: the critical path, or none (also for an empty graph). */
export function highlightOf(graph: ComputeGraph, options: PictureOptions): number[] {
  if (options.criticalPath === false || graph.nodeCount() === 0) return [];
  return [...graph.criticalPath().nodes];
}

/** The graph as Graphviz DOT text (the model's `toDot`, with the critical path highlighted). */
export function toDot(graph: ComputeGraph, options: PictureOptions = {}): string {
  return graph.toDot({ ...(options.title === undefined ? {} : { title: options.title }), highlight: highlightOf(graph, options) });
}

let graphviz: Promise<Graphviz> | null = null;

/**
 * Lays out DOT text with Graphviz (WebAssembly) and returns the SVG.
 * @throws UsageError when the layout runs out of stack (`drawGraph` refuses graphs that would,
 *   as measured in layout-limits.ts; this catches what the measurements missed).
 */
export async function dotToSvg(dot: string): Promise<string> {
  graphviz ??= Graphviz.load();
  const gv = await graphviz;
  try {
    return gv.dot(dot, 'svg');
  } catch (e) {
    if (!isStackOverflow(e)) throw e;
    // The module was left in the middle of a call: the next layout starts from a fresh one.
    graphviz = null;
    throw layoutOverflowError(e);
  }
}

type ResvgModule = typeof import('@resvg/resvg-wasm');
let resvg: Promise<ResvgModule> | null = null;

/** resvg with its WebAssembly initialised (once per process; the .wasm is read from node_modules). */
function loadResvg(): Promise<ResvgModule> {
  resvg ??= (async () => {
    const mod = await import('@resvg/resvg-wasm');
    const wasm = createRequire(import.meta.url).resolve('@resvg/resvg-wasm/index_bg.wasm');
    await mod.initWasm(readFileSync(wasm));
    return mod;
  })();
  return resvg;
}

/** A rasterised picture. */
export interface Png {
  readonly bytes: Uint8Array;
  readonly width: number;
  readonly height: number;
  /** The font file used for the text. */
  readonly font: string;
}

/**
 * Rasterises SVG to PNG on a white background, `scale` pixels per point.
 * @throws UsageError when no font can be found or read (see `loadFont`).
 */
export async function svgToPng(svg: string, options: { font?: string | LoadedFont; scale?: number } = {}): Promise<Png> {
  const font = typeof options.font === 'object' ? options.font : loadFont(options.font);
  const { Resvg } = await loadResvg();
  const zoom = options.scale ?? 1.5;
  const r = new Resvg(svg, {
    font: { fontBuffers: [font.bytes] },
    background: 'white',
    fitTo: { mode: 'zoom', value: zoom },
  });
  try {
    // Before resvg allocates the pixels: beyond its memory it fails with an unhelpful panic.
    refuseLargePng(r.width * zoom, r.height * zoom, zoom);
    const image = r.render();
    try {
      return { bytes: image.asPng(), width: image.width, height: image.height, font: font.path };
    } finally {
      image.free();
    }
  } finally {
    r.free();
  }
}

/** A drawn picture: text (SVG, DOT, Mermaid) or a PNG. */
export type Picture = { readonly format: 'svg' | 'dot' | 'mmd'; readonly text: string } | ({ readonly format: 'png' } & Png);

/**
 * Draws `graph` in `format`.
 * @throws UsageError for a PNG without a font, and for an SVG or PNG of a graph too large to lay out
 *   here or a PNG too large to rasterise (layout-limits.ts; DOT and Mermaid have no limit).
 */
export async function drawGraph(graph: ComputeGraph, format: PictureFormat, options: PictureOptions = {}): Promise<Picture> {
  if (format === 'mmd') return { format, text: toMermaid(graph, { title: options.title, highlight: highlightOf(graph, options) }) };
  if (format !== 'dot') refuseLargeLayout(graph, format);
  const dot = toDot(graph, options);
  if (format === 'dot') return { format, text: dot };
  const svg = await dotToSvg(dot);
  if (format === 'svg') return { format, text: svg };
  return { format, ...(await svgToPng(svg, { font: options.font, scale: options.scale })) };
}
