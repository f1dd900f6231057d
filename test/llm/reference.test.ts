/**
 * The reference forward pass: its pieces against small cases worked by hand, the whole against a
 * textbook float64 LlamaForCausalLM written here from transformers' modeling_llama.py (rotate_half,
 * repeat_kv, a causal mask), decoding with a KV cache against the whole-sequence pass, and
 * grouped-query attention against the same model with its kv heads written out per query head.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { headDim, llamaConfig, type LlamaConfig } from '../../src/llm/config.js';
import {
  ReferenceDecoder,
  applyRotary,
  argmax,
  forwardSequence,
  inverseFrequencies,
  matVec,
  rmsNorm,
  silu,
  softmaxInPlace,
} from '../../src/llm/reference.js';
import { syntheticWeights, type LlamaWeights, type WeightTensor } from '../../src/llm/weights.js';
import { refused } from '../support/refused.js';
import { TINY, assertClose, maxDiff } from './helpers.js';

const f32 = Math.fround;

// ── the pieces, by hand ─────────────────────────────────────────────────────────────────────

test('rmsNorm: weight · x / √(mean(x²) + eps)', () => {
  const x = Float32Array.of(1, 2, 3, 4);
  const w = Float32Array.of(1, 1, 2, 0.5);
  // mean(x²) = 30/4 = 7.5.
  const r = 1 / Math.sqrt(7.5);
  assertClose(rmsNorm(x, w, 0), [r, 2 * r, 6 * r, 2 * r], 1e-7);
  const r1 = 1 / Math.sqrt(8.5);
  assertClose(rmsNorm(x, w, 1), [r1, 2 * r1, 6 * r1, 2 * r1], 1e-7);
  // Scale-free: 10·x normalises to the same values.
  assertClose(rmsNorm(Float32Array.of(10, 20, 30, 40), w, 0), rmsNorm(x, w, 0), 1e-6);
  const out = new Float32Array(4);
  assert.equal(rmsNorm(x, w, 0, out), out);
});

test('matVec: a row-major [rows, cols] matrix times a vector', () => {
  const w = Float32Array.of(1, 2, 3, 4, 5, 6); // [[1, 2], [3, 4], [5, 6]]
  assert.deepEqual([...matVec(w, 3, 2, Float32Array.of(1, -1))], [-1, -1, -1]);
  assert.deepEqual([...matVec(w, 3, 2, Float32Array.of(2, 0.5))], [3, 8, 13]);
  assert.deepEqual([...matVec(w, 2, 3, Float32Array.of(1, 0, 1))], [4, 10]);
});

test('inverseFrequencies: theta^(-2j/headDim), in float32', () => {
  const inv = inverseFrequencies(8, 10000);
  assertClose(inv, [1, 0.1, 0.01, 0.001], 1e-7);
  for (const v of inv) assert.equal(f32(v), v);
  assertClose(inverseFrequencies(4, 500000), [1, 1 / Math.sqrt(500000)], 1e-7);
});

test('applyRotary turns element j with element j + headDim/2 (rotate_half), by position · theta^(-2j/hd)', () => {
  const x = Float32Array.of(9, 1, 2, 3, 4, 9);
  applyRotary(x, 1, 4, 1, inverseFrequencies(4, 10000));
  // Frequencies 1 and 0.01; pairs (1, 3) and (2, 4) of x, the head starting at offset 1.
  const [c1, s1, c2, s2] = [Math.cos(1), Math.sin(1), Math.cos(0.01), Math.sin(0.01)];
  assertClose(x, [9, 1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2, 9], 1e-6);
  const y = Float32Array.of(1, 2, 3, 4);
  applyRotary(y, 0, 4, 0, inverseFrequencies(4, 10000));
  assert.deepEqual([...y], [1, 2, 3, 4]);
});

test('applyRotary rounds the angle to float32 as transformers does (inv_freq × position in float32)', () => {
  const hd = 64;
  const inv = inverseFrequencies(hd, 10000);
  const p = 1999;
  const x = new Float32Array(hd);
  x[5] = 1;
  applyRotary(x, 0, hd, p, inv);
  const angle = f32(inv[5]! * p);
  assert.equal(x[5], f32(Math.cos(angle)));
  assert.equal(x[5 + hd / 2], f32(Math.sin(angle)));
});

test('rotary embedding: q·k depends only on the distance between their positions', () => {
  const hd = 8;
  const inv = inverseFrequencies(hd, 10000);
  const vec = fc.array(fc.float({ min: -2, max: 2, noNaN: true }), { minLength: hd, maxLength: hd });
  fc.assert(
    fc.property(vec, vec, fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 40 }), (qv, kv, pq, pk, shift) => {
      const dot = (a: number, b: number): number => {
        const q = Float32Array.from(qv);
        const k = Float32Array.from(kv);
        applyRotary(q, 0, hd, a, inv);
        applyRotary(k, 0, hd, b, inv);
        return q.reduce((s, v, i) => s + v * k[i]!, 0);
      };
      const scale = 1 + qv.reduce((s, v) => s + v * v, 0) + kv.reduce((s, v) => s + v * v, 0);
      return Math.abs(dot(pq, pk) - dot(pq + shift, pk + shift)) <= 1e-5 * scale;
    }),
  );
});

test('softmaxInPlace: exp(x − max) / Σ, over the first n values', () => {
  const s = Float32Array.of(1, 2, 3);
  softmaxInPlace(s);
  assertClose(s, [0.09003057, 0.24472847, 0.66524096], 1e-6);
  const big = Float32Array.of(1000, 1000, -1000);
  softmaxInPlace(big);
  assert.deepEqual([...big], [0.5, 0.5, 0]);
  const part = Float32Array.of(0, 0, 0, 7);
  softmaxInPlace(part, 2);
  assert.deepEqual([...part], [0.5, 0.5, 0, 7]);
});

test('silu and argmax (the lowest index of a tie)', () => {
  assert.equal(silu(0), 0);
  assertClose([silu(1), silu(-2)], [0.7310585786, -0.2384058440], 1e-9);
  assert.equal(argmax([1, 3, 3, 2]), 1);
  assert.equal(argmax([5]), 0);
  assert.equal(argmax(Float32Array.of(-3, -1, -2, -1)), 1);
});

// ── the whole, against a textbook ───────────────────────────────────────────────────────────

/**
 * LlamaForCausalLM in float64, written as modeling_llama.py reads (eager attention, no cache): the
 * logits at every position. Slow and plain on purpose: nothing shared with the code under test.
 */
