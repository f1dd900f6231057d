/**
 * `cudagraph inspect <graph.json>`: what a saved graph holds: nodes by kind, streams, depth (levels),
 * width (the widest level), the critical path, and the cross-stream joins.
 */
import { readGraphFile } from './graph-file.js';
import type { Output } from './output.js';
import { crossStreamJoins, formatSummary, streamLabel, summarize, type GraphSummary } from './summary.js';
import type { ComputeGraph } from '../index.js';
import { nameForTerminal, terminalText } from './terminal-text.js';
import { cutNote, textList, withFullLists } from './text-lists.js';

/** Options of `cudagraph inspect`. */
export interface InspectOptions {
  readonly json: boolean;
  /** List every source, sink, stream, critical-path node and join in the text too (default: the first 40 and last 10 of each). */
  readonly full?: boolean;
}

/** Runs `cudagraph inspect`. @throws UsageError for a file that cannot be read or is not a graph. */
export async function inspect(file: string, options: InspectOptions, io: Output): Promise<void> {
  const graph = await readGraphFile(file, io);
  const summary = summarize(graph);
  const joins = crossStreamJoins(graph);
  const empty = graph.nodeCount() === 0;
  const sources = empty ? [] : graph.sources().map(Number);
  const sinks = empty ? [] : graph.sinks().map(Number);
  if (options.json) {
    io.out(JSON.stringify({ file, ...summary, depth: summary.levels, width: summary.widestLevel.width, sources, sinks, joins }, null, 2) + '\n');
    return;
  }
  if (options.full === true) {
    withFullLists(() => printText(file, graph, summary, joins, sources, sinks, io));
    return;
  }
  printText(file, graph, summary, joins, sources, sinks, io);
}

/** The text report. */
function printText(file: string, graph: ComputeGraph, summary: GraphSummary, joins: ReturnType<typeof crossStreamJoins>, sources: number[], sinks: number[], io: Output): void {
  // Names and the path are the user's text: shown escaped where they hold control characters.
  const name = (id: number): string => nameForTerminal(graph.node(id as never).name);
  const lines = [
    `${terminalText(file)}: ${summary.nodes} nodes, ${summary.edges} edges`,
    ...formatSummary(summary),
    `depth:          ${summary.levels} (levels: the longest chain of dependent nodes)`,
    `width:          ${summary.widestLevel.width} (the most nodes that can run at once, level by level)`,
    `sources:        ${textList(sources, name) || '(none)'}${cutNote(sources.length)}`,
    `sinks:          ${textList(sinks, name) || '(none)'}${cutNote(sinks.length)}`,
    `cross-stream joins (${joins.length}${cutNote(joins.length) === '' ? '' : '; --json lists every one'}):`,
    ...(joins.length === 0 ? [] : [`  ${textList(joins, (j) => `${streamLabel(j.from.stream)} → ${streamLabel(j.to.stream)}: ${nameForTerminal(j.from.name)} → ${nameForTerminal(j.to.name)}`, '\n  ')}`]),
  ];
  io.out(lines.join('\n') + '\n');
}
