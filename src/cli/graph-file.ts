/** Reading and writing graph files for the commands, with one-line errors for the user's mistakes. */
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { ComputeGraph, FileFormatError, GraphError } from '../index.js';
import type { Output } from './output.js';
import { ProgressBar } from './progress.js';
import { UsageError, fileErrorReason, inputFileSize } from './usage-error.js';
import { writeOutput } from './output-file.js';

/** How long work runs before the CLI draws a progress bar for it (on a terminal only). */
export const PROGRESS_DELAY_MS = 1000;

/** The bytes a binary graph file starts with (`CGRAPH`, graph-binary-format.ts). */
const BINARY_MAGIC = 'CGRAPH';

/** True when the file starts with the binary form's magic bytes (any other file is read as JSON). */
function isBinaryFile(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(BINARY_MAGIC.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.toString('latin1') === BINARY_MAGIC;
  } finally {
    closeSync(fd);
  }
}

/**
 * Loads a saved `ComputeGraph`: the binary form (`writeBinary`, `cudagraph convert … -o g.cgraph`),
 * known by its first bytes, or else the JSON that `graph.toJSON()`, `writeJSON`, `cudagraph demo`
 * write. Either is read as it arrives (`readBinary`, `readJSON`): the file is never held whole as
 * text, and a load of over a second draws a progress bar on a terminal's stderr.
 * @throws UsageError when the file cannot be read (or is not a regular file), is not JSON, or is not
 *   a valid graph file.
 */
export async function readGraphFile(path: string, io?: Output): Promise<ComputeGraph> {
  const size = inputFileSize(path);
  const bar = io === undefined ? null : new ProgressBar(io, size, 30, PROGRESS_DELAY_MS);
  const options = bar === null ? {} : { onProgress: (bytes: number) => bar.update(bytes, `reading ${path}`) };
  try {
    if (isBinaryFile(path)) return await ComputeGraph.readBinary(path, options);
    return await ComputeGraph.readJSON(path, options);
  } catch (e) {
    if (e instanceof FileFormatError) throw new UsageError(`${path} is not a valid binary graph file: ${e.message.slice(`${e.operation}: ${e.file}: `.length)}`, { cause: e });
    if (!(e instanceof GraphError)) throw new UsageError(`cannot read ${path}: ${fileErrorReason(e)}`, { cause: e });
    const why = e.message.replace(/^ComputeGraph\.readJSON: /, '');
    const syntax = /^not JSON text \((.*)\)$/s.exec(why);
    if (syntax !== null) throw new UsageError(`${path} is not JSON: ${syntax[1]}`, { cause: e });
    throw new UsageError(`${path} is not a cudagraph graph file: ${why}`, { cause: e });
  } finally {
    bar?.done();
  }
}

/**
 * Writes `graph` to `path` (its folder created) in the form its extension names: `.cgraph` the
 * binary form, anything else JSON, both streamed, whole or not at all (`writeOutput`).
 * @throws UsageError when it cannot.
 */
export async function writeGraphFile(path: string, graph: ComputeGraph): Promise<number> {
  const binary = path.endsWith('.cgraph');
  return writeOutput(path, (to) => (binary ? graph.writeBinary(to) : graph.writeJSON(to)));
}

/**
 * True when `a` and `b` name one existing file, however they are spelled: `g.dot` and `./g.dot`, a
 * symlink and its target, two hard links. Compares device and inode (what the system calls the same
 * file); where a filesystem reports no inodes (0), compares the resolved real paths.
 */
export function sameFile(a: string, b: string): boolean {
  let sa, sb;
  try {
    sa = statSync(a);
    sb = statSync(b);
  } catch {
    return false; // one of them does not exist (yet): writing cannot destroy the other
  }
  if (sa.ino !== 0 || sb.ino !== 0) return sa.dev === sb.dev && sa.ino === sb.ino;
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/**
 * Refuses to write the output over the input file (`render g.dot -o g.dot`, also through a
 * symlink or another spelling): the graph would be replaced by its picture.
 * @throws UsageError when they are the same file.
 */
export function refuseOverwritingInput(input: string, output: string): void {
  if (sameFile(input, output)) {
    throw new UsageError(`-o ${output} is the input file ${input}: writing the picture would destroy the graph; choose another output file`);
  }
}
