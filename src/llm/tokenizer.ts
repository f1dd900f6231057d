/**
 * The byte-level tokenizer of the default vocabulary: a text's UTF-8 bytes are its tokens 0–255;
 * `BOS` (256) starts every sequence and `EOS` (257) ends one. Decoding drops the specials and any
 * token outside the bytes, and keeps incomplete UTF-8 sequences for the next chunk (a stream of
 * tokens decodes into whole characters).
 */

/** Beginning of sequence. */
export const BOS = 256;
/** End of sequence: generation stops when it is sampled. */
export const EOS = 257;

/** `BOS` then the UTF-8 bytes of `text`. */
export function encode(text: string): Int32Array {
  const bytes = new TextEncoder().encode(text);
  const out = new Int32Array(bytes.length + 1);
  out[0] = BOS;
  out.set(bytes, 1);
  return out;
}

/** Decodes a stream of tokens into text, chunk by chunk (a character split over chunks comes out whole). */
export class TokenDecoder {
  readonly #decoder = new TextDecoder('utf-8', { fatal: false });

  /** The text of `tokens` that is complete so far (bytes only; specials and other tokens dropped). */
  push(tokens: ArrayLike<number>): string {
    const bytes: number[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (Number.isInteger(t) && t >= 0 && t < 256) bytes.push(t);
    }
    return this.#decoder.decode(Uint8Array.from(bytes), { stream: true });
  }

  /** What is left at the end (an incomplete character as U+FFFD). */
  end(): string {
    return this.#decoder.decode();
  }
}
