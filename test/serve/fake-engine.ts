/**
 * A deterministic `DecodeEngine` for the server's tests: the next token is a function of the entry
 * (by default of its token and position only, so a request's output does not depend on its slot or
 * on who it was batched with), each step takes `delayMs`, and the engine checks what a real one
 * relies on: the entry rules of `DecodeEngine.step`, one step in flight at a time, and each slot's
 * positions following on (0 starts a sequence, anything else continues the last one by one, a
 * slot's later entries in a step included).
 */
import { InvalidArgumentError } from '../../src/errors/base.js';
import { llamaConfig, type LlamaConfig } from '../../src/llm/config.js';
import type { DecodeEngine, DecodeEntry, StepResult } from '../../src/llm/engine.js';
import { EOS } from '../../src/llm/tokenizer.js';

/** Options of the fake. */
export interface FakeEngineOptions {
  readonly slots?: number;
  readonly maxBatch?: number;
  readonly maxPositions?: number;
  /** Milliseconds each step takes (0: the step's promise is already resolved). */
  readonly delayMs?: number;
  /** The next token of an entry (default `defaultNext`). */
  readonly next?: (e: DecodeEntry) => number;
  /** Keep every step's entries in `log` (default true; off for long runs). */
  readonly log?: boolean;
  /** Steps (0-based) whose promise rejects. */
  readonly failSteps?: readonly number[];
  /** Each step waits for `release()` (the test sees it with `waitForStep()`); `delayMs` is ignored. */
  readonly manual?: boolean;
}

/** A byte from the token and position: never `EOS`, never the same run for long. */
export function defaultNext(e: DecodeEntry): number {
  return (e.token * 31 + e.position * 17 + 7) % 256;
}

/**
 * The fake's logits for an entry whose greedy token is `next`: 4 at `next`, below 3 elsewhere (a
 * function of the entry), so a sampler at a high temperature picks other tokens now and then.
 */
export function fakeLogits(e: DecodeEntry, next: number, vocab: number): Float32Array {
  const row = new Float32Array(vocab);
  for (let j = 0; j < vocab; j++) row[j] = (((j * 37 + e.token * 11 + e.position * 3) % 97) / 97) * 3;
  row[next] = 4;
  return row;
}

/** What a sequence generates when run alone, step by step (the `EOS` left out, as the scheduler delivers). */
export function expectedTokens(prompt: ArrayLike<number>, maxTokens: number, next: (e: DecodeEntry) => number = defaultNext): { tokens: number[]; finish: 'stop' | 'length' } {
  const out: number[] = [];
  let token = prompt[0]!;
  for (let p = 0; ; p++) {
    token = p < prompt.length ? prompt[p]! : token;
    const t = next({ slot: 0, token, position: p });
    if (p < prompt.length - 1) continue;
    if (t === EOS) return { tokens: out, finish: 'stop' };
    out.push(t);
    token = t;
    if (out.length === maxTokens) return { tokens: out, finish: 'length' };
  }
}

/** The fake engine. */
export class FakeEngine implements DecodeEngine {
  readonly config: LlamaConfig;
  readonly slots: number;
  readonly maxBatch: number;
  readonly maxPositions: number;
  readonly name = 'fake';
  /** Every step's entries (with `log`). */
  readonly log: DecodeEntry[][] = [];
  /** Steps run, and the largest batch seen. */
  stepCount = 0;
  largestBatch = 0;
  /** Milliseconds each step takes; may be changed between steps. */
  delayMs: number;
  readonly #next: (e: DecodeEntry) => number;
  readonly #log: boolean;
  readonly #fail: Set<number>;
  readonly #expected: Int32Array;
  readonly #manual: boolean;
  #pending: { entries: DecodeEntry[]; handed: boolean; settle: () => void } | null = null;
  readonly #waiters: ((entries: DecodeEntry[]) => void)[] = [];
  #inFlight = false;
  #disposed = false;

  constructor(o: FakeEngineOptions = {}) {
    this.slots = o.slots ?? 4;
    this.maxBatch = o.maxBatch ?? this.slots;
    this.maxPositions = o.maxPositions ?? 256;
    this.config = llamaConfig('FakeEngine', { layers: 1, dim: 8, heads: 2, kvHeads: 2, hidden: 8, maxPositions: this.maxPositions });
    this.delayMs = o.delayMs ?? 0;
    this.#next = o.next ?? defaultNext;
    this.#log = o.log ?? true;
    this.#fail = new Set(o.failSteps ?? []);
    this.#expected = new Int32Array(this.slots).fill(-1);
    this.#manual = o.manual ?? false;
  }

