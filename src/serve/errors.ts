/**
 * The server's refusals and failures, each with a stable `code` (the HTTP layer maps them to status
 * codes: queue full → 429, too long → 400, shutting down → 503, a failed step → 500).
 */
import { CudagraphError } from '../errors/base.js';

/** `Scheduler.submit`: the waiting queue is at its limit; try again later (HTTP 429). */
export class QueueFullError extends CudagraphError {
  readonly code = 'ERR_QUEUE_FULL' as const;
  /** The queue's limit that was reached. */
  readonly queueLimit: number;

  constructor(operation: string, queueLimit: number) {
    super(`${operation}: the queue is full (${queueLimit} waiting); try again later`);
    this.queueLimit = queueLimit;
  }
}

/**
 * `Scheduler.submit`: the prompt and `maxTokens` together pass the positions a sequence may reach.
 * Refused up front: a prompt is never truncated, a generation never cut short by the context.
 */
export class ContextLengthError extends CudagraphError {
  readonly code = 'ERR_CONTEXT_LENGTH' as const;
  /** Tokens in the prompt (`BOS` included). */
  readonly promptTokens: number;
  /** Tokens asked for. */
  readonly maxTokens: number;
  /** Positions a sequence may reach (`engine.maxPositions`). */
  readonly maxPositions: number;

  constructor(operation: string, promptTokens: number, maxTokens: number, maxPositions: number) {
    super(
      `${operation}: the model's context is ${maxPositions} tokens, but ${promptTokens + maxTokens} were asked for ` +
        `(${promptTokens} in the prompt, ${maxTokens} to generate); shorten the prompt or lower max_tokens`,
    );
    this.promptTokens = promptTokens;
    this.maxTokens = maxTokens;
    this.maxPositions = maxPositions;
  }
}

/** `Scheduler.submit` after `close()` began (HTTP 503). */
export class ShuttingDownError extends CudagraphError {
  readonly code = 'ERR_SHUTTING_DOWN' as const;

  constructor(operation: string) {
    super(`${operation}: the server is shutting down`);
  }
}

/**
 * A decode step failed (the engine's `step` rejected or answered with the wrong number of tokens):
 * every sequence of that step ends with this error (their keys and values are not to be trusted)
 * and frees its slot; the other requests go on. `cause` is the engine's error.
 */
export class EngineStepError extends CudagraphError {
  readonly code = 'ERR_ENGINE_STEP' as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
