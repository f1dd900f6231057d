/**
 * `POST /v1/chat/completions`: the request (`messages`, rendered by the chat template of
 * `chat.ts`, and the fields `/v1/completions` shares) and OpenAI's `chat.completion` and
 * `chat.completion.chunk` objects. docs/serve.md is its reference.
 */
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { argumentRefusal, badRequest, ApiError } from './api-error.js';
import { checkMessages, END_OF_TURN, renderChat, type ChatMessage } from './chat.js';
import { type AnswerShape, type ChoiceFinish, type EndpointRequest, type Usage, pieceEvents } from './endpoint.js';
import { generationFields, unknownField, type TokenLimits } from './request-fields.js';

/** The fields a chat completion request may have; anything else is refused. */
export const CHAT_FIELDS = Object.freeze([
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'stream',
  'stream_options',
  'model',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
] as const);

/** A chat completion request's body checked: what to generate and how to answer, or the 400 that refuses it. */
export function parseChat(o: Record<string, unknown>, limits: TokenLimits, model: string): EndpointRequest | ApiError {
  const unknown = unknownField(o, CHAT_FIELDS);
  if (unknown !== null) return unknown;
  let messages: ChatMessage[];
  try {
    messages = checkMessages('', o.messages);
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e;
    return argumentRefusal(e, 'invalid_messages');
  }
  // OpenAI renamed max_tokens to max_completion_tokens for chat; both mean the same budget here,
  // and a request that gives both is refused rather than one of them ignored.
  const given = (k: string): boolean => o[k] !== undefined && o[k] !== null;
  if (given('max_tokens') && given('max_completion_tokens')) {
    return badRequest('give max_completion_tokens or max_tokens, not both (they are the same budget)', 'invalid_max_tokens', 'max_completion_tokens');
  }
  // One choice a request: n > 1 would need as many sequences, which the server does not fork.
  const n = o.n ?? 1;
  if (n !== 1) return badRequest(`n must be 1 (this server generates one choice a request), got ${describe(n)}`, 'invalid_n', 'n');
  const fields = generationFields(o, limits, given('max_completion_tokens') ? 'max_completion_tokens' : 'max_tokens');
  if (fields instanceof ApiError) return fields;
  return {
    ...fields,
    prompt: renderChat(messages),
    promptField: 'messages',
    // The reply ends at the end-of-turn marker as it would at EOS, besides the request's own stop strings.
    stopAt: [...fields.stop, END_OF_TURN],
    answer: chatAnswer(model, fields.includeUsage),
  };
}

/**
 * OpenAI's chat objects for one request (`id` `chatcmpl-…`, one choice): a `chat.completion`, or
 * `chat.completion.chunk`s whose first delta carries the role, the next ones the content, the last
 * none and the finish reason.
 */
export function chatAnswer(model: string, includeUsage: boolean): AnswerShape {
  const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: object, finish: ChoiceFinish | null): object => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });
  const piece = (content: string): object => chunk({ content }, null);
  return {
    first: () => chunk({ role: 'assistant', content: '' }, null),
    piece,
    pieceEvent: pieceEvents(piece),
    last: (finish) => chunk({}, finish),
    usage: (usage: Usage) => (includeUsage ? { ...chunk({}, null), choices: [], usage } : null),
    whole: (content, finish, usage) => ({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: finish }],
      usage,
    }),
  };
}
