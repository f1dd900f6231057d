/**
 * The request checks every generation endpoint shares, so that `/v1/completions` and
 * `/v1/chat/completions` refuse the same things with the same 400s: the body as a JSON object, no
 * field the endpoint does not implement, and the fields both take (`max_tokens`, `stream`,
 * `stream_options`, `model`, `temperature`, `top_p`, `top_k`, `seed`, `stop`). `null` counts as
 * absent everywhere, as OpenAI's clients send it. Each check returns the refusal rather than
 * throwing: a refused request has changed nothing.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { argumentRefusal, badRequest, type ApiError } from './api-error.js';
import { checkSampling, type SamplingParams } from './sampling.js';
import { stopProblem } from './stop-strings.js';

/** The server's bounds on `max_tokens`. */
export interface TokenLimits {
  /** The most a request may ask for. */
  readonly maxTokensLimit: number;
  /** What a request that asks for nothing gets. */
  readonly defaultMaxTokens: number;
}

/** What the shared fields of a valid request ask for. */
export interface GenerationFields {
  readonly maxTokens: number;
  /** The field the budget came in (`max_tokens`, or `max_completion_tokens` for a chat): what a context-length refusal tells the client to lower. */
  readonly maxTokensField: string;
  readonly stream: boolean;
  /** Stream a last chunk with the usage (`stream_options.include_usage`). */
  readonly includeUsage: boolean;
  /** temperature, top_p, top_k, seed as given (each absent one undefined; none: greedy). */
  readonly sampling: SamplingParams;
  /** The request's stop strings (none: an empty list). */
  readonly stop: readonly string[];
}

/**
 * The deepest nesting of arrays and objects a body may have. The API's own documents nest at
 * most 4 deep (a chat's `messages[i]` fields); the bound exists because `JSON.parse` on a 1 MiB
 * run of `[` takes hundreds of milliseconds of the event loop, which serves every other request.
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACKET = 0x5b; // [
const CLOSE_BRACKET = 0x5d; // ]
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACE = 0x7d; // }
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Whether the body's arrays and objects nest deeper than `limit`, in one pass over its bytes,
 * skipping strings (a bracket inside one is text; `\"` does not end it). Byte-wise is safe: in
 * UTF-8 these ASCII bytes never occur inside a multi-byte character. Malformed JSON (an unclosed
 * string, unbalanced brackets) is left for `JSON.parse` to refuse.
 */
function nestsDeeperThan(body: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return false;
}

/** Decodes strictly: bytes that are not UTF-8 throw. A leading BOM is kept, as Buffer.toString kept it (JSON.parse refuses it). */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body as a JSON object, or the 400 for anything else (nesting beyond `MAX_JSON_DEPTH` included). */
export function parseJsonObject(body: Buffer): Record<string, unknown> | ApiError {
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    return badRequest(`the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the most this server parses`, 'invalid_json');
  }
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    // Buffer.toString would put U+FFFD in place of the bad bytes, and the request would run on other text than the one sent.
    return badRequest('the body is not valid JSON: it is not valid UTF-8', 'invalid_json');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return badRequest(`the body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`, 'invalid_json');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return badRequest(`the body must be a JSON object, got ${describe(json)}`, 'invalid_json');
  return json as Record<string, unknown>;
}

/**
 * The 400 for the first field not in `known`, or `null`. A field this server does not implement
 * is refused rather than ignored: the client should know it did not get what it asked for.
 */
export function unknownField(o: Record<string, unknown>, known: readonly string[]): ApiError | null {
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) {
      const shown = JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key);
      return badRequest(`unknown field ${shown}: this server takes only ${known.join(', ')}`, 'unknown_field', key);
    }
  }
  return null;
}

/**
 * The shared fields of `o`, checked, or the 400 that names the first bad one. `maxTokensField` is
 * the field the token budget is read from (chat's `max_completion_tokens` is the same budget under
 * OpenAI's newer name).
 */
export function generationFields(o: Record<string, unknown>, limits: TokenLimits, maxTokensField = 'max_tokens'): GenerationFields | ApiError {
  const mt = o[maxTokensField] ?? limits.defaultMaxTokens;
  if (typeof mt !== 'number' || !Number.isInteger(mt) || mt < 1 || mt > limits.maxTokensLimit) {
    return badRequest(`${maxTokensField} must be an integer from 1 to ${limits.maxTokensLimit}, got ${describe(mt)}`, 'invalid_max_tokens', maxTokensField);
  }
  const stream = o.stream ?? false;
  if (typeof stream !== 'boolean') return badRequest(`stream must be a boolean, got ${describe(stream)}`, 'invalid_stream', 'stream');
  let includeUsage = false;
  const so = o.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) return badRequest('stream_options is only taken with "stream": true', 'invalid_stream_options', 'stream_options');
    if (typeof so !== 'object' || Array.isArray(so)) return badRequest(`stream_options must be an object, got ${describe(so)}`, 'invalid_stream_options', 'stream_options');
    for (const key of Object.keys(so)) if (key !== 'include_usage') return badRequest(`unknown field of stream_options ${JSON.stringify(key.slice(0, 60))} (known: include_usage)`, 'unknown_field', 'stream_options');
    const iu = (so as { include_usage?: unknown }).include_usage ?? false;
    if (typeof iu !== 'boolean') return badRequest(`stream_options.include_usage must be a boolean, got ${describe(iu)}`, 'invalid_stream_options', 'stream_options');
    includeUsage = iu;
  }
  if (o.model !== undefined && o.model !== null && typeof o.model !== 'string') return badRequest(`model must be a string, got ${describe(o.model)}`, 'invalid_model', 'model');
  // None given is greedy (checkSampling's defaults).
  const sampling = { temperature: o.temperature ?? undefined, topP: o.top_p ?? undefined, topK: o.top_k ?? undefined, seed: o.seed ?? undefined } as SamplingParams;
  try {
    checkSampling('', sampling, { topP: 'top_p', topK: 'top_k' });
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e;
    return argumentRefusal(e, 'invalid_sampling');
  }
  const stop = o.stop ?? [];
  if (!(Array.isArray(stop) && stop.length === 0)) {
    const problem = stopProblem(stop);
    if (problem !== null) return badRequest(`${problem}, got ${describe(stop)}`, 'invalid_stop', 'stop');
  }
  return { maxTokens: mt, maxTokensField, stream, includeUsage, sampling, stop: typeof stop === 'string' ? [stop] : (stop as string[]) };
}
