/**
 * The CPU reference engine: the `DecodeEngine` a server runs without a GPU, and the one the GPU
 * engines are checked against. Slow (a plain loop per multiply) but exact to the reference
 * forward pass; meant for small configs (2 layers of width 64 decode in well under a
 * millisecond a token).
 */
import { DisposedError, InvalidArgumentError } from '../errors/base.js';
import { describe, requireBoolean, requireInt, requireOptions } from '../util/validate.js';
import { headDim, requireLlamaConfig, type LlamaConfig } from './config.js';
import type { DecodeEngine, DecodeEntry, StepResult } from './engine.js';
import { ReferenceDecoder, argmax, type ReferenceKvCache } from './reference.js';
import { checkWeights, type LlamaWeights } from './weights.js';

/** How a `CpuDecodeEngine` is sized. */
export interface CpuDecodeEngineOptions {
  /** KV-cache slots (sequences in flight at once); 8 by default. */
  readonly slots?: number;
  /** The most entries one step takes (a slot's prompt chunk counts an entry a position); `slots` by default. */
  readonly maxBatch?: number;
  /** Positions a sequence may reach, at most `config.maxPositions` (the default). */
  readonly maxPositions?: number;
}

/** The most values one layer's keys (or values) may take: 2^30 float32s, 4 GiB. */
const MAX_CACHE_VALUES = 2 ** 30;

/**
 * The longest a step computes without giving the event loop a turn, in milliseconds: checked
 * between the pieces of each layer of each entry (`ReferenceDecoder.decodeLayers`), so one
 * piece's work (up to about 5 ms on the default config) comes on top.
 */
export const CPU_STEP_SLICE_MS = 4;

/** A turn of the event loop: timers, I/O and other callbacks run before it resolves. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A `DecodeEngine` on the CPU over the reference forward pass (`ReferenceDecoder`). A step checks
 * every entry before it writes anything: a refused step leaves the cache as it was. Besides the
 * refusals every engine makes, it tracks how many positions each slot holds and refuses a position
 * past them (it would attend over keys never written); position 0 starts a slot afresh.
 *
 * @example
 * const config = llamaConfig('demo', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128 });
 * using engine = new CpuDecodeEngine(config, syntheticWeights(config, 1), { slots: 4 });
 * const { tokens } = await engine.step([{ slot: 0, token: BOS, position: 0 }]);
 */
export class CpuDecodeEngine implements DecodeEngine {
  readonly config: LlamaConfig;
  readonly slots: number;
  readonly maxBatch: number;
  readonly maxPositions: number;
  readonly name = 'cpu reference';
  readonly #decoder: ReferenceDecoder;
  #cache: ReferenceKvCache | undefined;
  /** Positions each slot holds (its sequence's keys and values at 0..held−1). */
  readonly #held: Int32Array;
  #steps = 0;
  #tokens = 0;
  #busy = false;

  /**
   * @throws InvalidArgumentError naming `new CpuDecodeEngine` for a bad config, weights that do not
   *   fit it (`checkWeights`), unknown options, sizes out of range or a cache over 4 GiB a layer.
   *   The weights' arrays are read in place, not copied.
   */
  constructor(config: LlamaConfig, weights: LlamaWeights, options?: CpuDecodeEngineOptions) {
    const op = 'new CpuDecodeEngine';
    const c = requireLlamaConfig(op, config);
    const o = requireOptions<CpuDecodeEngineOptions>(op, options, ['slots', 'maxBatch', 'maxPositions']);
    const slots = requireInt(op, 'slots', o.slots ?? 8, 1, 1 << 16);
    const maxBatch = requireInt(op, 'maxBatch', o.maxBatch ?? slots, 1, 1 << 16);
    const maxPositions = requireInt(op, 'maxPositions', o.maxPositions ?? c.maxPositions, 1, c.maxPositions);
    const values = slots * maxPositions * c.kvHeads * headDim(c);
    if (values > MAX_CACHE_VALUES) {
      const gib = (values * 4 * 2 * c.layers) / 2 ** 30;
      throw new InvalidArgumentError(op, 'slots', `a KV cache of ${slots} slots × ${maxPositions} positions would take ${gib.toFixed(1)} GiB (over 4 GiB a layer): lower slots or maxPositions`);
    }
    // Checked here too, so a refusal names the call the user made.
    checkWeights(op, c, weights);
    this.#decoder = new ReferenceDecoder(c, weights);
    this.config = c;
    this.slots = slots;
    this.maxBatch = maxBatch;
    this.maxPositions = maxPositions;
    this.#cache = this.#decoder.createCache(slots, maxPositions);
    this.#held = new Int32Array(slots);
  }

