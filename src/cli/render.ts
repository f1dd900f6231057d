/**
 * `cudagraph render <graph.json> -o out.svg|.png|.dot|.mmd`: draws a saved `ComputeGraph`, one lane
 * and colour per stream, a shape per kind, the critical path thick and red.
 */
import { basename } from 'node:path';
import { loadFont } from './fonts.js';
import { PROGRESS_DELAY_MS, readGraphFile, refuseOverwritingInput } from './graph-file.js';
import { writeOutput, writeOutputFile } from './output-file.js';
import type { Output } from './output.js';
import { dotToSvg, drawGraph, formatOf, highlightOf, svgToPng } from './picture.js';
import { LAYOUT_MAX_NODES, layoutRefusal } from './layout-limits.js';
import { summaryToDot } from './summary-picture.js';
import { summarizeGraph } from '../model/summary-graph.js';
import type { LoadedFont } from './fonts.js';
import { ProgressBar } from './progress.js';
import { terminalText } from './terminal-text.js';
import { OptionError, UsageError } from './usage-error.js';
import { numberOption } from './options.js';
import type { ComputeGraph } from '../index.js';

/** Options of `cudagraph render`. */
export interface RenderOptions {
  readonly output: string;
  /** The title; default: the file name with the graph's counts. `''` for none. */
  readonly title?: string;
  /** Highlight the critical path (default true). */
  readonly criticalPath: boolean;
  readonly font?: string;
  readonly scale?: string;
  /** Draw a summary (one node per group of ops, `summarizeGraph`) even where the whole graph fits. */
  readonly summary?: boolean;
  /** Lay out every node even beyond the limits, where SVG and PNG are refused instead of summarised. */
  readonly full?: boolean;
}

/** Parses `--scale`: a number in 0.1..10. @throws OptionError otherwise. */
export function parseScale(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return numberOption('--scale', value, (n) => n >= 0.1 && n <= 10, 'from 0.1 to 10');
}

/**
 * Runs `cudagraph render`.
 * SVG and PNG of a graph beyond the layout limits (layout-limits.ts), and any picture with
 * `--summary`, draw a summary instead (`summarizeGraph`), with a note on stderr saying so.
 * @throws UsageError for a bad input file, an output that is the input file, a bad output path or
 *   extension, a `--font` that is not a TrueType or OpenType font, `--summary` with `--full` or
 *   with Mermaid, or (with `--full`) a graph beyond the layout limits.
 */
export async function render(file: string, options: RenderOptions, io: Output): Promise<void> {
  const format = formatOf(options.output);
  const scale = parseScale(options.scale);
  refuseOverwritingInput(file, options.output);
  // The font is checked before the layout, which can take a while: a bad --font fails at once.
  const font = format === 'png' || options.font !== undefined ? loadFont(options.font) : undefined;
  if (options.summary === true && options.full === true) throw new OptionError('--summary and --full cannot be given together');
  if (options.summary === true && format === 'mmd') throw new OptionError('--summary draws .svg, .png or .dot, not Mermaid');
  const graph = await readGraphFile(file, io);
  if (format === 'svg' || format === 'png') {
    const refusal = graph.nodeCount() === 0 ? null : layoutRefusal(graph, format);
    if (refusal !== null && options.full === true) throw new UsageError(`${refusal}, or leave out --full to draw a summary`);
    if (refusal !== null || options.summary === true) {
      await renderSummary(file, graph, format, options, io, refusal !== null, font, scale);
      return;
    }
  } else if (format === 'dot' && options.summary === true) {
    await renderSummary(file, graph, format, options, io, false, font, scale);
    return;
  }
  const highlight = options.criticalPath && graph.nodeCount() > 0;
  const title =
    options.title ??
    `${basename(file)}: ${graph.nodeCount()} nodes on ${graph.streams().length} streams${highlight ? '; critical path thick and red' : ''}`;
  const path = highlight ? graph.criticalPath().nodes.length : 0;
  const what = `${graph.nodeCount()} nodes, ${graph.edgeCount()} edges, ${graph.streams().length} streams${highlight ? `, critical path of ${path} nodes highlighted` : ''}`;
  if (format === 'dot') {
    await writeDotFile(graph, options.output, { ...(title === '' ? {} : { title }), highlight: highlightOf(graph, { criticalPath: options.criticalPath }) }, io);
    io.out(`wrote ${terminalText(options.output)} (DOT, ${what})\n`);
    return;
  }
  const picture = await drawGraph(graph, format, {
    ...(title === '' ? {} : { title }),
    criticalPath: options.criticalPath,
    ...(font === undefined ? {} : { font }),
    ...(scale === undefined ? {} : { scale }),
  });
  if (picture.format === 'png') {
    await writeOutputFile(options.output, picture.bytes);
    io.out(`wrote ${terminalText(options.output)} (PNG, ${picture.width}×${picture.height} px, ${what}; font ${terminalText(picture.font)})\n`);
  } else {
    await writeOutputFile(options.output, picture.text);
    io.out(`wrote ${terminalText(options.output)} (${picture.format.toUpperCase()}, ${what})\n`);
  }
}

