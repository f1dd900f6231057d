/**
 * `POST /v1/completions`: the request (a `prompt` string and the shared fields) and OpenAI's
 * `text_completion` objects, streamed or whole. docs/serve.md is its reference.
 */
import { randomBytes } from 'node:crypto';
import { describe, isWellFormed } from '../util/validate.js';
import { badRequest, ApiError } from './api-error.js';
import { type AnswerShape, type ChoiceFinish, type EndpointRequest, type Usage, pieceEvents } from './endpoint.js';
import { generationFields, unknownField, type TokenLimits } from './request-fields.js';

/** The fields a completion request may have; anything else is refused. */
export const COMPLETION_FIELDS = Object.freeze(['prompt', 'max_tokens', 'stream', 'stream_options', 'model', 'temperature', 'top_p', 'top_k', 'seed', 'stop'] as const);

/** A completion request's body checked: what to generate and how to answer, or the 400 that refuses it. */
export function parseCompletion(o: Record<string, unknown>, limits: TokenLimits, model: string): EndpointRequest | ApiError {
  const unknown = unknownField(o, COMPLETION_FIELDS);
  if (unknown !== null) return unknown;
  if (o.prompt === undefined) return badRequest('prompt is required (a string)', 'invalid_prompt', 'prompt');
  if (typeof o.prompt !== 'string') return badRequest(`prompt must be a string (lists of prompts or of tokens are not taken), got ${describe(o.prompt)}`, 'invalid_prompt', 'prompt');
  // Refused rather than encoded with U+FFFD in its place: the model would continue other text than the one sent.
  if (!isWellFormed(o.prompt)) return badRequest('prompt must be well-formed Unicode (it holds a lone surrogate, such as an unpaired \\ud800 escape)', 'invalid_prompt', 'prompt');
  const fields = generationFields(o, limits);
  if (fields instanceof ApiError) return fields;
  return { ...fields, prompt: o.prompt, promptField: 'prompt', stopAt: fields.stop, answer: completionAnswer(model, fields.includeUsage) };
}

/** OpenAI's `text_completion` objects for one request (`id` `cmpl-…`, one choice). */
export function completionAnswer(model: string, includeUsage: boolean): AnswerShape {
  const id = `cmpl-${randomBytes(12).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (text: string, finish: ChoiceFinish | null): object => ({
    id,
    object: 'text_completion',
    created,
    model,
    choices: [{ text, index: 0, logprobs: null, finish_reason: finish }],
    // With include_usage every chunk says `usage: null` until the last one carries it, as OpenAI's do.
    ...(includeUsage ? { usage: null } : {}),
  });
  const piece = (text: string): object => chunk(text, null);
  return {
    first: () => null,
    piece,
    pieceEvent: pieceEvents(piece),
    last: (finish) => chunk('', finish),
    usage: (usage: Usage) => (includeUsage ? { ...chunk('', null), choices: [], usage } : null),
    whole: (text, finish, usage) => ({ ...chunk(text, finish), usage }),
  };
}
