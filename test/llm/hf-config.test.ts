/**
 * config.json: what `toHuggingFaceConfig` writes is what transformers' LlamaConfig needs to build
 * the same decoder (field by field), it reads back to the same config, a checkpoint's config of
 * this architecture reads with transformers' defaults, and one the reference cannot compute is
 * refused by field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { DEFAULT_LLAMA_CONFIG, llamaConfig } from '../../src/llm/config.js';
import { configFromHuggingFace, toHuggingFaceConfig } from '../../src/llm/hf-config.js';
import { refused } from '../support/refused.js';
import { TINY } from './helpers.js';

test('toHuggingFaceConfig writes a LlamaForCausalLM config.json of the same shape', () => {
  assert.deepEqual(toHuggingFaceConfig(TINY), {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    vocab_size: 258,
    max_position_embeddings: 64,
    rope_theta: 10000,
    rope_scaling: null,
    rms_norm_eps: 1e-5,
    hidden_act: 'silu',
    tie_word_embeddings: false,
    attention_bias: false,
    attention_dropout: 0,
    mlp_bias: false,
    pretraining_tp: 1,
    initializer_range: 0.02,
    use_cache: true,
    bos_token_id: 256,
    eos_token_id: 257,
    torch_dtype: 'float32',
  });
  assert.equal(toHuggingFaceConfig(TINY, { dtype: 'bfloat16' }).torch_dtype, 'bfloat16');
  refused(() => toHuggingFaceConfig(TINY, { dtype: 'float16' as never }), InvalidArgumentError, 'toHuggingFaceConfig', /dtype must be one of 'float32', 'bfloat16'/);
  refused(() => toHuggingFaceConfig({ ...TINY, kvHeads: 3 }), InvalidArgumentError, 'toHuggingFaceConfig', /multiple of kvHeads/);
});

test('configFromHuggingFace reads back what toHuggingFaceConfig wrote, through JSON', () => {
  for (const c of [TINY, DEFAULT_LLAMA_CONFIG, llamaConfig('t', { ropeTheta: 500000, rmsEps: 1e-6, maxPositions: 4096, kvHeads: 2 })]) {
    assert.deepEqual(configFromHuggingFace(JSON.parse(JSON.stringify(toHuggingFaceConfig(c)))), c);
  }
});

/** The config.json of TinyLlama-1.1B (a Llama checkpoint as transformers saved it). */
const TINYLLAMA = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 5632,
  max_position_embeddings: 2048,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 22,
  num_key_value_heads: 4,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  rope_theta: 10000.0,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  transformers_version: '4.35.0',
  use_cache: true,
  vocab_size: 32000,
};

test("configFromHuggingFace reads a checkpoint's config.json, with transformers' defaults for what it leaves out", () => {
  assert.deepEqual(configFromHuggingFace(TINYLLAMA), {
    layers: 22,
    dim: 2048,
    heads: 32,
    kvHeads: 4,
    hidden: 5632,
    vocab: 32000,
    maxPositions: 2048,
    ropeTheta: 10000,
    rmsEps: 1e-5,
  });
  const sparse = { model_type: 'llama', hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 300 };
  assert.deepEqual(configFromHuggingFace(sparse), { layers: 2, dim: 64, heads: 4, kvHeads: 4, hidden: 128, vocab: 300, maxPositions: 2048, ropeTheta: 10000, rmsEps: 1e-6 });
  // transformers 5 keeps the rope base in rope_parameters.
  assert.equal(configFromHuggingFace({ ...sparse, rope_parameters: { rope_type: 'default', rope_theta: 500000 } }).ropeTheta, 500000);
  assert.equal(configFromHuggingFace({ ...sparse, head_dim: 16 }).dim, 64);
});

