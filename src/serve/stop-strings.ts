/**
 * Stop strings, as OpenAI's completions define them: generation ends as soon as the text contains
 * one of them, and the text returned stops just before it (before the earliest, when one token's
 * text completes several). Text arrives a piece at a time (each token's characters), so a piece
 * that might be the start of a stop string is held back until the next pieces say whether it is;
 * what is emitted is never taken back.
 */

/** The most stop strings a request may give, and the longest one (UTF-16 units). */
export const STOP_LIMITS = Object.freeze({ count: 4, length: 256 });

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a `stop` field is refused, or `null` when it is fine (a string, or 1 to 4 of them, each non-empty, well-formed, at most 256 long). */
export function stopProblem(stop: unknown): string | null {
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || list.length === 0 || list.length > STOP_LIMITS.count) {
    return `stop must be a string or a list of 1 to ${STOP_LIMITS.count} strings`;
  }
  for (const [i, s] of list.entries()) {
    if (typeof s !== 'string' || s.length === 0 || s.length > STOP_LIMITS.length || LONE_SURROGATE.test(s)) {
      return `stop[${i}] must be a non-empty string of at most ${STOP_LIMITS.length} characters (no lone surrogates)`;
    }
  }
  return null;
}

/** Finds the first stop string in text that arrives in pieces. */
export class StopMatcher {
  readonly #stops: readonly string[];
  #held = '';
  #stopped = false;

  constructor(stops: readonly string[]) {
    this.#stops = stops;
  }

  /** True once a stop string was found; later pieces are ignored. */
  hasStopped(): boolean {
    return this.#stopped;
  }

  /** The text that can be emitted now, given the next piece: everything before a stop string, or all but a tail that may start one. */
  push(piece: string): string {
    if (this.#stopped) return '';
    const text = this.#held + piece;
    let cut = -1;
    for (const s of this.#stops) {
      const at = text.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.#stopped = true;
      this.#held = '';
      return text.slice(0, cut);
    }
    // Hold back the longest tail of the text that is a proper beginning of some stop string.
    let keep = 0;
    for (const s of this.#stops) {
      for (let n = Math.min(s.length - 1, text.length); n > keep; n--) {
        if (text.endsWith(s.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.#held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** At the end of the text: what was held back (it started no stop string after all). */
  flush(): string {
    const held = this.#held;
    this.#held = '';
    return this.#stopped ? '' : held;
  }
}