function textbook(c: LlamaConfig, weights: LlamaWeights, tokens: readonly number[]): number[][] {
  const get = (name: string): number[] => Array.from(weights.get(name)!.data);
  const linear = (w: number[], x: number[]): number[] => {
    const cols = x.length;
    return Array.from({ length: w.length / cols }, (_, r) => x.reduce((s, v, i) => s + w[r * cols + i]! * v, 0));
  };
  const norm = (x: number[], w: number[]): number[] => {
    const variance = x.reduce((s, v) => s + v * v, 0) / x.length;
    return x.map((v, i) => w[i]! * (v / Math.sqrt(variance + c.rmsEps)));
  };
  const hd = headDim(c);
  const invFreq = Array.from({ length: hd / 2 }, (_, j) => 1 / c.ropeTheta ** ((2 * j) / hd));
  const rotateHalf = (x: number[]): number[] => [...x.slice(hd / 2).map((v) => -v), ...x.slice(0, hd / 2)];
  const rope = (x: number[], p: number): number[] => {
    const emb = [...invFreq, ...invFreq].map((f) => f * p);
    const r = rotateHalf(x);
    return x.map((v, i) => v * Math.cos(emb[i]!) + r[i]! * Math.sin(emb[i]!));
  };
  const heads = (flat: number[], n: number): number[][] => Array.from({ length: n }, (_, h) => flat.slice(h * hd, (h + 1) * hd));
  const nRep = c.heads / c.kvHeads;
  const embed = get('model.embed_tokens.weight');
  let hidden = tokens.map((t) => embed.slice(t * c.dim, (t + 1) * c.dim));
  for (let l = 0; l < c.layers; l++) {
    const p = (s: string): number[] => get(`model.layers.${l}.${s}`);
    const normed = hidden.map((x) => norm(x, p('input_layernorm.weight')));
    const q = normed.map((x, pos) => heads(linear(p('self_attn.q_proj.weight'), x), c.heads).map((h) => rope(h, pos)));
    const k = normed.map((x, pos) => heads(linear(p('self_attn.k_proj.weight'), x), c.kvHeads).map((h) => rope(h, pos)));
    const v = normed.map((x) => heads(linear(p('self_attn.v_proj.weight'), x), c.kvHeads));
    // repeat_kv: kv head g, expanded n_rep times, becomes query heads g·n_rep … g·n_rep + n_rep − 1.
    const repeat = (per: number[][]): number[][] => per.flatMap((h) => Array.from({ length: nRep }, () => h));
    const kr = k.map(repeat);
    const vr = v.map(repeat);
    const attn = q.map((qp, i) =>
      qp.flatMap((qh, h) => {
        const scores = tokens.map((_, j) => (j <= i ? qh.reduce((s, x, d) => s + x * kr[j]![h]![d]!, 0) / Math.sqrt(hd) : -Infinity));
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        return Array.from({ length: hd }, (_, d) => e.reduce((s, w, j) => s + (w / z) * (j <= i ? vr[j]![h]![d]! : 0), 0));
      }),
    );
    hidden = hidden.map((x, i) => {
      const o = linear(p('self_attn.o_proj.weight'), attn[i]!);
      return x.map((xv, d) => xv + o[d]!);
    });
    hidden = hidden.map((x) => {
      const h = norm(x, p('post_attention_layernorm.weight'));
      const gate = linear(p('mlp.gate_proj.weight'), h);
      const up = linear(p('mlp.up_proj.weight'), h);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = linear(p('mlp.down_proj.weight'), act);
      return x.map((xv, d) => xv + down[d]!);
    });
  }
  return hidden.map((x) => linear(get('lm_head.weight'), norm(x, get('model.norm.weight'))));
}

