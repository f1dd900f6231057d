/**
 * The HTTP server's refusals as OpenAI-style errors: a status and the `{ error: { message, type,
 * param, code } }` body, and the mapping from the scheduler's typed errors to them. Every endpoint
 * refuses through these, so a client sees one shape whatever it called.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { ContextLengthError, EngineStepError, QueueFullError, ShuttingDownError } from './errors.js';

/**
 * A refusal: the status and what the error body says. The request checks return one instead of
 * throwing (a refused request has changed nothing); being a class, it cannot be mistaken for a
 * parsed body that happens to have the same fields.
 */
export class ApiError {
  readonly status: number;
  /** A stable, machine-readable reason (`invalid_max_tokens`, `queue_full`…). */
  readonly code: string;
  readonly message: string;
  /** The request field the refusal is about, where there is one. */
  readonly param: string | undefined;

  constructor(status: number, code: string, message: string, param?: string) {
    this.status = status;
    this.code = code;
    this.message = message;
    this.param = param;
  }
}

/** The body of an OpenAI-style error response (`{ error: ErrorBody }`). */
export interface ErrorBody {
  readonly message: string;
  /** `invalid_request_error` (4xx but 429), `overloaded_error` (429, 503), `server_error` (500). */
  readonly type: string;
  readonly param: string | null;
  readonly code: string;
}

/** A 400 refusal of a request (`param`: the field at fault, when there is one). */
export function badRequest(message: string, code: string, param?: string): ApiError {
  return new ApiError(400, code, message, param);
}

/**
 * The 400 for a check that threw `InvalidArgumentError` with the operation `''` (so that its
 * message is the field's own, with nothing before it): `param` is the parameter it names.
 */
export function argumentRefusal(e: InvalidArgumentError, code: string): ApiError {
  return badRequest(e.message.startsWith(': ') ? e.message.slice(2) : e.message, code, e.parameter);
}

/** The 503 answered once a shutdown began. */
export function shuttingDown(): ApiError {
  return new ApiError(503, 'shutting_down', 'the server is shutting down');
}

/** The OpenAI-style `error` object of a refusal. */
export function errorBody(e: ApiError): ErrorBody {
  const type = e.status === 429 || e.status === 503 ? 'overloaded_error' : e.status >= 500 ? 'server_error' : 'invalid_request_error';
  return { message: e.message, type, param: e.param ?? null, code: e.code };
}

/**
 * The HTTP answer to what `Scheduler.submit` or a generation threw. A context-length refusal is
 * blamed on `fields.prompt` (`prompt`, or `messages` for a chat) and names the request's own
 * budget field (`max_tokens` or `max_completion_tokens`).
 * @throws what is none of the scheduler's errors (a bug, answered 500 by the server).
 */
export function refusal(e: unknown, fields: { readonly prompt: string; readonly maxTokens: string }): ApiError {
  if (e instanceof QueueFullError) return new ApiError(429, 'queue_full', e.message);
  if (e instanceof ContextLengthError) {
    const message =
      `the model's context is ${e.maxPositions} tokens, but ${e.promptTokens + e.maxTokens} were asked for ` +
      `(${e.promptTokens} in the prompt, ${e.maxTokens} to generate); shorten the ${fields.prompt} or lower ${fields.maxTokens}`;
    return new ApiError(400, 'context_length_exceeded', message, fields.prompt);
  }
  if (e instanceof ShuttingDownError) return shuttingDown();
  if (e instanceof InvalidArgumentError) return new ApiError(400, 'invalid_request', e.message);
  if (e instanceof EngineStepError) return new ApiError(500, 'engine_error', e.message);
  throw e;
}
