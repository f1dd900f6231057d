/**
 * Continuous batching over a `DecodeEngine`. Each request gets a KV-cache slot, is prefilled and
 * then generates, one token per step; every step advances every running sequence (by one position,
 * or by a chunk of its prompt), and requests join and leave the running batch between steps.
 *
 * How a request goes through:
 *
 *   - `submit` checks it (prompt tokens in the vocabulary, `maxTokens` ≥ 1, prompt + `maxTokens` ≤
 *     `engine.maxPositions`: refused up front, never truncated) and puts it in the queue. Beyond
 *     the free slots at most `queueLimit` requests wait; one more is refused (`QueueFullError`).
 *   - Between steps, waiting requests take the free slots, first come first served. At most
 *     `capacity = min(engine.slots, engine.maxBatch)` sequences run, so one step holds them all and
 *     none is ever left out of a step (a waiting request holds no slot).
 *   - Prefill is chunked: a sequence feeds up to `prefillChunk` prompt tokens a step (consecutive
 *     entries of its slot; position p holds prompt[p]) while the step has room, alongside one
 *     entry for every other sequence, and the engine's answers to all but the last prompt token
 *     are dropped. The answer to the last prompt token is the first generated token; from there
 *     each step feeds back the token generated last. A prompt of L tokens alone thus takes
 *     ceil(L / prefillChunk) steps to its first token (L with `prefillChunk: 1`), and the tokens
 *     are the same either way: an engine gives a chunk what it gives its tokens one by one.
 *   - A generated token is the engine's greedy one, or, for a request with a temperature, drawn
 *     from the step's logits by its own seeded sampler (`sampling.ts`); the step asks the engine
 *     for logits only when such a sequence is due a token.
 *   - A sequence ends when it generates `eos` (`finishReason` 'stop'; the `EOS` is counted in
 *     `completionTokens` but not delivered), after `maxTokens` tokens ('length'), or when
 *     cancelled ('cancelled': `generation.cancel()`, its `AbortSignal`, or a consumer leaving the
 *     token iterator), or when its consumer found its end in the text ('stop': `generation.stop()`,
 *     e.g. a stop string); its slot is free for the next step. A cancellation or a stop takes
 *     effect at the next step boundary: the step in flight finishes, its token for that sequence
 *     is dropped.
 *   - One step is in flight at a time, awaited, so the event loop stays free during it. When a
 *     step ends, the sequences move on (positions, their tokens, the ends by `eos` and
 *     `maxTokens`, whose slots are free at once), waiting requests take free slots, the next step
 *     is launched, and only then are the tokens handed out (the iterators, `onToken`): what the
 *     consumers do with them (a stream's write) runs while the GPU computes the next step. A
 *     cancellation or a throwing `onToken` during the hand-out takes effect one step later (the
 *     step in flight holds the sequence; its token there is dropped). Between steps the scheduler
 *     also yields to the event loop (`setImmediate`), so I/O, timers and cancellations are handled
 *     even with an engine whose steps resolve at once.
 *   - A step that fails (the engine rejects, or answers badly) ends each sequence of that step with
 *     an `EngineStepError` and frees their slots; the queue goes on.
 */
import { InvalidArgumentError, privateConstructorError } from '../errors/base.js';
import type { DecodeEngine, DecodeEntry, StepResult } from '../llm/engine.js';
import { EOS } from '../llm/tokenizer.js';
import { describe, requireInt, requireOptions } from '../util/validate.js';
import { ContextLengthError, EngineStepError, QueueFullError, ShuttingDownError } from './errors.js';
import { SchedulerMetrics, type SchedulerSnapshot } from './metrics.js';
import { Sampler, checkSampling, type SamplingParams } from './sampling.js';

/** Options of `new Scheduler(engine, options)`. */
export interface SchedulerOptions {
  /** Requests that may wait beyond the free slots; one more is refused (default 64; 0: refuse when no slot is free). */
  readonly queueLimit?: number;
  /** The token that ends a sequence (default `EOS`). */
  readonly eos?: number;
  /**
   * Prompt tokens a sequence feeds in one step at most (chunked prefill), while the step has room
   * (`engine.maxBatch` entries, one for every running sequence first). Default `engine.maxBatch`;
   * 1 feeds prompts token by token.
   */
  readonly prefillChunk?: number;
}