/** Row `i` of a `rows × vocab` logits array. */
function row(logits: Float32Array, i: number, vocab: number): Float32Array {
  return logits.subarray(i * vocab, (i + 1) * vocab);
}

const SEQUENCE = [256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100];

for (const [what, shape] of [
  ['grouped-query (4 heads over 2 kv heads)', {}],
  ['multi-query (1 kv head)', { kvHeads: 1 }],
  ['multi-head (as many kv heads as heads)', { kvHeads: 4 }],
] as const) {
  test(`forwardSequence equals a textbook LlamaForCausalLM at every position: ${what}`, () => {
    const c = llamaConfig('test', { ...TINY, ...shape });
    const w = syntheticWeights(c, 11);
    const logits = forwardSequence(c, w, SEQUENCE);
    const expected = textbook(c, w, SEQUENCE);
    assert.equal(logits.length, SEQUENCE.length * c.vocab);
    expected.forEach((e, i) => assertClose(row(logits, i, c.vocab), e, 2e-5, `position ${i}`));
  });
}

test('decoding one token at a time with the KV cache equals forwardSequence at each position, two sequences interleaved', () => {
  const w = syntheticWeights(TINY, 5);
  const decoder = new ReferenceDecoder(TINY, w);
  const cache = decoder.createCache(3, TINY.maxPositions);
  const a = SEQUENCE;
  const b = [256, 3, 1, 4, 1, 5, 9, 2, 6];
  const fa = forwardSequence(TINY, w, a);
  const fb = forwardSequence(TINY, w, b);
  for (let p = 0; p < a.length; p++) {
    assertClose(decoder.decode(cache, 2, a[p]!, p), row(fa, p, TINY.vocab), 1e-6, `a at ${p}`);
    if (p < b.length) assertClose(decoder.decode(cache, 0, b[p]!, p), row(fb, p, TINY.vocab), 1e-6, `b at ${p}`);
  }
});

