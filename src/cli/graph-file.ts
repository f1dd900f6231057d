/** Reading and writing graph files for the commands, with one-line errors for the user's mistakes. */
import { mkdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ComputeGraph } from '../index.js';
import { UsageError, fileErrorReason } from './usage-error.js';

/**
 * Loads a saved `ComputeGraph` (the JSON that `graph.toJSON()`, `cudagraph demo` write).
 * @throws UsageError when the file cannot be read, is not JSON, or is not a valid graph document.
 */
export function readGraphFile(path: string): ComputeGraph {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${fileErrorReason(e)}`, { cause: e });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${path} is not JSON: ${(e as Error).message}`, { cause: e });
  }
  try {
    return ComputeGraph.fromJSON(doc);
  } catch (e) {
    const why = (e as Error).message.replace(/^ComputeGraph\.fromJSON: /, '');
    throw new UsageError(`${path} is not a cudagraph graph file: ${why}`, { cause: e });
  }
}

/** Writes `data` to `path`, creating its folder. @throws UsageError when it cannot. */
export function writeOutputFile(path: string, data: string | Uint8Array): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, data);
  } catch (e) {
    throw new UsageError(`cannot write ${path}: ${fileErrorReason(e)}`, { cause: e });
  }
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