  /**
   * One step (see `DecodeEngine.step`): each entry's token at its position in its slot, the greedy
   * next tokens in the entries' order, and with `logits: true` the logits (entries × vocab).
   * @throws InvalidArgumentError (as a rejection) naming `CpuDecodeEngine.step` for an empty or
   *   oversize batch, an entry that is not `{ slot, token, position }`, a slot out of range, a
   *   later entry of a slot not at the position after its earlier one, a position out of range or
   *   past what its slot holds, a token outside the
   *   vocabulary, unknown options, a step while another is in flight; DisposedError after
   *   `dispose()`. Nothing is written then. A `dispose()` while the step runs rejects it with
   *   DisposedError at its next turn of the event loop.
   *
   * The work is done on the calling thread, but a step never holds it for long: every
   * `CPU_STEP_SLICE_MS` milliseconds (checked within each layer) it gives the event loop a turn, so
   * timers, I/O and the server's requests are served while a large config decodes. The tokens
   * and logits are the same whatever the turns.
   */
  async step(entries: readonly DecodeEntry[], options?: { readonly logits?: boolean }): Promise<StepResult> {
    const op = 'CpuDecodeEngine.step';
    const cache = this.#cache;
    if (cache === undefined) throw new DisposedError(op, 'the engine');
    if (this.#busy) throw new InvalidArgumentError(op, 'entries', 'a step is in flight: await it before the next');
    const o = requireOptions<{ logits: boolean }>(op, options, ['logits']);
    const wantLogits = o.logits === undefined ? false : requireBoolean(op, 'logits', o.logits);
    if (!Array.isArray(entries)) throw new InvalidArgumentError(op, 'entries', `entries must be an array of { slot, token, position }, got ${describe(entries)}`);
    if (entries.length === 0 || entries.length > this.maxBatch) {
      throw new InvalidArgumentError(op, 'entries', `a step takes 1..${this.maxBatch} entries (maxBatch), got ${entries.length}`);
    }
    // What each slot of the step will hold once its entries so far are written: a later entry of
    // a slot must be at the next position (a prompt's chunk), its keys those of the entries before.
    const held = new Map<number, { held: number; at: number }>();
    const checked: DecodeEntry[] = [];
    entries.forEach((e: unknown, i) => {
      const name = `entries[${i}]`;
      if (typeof e !== 'object' || e === null) throw new InvalidArgumentError(op, name, `${name} must be { slot, token, position }, got ${describe(e)}`);
      // Other fields are let be: a caller's own record (with an id, say) is a DecodeEntry too.
      const f = e as Partial<DecodeEntry>;
      const slot = requireInt(op, `${name}.slot`, f.slot, 0, this.slots - 1);
      const token = requireInt(op, `${name}.token`, f.token, 0, this.config.vocab - 1);
      const position = requireInt(op, `${name}.position`, f.position, 0, this.maxPositions - 1);
      const before = held.get(slot);
      if (before !== undefined) {
        if (position !== before.held) {
          throw new InvalidArgumentError(op, `${name}.position`, `${name}.position (${position}): slot ${slot} is at position ${before.held - 1} in entries[${before.at}], so a later entry of it must be at the next position (${before.held})`);
        }
      } else if (position > this.#held[slot]!) {
        throw new InvalidArgumentError(op, `${name}.position`, `${name}.position (${position}) is past what slot ${slot} holds (${this.#held[slot]} positions): it would attend over keys never written`);
      }
      held.set(slot, { held: position + 1, at: i });
      checked.push({ slot, token, position });
    });
    // Everything is checked: from here on nothing can refuse, so a step writes all its entries or none.
    const tokens = new Int32Array(checked.length);
    const logits = wantLogits ? new Float32Array(checked.length * this.config.vocab) : undefined;
    this.#busy = true;
    try {
      let slice = performance.now();
      for (let i = 0; i < checked.length; i++) {
        const { slot, token, position } = checked[i]!;
        const layers = this.#decoder.decodeLayers(cache, slot, token, position);
        let r = layers.next();
        while (r.done !== true) {
          if (performance.now() - slice >= CPU_STEP_SLICE_MS) {
            await nextTurn();
            if (this.#cache === undefined) throw new DisposedError(op, 'the engine');
            slice = performance.now();
          }
          r = layers.next();
        }
        const row = r.value;
        // A slot written at p holds 0..p: what it held beyond p belonged to the sequence it replaces.
        this.#held[slot] = position + 1;
        tokens[i] = argmax(row);
        logits?.set(row, i * this.config.vocab);
      }
    } finally {
      this.#busy = false;
    }
    this.#steps++;
    this.#tokens += checked.length;
    return logits === undefined ? { tokens } : { tokens, logits };
  }

  /** `{ steps, tokens }`: steps completed and entries decoded in them (refused steps count in neither). */
  stats(): Readonly<Record<string, number>> {
    return { steps: this.#steps, tokens: this.#tokens };
  }

  /** Drops the KV cache; later steps are refused with `DisposedError`. Idempotent. */
  dispose(): void {
    this.#cache = undefined;
  }

  /** `dispose()`, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
