/**
 * A `LlamaConfig` to and from a Hugging Face `config.json` of the Llama architecture, so that a
 * checkpoint's config loads here and a config made here loads into transformers' `LlamaConfig`.
 * Only what the reference computes is accepted: SiLU, no biases, untied embeddings, default rope.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireOneOf, requireOptions } from '../util/validate.js';
import { llamaConfig, requireLlamaConfig, type LlamaConfig } from './config.js';
import { BOS, EOS } from './tokenizer.js';

/** `torch_dtype` values `toHuggingFaceConfig` writes (what the weights file holds). */
export type HuggingFaceDtype = 'float32' | 'bfloat16';

/**
 * The `LlamaConfig` of a parsed `config.json` (`model_type: "llama"`). Fields transformers
 * defaults are defaulted as it does (`num_key_value_heads` to `num_attention_heads`,
 * `rms_norm_eps` 1e-6, `rope_theta` 10000, `max_position_embeddings` 2048); a newer config's
 * `rope_parameters` is read for the rope base.
 * @example
 * const config = configFromHuggingFace(JSON.parse(readFileSync('model/config.json', 'utf8')));
 * @throws InvalidArgumentError naming `configFromHuggingFace` and the config.json key (as its
 *   author wrote it: `num_key_value_heads`, `rope_parameters.rope_theta`) for a config of another
 *   architecture or one the reference does not compute (an activation other than `"silu"`,
 *   biases, tied embeddings, scaled rope, a `head_dim` other than `hidden_size /
 *   num_attention_heads`), or a shape out of range.
 */
export function configFromHuggingFace(json: unknown): LlamaConfig {
  const op = 'configFromHuggingFace';
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new InvalidArgumentError(op, 'json', `json must be a parsed config.json object, got ${describe(json)}`);
  }
  const j = json as Record<string, unknown>;
  const refuse = (field: string, why: string): never => {
    throw new InvalidArgumentError(op, field, `${field} ${why}, got ${describe(j[field])}`);
  };
  if (j.model_type !== 'llama') refuse('model_type', `must be "llama"`);
  if (j.architectures !== undefined && !(Array.isArray(j.architectures) && j.architectures.includes('LlamaForCausalLM'))) {
    refuse('architectures', 'must list "LlamaForCausalLM"');
  }
  // Absent, transformers' default; anything else (null included) is another activation or none.
  if (j.hidden_act !== undefined && j.hidden_act !== 'silu') refuse('hidden_act', 'must be "silu" (the reference computes SwiGLU)');
  if ((j.tie_word_embeddings ?? false) !== false) refuse('tie_word_embeddings', 'must be false (lm_head is a tensor of its own)');
  for (const bias of ['attention_bias', 'mlp_bias']) if ((j[bias] ?? false) !== false) refuse(bias, 'must be false (projections without bias)');
  if (j.rope_scaling !== undefined && j.rope_scaling !== null) refuse('rope_scaling', 'must be null (the default rotary embedding)');
  let ropeTheta: unknown = j.rope_theta ?? 10000;
  let ropeThetaName = 'rope_theta';
  if (j.rope_parameters !== undefined && j.rope_parameters !== null) {
    const p = j.rope_parameters;
    if (typeof p !== 'object' || Array.isArray(p)) refuse('rope_parameters', 'must be an object such as { "rope_type": "default", "rope_theta": 10000 }');
    const { rope_type: type, rope_theta: theta } = p as Record<string, unknown>;
    if (type !== 'default') {
      throw new InvalidArgumentError(op, 'rope_parameters.rope_type', `rope_parameters.rope_type must be "default" (the default rotary embedding), got ${describe(type)}`);
    }
    if (theta !== undefined && theta !== null) {
      ropeTheta = theta;
      ropeThetaName = 'rope_parameters.rope_theta';
    }
  }
  // No default here for the model's shape: a config.json without one is not a checkpoint's.
  for (const key of ['hidden_size', 'num_attention_heads', 'num_hidden_layers', 'intermediate_size', 'vocab_size']) {
    if (j[key] === undefined || j[key] === null) refuse(key, 'must be an integer ≥ 1 (it has no default)');
  }
  const c = llamaConfig(
    op,
    {
      layers: j.num_hidden_layers as number,
      dim: j.hidden_size as number,
      heads: j.num_attention_heads as number,
      kvHeads: (j.num_key_value_heads ?? j.num_attention_heads) as number,
      hidden: j.intermediate_size as number,
      vocab: j.vocab_size as number,
      maxPositions: (j.max_position_embeddings ?? 2048) as number,
      ropeTheta: ropeTheta as number,
      rmsEps: (j.rms_norm_eps ?? 1e-6) as number,
    },
    { ...HF_NAMES, ropeTheta: ropeThetaName },
  );
  if (j.head_dim !== undefined && j.head_dim !== null && j.head_dim !== c.dim / c.heads) refuse('head_dim', `must be hidden_size / num_attention_heads (${c.dim / c.heads})`);
  return c;
}

/** The config.json key of each `LlamaConfig` field, for refusals (`rope_theta` may come from `rope_parameters`). */
const HF_NAMES = {
  layers: 'num_hidden_layers',
  dim: 'hidden_size',
  heads: 'num_attention_heads',
  kvHeads: 'num_key_value_heads',
  hidden: 'intermediate_size',
  vocab: 'vocab_size',
  maxPositions: 'max_position_embeddings',
  ropeTheta: 'rope_theta',
  rmsEps: 'rms_norm_eps',
} as const;

/**
 * A `config.json` (as an object, for `JSON.stringify`) that transformers' `LlamaConfig` reads as
 * `config`: `LlamaForCausalLM`, SiLU, no biases, untied embeddings, default rope, `BOS`/`EOS` as
 * the byte tokenizer's specials, `torch_dtype` the dtype the weights are saved in (`float32` by
 * default). `configFromHuggingFace` reads it back to `config`.
 * @throws InvalidArgumentError naming `toHuggingFaceConfig` for a bad config or options.
 */
export function toHuggingFaceConfig(config: LlamaConfig, options?: { readonly dtype?: HuggingFaceDtype }): Record<string, unknown> {
  const op = 'toHuggingFaceConfig';
  const c = requireLlamaConfig(op, config);
  const o = requireOptions<{ dtype: HuggingFaceDtype }>(op, options, ['dtype']);
  const dtype = requireOneOf<HuggingFaceDtype>(op, 'dtype', o.dtype ?? 'float32', ['float32', 'bfloat16']);
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: c.dim,
    intermediate_size: c.hidden,
    num_hidden_layers: c.layers,
    num_attention_heads: c.heads,
    num_key_value_heads: c.kvHeads,
    head_dim: c.dim / c.heads,
    vocab_size: c.vocab,
    max_position_embeddings: c.maxPositions,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    rms_norm_eps: c.rmsEps,
    hidden_act: 'silu',
    tie_word_embeddings: false,
    attention_bias: false,
    attention_dropout: 0,
    mlp_bias: false,
    pretraining_tp: 1,
    initializer_range: 0.02,
    use_cache: true,
    bos_token_id: BOS,
    eos_token_id: EOS,
    torch_dtype: dtype,
  };
}
