/**
 * What a generation endpoint hands the server: the request it accepted (the text to continue, the
 * budget, the sampling, where the text stops) and the shape of its answers. The server runs every
 * endpoint's generation the same way (one path for submitting, streaming, stop strings,
 * cancellation on disconnect and errors); only the objects it writes differ.
 */
import type { GenerationResult } from './scheduler.js';
import { sseEvent } from './sse.js';
import type { GenerationFields } from './request-fields.js';

/** Why a choice ended, as OpenAI's API says it: `EOS` or a stop string, or `max_tokens`. */
export type ChoiceFinish = 'stop' | 'length';

/** OpenAI's `usage` object. */
export interface Usage {
  /** Prompt tokens, the `BOS` included. */
  readonly prompt_tokens: number;
  /** Tokens generated, an ending `EOS` included. */
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** The objects an endpoint answers with; each call makes a new one. */
export interface AnswerShape {
  /** The stream's first chunk, sent as soon as the request is accepted, or `null` for none (chat: the role). */
  first(): object | null;
  /** A stream chunk carrying the next piece of the text. */
  piece(text: string): object;
  /** `sseEvent(piece(text))`, the event each token sends, made without building the object (`pieceEvents`). */
  pieceEvent(text: string): string;
  /** The stream chunk that ends the choice, with its finish reason and no text. */
  last(finish: ChoiceFinish): object;
  /** The stream chunk after the last with the usage, or `null` when it was not asked for. */
  usage(usage: Usage): object | null;
  /** The whole answer of a request that does not stream. */
  whole(text: string, finish: ChoiceFinish, usage: Usage): object;
}

/** A request an endpoint accepted. */
export interface EndpointRequest extends GenerationFields {
  /** The text the model continues (encoded as `BOS` and its UTF-8 bytes). */
  readonly prompt: string;
  /** The request field a prompt beyond the context is blamed on (`prompt`, `messages`). */
  readonly promptField: string;
  /** Where the text ends: the request's `stop` and any the endpoint adds (chat's end of turn). */
  readonly stopAt: readonly string[];
  readonly answer: AnswerShape;
}

/** The usage of a finished generation. */
export function usageOf(r: GenerationResult): Usage {
  return { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
}

/**
 * `(text) => sseEvent(piece(text))` for the stream's hot path (one event per token per stream):
 * a piece's event is the same text on either side of the piece's JSON string, so it is cut once,
 * at a marker, and each event is the piece's `JSON.stringify` between the two. Where the marker
 * is not found exactly once (a model name holding it), each event is made the plain way.
 */
export function pieceEvents(piece: (text: string) => object): (text: string) => string {
  const mark = '\u0000piece\u0000';
  const quoted = JSON.stringify(mark);
  const whole = sseEvent(piece(mark));
  const at = whole.indexOf(quoted);
  if (at < 0 || whole.lastIndexOf(quoted) !== at) return (text) => sseEvent(piece(text));
  const before = whole.slice(0, at);
  const after = whole.slice(at + quoted.length);
  return (text) => before + JSON.stringify(text) + after;
}
