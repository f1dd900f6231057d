/**
 * What a server drives: a decode engine that advances many sequences by one token per step. The
 * CPU reference (`reference-engine.ts`) and the GPU engines (eager and graphed) implement it.
 */
import type { LlamaConfig } from './config.js';

/** One sequence's part of a step. */
export interface DecodeEntry {
  /**
   * The sequence's KV-cache slot, in `[0, engine.slots)`. A slot may appear in several entries of
   * a step (a prompt's chunk: chunked prefill), each at the position after the one before it.
   */
  readonly slot: number;
  /** The token at `position` (the prompt's next token while prefilling, else the last one generated). */
  readonly token: number;
  /** Its position, in `[0, engine.maxPositions)`: keys and values of 0..position-1 are in the slot. */
  readonly position: number;
}

/** A decoder that advances sequences by one token a step, keeping their keys and values. */
export interface DecodeEngine {
  readonly config: LlamaConfig;
  /** Sequences that can be in flight at once (KV-cache slots). */
  readonly slots: number;
  /** The most entries one step takes. */
  readonly maxBatch: number;
  /** Positions a sequence may reach (at most `config.maxPositions`). */
  readonly maxPositions: number;
  /** What the engine is, e.g. `cpu reference`, `gpu graphed (H200)`. */
  readonly name: string;
  /**
   * One step: writes each entry's key and value at (slot, position), attends over positions
   * 0..position of its slot, and resolves with the greedy next token of each entry (argmax of the
   * logits, the lowest index on a tie), in the entries' order. With `logits`, also the logits
   * (entries × vocab, row per entry). Several entries of one slot (positions p, p+1, …) give the
   * same tokens and logits as that many steps of one entry each: an entry sees the keys and
   * values of the slot's earlier entries in the step.
   * @throws InvalidArgumentError (as a rejection) for an empty or oversize batch, a slot out of
   *   range, a later entry of a slot that is not at the position after its earlier one, a position
   *   out of range, a token outside the vocabulary; an engine that tracks what each slot holds (the
   *   CPU reference does) also refuses a position past it. A refused step writes nothing.
   */
  step(entries: readonly DecodeEntry[], options?: { readonly logits?: boolean }): Promise<StepResult>;
  /** Counters for `/metrics` (steps, graph cache figures…), a copy. */
  stats(): Readonly<Record<string, number>>;
  /** Frees what the engine holds. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/** What a step gives back. */
export interface StepResult {
  /** The next token of each entry. */
  readonly tokens: Int32Array;
  /** Entries × vocab logits, when asked for. */
  readonly logits?: Float32Array;
}
