/**
 * The decoder's forward pass on the CPU, written to be read and checked against Hugging Face
 * transformers' `LlamaForCausalLM` (modeling_llama.py, eager attention, float32), not to be fast.
 * One token: embed → per layer [RMSNorm → q, k, v projections → rotary embedding of q and k →
 * k, v into the cache → attention over positions 0..p → o projection → residual → RMSNorm →
 * down(silu(gate x) · up x) → residual] → RMSNorm → lm_head → logits.
 *
 * Numerics: every value transformers keeps in a float32 tensor is rounded to float32 here at the
 * same point (each projection's output, the normalised activations, the rotary cos/sin and their
 * products, the attention probabilities, each residual sum), and sums (dot products, the mean of
 * squares, the softmax's denominator) accumulate in float64. The rotary angle is rounded as
 * transformers computes it (the inverse frequencies, then position × frequency, in float32), since
 * at long positions that rounding moves the angle by more than the rest put together. What is left
 * between this and transformers on a GPU is float32 summation order: differences of a few float32
 * ulps per value, far below any error in the algorithm.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt } from '../util/validate.js';
import { headDim, requireLlamaConfig, type LlamaConfig } from './config.js';
import { llamaTensors, type LlamaTensors, type LlamaWeights } from './weights.js';

const f32 = Math.fround;

/**
 * Root-mean-square normalisation as `LlamaRMSNorm`: `weight · (x / √(mean(x²) + eps))`, the mean
 * rounded to float32 and the reciprocal root taken in float32 as transformers does.
 */
export function rmsNorm(x: Float32Array, weight: Float32Array, eps: number, out: Float32Array = new Float32Array(x.length)): Float32Array {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * x[i]!;
  const r = f32(1 / Math.sqrt(f32(f32(sum / x.length) + eps)));
  for (let i = 0; i < x.length; i++) out[i] = f32(weight[i]! * f32(x[i]! * r));
  return out;
}

/** `out = W x` for a row-major `W` of `rows × cols` (a `torch.nn.Linear` without bias). */
export function matVec(w: Float32Array, rows: number, cols: number, x: Float32Array, out: Float32Array = new Float32Array(rows)): Float32Array {
  for (let r = 0, base = 0; r < rows; r++, base += cols) {
    let sum = 0;
    for (let c = 0; c < cols; c++) sum += w[base + c]! * x[c]!;
    out[r] = f32(sum);
  }
  return out;
}

/**
 * The rotary inverse frequencies `theta^(-2j/headDim)` for `j < headDim/2`, computed in float32
 * as transformers' default rope computes `inv_freq` (`1 / base ** (arange(0, d, 2) / d)`).
 */
export function inverseFrequencies(hd: number, theta: number): Float64Array {
  const inv = new Float64Array(hd / 2);
  for (let j = 0; j < hd / 2; j++) inv[j] = f32(1 / f32(theta ** f32((2 * j) / hd)));
  return inv;
}

/**
 * Rotates one head in place (the `headDim` values of `x` from `offset`) to `position`, with
 * transformers' `rotate_half` pairing: element `j` turns with element `j + headDim/2` (not with its
 * neighbour, as the original Llama code paired them) by the angle `position · inv[j]`:
 * `x_j cos − x_{j+h} sin` and `x_{j+h} cos + x_j sin`.
 */
export function applyRotary(x: Float32Array, offset: number, hd: number, position: number, inv: Float64Array): void {
  const half = hd / 2;
  for (let j = 0; j < half; j++) {
    const angle = f32(inv[j]! * position);
    const cos = f32(Math.cos(angle));
    const sin = f32(Math.sin(angle));
    const a = x[offset + j]!;
    const b = x[offset + j + half]!;
    x[offset + j] = f32(f32(a * cos) - f32(b * sin));
    x[offset + j + half] = f32(f32(b * cos) + f32(a * sin));
  }
}

