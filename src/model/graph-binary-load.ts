/**
 * The binary readers' entry points (`ComputeGraph.fromBinary`, `readBinary`): where the bytes come
 * from, and the refusal as a `FileFormatError` naming the call, the file and the section.
 */
import { statSync } from 'node:fs';
import { FileFormatError } from '../errors/file-format-error.js';
import { BinaryRefusal } from './graph-binary-format.js';
import { buildStore, partsOfBytes, partsOfPieces, type BinarySource } from './graph-binary-read.js';
import type { GraphStore } from './graph-store.js';
import { sourcePieces } from './source-pieces.js';

export type { BinarySource };

/** A refusal of the framing or the contents as the error the callers throw; other errors pass. */
function refused(e: unknown, op: string, file: string): unknown {
  return e instanceof BinaryRefusal ? new FileFormatError(op, file, e.message, { cause: e.cause ?? e }) : e;
}

/** Reads bytes in memory into a store. @throws FileFormatError naming `<bytes>` as the file. */
export function readGraphBinaryBytes(bytes: Uint8Array, op: string): GraphStore {
  try {
    return buildStore(partsOfBytes(bytes), op);
  } catch (e) {
    throw refused(e, op, '<bytes>');
  }
}

/**
 * Reads a path (through a file stream, its size known from the start), pieces (`<stream>`) or
 * bytes into a store. @throws FileFormatError; InvalidArgumentError for a piece that is not bytes;
 * a file's own errors as they are.
 */
export async function readGraphBinary(source: BinarySource, op: string, onProgress?: (bytes: number) => void): Promise<GraphStore> {
  if (source instanceof Uint8Array) {
    const store = readGraphBinaryBytes(source, op);
    onProgress?.(source.length);
    return store;
  }
  const file = typeof source === 'string' ? source : '<stream>';
  const size = typeof source === 'string' ? statSync(source).size : null;
  const pieces = sourcePieces(source, op, { strings: false, highWaterMark: 1 << 22 });
  try {
    return buildStore(await partsOfPieces(pieces, size, onProgress), op);
  } catch (e) {
    throw refused(e, op, file);
  }
}