/** What `submit` takes. */
export interface GenerationRequest {
  /** The prompt's tokens (with its `BOS` when the model expects one): at least one, each in the vocabulary. */
  readonly prompt: ArrayLike<number>;
  /** The most tokens to generate (≥ 1). */
  readonly maxTokens: number;
  /** Cancels the request when aborted. */
  readonly signal?: AbortSignal;
  /**
   * How tokens are picked (`sampling.ts`): greedy by default (the engine's own argmax); with a
   * temperature, drawn from the step's logits by the request's own seeded generator.
   */
  readonly sampling?: SamplingParams;
  /**
   * Called with each generated token (never the `EOS`), in order, once its step has ended and the
   * next one is launched. An exception it throws cancels the generation and rejects `result` with
   * that exception.
   */
  readonly onToken?: (token: number) => void;
}

/** Why a generation ended. */
export type FinishReason = 'stop' | 'length' | 'cancelled';

/** How a consumer ends a generation before the scheduler does: `cancel()` or `stop()`. */
type ConsumerEnd = 'cancelled' | 'stop';

/** Where a generation is. */
export type GenerationState = 'queued' | 'running' | 'finished';

/** A finished generation. */
export interface GenerationResult {
  /** The generation's id (its `Generation.id`). */
  readonly id: number;
  /** The tokens generated, in order, without the `EOS` that ended it. */
  readonly tokens: Int32Array;
  readonly finishReason: FinishReason;
  /** Tokens of the prompt. */
  readonly promptTokens: number;
  /** Tokens generated, the ending `EOS` included (at most `maxTokens`). */
  readonly completionTokens: number;
  /** Milliseconds from `submit` to the first generated token; `null` when none came. */
  readonly timeToFirstTokenMs: number | null;
  /** Milliseconds from `submit` to the end. */
  readonly durationMs: number;
}

/** What the scheduler drives a generation with (a handle the `Generation` gives at construction). */
interface GenerationControl {
  start(): void;
  token(t: number): void;
  finish(reason: FinishReason, completionTokens: number, ttftMs: number | null, durationMs: number): void;
  fail(error: unknown): void;
}

const KEY = Symbol('Generation');

/**
 * One request's generation, as `Scheduler.submit` returns it: its tokens as an async iterator
 * (`for await (const t of gen)`; leaving the loop early cancels the generation), its `result`, and
 * `cancel()`.
 *
 * @example
 *   const gen = scheduler.submit({ prompt: encode('Hello'), maxTokens: 32 });
 *   const text = new TokenDecoder();
 *   for await (const t of gen) process.stdout.write(text.push([t]));
 *   const { finishReason, completionTokens } = await gen.result;
 */
export class Generation implements AsyncIterable<number> {
  /** A number unique within its scheduler. */
  readonly id: number;
  /** Tokens of the prompt. */
  readonly promptTokens: number;
  /** The most tokens it may generate. */
  readonly maxTokens: number;
  /**
   * Resolves when the generation has ended and its slot is free: with its tokens and why it ended
   * ('cancelled' included). Rejects with an `EngineStepError` when a step it was in failed, or with
   * what `onToken` threw. A rejection nobody awaits is not reported as unhandled.
   */
  readonly result: Promise<GenerationResult>;
  readonly #tokens: number[] = [];
  readonly #cancel: (reason: ConsumerEnd) => void;
  #state: GenerationState = 'queued';
  /** No more tokens will be delivered (ended, or cancelled and awaiting its step boundary). */
  #closed = false;
  #error: unknown = undefined;
  #failed = false;
  #wake: (() => void) | null = null;