/** The first `n` values of `scores` replaced by their softmax (max subtracted first, so large scores do not overflow). */
export function softmaxInPlace(scores: Float32Array, n: number = scores.length): void {
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (scores[i]! > max) max = scores[i]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(scores[i]! - max);
  for (let i = 0; i < n; i++) scores[i] = f32(Math.exp(scores[i]! - max) / sum);
}

/** `x · sigmoid(x)` (SiLU, the Llama MLP's activation). */
export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

/** The index of the largest value, the lowest index on a tie (as `torch.argmax`'s first maximum). */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/**
 * The keys and values of `slots` sequences of up to `maxPositions` tokens each: per layer one
 * array of keys and one of values, laid out `[slot][position][kvHead][headDim]`. Keys are kept
 * after their rotary embedding, as transformers' cache keeps them.
 */
export class ReferenceKvCache {
  readonly slots: number;
  readonly maxPositions: number;
  /** Values per position: `kvHeads × headDim`. */
  readonly width: number;
  /** Per layer, `slots × maxPositions × width`. */
  readonly keys: readonly Float32Array[];
  /** Per layer, `slots × maxPositions × width`. */
  readonly values: readonly Float32Array[];

  /** The sizes are the caller's to check (`CpuDecodeEngine` checks them and the memory they take). */
  constructor(config: LlamaConfig, slots: number, maxPositions: number) {
    this.slots = slots;
    this.maxPositions = maxPositions;
    this.width = config.kvHeads * headDim(config);
    const n = slots * maxPositions * this.width;
    this.keys = Array.from({ length: config.layers }, () => new Float32Array(n));
    this.values = Array.from({ length: config.layers }, () => new Float32Array(n));
  }

  /** Where (slot, position)'s row starts in a layer's array. */
  at(slot: number, position: number): number {
    return (slot * this.maxPositions + position) * this.width;
  }
}

/**
 * Attention of one query head over `count` cached positions: `softmax(q·k / √headDim) · v`, written
 * into `out` at `outOffset`. `rows(i)` is where position `i`'s key and value rows start and
 * `kvOffset` the kv head's place in a row.
 */
function attendHead(
  q: Float32Array,
  qOffset: number,
  keys: Float32Array,
  values: Float32Array,
  rows: (i: number) => number,
  kvOffset: number,
  count: number,
  hd: number,
  scores: Float32Array,
  out: Float32Array,
  outOffset: number,
): void {
  // transformers scales by `head_dim ** -0.5` after the product.
  const scale = f32(hd ** -0.5);
  for (let i = 0; i < count; i++) {
    const k = rows(i) + kvOffset;
    let dot = 0;
    for (let d = 0; d < hd; d++) dot += q[qOffset + d]! * keys[k + d]!;
    scores[i] = f32(f32(dot) * scale);
  }
  softmaxInPlace(scores, count);
  for (let d = 0; d < hd; d++) {
    let sum = 0;
    for (let i = 0; i < count; i++) sum += scores[i]! * values[rows(i) + kvOffset + d]!;
    out[outOffset + d] = f32(sum);
  }
}

/** `x += y`, each sum rounded to float32 (a residual connection). */
function addInPlace(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i] = f32(x[i]! + y[i]!);
}

/** The MLP's inner activation `silu(gate) · up`, into `gate`. */
function swiglu(gate: Float32Array, up: Float32Array): void {
  for (let i = 0; i < gate.length; i++) gate[i] = f32(f32(silu(gate[i]!)) * up[i]!);
}

/**
 * A decoder of one config and weight set, decoding one token at a time against a
 * `ReferenceKvCache` (`CpuDecodeEngine` drives it).
 */
export class ReferenceDecoder {
  readonly config: LlamaConfig;
  readonly tensors: LlamaTensors;
  readonly #inv: Float64Array;

