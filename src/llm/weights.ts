/**
 * A decoder's weights as Hugging Face names them (`LlamaForCausalLM.state_dict()`), so a
 * `.safetensors` file of that architecture loads as it is and a set made here loads into
 * transformers. Matrices are row-major `[out, in]`, as `torch.nn.Linear` keeps them: row `r` of
 * `q_proj` gives output `r`, and output `h * headDim + d` is element `d` of head `h`.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireU32 } from '../util/validate.js';
import { headDim, requireLlamaConfig, type LlamaConfig } from './config.js';

/** One tensor: its shape (outermost first) and its values, row-major. */
export interface WeightTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** A weight set: Hugging Face tensor name → tensor. Tensors a decoder does not use may be present. */
export type LlamaWeights = ReadonlyMap<string, WeightTensor>;

/** One layer's tensors, resolved from a weight set (the arrays themselves, not copies). */
export interface LlamaLayerTensors {
  /** `input_layernorm.weight` [dim]. */
  readonly inputNorm: Float32Array;
  /** `self_attn.q_proj.weight` [heads × headDim, dim]. */
  readonly q: Float32Array;
  /** `self_attn.k_proj.weight` [kvHeads × headDim, dim]. */
  readonly k: Float32Array;
  /** `self_attn.v_proj.weight` [kvHeads × headDim, dim]. */
  readonly v: Float32Array;
  /** `self_attn.o_proj.weight` [dim, heads × headDim]. */
  readonly o: Float32Array;
  /** `post_attention_layernorm.weight` [dim]. */
  readonly postNorm: Float32Array;
  /** `mlp.gate_proj.weight` [hidden, dim]. */
  readonly gate: Float32Array;
  /** `mlp.up_proj.weight` [hidden, dim]. */
  readonly up: Float32Array;
  /** `mlp.down_proj.weight` [dim, hidden]. */
  readonly down: Float32Array;
}

/** A weight set resolved for a forward pass: every tensor checked and looked up once. */
export interface LlamaTensors {
  /** `model.embed_tokens.weight` [vocab, dim]. */
  readonly embed: Float32Array;
  readonly layers: readonly LlamaLayerTensors[];
  /** `model.norm.weight` [dim]. */
  readonly norm: Float32Array;
  /** `lm_head.weight` [vocab, dim] (not tied to the embedding). */
  readonly lmHead: Float32Array;
}

/** The per-layer tensors: the `LlamaLayerTensors` field and the Hugging Face name after `model.layers.{i}.`. */
const LAYER_TENSORS = [
  ['q', 'self_attn.q_proj.weight'],
  ['k', 'self_attn.k_proj.weight'],
  ['v', 'self_attn.v_proj.weight'],
  ['o', 'self_attn.o_proj.weight'],
  ['gate', 'mlp.gate_proj.weight'],
  ['up', 'mlp.up_proj.weight'],
  ['down', 'mlp.down_proj.weight'],
  ['inputNorm', 'input_layernorm.weight'],
  ['postNorm', 'post_attention_layernorm.weight'],
] as const satisfies readonly (readonly [keyof LlamaLayerTensors, string])[];

/** What one tensor is, for the generator and the checks. */
interface TensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
  /** `norm`: a scale near 1; `embed`: unit variance; `linear`: variance 1 / fan-in. */
  readonly kind: 'norm' | 'embed' | 'linear';
}

/** Every tensor a decoder of `c` needs, in the order `LlamaForCausalLM.state_dict()` lists them. */
function tensorSpecs(c: LlamaConfig): TensorSpec[] {
  const hd = headDim(c);
  const q = c.heads * hd;
  const kv = c.kvHeads * hd;
  const shapes: Record<(typeof LAYER_TENSORS)[number][0], readonly number[]> = {
    q: [q, c.dim],
    k: [kv, c.dim],
    v: [kv, c.dim],
    o: [c.dim, q],
    gate: [c.hidden, c.dim],
    up: [c.hidden, c.dim],
    down: [c.dim, c.hidden],
    inputNorm: [c.dim],
    postNorm: [c.dim],
  };
  const specs: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [c.vocab, c.dim], kind: 'embed' }];
  for (let i = 0; i < c.layers; i++) {
    for (const [field, suffix] of LAYER_TENSORS) {
      specs.push({ name: `model.layers.${i}.${suffix}`, shape: shapes[field], kind: field.endsWith('Norm') ? 'norm' : 'linear' });
    }
  }
  specs.push({ name: 'model.norm.weight', shape: [c.dim], kind: 'norm' });
  specs.push({ name: 'lm_head.weight', shape: [c.vocab, c.dim], kind: 'linear' });
  return specs;
}

/**
 * The tensors a decoder of `config` needs, name → shape, in `state_dict()` order.
 * @throws InvalidArgumentError naming `llamaTensorShapes` for a bad config.
 */
export function llamaTensorShapes(config: LlamaConfig): Map<string, readonly number[]> {
  const c = requireLlamaConfig('llamaTensorShapes', config);
  return new Map(tensorSpecs(c).map((s) => [s.name, s.shape]));
}

