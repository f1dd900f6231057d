/**
 * `cudagraph convert <in> -o <out>`: a saved graph (JSON or binary) written in the form the
 * output's extension names: `.cgraph` the binary form, `.json` the JSON document.
 */
import { extname } from 'node:path';
import { readGraphFile, sameFile, writeGraphFile } from './graph-file.js';
import type { Output } from './output.js';
import { terminalText } from './terminal-text.js';
import { OptionError, UsageError } from './usage-error.js';

/** Options of `cudagraph convert`. */
export interface ConvertOptions {
  readonly output: string;
}

/** Runs `cudagraph convert`. @throws UsageError for an unknown output extension, or a file that cannot be read or written. */
export async function convert(file: string, options: ConvertOptions, io: Output): Promise<void> {
  const ext = extname(options.output);
  if (ext !== '.cgraph' && ext !== '.json') throw new OptionError(`-o ${options.output}: the output must end in .cgraph (binary) or .json`);
  if (sameFile(file, options.output)) throw new UsageError(`-o ${options.output} is the input file ${file}: the graph is read as it is written; choose another output file`);
  const graph = await readGraphFile(file, io);
  const bytes = await writeGraphFile(options.output, graph);
  io.out(`wrote ${terminalText(options.output)} (${ext === '.cgraph' ? 'binary' : 'JSON'}, ${graph.nodeCount()} nodes, ${graph.edgeCount()} edges, ${bytes} ${ext === '.cgraph' ? 'bytes' : 'characters'})\n`);
}