  /**
   * @throws InvalidArgumentError naming `ReferenceDecoder` for a bad config or weights that do not
   *   fit it (`checkWeights`). The weights' arrays are read in place, not copied.
   */
  constructor(config: LlamaConfig, weights: LlamaWeights) {
    const op = 'ReferenceDecoder';
    this.config = requireLlamaConfig(op, config);
    this.tensors = llamaTensors(op, this.config, weights);
    this.#inv = inverseFrequencies(headDim(this.config), this.config.ropeTheta);
  }

  /** A cache for this decoder's shape. */
  createCache(slots: number, maxPositions: number): ReferenceKvCache {
    return new ReferenceKvCache(this.config, slots, maxPositions);
  }

  /**
   * The logits after `token` at `position` of the sequence in `slot`: writes the token's keys and
   * values at (slot, position) and attends over positions 0..position of the slot, which must
   * hold the sequence's earlier positions. Checks nothing (the caller checks: `CpuDecodeEngine.step`
   * does); an index out of range gives NaN logits, never a crash.
   */
  decode(cache: ReferenceKvCache, slot: number, token: number, position: number): Float32Array {
    const layers = this.decodeLayers(cache, slot, token, position);
    for (;;) {
      const r = layers.next();
      if (r.done === true) return r.value;
    }
  }

