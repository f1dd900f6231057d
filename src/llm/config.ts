/**
 * The decoder's shape: a Llama-architecture model (token embedding; layers of RMSNorm → Q/K/V
 * projections → rotary position embedding → attention over the KV cache → output projection →
 * residual → RMSNorm → SwiGLU MLP → residual; final RMSNorm; logits), with Hugging Face
 * transformers' `LlamaConfig` meanings, so that a `.safetensors` file of that architecture loads
 * and an independent implementation can check the logits.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt, requireOptions } from '../util/validate.js';

/** A decoder's shape (Hugging Face names in comments). */
export interface LlamaConfig {
  /** Decoder layers (`num_hidden_layers`). */
  readonly layers: number;
  /** Model width (`hidden_size`). */
  readonly dim: number;
  /** Attention heads (`num_attention_heads`); `dim` is a multiple of it. */
  readonly heads: number;
  /** Key/value heads (`num_key_value_heads`; grouped-query attention when below `heads`). */
  readonly kvHeads: number;
  /** The MLP's inner width (`intermediate_size`). */
  readonly hidden: number;
  /** Tokens (`vocab_size`): 256 bytes and the specials (`BOS`, `EOS`) by default. */
  readonly vocab: number;
  /** Positions a sequence may reach (`max_position_embeddings`). */
  readonly maxPositions: number;
  /** Rotary embedding base (`rope_theta`). */
  readonly ropeTheta: number;
  /** RMSNorm epsilon (`rms_norm_eps`). */
  readonly rmsEps: number;
}

/** The fields of a `LlamaConfig`, in declaration order. */
const FIELDS = ['layers', 'dim', 'heads', 'kvHeads', 'hidden', 'vocab', 'maxPositions', 'ropeTheta', 'rmsEps'] as const;

/** Starts in seconds: 8 layers, width 512, 8 heads of 64, MLP 1536, byte vocabulary, 2048 positions. */
export const DEFAULT_LLAMA_CONFIG: LlamaConfig = Object.freeze({
  layers: 8,
  dim: 512,
  heads: 8,
  kvHeads: 8,
  hidden: 1536,
  vocab: 258,
  maxPositions: 2048,
  ropeTheta: 10000,
  rmsEps: 1e-5,
});

/** Width of one attention head. */
export function headDim(c: LlamaConfig): number {
  return c.dim / c.heads;
}

/** The name each field goes by in refusals: its own, or the key the caller wrote it under (`num_hidden_layers`). */
export type LlamaConfigNames = Readonly<Record<keyof LlamaConfig, string>>;

/** Each field by its own name. */
const OWN_NAMES: LlamaConfigNames = Object.freeze(Object.fromEntries(FIELDS.map((f) => [f, f])) as Record<keyof LlamaConfig, string>);

/**
 * `DEFAULT_LLAMA_CONFIG` with `overrides`, checked: positive integers, `dim` a multiple of `heads`
 * with an even head width (rotary pairs), `heads` a multiple of `kvHeads`, `vocab` ≥ 258 (bytes and
 * specials), positive finite `ropeTheta` and `rmsEps`. Refusals name each field by `names` (its
 * own name by default), so that a config read from another form names the keys its author wrote.
 * @throws InvalidArgumentError naming `op` and the field.
 */
export function llamaConfig(op: string, overrides?: Partial<LlamaConfig>, names: LlamaConfigNames = OWN_NAMES): LlamaConfig {
  const o = requireOptions<Partial<LlamaConfig>>(op, overrides, FIELDS);
  const d = DEFAULT_LLAMA_CONFIG;
  const int = (field: keyof LlamaConfig, max: number): number => requireInt(op, names[field], o[field] ?? d[field], 1, max);
  const layers = int('layers', 1024);
  const dim = int('dim', 65536);
  const heads = int('heads', 1024);
  const kvHeads = int('kvHeads', 1024);
  const hidden = int('hidden', 1 << 20);
  const vocab = int('vocab', 1 << 20);
  const maxPositions = int('maxPositions', 1 << 20);
  const real = (field: 'ropeTheta' | 'rmsEps'): number => {
    const v = o[field] ?? d[field];
    const name = names[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new InvalidArgumentError(op, name, `${name} must be a positive finite number, got ${describe(v)}`);
    return v;
  };
  const n = names;
  if (dim % heads !== 0 || (dim / heads) % 2 !== 0) throw new InvalidArgumentError(op, n.dim, `${n.dim} (${dim}) must be a multiple of ${n.heads} (${heads}) with an even head width`);
  if (heads % kvHeads !== 0) throw new InvalidArgumentError(op, n.kvHeads, `${n.heads} (${heads}) must be a multiple of ${n.kvHeads} (${kvHeads})`);
  if (vocab < 258) throw new InvalidArgumentError(op, n.vocab, `${n.vocab} must hold the 256 bytes and the 2 specials (≥ 258), got ${vocab}`);
  return Object.freeze({ layers, dim, heads, kvHeads, hidden, vocab, maxPositions, ropeTheta: real('ropeTheta'), rmsEps: real('rmsEps') });
}

/**
 * `config` checked as `llamaConfig` checks it, every field required: the entry points that take a
 * whole `LlamaConfig` call it, so a hand-made or partial object is refused, never completed with
 * defaults behind the caller's back.
 * @throws InvalidArgumentError naming `op` and the field.
 */
export function requireLlamaConfig(op: string, config: unknown): LlamaConfig {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new InvalidArgumentError(op, 'config', `config must be a LlamaConfig object, got ${describe(config)}`);
  }
  for (const f of FIELDS) {
    if (!(f in config)) throw new InvalidArgumentError(op, 'config', `config lacks ${f}`);
  }
  return llamaConfig(op, config as Partial<LlamaConfig>);
}
