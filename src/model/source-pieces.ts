/**
 * The pieces the streaming readers (`ComputeGraph.readJSON`, `readBinary`) take from their source:
 * a file read through a stream, or the caller's Readable or (async) iterable, each piece checked.
 *
 * Why each piece is checked: a source is the caller's, and may yield anything (an object-mode
 * Readable of numbers, a Uint16Array). Taken as bytes, such a piece would throw a raw TypeError
 * deep in a reader, or be read as other bytes than it holds (a Uint16Array's elements are not
 * bytes; a binary file's bytes decoded to a string and encoded back are not the file). It is
 * refused instead, naming the piece.
 */
import { createReadStream } from 'node:fs';
import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { StringPieceEncoder } from './json-text.js';

/** How a reader takes pieces: whether strings are text (encoded as UTF-8), and the file stream's piece size. */
export interface PieceRules {
  readonly strings: boolean;
  readonly highWaterMark: number;
}

/**
 * The pieces of `source` as bytes: a path through a file stream, a string piece (where `rules`
 * allow them) encoded as UTF-8 as if the pieces were one text (json-text.ts), a Uint8Array (a
 * Buffer is one) as it is.
 * @throws InvalidArgumentError naming `op` and `source` for a piece of another type; the
 *   source's own errors as they are.
 */
export async function* sourcePieces(source: string | AsyncIterable<unknown> | Iterable<unknown>, op: string, rules: PieceRules): AsyncGenerator<Uint8Array> {
  const pieces = typeof source === 'string' ? createReadStream(source, { highWaterMark: rules.highWaterMark }) : source;
  const text = rules.strings ? new StringPieceEncoder() : null;
  let index = 0;
  for await (const piece of pieces as AsyncIterable<unknown>) {
    if (piece instanceof Uint8Array) {
      const held = text?.bytesPassed(piece);
      if (held != null) yield held;
      yield piece;
    } else if (text !== null && typeof piece === 'string') yield text.bytes(piece);
    else {
      const wanted = text !== null ? 'byte (Uint8Array) or string pieces' : 'byte (Uint8Array) pieces';
      throw new InvalidArgumentError(op, 'source', `source must yield ${wanted}, got ${describe(piece)} as piece ${index}`);
    }
    index++;
  }
  const rest = text?.flush();
  if (rest != null) yield rest;
}