/** `[a, b]`. */
function showShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * The first thing wrong with `weights` for a decoder of `c` (a missing tensor, a wrong shape, data
 * of the wrong type or length), or `undefined` when nothing is. Tensors it does not need are let
 * be: checkpoints carry some (older ones a `rotary_emb.inv_freq` per layer).
 */
export function weightsProblem(c: LlamaConfig, weights: LlamaWeights): string | undefined {
  if (typeof (weights as { get?: unknown } | null)?.get !== 'function') {
    return `weights must be a Map of tensor name → { shape, data }, got ${describe(weights)}`;
  }
  for (const spec of tensorSpecs(c)) {
    const t: unknown = weights.get(spec.name);
    if (t === undefined) return `tensor '${spec.name}' ${showShape(spec.shape)} is missing`;
    if (typeof t !== 'object' || t === null) return `tensor '${spec.name}' must be an object { shape, data }, got ${describe(t)}`;
    const { shape, data } = t as { shape?: unknown; data?: unknown };
    if (!Array.isArray(shape) || shape.length !== spec.shape.length || shape.some((n, i) => n !== spec.shape[i])) {
      return `tensor '${spec.name}' must have shape ${showShape(spec.shape)}, got ${Array.isArray(shape) ? showShape(shape) : describe(shape)}`;
    }
    if (!(data instanceof Float32Array)) return `tensor '${spec.name}' must hold a Float32Array, got ${describe(data)}`;
    const n = spec.shape.reduce((a, b) => a * b, 1);
    if (data.length !== n) return `tensor '${spec.name}' ${showShape(spec.shape)} must hold ${n} values, got ${data.length}`;
  }
  return undefined;
}

/**
 * Checks that `weights` holds every tensor a decoder of `config` needs, each of the right shape
 * with as many values as its shape says. Tensors it does not need are allowed.
 * @throws InvalidArgumentError naming `op` and the first problem (`tensor 'model.norm.weight' [64] is missing`).
 */
export function checkWeights(op: string, config: LlamaConfig, weights: LlamaWeights): void {
  const c = requireLlamaConfig(op, config);
  const problem = weightsProblem(c, weights);
  if (problem !== undefined) throw new InvalidArgumentError(op, 'weights', problem);
}

/**
 * `weights` checked (as `checkWeights`) and resolved into the arrays a forward pass reads.
 * @throws InvalidArgumentError naming `op`.
 */
export function llamaTensors(op: string, config: LlamaConfig, weights: LlamaWeights): LlamaTensors {
  checkWeights(op, config, weights);
  const get = (name: string): Float32Array => weights.get(name)!.data;
  const layers: LlamaLayerTensors[] = [];
  for (let i = 0; i < config.layers; i++) {
    const layer: Partial<Record<keyof LlamaLayerTensors, Float32Array>> = {};
    for (const [field, suffix] of LAYER_TENSORS) layer[field] = get(`model.layers.${i}.${suffix}`);
    layers.push(layer as LlamaLayerTensors);
  }
  return { embed: get('model.embed_tokens.weight'), layers, norm: get('model.norm.weight'), lmHead: get('lm_head.weight') };
}

/**
 * mulberry32 (Tommy Ettinger's 32-bit generator: one 32-bit state advanced by a Weyl step and
 * mixed by multiply–xorshift): uniform numbers in [0, 1), the same sequence for a seed on every
 * platform, since it uses only 32-bit integer arithmetic. Small and fast, not cryptographic.
 */
function mulberry32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A weight set for `config`, the same for the same seed: one mulberry32 stream drawn through the
 * tensors in `state_dict()` order, row-major. Values are uniform, scaled so that activations keep
 * a steady size through many layers: projections with standard deviation 1/√fan-in (a layer
 * keeps its input's scale), the embedding with deviation 1, norm weights 1 ± 0.1. Greedy decoding
 * of such a model gives varied tokens rather than one repeated, which is what a test of a decoder
 * needs; its text means nothing.
 * @example
 * const weights = syntheticWeights(llamaConfig('demo', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128 }), 1);
 * @throws InvalidArgumentError naming `syntheticWeights` for a bad config or a seed outside 0..2^32−1.
 */
export function syntheticWeights(config: LlamaConfig, seed: number): Map<string, WeightTensor> {
  const op = 'syntheticWeights';
  const c = requireLlamaConfig(op, config);
  const random = mulberry32(requireU32(op, 'seed', seed));
  const out = new Map<string, WeightTensor>();
  for (const spec of tensorSpecs(c)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    // Uniform on [-a, a] has deviation a/√3.
    const a = spec.kind === 'norm' ? 0.1 : spec.kind === 'embed' ? Math.sqrt(3) : Math.sqrt(3 / spec.shape[1]!);
    const base = spec.kind === 'norm' ? 1 : 0;
    for (let i = 0; i < n; i++) data[i] = base + a * (2 * random() - 1);
    out.set(spec.name, { shape: Object.freeze([...spec.shape]), data });
  }
  return out;
}