/**
 * Draws the summary of `graph` (`summarizeGraph`) and says on stderr that the picture is one, and
 * how to get the whole graph; `beyondLimit` says the summary was drawn because the whole graph is
 * too large to lay out here.
 */
async function renderSummary(
  file: string,
  graph: ComputeGraph,
  format: 'svg' | 'png' | 'dot',
  options: RenderOptions,
  io: Output,
  beyondLimit: boolean,
  font: LoadedFont | undefined,
  scale: number | undefined,
): Promise<void> {
  const summary = summarizeGraph(graph);
  const groups = summary.nodes.length;
  const how = summary.by === 'segment' ? 'one per stream segment' : 'by stream and level band';
  const count = (n: number): string => n.toLocaleString('en-US');
  const highlight = options.criticalPath && graph.nodeCount() > 0;
  const title =
    options.title ??
    `${basename(file)}: ${count(graph.nodeCount())} nodes on ${graph.streams().length} streams, summarised as ${count(groups)} groups (${how})${highlight ? '; critical path thick and red' : ''}`;
  const dot = summaryToDot(summary, { ...(title === '' ? {} : { title }), criticalPath: options.criticalPath });
  const what = `summary: ${count(graph.nodeCount())} nodes as ${count(groups)} groups, ${count(summary.edges.length)} edges between them${highlight ? `, critical path through ${summary.criticalPath.length} groups highlighted` : ''}`;
  const full =
    format === 'dot'
      ? 'leave out --summary for every node'
      : beyondLimit
        ? `every node: write DOT (-o <name>.dot) or pass --full (refused above ${count(LAYOUT_MAX_NODES)} nodes)`
        : 'leave out --summary for every node';
  const why = beyondLimit ? ` (${count(graph.nodeCount())} nodes are beyond what is laid out here)` : '';
  if (format === 'dot') {
    await writeOutputFile(options.output, dot);
    io.out(`wrote ${terminalText(options.output)} (DOT, ${what})\n`);
  } else {
    const svg = await dotToSvg(dot);
    if (format === 'svg') {
      await writeOutputFile(options.output, svg);
      io.out(`wrote ${terminalText(options.output)} (SVG, ${what})\n`);
    } else {
      const png = await svgToPng(svg, { ...(font === undefined ? {} : { font }), ...(scale === undefined ? {} : { scale }) });
      await writeOutputFile(options.output, png.bytes);
      io.out(`wrote ${terminalText(options.output)} (PNG, ${png.width}×${png.height} px, ${what}; font ${terminalText(png.font)})\n`);
    }
  }
  const each = summary.by === 'segment' ? "one stream's ops between its joins" : "one stream's ops in a band of levels (or several streams' where they wait on each other in turn)";
  io.err(`cudagraph: note: ${terminalText(options.output)} is a summary${why}, each node ${each}; ${full}\n`);
}

/**
 * Writes the DOT text to `path` as it is made (`graph.writeDot`): DOT has no size limit, and the
 * text of a few million nodes is longer than a string can be. A write of over a second draws a
 * progress bar on a terminal's stderr. Whole or not at all (`writeOutput`).
 * @throws UsageError when the file cannot be written.
 */
async function writeDotFile(graph: ComputeGraph, path: string, options: { title?: string; highlight: number[] }, io: Output): Promise<void> {
  const bar = new ProgressBar(io, graph.nodeCount() + graph.edgeCount(), 30, PROGRESS_DELAY_MS);
  try {
    await writeOutput(path, (to) => graph.writeDot(to, { ...options, onProgress: (done) => bar.update(done, `writing ${path}`) }));
  } finally {
    bar.done();
  }
}
