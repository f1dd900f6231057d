/**
 * `cudagraph render <graph.json> -o out.svg|.png|.dot|.mmd`: draws a saved `ComputeGraph`, one lane
 * and colour per stream, a shape per kind, the critical path thick and red.
 */
import { basename } from 'node:path';
import { nameText } from '../model/bounded-text.js';
import { loadFont } from './fonts.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PROGRESS_DELAY_MS, readGraphFile, refuseOverwritingInput, writeOutputFile } from './graph-file.js';
import type { Output } from './output.js';
import { drawGraph, formatOf, highlightOf } from './picture.js';
import { ProgressBar } from './progress.js';
import { fileErrorReason } from './usage-error.js';
import { terminalText } from './terminal-text.js';
import { UsageError } from './usage-error.js';
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
}

/** Parses `--scale`: a number in 0.1..10. @throws UsageError otherwise. */
export function parseScale(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0.1 || n > 10) throw new UsageError(`--scale must be a number from 0.1 to 10, got '${nameText(value)}'`);
  return n;
}

/**
 * Runs `cudagraph render`.
 * @throws UsageError for a bad input file, an output that is the input file, a bad output path or
 *   extension, or a `--font` that is not a TrueType or OpenType font.
 */
export async function render(file: string, options: RenderOptions, io: Output): Promise<void> {
  const format = formatOf(options.output);
  const scale = parseScale(options.scale);
  refuseOverwritingInput(file, options.output);
  // The font is checked before the layout, which can take a while: a bad --font fails at once.
  const font = format === 'png' || options.font !== undefined ? loadFont(options.font) : undefined;
  const graph = await readGraphFile(file, io);
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
    writeOutputFile(options.output, picture.bytes);
    io.out(`wrote ${terminalText(options.output)} (PNG, ${picture.width}×${picture.height} px, ${what}; font ${terminalText(picture.font)})\n`);
  } else {
    writeOutputFile(options.output, picture.text);
    io.out(`wrote ${terminalText(options.output)} (${picture.format.toUpperCase()}, ${what})\n`);
  }
}

/**
 * Writes the DOT text to `path` as it is made (`graph.writeDot`): DOT has no size limit, and the
 * text of a few million nodes is longer than a string can be. A write of over a second draws a
 * progress bar on a terminal's stderr.
 * @throws UsageError when the file cannot be written.
 */
async function writeDotFile(graph: ComputeGraph, path: string, options: { title?: string; highlight: number[] }, io: Output): Promise<void> {
  const bar = new ProgressBar(io, graph.nodeCount() + graph.edgeCount(), 30, PROGRESS_DELAY_MS);
  try {
    mkdirSync(dirname(path), { recursive: true });
    await graph.writeDot(path, { ...options, onProgress: (done) => bar.update(done, `writing ${path}`) });
  } catch (e) {
    throw new UsageError(`cannot write ${path}: ${fileErrorReason(e)}`, { cause: e });
  } finally {
    bar.done();
  }
}