  /**
   * `decode` in pieces: the generator yields within each layer (after the q, k, v projections,
   * after the attention, after each of the MLP's three projections) and returns the logits, the
   * same values as `decode`'s. A caller that must not hold the thread for a whole token
   * (`CpuDecodeEngine.step`) gives the event loop a turn between pieces; the cache is written
   * layer by layer, so nothing else may use the slot until the generator has returned.
   */
  *decodeLayers(cache: ReferenceKvCache, slot: number, token: number, position: number): Generator<void, Float32Array, void> {
    const c = this.config;
    const t = this.tensors;
    const hd = headDim(c);
    const group = c.heads / c.kvHeads;
    const x = t.embed.slice(token * c.dim, (token + 1) * c.dim);
    const h = new Float32Array(c.dim);
    const q = new Float32Array(c.heads * hd);
    const k = new Float32Array(cache.width);
    const v = new Float32Array(cache.width);
    const attn = new Float32Array(c.heads * hd);
    const o = new Float32Array(c.dim);
    const gate = new Float32Array(c.hidden);
    const up = new Float32Array(c.hidden);
    const scores = new Float32Array(position + 1);
    const rows = (i: number): number => cache.at(slot, i);
    for (let l = 0; l < c.layers; l++) {
      const w = t.layers[l]!;
      rmsNorm(x, w.inputNorm, c.rmsEps, h);
      matVec(w.q, c.heads * hd, c.dim, h, q);
      matVec(w.k, cache.width, c.dim, h, k);
      matVec(w.v, cache.width, c.dim, h, v);
      for (let head = 0; head < c.heads; head++) applyRotary(q, head * hd, hd, position, this.#inv);
      for (let head = 0; head < c.kvHeads; head++) applyRotary(k, head * hd, hd, position, this.#inv);
      cache.keys[l]!.set(k, cache.at(slot, position));
      cache.values[l]!.set(v, cache.at(slot, position));
      yield;
      // Grouped-query attention: query heads g·group .. g·group+group−1 share kv head g (transformers' repeat_kv).
      for (let head = 0; head < c.heads; head++) {
        const kvOffset = Math.floor(head / group) * hd;
        attendHead(q, head * hd, cache.keys[l]!, cache.values[l]!, rows, kvOffset, position + 1, hd, scores, attn, head * hd);
      }
      matVec(w.o, c.dim, c.heads * hd, attn, o);
      addInPlace(x, o);
      yield;
      rmsNorm(x, w.postNorm, c.rmsEps, h);
      matVec(w.gate, c.hidden, c.dim, h, gate);
      yield;
      matVec(w.up, c.hidden, c.dim, h, up);
      swiglu(gate, up);
      yield;
      matVec(w.down, c.dim, c.hidden, gate, o);
      addInPlace(x, o);
      yield;
    }
    rmsNorm(x, t.norm, c.rmsEps, h);
    return matVec(t.lmHead, c.vocab, c.dim, h);
  }
}

/**
 * The logits at every position of `tokens` (positions 0..n−1), computed as transformers computes a
 * whole sequence in one forward pass: layer by layer over all positions, each query attending
 * over the keys at or before it (a causal mask), no cache. Row `i` of the result
 * (`tokens.length × vocab`) is the logits after `tokens[i]`; the greedy next token is the argmax
 * of the last row. Decoding the tokens one by one must give the same rows.
 * @throws InvalidArgumentError naming `forwardSequence` for a bad config, weights that do not fit
 *   it, an empty sequence or one longer than `maxPositions`, or a token outside the vocabulary.
 */
export function forwardSequence(config: LlamaConfig, weights: LlamaWeights, tokens: ArrayLike<number>): Float32Array {
  const op = 'forwardSequence';
  const c = requireLlamaConfig(op, config);
  const t = llamaTensors(op, c, weights);
  if (typeof tokens !== 'object' || tokens === null || typeof tokens.length !== 'number') {
    throw new InvalidArgumentError(op, 'tokens', `tokens must be an array of token ids, got ${describe(tokens)}`);
  }
  const n = requireInt(op, 'tokens.length', tokens.length, 1, c.maxPositions);
  for (let i = 0; i < n; i++) requireInt(op, `tokens[${i}]`, tokens[i], 0, c.vocab - 1);
  const hd = headDim(c);
  const group = c.heads / c.kvHeads;
  const kvWidth = c.kvHeads * hd;
  const inv = inverseFrequencies(hd, c.ropeTheta);
  // The hidden state of every position, row by row.
  const xs = Array.from({ length: n }, (_, i) => t.embed.slice(tokens[i]! * c.dim, (tokens[i]! + 1) * c.dim));
  for (let l = 0; l < c.layers; l++) {
    const w = t.layers[l]!;
    const normed = xs.map((x) => rmsNorm(x, w.inputNorm, c.rmsEps));
    const qs = normed.map((h, p) => {
      const q = matVec(w.q, c.heads * hd, c.dim, h);
      for (let head = 0; head < c.heads; head++) applyRotary(q, head * hd, hd, p, inv);
      return q;
    });
    // Keys and values of all positions, one row per position.
    const keys = new Float32Array(n * kvWidth);
    const values = new Float32Array(n * kvWidth);
    normed.forEach((h, p) => {
      const k = matVec(w.k, kvWidth, c.dim, h);
      for (let head = 0; head < c.kvHeads; head++) applyRotary(k, head * hd, hd, p, inv);
      keys.set(k, p * kvWidth);
      values.set(matVec(w.v, kvWidth, c.dim, h), p * kvWidth);
    });
    const scores = new Float32Array(n);
    for (let p = 0; p < n; p++) {
      const attn = new Float32Array(c.heads * hd);
      for (let head = 0; head < c.heads; head++) {
        // The causal mask: position p sees positions 0..p.
        attendHead(qs[p]!, head * hd, keys, values, (i) => i * kvWidth, Math.floor(head / group) * hd, p + 1, hd, scores, attn, head * hd);
      }
      addInPlace(xs[p]!, matVec(w.o, c.dim, c.heads * hd, attn));
    }
    for (const x of xs) {
      const h = rmsNorm(x, w.postNorm, c.rmsEps);
      const gate = matVec(w.gate, c.hidden, c.dim, h);
      swiglu(gate, matVec(w.up, c.hidden, c.dim, h));
      addInPlace(x, matVec(w.down, c.dim, c.hidden, gate));
    }
  }
  const logits = new Float32Array(n * c.vocab);
  xs.forEach((x, p) => matVec(t.lmHead, c.vocab, c.dim, rmsNorm(x, t.norm, c.rmsEps), logits.subarray(p * c.vocab, (p + 1) * c.vocab)));
  return logits;
}