  /** @internal Made by `Scheduler.submit` only. */
  constructor(key: symbol, id: number, promptTokens: number, maxTokens: number, cancel: (reason: ConsumerEnd) => void, bind: (control: GenerationControl) => void) {
    if (key !== KEY) throw privateConstructorError('Generation', 'scheduler.submit()');
    this.id = id;
    this.promptTokens = promptTokens;
    this.maxTokens = maxTokens;
    this.#cancel = cancel;
    let resolve!: (r: GenerationResult) => void;
    let reject!: (e: unknown) => void;
    this.result = new Promise<GenerationResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.result.catch(() => {});
    bind({
      start: () => {
        this.#state = 'running';
      },
      token: (t) => {
        this.#tokens.push(t);
        this.#notify();
      },
      finish: (finishReason, completionTokens, timeToFirstTokenMs, durationMs) => {
        this.#state = 'finished';
        this.#closed = true;
        this.#notify();
        resolve({ id, tokens: Int32Array.from(this.#tokens), finishReason, promptTokens, completionTokens, timeToFirstTokenMs, durationMs });
      },
      fail: (error) => {
        this.#state = 'finished';
        this.#closed = true;
        this.#failed = true;
        this.#error = error;
        this.#notify();
        reject(error);
      },
    });
  }

  /** 'queued' (waiting for a slot), 'running' (holding one) or 'finished'. */
  get state(): GenerationState {
    return this.#state;
  }

  /** The tokens generated so far (a copy). */
  tokens(): Int32Array {
    return Int32Array.from(this.#tokens);
  }

  /**
   * Stops the generation: no more tokens are delivered from now on; a queued request leaves the
   * queue at once, a running one frees its slot at the next step boundary (then `result` resolves
   * with 'cancelled'). Does nothing once finished.
   */
  cancel(): void {
    this.#endEarly('cancelled');
  }

  /**
   * Ends the generation as a stop: what a consumer calls when it found the end in the text itself
   * (a stop string, a chat's end of turn). Like `cancel()` (no more tokens from now on, the slot
   * free at the next step boundary), but `result` resolves with 'stop' and the metrics count a
   * stop, not a cancellation. Does nothing once finished or cancelled.
   */
  stop(): void {
    this.#endEarly('stop');
  }

  #endEarly(reason: ConsumerEnd): void {
    if (this.#state === 'finished' || this.#closed) return;
    this.#closed = true;
    this.#notify();
    this.#cancel(reason);
  }

  /**
   * The generated tokens, from the first, as they come. Ends when the generation ends or is
   * cancelled; throws what rejects `result`. Leaving the loop early (`break`, an exception) cancels
   * the generation.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<number, void, undefined> {
    let i = 0;
    try {
      for (;;) {
        while (i < this.#tokens.length) yield this.#tokens[i++]!;
        if (this.#failed) throw this.#error;
        if (this.#closed) return;
        await new Promise<void>((resolve) => {
          const previous = this.#wake;
          this.#wake = () => {
            previous?.();
            resolve();
          };
        });
      }
    } finally {
      if (!this.#closed) this.cancel();
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/** A request inside the scheduler. */
interface Sequence {
  readonly id: number;
  readonly prompt: Int32Array;
  readonly maxTokens: number;
  readonly control: GenerationControl;
  readonly onToken: ((token: number) => void) | undefined;
  /** Draws its tokens from the logits; `null`: the engine's greedy token. */
  readonly sampler: Sampler | null;
  readonly submittedAt: number;
  /** Removes the `AbortSignal` listener. */
  unlisten: (() => void) | null;
  /** The KV slot while running, −1 while waiting. */
  slot: number;
  /** The next position to feed. */
  position: number;
  /** The token generated last (fed back at the next step). */
  last: number;
  /** Tokens generated, the `EOS` included. */
  generated: number;
  firstTokenAt: number;
  lastTokenAt: number;
  cancelled: boolean;
  /** How it ends once `cancelled`: 'stop' when its consumer ended it with `stop()`. */
  endAs: ConsumerEnd;
  /** What `onToken` threw, which ends it at the boundary. */
  callbackError: { error: unknown } | null;
  /** Released: out of the queue and the running batch (its generation settled, or about to be). */
  ended: boolean;
}

/** A step handed to the engine and not landed yet. */
interface Flight {
  /** The sequences it advances, in entry order. */
  readonly batch: readonly Sequence[];
  readonly entries: readonly DecodeEntry[];
  /** For each sequence of `batch`, the index of its last entry. */
  readonly lastEntry: Int32Array;
  /** Whether the step returns logits. */
  readonly logits: boolean;
  /** `performance.now()` at the launch. */
  readonly started: number;
  /** The engine's answer, or what it threw or rejected with (never rejects). */
  readonly outcome: Promise<StepOutcome>;
}

/** How a step ended: its result, or its failure (boxed: a failure may be any value). */
type StepOutcome = { readonly result: StepResult; readonly error: null } | { readonly result: null; readonly error: { readonly error: unknown } };

/** What a landed step gives the consumers: per sequence, its token (−1: none to deliver) and its end. */
type HandOut = { readonly s: Sequence; readonly token: number; readonly end: FinishReason | null }[];

const OP = 'Scheduler.submit';

/**
 * Continuous batching over a `DecodeEngine` (the module's comment says how a request goes
 * through). The scheduler drives the engine but does not own it: dispose the engine after
 * `close()` has resolved.
 *
 * @example
 *   const scheduler = new Scheduler(engine, { queueLimit: 128 });
 *   const gen = scheduler.submit({ prompt: encode('Once upon a time'), maxTokens: 64 });
 *   const { tokens, finishReason } = await gen.result;
 *   await scheduler.close();
 */
export class Scheduler {
  readonly #engine: DecodeEngine;
  readonly #capacity: number;
  readonly #queueLimit: number;
  readonly #eos: number;
  readonly #vocab: number;
  readonly #maxPositions: number;
  readonly #maxBatch: number;
  readonly #prefillChunk: number;
  /** Waiting requests by id, in arrival order (a Map keeps insertion order). */
  readonly #waiting = new Map<number, Sequence>();
  /** Running sequences by slot. */
  readonly #running = new Map<number, Sequence>();
  readonly #free: number[] = [];
  readonly #metrics: SchedulerMetrics;
  readonly #idle: (() => void)[] = [];
  #nextId = 1;
  #looping = false;
  #closing = false;

  /**
   * @throws InvalidArgumentError for an engine without the `DecodeEngine` shape (positive integer
   *   `slots`, `maxBatch`, `maxPositions`, a `config.vocab`, a `step` function) or bad options.
   */
  constructor(engine: DecodeEngine, options?: SchedulerOptions) {
    const op = 'new Scheduler';
    if (typeof engine !== 'object' || engine === null || typeof (engine as { step?: unknown }).step !== 'function') {
      throw new InvalidArgumentError(op, 'engine', `engine must be a DecodeEngine (an object with a step function), got ${describe(engine)}`);
    }
    const slots = requireInt(op, 'engine.slots', engine.slots, 1, 1 << 20);
    const maxBatch = requireInt(op, 'engine.maxBatch', engine.maxBatch, 1, 1 << 20);
    this.#maxPositions = requireInt(op, 'engine.maxPositions', engine.maxPositions, 2, 1 << 30);
    this.#vocab = requireInt(op, 'engine.config.vocab', engine.config?.vocab, 1, 1 << 30);
    const o = requireOptions<SchedulerOptions>(op, options, ['queueLimit', 'eos', 'prefillChunk']);
    this.#queueLimit = requireInt(op, 'queueLimit', o.queueLimit ?? 64, 0, 1 << 24);
    this.#eos = requireInt(op, 'eos', o.eos ?? EOS, 0, this.#vocab - 1);
    this.#prefillChunk = requireInt(op, 'prefillChunk', o.prefillChunk ?? maxBatch, 1, maxBatch);
    this.#maxBatch = maxBatch;
    this.#engine = engine;
    this.#capacity = Math.min(slots, maxBatch);
    for (let s = this.#capacity - 1; s >= 0; s--) this.#free.push(s);
    this.#metrics = new SchedulerMetrics(maxBatch, performance.now());
  }

  /** Sequences stepped together at most: `min(engine.slots, engine.maxBatch)`. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Prompt tokens a sequence feeds in one step at most. */
  get prefillChunk(): number {
    return this.#prefillChunk;
  }

  /** Requests that may wait beyond the free slots. */
  get queueLimit(): number {
    return this.#queueLimit;
  }

  /** The engine it drives. */
  get engine(): DecodeEngine {
    return this.#engine;
  }

  /** True once `close()` was called: `submit` refuses from then on. */
  get closing(): boolean {
    return this.#closing;
  }

  /**
   * Queues a request and returns its generation; the first step that has room for it takes it.
   * @throws InvalidArgumentError for an empty prompt, a token outside the vocabulary, a `maxTokens`
   *   that is not a positive integer, unknown fields;
   *   ContextLengthError when prompt + `maxTokens` > `engine.maxPositions`;
   *   QueueFullError when `queueLimit` requests already wait beyond the free slots;
   *   ShuttingDownError after `close()`.
   */
  submit(request: GenerationRequest): Generation {
    const m = this.#metrics;
    let prompt: Int32Array;
    let maxTokens: number;
    let sampling: Required<SamplingParams> | null;
    try {
      const r = requireOptions<GenerationRequest>(OP, request, ['prompt', 'maxTokens', 'signal', 'onToken', 'sampling'], 'request');
      maxTokens = requireInt(OP, 'maxTokens', r.maxTokens, 1, 1 << 30);
      prompt = this.#checkPrompt(r.prompt, maxTokens);
      if (r.signal !== undefined && !(r.signal instanceof AbortSignal)) throw new InvalidArgumentError(OP, 'signal', `signal must be an AbortSignal, got ${describe(r.signal)}`);
      if (r.onToken !== undefined && typeof r.onToken !== 'function') throw new InvalidArgumentError(OP, 'onToken', `onToken must be a function, got ${describe(r.onToken)}`);
      sampling = checkSampling(OP, r.sampling);
    } catch (e) {
      if (e instanceof ContextLengthError) m.refused.contextLength++;
      else m.refused.invalid++;
      throw e;
    }
    if (this.#closing) {
      m.refused.shuttingDown++;
      throw new ShuttingDownError(OP);
    }
    if (this.#waiting.size >= this.#queueLimit + this.#free.length) {
      m.refused.queueFull++;
      throw new QueueFullError(OP, this.#queueLimit);
    }
    const id = this.#nextId++;
    let control!: GenerationControl;
    let seq!: Sequence;
    const gen = new Generation(KEY, id, prompt.length, maxTokens, (reason) => this.#cancel(seq, reason), (c) => (control = c));
    seq = {
      id,
      prompt,
      maxTokens,
      control,
      onToken: request.onToken,
      sampler: sampling === null ? null : new Sampler(sampling),
      submittedAt: performance.now(),
      unlisten: null,
      slot: -1,
      position: 0,
      last: 0,
      generated: 0,
      firstTokenAt: -1,
      lastTokenAt: -1,
      cancelled: false,
      endAs: 'cancelled',
      callbackError: null,
      ended: false,
    };
    m.requests.submitted++;
    this.#waiting.set(id, seq);
    const signal = request.signal;
    if (signal !== undefined) {
      if (signal.aborted) {
        gen.cancel();
        return gen;
      }
      const onAbort = (): void => gen.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      seq.unlisten = () => signal.removeEventListener('abort', onAbort);
    }
    this.#kick();
    return gen;
  }

  /** A copy of the counters, quantiles and gauges (the `/metrics` figures). */
  metrics(): SchedulerSnapshot {
    return this.#metrics.snapshot(performance.now(), {
      capacity: this.#capacity,
      queueLimit: this.#queueLimit,
      queueDepth: this.#waiting.size,
      running: this.#running.size,
    });
  }

  /** Resolves when no request waits or runs (at once when idle). */
  drain(): Promise<void> {
    if (this.#waiting.size === 0 && this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Cancels every waiting and running request (running ones end at the next step boundary). */
  cancelAll(): void {
    for (const s of [...this.#waiting.values(), ...this.#running.values()]) this.#cancel(s);
  }

  /**
   * Refuses new requests from now on (`ShuttingDownError`) and resolves when those already
   * accepted have finished. Call `cancelAll()` to end them sooner. Does not dispose the engine.
   */
  close(): Promise<void> {
    this.#closing = true;
    return this.drain();
  }

  #checkPrompt(prompt: unknown, maxTokens: number): Int32Array {
    if (typeof prompt !== 'object' || prompt === null || typeof (prompt as ArrayLike<number>).length !== 'number') {
      throw new InvalidArgumentError(OP, 'prompt', `prompt must be an array of tokens, got ${describe(prompt)}`);
    }
    const p = prompt as ArrayLike<number>;
    if (p.length < 1) throw new InvalidArgumentError(OP, 'prompt', 'prompt must hold at least one token');
    // Refused before the copy: a prompt that cannot fit is not worth reading through.
    if (p.length + maxTokens > this.#maxPositions) throw new ContextLengthError(OP, p.length, maxTokens, this.#maxPositions);
    const out = new Int32Array(p.length);
    for (let i = 0; i < p.length; i++) {
      const t = p[i];
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t >= this.#vocab) {
        throw new InvalidArgumentError(OP, 'prompt', `prompt[${i}] must be a token in 0..${this.#vocab - 1}, got ${describe(t)}`);
      }
      out[i] = t;
    }
    return out;
  }

  #cancel(s: Sequence, reason: ConsumerEnd = 'cancelled'): void {
    if (s.cancelled) return;
    s.cancelled = true;
    s.endAs = reason;
    if (s.slot < 0 && this.#waiting.delete(s.id)) this.#end(s, reason);
    // A running sequence is released at the next step boundary (#reap), after the step in flight.
  }

  #kick(): void {
    if (this.#looping) return;
    this.#looping = true;
    // A burst of submissions in one turn (a benchmark, several requests parsed at once) joins the first step.
    queueMicrotask(() => void this.#loop());
  }

  async #loop(): Promise<void> {
    try {
      // The next step goes to the GPU before the tokens of the one just ended are handed out: the
      // consumers' work (a stream's write per token, the stop-string checks) runs while the GPU
      // computes instead of between steps, where the GPU would wait for it.
      let flight: Flight | null = null;
      for (;;) {
        if (flight === null) {
          this.#reap();
          this.#admit();
          if (this.#running.size === 0) break;
          flight = this.#launch();
        }
        const handOut = this.#land(flight, await flight.outcome);
        this.#reap();
        this.#admit();
        flight = this.#running.size > 0 ? this.#launch() : null;
        this.#handOut(handOut);
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#looping = false;
      if (this.#waiting.size === 0 && this.#running.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /** Frees the slots of sequences cancelled since the last boundary. */
  #reap(): void {
    for (const s of this.#running.values()) if (s.cancelled) this.#end(s, s.endAs);
  }

  /** Gives free slots to waiting requests, oldest first. */
  #admit(): void {
    for (const s of this.#waiting.values()) {
      if (this.#free.length === 0) break;
      this.#waiting.delete(s.id);
      s.slot = this.#free.pop()!;
      this.#running.set(s.slot, s);
      s.control.start();
    }
  }

  /** Builds the step of every running sequence and hands it to the engine (not awaited). */
  #launch(): Flight {
    const batch = [...this.#running.values()];
    // Each sequence's entries: one, or for one still in its prompt up to prefillChunk of the
    // prompt's tokens while the step has room (the oldest first). The last entry of each is the
    // one whose answer may be a generated token.
    const entries: DecodeEntry[] = [];
    const lastEntry = new Int32Array(batch.length);
    let room = this.#maxBatch - batch.length;
    for (let i = 0; i < batch.length; i++) {
      const s = batch[i]!;
      const left = s.prompt.length - s.position;
      const n = left <= 1 ? 1 : Math.min(left, this.#prefillChunk, room + 1);
      room -= n - 1;
      for (let k = 0; k < n; k++) {
        const p = s.position + k;
        entries.push({ slot: s.slot, token: p < s.prompt.length ? s.prompt[p]! : s.last, position: p });
      }
      lastEntry[i] = entries.length - 1;
    }
    // Logits cross from the device only when a sequence of the step draws its token from them.
    const logits = batch.some((s, i) => s.sampler !== null && entries[lastEntry[i]!]!.position + 1 >= s.prompt.length);
    const started = performance.now();
    let done: Promise<StepResult>;
    try {
      // Promise.resolve: an engine that answers a plain value gets its answer checked like any other.
      done = Promise.resolve(this.#engine.step(entries, logits ? { logits: true } : undefined));
    } catch (e) {
      done = Promise.reject(e);
    }
    // Settled here so that a failure is never unhandled while the tokens before it are handed out.
    const outcome = done.then(
      (result): StepOutcome => ({ result, error: null }),
      (error: unknown): StepOutcome => ({ result: null, error: { error } }),
    );
    return { batch, entries, lastEntry, logits, started, outcome };
  }

  /**
   * Takes a step's outcome and moves its sequences on: positions, the token each generated, the ends by
   * `eos` and `maxTokens` (their slots free for the next step). What the consumers see of it
   * (tokens, onToken, finishes) is returned for `#handOut`, once the next step is launched;
   * synchronous, so that no other code runs between the two.
   */
  #land(flight: Flight, { result, error }: StepOutcome): HandOut {
    const { batch, entries, lastEntry, logits, started } = flight;
    const out: HandOut = [];
    let failure = error;
    if (result !== null) {
      try {
        this.#checkResult(result, entries.length, logits);
      } catch (e) {
        failure = { error: e };
      }
    }
    if (failure !== null || result === null) {
      this.#metrics.step(performance.now() - started, entries.length, true);
      const e = failure?.error;
      const stepError = new EngineStepError(`Scheduler: a decode step of ${entries.length} sequence(s) failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      for (const s of batch) if (!s.ended) this.#end(s, stepError);
      return out;
    }
    const now = performance.now();
    this.#metrics.step(now - started, entries.length, false);
    let prompt = 0;
    let generated = 0;
    for (let i = 0; i < batch.length; i++) {
      const s = batch[i]!;
      // Cancelled (released by the next #reap) or ended while the step ran: its token is dropped.
      if (s.cancelled || s.ended) continue;
      const at = lastEntry[i]!;
      const fed = entries[at]!.position + 1 - s.position;
      prompt += Math.min(fed, Math.max(0, s.prompt.length - s.position));
      s.position += fed;
      // Still prefilling: the answer is the model's guess at a prompt token we already have.
      if (s.position < s.prompt.length) continue;
      const t = s.sampler === null ? result.tokens[at]! : s.sampler.sample(result.logits!, at * this.#vocab, this.#vocab);
      generated++;
      s.generated++;
      if (s.generated === 1) {
        s.firstTokenAt = now;
        this.#metrics.firstToken(now - s.submittedAt);
      } else this.#metrics.interToken(now - s.lastTokenAt);
      s.lastTokenAt = now;
      if (t === this.#eos) {
        this.#release(s);
        out.push({ s, token: -1, end: 'stop' });
        continue;
      }
      s.last = t;
      const end = s.generated === s.maxTokens ? 'length' : null;
      if (end !== null) this.#release(s);
      out.push({ s, token: t, end });
    }
    this.#metrics.tokens(now, prompt, generated);
    return out;
  }

  /** Hands a landed step's tokens to their consumers, and settles the generations it ended. */
  #handOut(out: HandOut): void {
    for (const { s, token, end } of out) {
      if (token >= 0 && !s.cancelled) {
        s.control.token(token);
        if (s.onToken !== undefined) {
          try {
            s.onToken(token);
          } catch (error) {
            s.callbackError = { error };
            // Still in the step in flight: its slot is free at once, its token there dropped.
            this.#end(s, 'cancelled');
            continue;
          }
        }
      }
      if (end !== null) this.#settle(s, s.cancelled ? s.endAs : end);
    }
  }

  #checkResult(result: StepResult, n: number, logits: boolean): void {
    const tokens = (result as StepResult | undefined)?.tokens;
    if (!(tokens instanceof Int32Array) || tokens.length !== n) {
      throw new Error(`the engine answered ${tokens instanceof Int32Array ? `${tokens.length} tokens` : describe(tokens)} for ${n} entries (an Int32Array of ${n} expected)`);
    }
    if (logits && !(result.logits instanceof Float32Array && result.logits.length === n * this.#vocab)) {
      throw new Error(`the engine answered ${describe(result.logits)} for the logits of ${n} entries (a Float32Array of ${n} × ${this.#vocab} expected)`);
    }
    for (let i = 0; i < n; i++) {
      if (tokens[i]! < 0 || tokens[i]! >= this.#vocab) throw new Error(`the engine answered token ${tokens[i]} for entry ${i}, outside the vocabulary (0..${this.#vocab - 1})`);
    }
  }

  /** Ends a sequence: frees its slot (if any), drops its listener, settles its generation. */
  #end(s: Sequence, how: FinishReason | EngineStepError): void {
    this.#release(s);
    this.#settle(s, how);
  }

  /** Frees a sequence's slot (or takes it out of the queue) and drops its listener. */
  #release(s: Sequence): void {
    if (s.slot >= 0) {
      this.#running.delete(s.slot);
      this.#free.push(s.slot);
      s.slot = -1;
    } else this.#waiting.delete(s.id);
    s.unlisten?.();
    s.unlisten = null;
    s.ended = true;
  }

  /** Settles a released sequence's generation: finished with `how`, or failed. */
  #settle(s: Sequence, how: FinishReason | EngineStepError): void {
    const r = this.#metrics.requests;
    if (how instanceof EngineStepError || s.callbackError !== null) {
      r.failed++;
      s.control.fail(s.callbackError !== null ? s.callbackError.error : how);
      return;
    }
    r[how]++;
    const ttft = s.firstTokenAt < 0 ? null : s.firstTokenAt - s.submittedAt;
    s.control.finish(how, s.generated, ttft, performance.now() - s.submittedAt);
  }
}
