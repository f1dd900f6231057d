/**
 * What counts as the text of a graph document, for every JSON reader (`fromJSON` of a string or
 * of bytes, `readJSON` of pieces): so that the same bytes, read whole or as they arrive, are
 * accepted or refused alike.
 *
 * - Bytes are decoded strictly: bytes that are not UTF-8 are refused, never replaced by U+FFFD
 *   (the graph would hold other names than the file).
 * - A byte order mark is not skipped: JSON text holds none (RFC 8259), `JSON.parse` refuses one,
 *   and so do the readers, with a message that says so.
 * - A string piece holding half of a surrogate pair, or a lone surrogate (which UTF-8 cannot
 *   carry), becomes the bytes of the text `fromJSON` would read: the pair joined with the next
 *   piece, a lone surrogate as its `\u` escape, which JSON reads as the same character.
 */
import { isWellFormed } from '../util/validate.js';

/** The readers' decoder: strict, and a leading byte order mark kept (for the refusal to name it). */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Why text that starts with a byte order mark is refused. */
export const BOM_PROBLEM = 'the text starts with a byte order mark (U+FEFF), which JSON text does not hold';

/** Why bytes that do not decode are refused. */
export const NOT_UTF8_PROBLEM = 'the bytes are not UTF-8';

/** The text of `bytes`, or null when they are not UTF-8. A view of shared memory is copied first (decoders refuse those). */
export function decodeJsonText(bytes: Uint8Array): string | null {
  const own = typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer ? bytes.slice() : bytes;
  try {
    return STRICT_UTF8.decode(own);
  } catch {
    return null;
  }
}

const HIGH_FIRST = 0xd800;
const HIGH_LAST = 0xdbff;
const LOW_FIRST = 0xdc00;
const LOW_LAST = 0xdfff;
const BACKSLASH = 0x5c;

/**
 * String pieces of one text as UTF-8 bytes, as if the pieces were joined first. `bytes` of each
 * string piece; `bytesPassed` for each byte piece between them (a backslash it ends with matters
 * to the next string piece); `flush` at the end.
 */
export class StringPieceEncoder {
  /** A high surrogate that ended the last string piece, waiting for its low half. */
  #high = '';
  /** Whether the text so far ends in an odd number of backslashes (so the next character is escaped). */
  #escaped = false;

  /** The bytes of string piece `s`. */
  bytes(s: string): Uint8Array {
    let t = this.#high + s;
    this.#high = '';
    const last = t.charCodeAt(t.length - 1);
    if (last >= HIGH_FIRST && last <= HIGH_LAST) {
      this.#high = t.slice(-1);
      t = t.slice(0, -1);
    }
    return this.#encode(t);
  }

  /** Notes a byte piece that came between string pieces; returns the bytes of a half pair left lone before it, if any. */
  bytesPassed(piece: Uint8Array): Uint8Array | null {
    const before = this.flush();
    let run = 0;
    while (run < piece.length && piece[piece.length - 1 - run] === BACKSLASH) run++;
    this.#noteRun(run, run === piece.length);
    return before;
  }

  /** The bytes still held (a lone high surrogate at the end of the text), or null. */
  flush(): Uint8Array | null {
    if (this.#high === '') return null;
    const t = this.#high;
    this.#high = '';
    return this.#encode(t);
  }

  #encode(t: string): Uint8Array {
    if (isWellFormed(t)) {
      let run = 0;
      while (run < t.length && t.charCodeAt(t.length - 1 - run) === BACKSLASH) run++;
      this.#noteRun(run, run === t.length);
      return Buffer.from(t, 'utf8');
    }
    let out = '';
    let from = 0;
    let escaped = this.#escaped;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c >= HIGH_FIRST && c <= LOW_LAST && !isPaired(t, i)) {
        // After an escaping backslash the raw character is a bad escape, which JSON.parse refuses
        // (a `\uXXXX` there would make a good one); U+FFFD keeps it a bad escape.
        out += t.slice(from, i) + (escaped ? '\ufffd' : `\\u${c.toString(16)}`);
        from = i + 1;
      }
      escaped = c === BACKSLASH ? !escaped : false;
    }
    this.#escaped = escaped;
    return Buffer.from(out + t.slice(from), 'utf8');
  }

  /** Notes that the text so far ends in `run` backslashes, `whole` when the piece is nothing else. */
  #noteRun(run: number, whole: boolean): void {
    const odd = run % 2 === 1;
    this.#escaped = whole ? this.#escaped !== odd : odd;
  }
}

/** Whether the surrogate at `i` of `t` is half of a pair. */
function isPaired(t: string, i: number): boolean {
  const isHigh = (k: number): boolean => k >= 0 && k < t.length && t.charCodeAt(k) >= HIGH_FIRST && t.charCodeAt(k) <= HIGH_LAST;
  const isLow = (k: number): boolean => k >= 0 && k < t.length && t.charCodeAt(k) >= LOW_FIRST && t.charCodeAt(k) <= LOW_LAST;
  return isHigh(i) ? isLow(i + 1) : isHigh(i - 1);
}