test('configFromHuggingFace refuses another architecture or what the reference does not compute, by field', () => {
  const op = 'configFromHuggingFace';
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ model_type: 'mistral' }, 'model_type', /model_type must be "llama", got "mistral"/],
    [{ architectures: ['LlamaForSequenceClassification'] }, 'architectures', /must list "LlamaForCausalLM"/],
    [{ hidden_act: 'gelu' }, 'hidden_act', /hidden_act must be "silu"/],
    [{ tie_word_embeddings: true }, 'tie_word_embeddings', /tie_word_embeddings must be false/],
    [{ attention_bias: true }, 'attention_bias', /attention_bias must be false/],
    [{ mlp_bias: true }, 'mlp_bias', /mlp_bias must be false/],
    [{ rope_scaling: { rope_type: 'llama3', factor: 8 } }, 'rope_scaling', /rope_scaling must be null/],
    [{ rope_parameters: { rope_type: 'yarn', factor: 4 } }, 'rope_parameters.rope_type', /rope_parameters\.rope_type must be "default" \(the default rotary embedding\), got "yarn"/],
    [{ rope_parameters: 'default' }, 'rope_parameters', /rope_parameters must be an object such as \{ "rope_type": "default", "rope_theta": 10000 \}, got "default"/],
    [{ rope_parameters: ['default'] }, 'rope_parameters', /rope_parameters must be an object .*, got an array/],
    [{ rope_parameters: { rope_type: 'default', rope_theta: -1 } }, 'rope_parameters.rope_theta', /^configFromHuggingFace: rope_parameters\.rope_theta must be a positive finite number, got -1$/],
    [{ hidden_act: null }, 'hidden_act', /hidden_act must be "silu" \(the reference computes SwiGLU\), got null/],
    [{ hidden_act: 'swiglu' }, 'hidden_act', /hidden_act must be "silu"/],
    [{ head_dim: 128 }, 'head_dim', /head_dim must be hidden_size \/ num_attention_heads \(64\), got 128/],
    [{ hidden_size: undefined }, 'hidden_size', /hidden_size must be an integer/],
    [{ num_hidden_layers: 0 }, 'num_hidden_layers', /num_hidden_layers must be an integer in 1\.\./],
    [{ hidden_size: null }, 'hidden_size', /hidden_size must be an integer ≥ 1 \(it has no default\), got null/],
    [{ num_key_value_heads: 3 }, 'num_key_value_heads', /^configFromHuggingFace: num_attention_heads \(32\) must be a multiple of num_key_value_heads \(3\)$/],
    [{ num_key_value_heads: 0 }, 'num_key_value_heads', /num_key_value_heads must be an integer in 1\.\.1024, got 0/],
    [{ vocab_size: 100 }, 'vocab_size', /^configFromHuggingFace: vocab_size must hold the 256 bytes and the 2 specials \(≥ 258\), got 100$/],
    [{ vocab_size: 2 ** 21 }, 'vocab_size', /vocab_size must be an integer in 1\.\.1048576, got 2097152/],
    [{ rms_norm_eps: -1 }, 'rms_norm_eps', /^configFromHuggingFace: rms_norm_eps must be a positive finite number, got -1$/],
    [{ rope_theta: 'big' }, 'rope_theta', /^configFromHuggingFace: rope_theta must be a positive finite number, got "big"$/],
    [{ num_hidden_layers: 5000 }, 'num_hidden_layers', /^configFromHuggingFace: num_hidden_layers must be an integer in 1\.\.1024, got 5000$/],
    [{ hidden_size: 2047 }, 'hidden_size', /^configFromHuggingFace: hidden_size \(2047\) must be a multiple of num_attention_heads \(32\) with an even head width$/],
    [{ hidden_size: 2 ** 17 }, 'hidden_size', /hidden_size must be an integer in 1\.\.65536/],
    [{ num_attention_heads: 4096 }, 'num_attention_heads', /num_attention_heads must be an integer in 1\.\.1024/],
    [{ intermediate_size: 1.5 }, 'intermediate_size', /intermediate_size must be an integer/],
    [{ max_position_embeddings: 2 ** 21 }, 'max_position_embeddings', /max_position_embeddings must be an integer in 1\.\.1048576/],
  ];
  // Every refusal names a key of config.json, never a field of LlamaConfig.
  const internal = /\b(layers|dim|kvHeads|hidden|vocab|maxPositions|ropeTheta|rmsEps)\b/;
  for (const [change, parameter, pattern] of cases) {
    const e = refused(() => configFromHuggingFace({ ...TINYLLAMA, ...change }), InvalidArgumentError, op, pattern) as InvalidArgumentError;
    assert.equal(e.parameter, parameter, JSON.stringify(change));
    assert.doesNotMatch(e.message, internal, JSON.stringify(change));
  }
  refused(() => configFromHuggingFace('{}'), InvalidArgumentError, op, /json must be a parsed config\.json object/);
  refused(() => configFromHuggingFace(null), InvalidArgumentError, op, /json must be/);
});