test('forwardSequence is causal: a position sees no token after it', () => {
  const w = syntheticWeights(TINY, 6);
  const base = forwardSequence(TINY, w, SEQUENCE);
  const changed = [...SEQUENCE];
  changed[7] = 200;
  const other = forwardSequence(TINY, w, changed);
  for (let i = 0; i < 7; i++) assert.deepEqual(row(other, i, TINY.vocab), row(base, i, TINY.vocab), `position ${i}`);
  for (let i = 7; i < SEQUENCE.length; i++) assert.ok(maxDiff(row(other, i, TINY.vocab), row(base, i, TINY.vocab)) > 1e-3, `position ${i} sees token 7`);
});

test('grouped-query attention: query head h reads kv head ⌊h / (heads / kvHeads)⌋', () => {
  // The same model with 8 heads over 2 kv heads, and over 8 kv heads whose k and v rows are kv head ⌊h/4⌋'s.
  const grouped = llamaConfig('test', { layers: 2, dim: 64, heads: 8, kvHeads: 2, hidden: 96 });
  const full = llamaConfig('test', { ...grouped, kvHeads: 8 });
  const w = syntheticWeights(grouped, 9);
  const hd = headDim(grouped);
  const expanded = new Map<string, WeightTensor>(w);
  for (let l = 0; l < grouped.layers; l++) {
    for (const kv of ['k', 'v']) {
      const name = `model.layers.${l}.self_attn.${kv}_proj.weight`;
      const src = w.get(name)!.data;
      const data = new Float32Array(full.heads * hd * full.dim);
      for (let h = 0; h < full.heads; h++) data.set(src.subarray(Math.floor(h / 4) * hd * full.dim, (Math.floor(h / 4) + 1) * hd * full.dim), h * hd * full.dim);
      expanded.set(name, { shape: [full.heads * hd, full.dim], data });
    }
  }
  const tokens = SEQUENCE.slice(0, 8);
  assertClose(forwardSequence(full, expanded, tokens), forwardSequence(grouped, w, tokens), 1e-6);
});

test('forwardSequence refuses an empty or overlong sequence, a token outside the vocabulary, weights of another shape', () => {
  const w = syntheticWeights(TINY, 1);
  const op = 'forwardSequence';
  refused(() => forwardSequence(TINY, w, []), InvalidArgumentError, op, /tokens\.length must be an integer in 1\.\.64, got 0/);
  refused(() => forwardSequence(TINY, w, new Array(65).fill(1)), InvalidArgumentError, op, /tokens\.length/);
  refused(() => forwardSequence(TINY, w, [256, 258]), InvalidArgumentError, op, /tokens\[1\] must be an integer in 0\.\.257, got 258/);
  refused(() => forwardSequence(TINY, w, [1.5]), InvalidArgumentError, op, /tokens\[0\]/);
  refused(() => forwardSequence(TINY, w, 'abc' as never), InvalidArgumentError, op, /tokens must be an array/);
  refused(() => forwardSequence({ ...TINY, hidden: 64 }, w, [1]), InvalidArgumentError, op, /gate_proj\.weight' must have shape \[64, 64\]/);
  refused(() => new ReferenceDecoder(TINY, new Map()), InvalidArgumentError, 'ReferenceDecoder', /'model\.embed_tokens\.weight' \[258, 64\] is missing/);
});
