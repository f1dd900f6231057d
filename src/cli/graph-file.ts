/** Reading and writing graph files for the commands, with one-line errors for the user's mistakes. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