  /** Whether a step is in flight (called, not yet settled). */
  get inFlight(): boolean {
    return this.#inFlight;
  }

  /** Manual: the entries of the step in flight, once it is called (each step is handed out once). */
  waitForStep(): Promise<DecodeEntry[]> {
    const p = this.#pending;
    if (p !== null && !p.handed) {
      p.handed = true;
      return Promise.resolve(p.entries);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Manual: ends the step in flight. */
  release(): void {
    const p = this.#pending;
    if (p === null) throw new Error('FakeEngine.release: no step in flight');
    this.#pending = null;
    p.settle();
  }

  /** Manual: runs steps until `done` settles (releasing each one as it comes). */
  async releaseUntil(done: Promise<unknown>): Promise<void> {
    let finished = false;
    void done.then(
      () => (finished = true),
      () => (finished = true),
    );
    while (!finished) {
      if (this.#pending !== null) this.release();
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Steps that were asked for logits. */
  logitSteps = 0;

  step(entries: readonly DecodeEntry[], options?: { readonly logits?: boolean }): Promise<StepResult> {
    try {
      const tokens = this.#check(entries);
      const index = this.stepCount++;
      const result: StepResult = options?.logits === true ? { tokens, logits: this.#logits(entries, tokens) } : { tokens };
      if (options?.logits === true) this.logitSteps++;
      this.largestBatch = Math.max(this.largestBatch, entries.length);
      if (this.#log) this.log.push(entries.map((e) => ({ ...e })));
      const fail = this.#fail.has(index);
      if (this.#manual) {
        this.#inFlight = true;
        return new Promise((resolve, reject) => {
          const entriesCopy = entries.map((e) => ({ ...e }));
          const settle = (): void => {
            this.#inFlight = false;
            if (fail) reject(new Error(`FakeEngine.step: step ${index} fails on purpose`));
            else resolve(result);
          };
          const waiter = this.#waiters.shift();
          this.#pending = { entries: entriesCopy, handed: waiter !== undefined, settle };
          waiter?.(entriesCopy);
        });
      }
      if (this.delayMs <= 0 && !fail) return Promise.resolve(result);
      this.#inFlight = true;
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          this.#inFlight = false;
          if (fail) reject(new Error(`FakeEngine.step: step ${index} fails on purpose`));
          else resolve(result);
        }, this.delayMs),
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Logits whose argmax is each entry's token (`fakeLogits`). */
  #logits(entries: readonly DecodeEntry[], tokens: Int32Array): Float32Array {
    const v = this.config.vocab;
    const out = new Float32Array(entries.length * v);
    entries.forEach((e, i) => out.set(fakeLogits(e, tokens[i]!, v), i * v));
    return out;
  }

  #check(entries: readonly DecodeEntry[]): Int32Array {
    const op = 'FakeEngine.step';
    if (this.#disposed) throw new Error(`${op}: disposed`);
    if (this.#inFlight) throw new Error(`${op}: a step is already in flight`);
    if (entries.length === 0 || entries.length > this.maxBatch) throw new InvalidArgumentError(op, 'entries', `${entries.length} entries (1..${this.maxBatch})`);
    // A slot may come again in a step (a prompt's chunk), each time at the next position.
    const seen = new Set<number>();
    const expected = Int32Array.from(this.#expected);
    const tokens = new Int32Array(entries.length);
    entries.forEach((e, i) => {
      if (!Number.isInteger(e.slot) || e.slot < 0 || e.slot >= this.slots) throw new InvalidArgumentError(op, 'slot', `bad slot ${e.slot}`);
      if (!Number.isInteger(e.position) || e.position < 0 || e.position >= this.maxPositions) throw new InvalidArgumentError(op, 'position', `position ${e.position} out of range`);
      if (!Number.isInteger(e.token) || e.token < 0 || e.token >= this.config.vocab) throw new InvalidArgumentError(op, 'token', `token ${e.token} out of range`);
      const again = seen.has(e.slot);
      if ((again || e.position !== 0) && e.position !== expected[e.slot]) {
        throw new Error(`${op}: slot ${e.slot} jumps to position ${e.position} (expected ${again ? '' : '0 or '}${expected[e.slot]})`);
      }
      seen.add(e.slot);
      expected[e.slot] = e.position + 1;
      tokens[i] = this.#next(e);
    });
    this.#expected.set(expected);
    return tokens;
  }

  stats(): Readonly<Record<string, number>> {
    return { steps: this.stepCount, largestBatch: this.largestBatch };
  }

  dispose(): void {
    this.#disposed = true;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
