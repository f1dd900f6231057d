/**
 * Sampling a next token from a row of logits, as OpenAI's and vLLM's completions define it:
 * temperature, then top-k (vLLM's extension), then top-p (nucleus), then a draw from what is left,
 * renormalised. Temperature 0 is greedy decoding, which the engine already does on the device, so
 * a greedy request needs no logits at all (`needsLogits`).
 *
 * Each request draws from its own generator, seeded by its `seed` or at random, so a seeded request
 * gives the same tokens whatever it is batched with. The arithmetic is float64 over the float32
 * logits, in index order, so the same logits and seed give the same token on every machine.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { xoshiro128ss } from '../util/random.js';
import { describe } from '../util/validate.js';

/** How a request picks its tokens. */
export interface SamplingParams {
  /** 0 (default): greedy; otherwise the logits are divided by it before the softmax. 0 to 2. */
  readonly temperature?: number;
  /** Keep the most probable tokens whose probabilities add up to at least this (default 1: all). In (0, 1]. */
  readonly topP?: number;
  /** Keep only the k most probable tokens (default 0: all). An integer ≥ 0. */
  readonly topK?: number;
  /** Seeds the request's generator (default: a random seed). A safe integer. */
  readonly seed?: number;
}

/** The largest temperature taken (OpenAI's bound). */
export const MAX_TEMPERATURE = 2;

/** What the parameters are called where they come from (`SamplingParams`' names by default; the HTTP API's are snake_case). */
export interface SamplingNames {
  readonly topP: string;
  readonly topK: string;
}

/**
 * Validated sampling parameters, or `null` for greedy decoding.
 * @throws InvalidArgumentError naming `op` and the parameter (as `names` calls it).
 */
export function checkSampling(op: string, p: SamplingParams | undefined, names: SamplingNames = { topP: 'topP', topK: 'topK' }): Required<SamplingParams> | null {
  if (p === undefined) return null;
  if (typeof p !== 'object' || p === null) throw new InvalidArgumentError(op, 'sampling', `sampling must be an object, got ${describe(p)}`);
  const t = p.temperature ?? 0;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0 || t > MAX_TEMPERATURE) {
    throw new InvalidArgumentError(op, 'temperature', `temperature must be a number from 0 to ${MAX_TEMPERATURE}, got ${describe(t)}`);
  }
  const topP = p.topP ?? 1;
  if (typeof topP !== 'number' || !Number.isFinite(topP) || topP <= 0 || topP > 1) {
    throw new InvalidArgumentError(op, names.topP, `${names.topP} must be a number in (0, 1], got ${describe(topP)}`);
  }
  const given = p.topK ?? 0;
  if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < -1) {
    throw new InvalidArgumentError(op, names.topK, `${names.topK} must be an integer ≥ 0 (0 or -1: no limit), got ${describe(given)}`);
  }
  // -1 is vLLM's "no limit", which its clients send: the same as 0 here.
  const topK = given === -1 ? 0 : given;
  const seed = p.seed ?? Math.floor(Math.random() * 2 ** 32);
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed)) throw new InvalidArgumentError(op, 'seed', `seed must be a safe integer, got ${describe(seed)}`);
  // Greedy whatever the rest says: nothing to draw.
  if (t === 0 || topK === 1) return null;
  return { temperature: t, topP, topK, seed };
}

/** One request's sampler: its parameters and its own generator. */
export class Sampler {
  readonly #temperature: number;
  readonly #topP: number;
  readonly #topK: number;
  readonly #uniform: () => number;
  // Scratch reused across draws (one per request, sized to the vocabulary on first use).
  #order: Int32Array = new Int32Array(0);
  #prob: Float64Array = new Float64Array(0);

  constructor(p: Required<SamplingParams>) {
    this.#temperature = p.temperature;
    this.#topP = p.topP;
    this.#topK = p.topK;
    // Both halves of the seed start the generator: no two safe integers share a stream (folding
    // them into 32 bits made 0, -1 and 2^32 + 1 draw the same tokens).
    this.#uniform = xoshiro128ss(p.seed);
  }

  /** The next token from `logits[offset .. offset + vocab)`. */
  sample(logits: Float32Array, offset: number, vocab: number): number {
    if (this.#prob.length !== vocab) {
      this.#prob = new Float64Array(vocab);
      this.#order = new Int32Array(vocab);
    }
    const prob = this.#prob;
    let max = -Infinity;
    for (let i = 0; i < vocab; i++) max = Math.max(max, logits[offset + i]!);
    let sum = 0;
    for (let i = 0; i < vocab; i++) {
      const e = Math.exp((logits[offset + i]! - max) / this.#temperature);
      prob[i] = e;
      sum += e;
    }
    // Most probable first; the lower index first on a tie, so the order is the same everywhere.
    const order = this.#order;
    for (let i = 0; i < vocab; i++) order[i] = i;
    order.sort((a, b) => prob[b]! - prob[a]! || a - b);
    let keep = this.#topK > 0 ? Math.min(this.#topK, vocab) : vocab;
    if (this.#topP < 1) {
      let cum = 0;
      let k = 0;
      while (k < keep) {
        cum += prob[order[k]!]! / sum;
        k++;
        if (cum >= this.#topP) break;
      }
      keep = k;
    }
    let kept = 0;
    for (let k = 0; k < keep; k++) kept += prob[order[k]!]!;
    let u = this.#uniform() * kept;
    for (let k = 0; k < keep - 1; k++) {
      u -= prob[order[k]!]!;
      if (u < 0) return order[k]!;
    }
    return order[keep - 1]!;
  }
}
