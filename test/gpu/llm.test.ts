/**
 * The decoder on the device: `GpuDecodeEngine`, graphed and eager, against the CPU reference
 * (`CpuDecodeEngine`) and against Hugging Face transformers' `LlamaForCausalLM` where Python has
 * it (scripts/llama-reference.py; reported and skipped where it does not): the same tokens, logits
 * within 1e-4 of the largest, graphed bit for bit equal to eager, a batch of sequences of different
 * lengths in one step, bf16 weights against the reference with the same rounded weights, and the
 * step's refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DisposedError, InvalidArgumentError } from '../../src/index.js';
import { DEFAULT_LLAMA_CONFIG, llamaConfig, type LlamaConfig } from '../../src/llm/config.js';
import type { DecodeEngine } from '../../src/llm/engine.js';
import { GpuDecodeEngine } from '../../src/llm/gpu-engine.js';
import { toHuggingFaceConfig } from '../../src/llm/hf-config.js';
import { CpuDecodeEngine } from '../../src/llm/reference-engine.js';
import { bf16Bits, fromBf16Bits, saveLlamaWeights } from '../../src/llm/safetensors.js';
import { syntheticWeights, type LlamaWeights } from '../../src/llm/weights.js';
import { encode } from '../../src/llm/tokenizer.js';
import { gpuSuite } from './gpu.js';

const TINY = llamaConfig('test', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128, maxPositions: 64 });
const source = (w: LlamaWeights) => (name: string) => w.get(name)!.data;

/**
 * Runs `prompts` through `engine` together, one step for all the sequences still going: each
 * prompt token by token, then `extra` greedy tokens fed back. The tokens of each sequence and the
 * logits of every step.
 */
async function run(engine: DecodeEngine, prompts: readonly Int32Array[], extra: number): Promise<{ tokens: number[][]; logits: Float32Array[] }> {
  const seqs = prompts.map((p) => [...p]);
  const target = prompts.map((p) => p.length + extra);
  const logits: Float32Array[] = [];
  for (let pos = 0; pos < Math.max(...target) - 1; pos++) {
    const live = seqs.map((s, slot) => ({ s, slot })).filter(({ slot }) => pos < target[slot]! - 1);
    const r = await engine.step(live.map(({ s, slot }) => ({ slot, token: s[pos]!, position: pos })), { logits: true });
    logits.push(r.logits!);
    // Past its prompt, a sequence takes the token it was given.
    live.forEach(({ s }, i) => {
      if (pos === s.length - 1) s.push(r.tokens[i]!);
    });
  }
  return { tokens: seqs, logits };
}

/**
 * `run` with chunked prefill: a step gives each sequence still in its prompt up to `chunk` of its
 * prompt's tokens (consecutive entries of its slot) while the step has room (`engine.maxBatch`),
 * every other sequence one token. The tokens of each sequence and the logits of each (sequence,
 * position).
 */
async function runChunked(engine: DecodeEngine, prompts: readonly Int32Array[], extra: number, chunk: number): Promise<{ tokens: number[][]; logits: Float32Array[][]; steps: number }> {
  const seqs = prompts.map((p) => [...p]);
  const target = prompts.map((p) => p.length + extra);
  const next = prompts.map(() => 0);
  const logits: Float32Array[][] = prompts.map(() => []);
  const V = engine.config.vocab;
  let steps = 0;
  for (;;) {
    const live = seqs.map((_, slot) => slot).filter((slot) => next[slot]! < target[slot]! - 1);
    if (live.length === 0) break;
    let room = engine.maxBatch - live.length;
    const entries: { slot: number; token: number; position: number }[] = [];
    for (const slot of live) {
      const inPrompt = prompts[slot]!.length - next[slot]!;
      const n = Math.max(1, Math.min(inPrompt, chunk, room + 1));
      room -= n - 1;
      for (let i = 0; i < n; i++) entries.push({ slot, token: seqs[slot]![next[slot]! + i]!, position: next[slot]! + i });
    }
    const r = await engine.step(entries, { logits: true });
    steps++;
    entries.forEach((e, i) => {
      logits[e.slot]![e.position] = r.logits!.slice(i * V, (i + 1) * V);
      next[e.slot] = e.position + 1;
      if (e.position === seqs[e.slot]!.length - 1) seqs[e.slot]!.push(r.tokens[i]!);
    });
  }
  return { tokens: seqs, logits, steps };
}

/** Largest |a - b| over the largest |b|. */
function relativeError(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs(a[i]! - b[i]!));
    den = Math.max(den, Math.abs(b[i]!));
  }
  return num / den;
}

function bf16Rounded(w: LlamaWeights): LlamaWeights {
  return new Map([...w].map(([name, t]) => [name, { shape: t.shape, data: t.data.map((x) => fromBf16Bits(bf16Bits(x))) }]));
}

gpuSuite('the decoder on the device', () => {
  const prompts = [encode('Hi'), encode('cudagraph'), encode('a longer prompt, to differ')];

  for (const [label, config] of [['tiny', TINY], ['default', DEFAULT_LLAMA_CONFIG]] as const) {
    test(`${label} config: graphed (with and without PDL) = eager bit for bit; all = the CPU reference (tokens; logits within 1e-4)`, async () => {
      const weights = syntheticWeights(config, 11);
      const opts = { config, weights: source(weights), slots: 4, maxBatch: 4, maxPositions: 64 };
      using graphed = new GpuDecodeEngine({ ...opts, graphs: true });
      using plain = new GpuDecodeEngine({ ...opts, graphs: true, pdl: false });
      using eager = new GpuDecodeEngine({ ...opts, graphs: false });
      using cpu = new CpuDecodeEngine(config, weights, { slots: 4, maxPositions: 64 });
      const extra = label === 'tiny' ? 12 : 4;
      const g = await run(graphed, prompts, extra);
      const e = await run(eager, prompts, extra);
      const np = await run(plain, prompts, extra);
      const c = await run(cpu, prompts, extra);
      assert.deepEqual(g.tokens, e.tokens);
      g.logits.forEach((l, i) => assert.deepEqual(l, e.logits[i], `step ${i}: graphed and eager logits`));
      np.logits.forEach((l, i) => assert.deepEqual(l, e.logits[i], `step ${i}: graphed without PDL and eager logits`));
      assert.ok(!graphed.name.includes('without PDL') || graphed.device.computeCapability.major < 9, `${graphed.name}: PDL on by default from compute capability 9.0`);
      assert.deepEqual(g.tokens, c.tokens, 'the same tokens as the reference');
      const worst = Math.max(...g.logits.map((l, i) => relativeError(l, c.logits[i]!)));
      process.stdout.write(`# llm ${label}: worst logit error against the CPU reference ${worst.toExponential(2)} over ${g.logits.length} steps\n`);
      assert.ok(worst <= 1e-4, `logits within 1e-4 of the largest: ${worst}`);
      assert.ok((graphed.stats()['graphHits'] ?? 0) > 0, 'steps replayed graphs');
    });
  }

  test('long contexts, split over attention blocks: graphed = eager bit for bit, = the CPU reference across chunk boundaries', async () => {
    // 700 positions: three chunks of 256, and two sequences of different lengths in one batch.
    const config = llamaConfig('long', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128, maxPositions: 700 });
    const weights = syntheticWeights(config, 9);
    const opts = { config, weights: source(weights), slots: 2, maxBatch: 2, maxPositions: 700 };
    using graphed = new GpuDecodeEngine({ ...opts, graphs: true });
    using eager = new GpuDecodeEngine({ ...opts, graphs: false });
    using cpu = new CpuDecodeEngine(config, weights, { slots: 2, maxPositions: 700 });
    const long = Int32Array.from({ length: 600 }, (_, i) => (i * 7 + 3) % 256);
    const short = Int32Array.from({ length: 300 }, (_, i) => (i * 5 + 1) % 256);
    const g = await run(graphed, [long, short], 2);
    const e = await run(eager, [long, short], 2);
    const c = await run(cpu, [long, short], 2);
    assert.deepEqual(g.tokens, e.tokens);
    g.logits.forEach((l, i) => assert.deepEqual(l, e.logits[i], `step ${i}: graphed and eager logits`));
    assert.deepEqual(g.tokens, c.tokens, 'the same tokens as the reference');
    let worst = 0;
    for (const pos of [0, 254, 255, 256, 257, 299, 300, 511, 512, 513, 600]) worst = Math.max(worst, relativeError(g.logits[pos]!, c.logits[pos]!));
    process.stdout.write(`# llm long: worst logit error against the CPU reference at chunk boundaries ${worst.toExponential(2)}\n`);
    assert.ok(worst <= 1e-4, `logits within 1e-4 of the largest: ${worst}`);
  });

  test('chunked prefill (several positions of a slot in one step): the same tokens and logits, bit for bit, as token by token; graphed = eager; across attention chunks', async () => {
    // 600 positions: the long prompt's chunks cross the attention's 256-position blocks.
    const config = llamaConfig('prefill', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128, maxPositions: 600 });
    const weights = syntheticWeights(config, 13);
    // maxBatch 32: the chunks reach the largest bucket, whose GEMVs compute several rows a warp.
    const opts = { config, weights: source(weights), slots: 4, maxBatch: 32, maxPositions: 600 };
    using graphed = new GpuDecodeEngine({ ...opts, graphs: true });
    using eager = new GpuDecodeEngine({ ...opts, graphs: false });
    using cpu = new CpuDecodeEngine(config, weights, { slots: 4, maxBatch: 32, maxPositions: 600 });
    const ps = [Int32Array.from({ length: 530 }, (_, i) => (i * 7 + 3) % 256), encode('Hi'), Int32Array.from({ length: 77 }, (_, i) => (i * 5 + 1) % 256)];
    const one = await runChunked(eager, ps, 3, 1);
    for (const [engine, chunk] of [[graphed, 32], [eager, 32], [graphed, 5], [cpu, 32]] as const) {
      const r = await runChunked(engine, ps, 3, chunk);
      assert.ok(r.steps < one.steps, `${engine.name}, chunks of ${chunk}: fewer steps (${r.steps}) than token by token (${one.steps})`);
      assert.deepEqual(r.tokens, one.tokens, `${engine.name}, chunks of ${chunk}: the same tokens`);
      if (engine === cpu) continue;
      r.logits.forEach((rows, s) => rows.forEach((l, pos) => assert.deepEqual(l, one.logits[s]![pos], `${engine.name}, chunks of ${chunk}: sequence ${s}, position ${pos}`)));
    }
    assert.ok((graphed.stats()['prefillSteps'] ?? 0) > 0, 'the graphed engine ran prefill steps');
    assert.ok((graphed.stats()['graphHits'] ?? 0) > 0, 'prefill steps replayed graphs');
  });

  test('bf16 weights: the same as the reference given the same rounded weights', async () => {
    const weights = syntheticWeights(TINY, 5);
    using gpu = new GpuDecodeEngine({ config: TINY, weights: source(weights), dtype: 'bf16', slots: 4, maxBatch: 4, maxPositions: 64 });
    using cpu = new CpuDecodeEngine(TINY, bf16Rounded(weights), { slots: 4, maxPositions: 64 });
    const g = await run(gpu, prompts, 8);
    const c = await run(cpu, prompts, 8);
    assert.deepEqual(g.tokens, c.tokens);
    const worst = Math.max(...g.logits.map((l, i) => relativeError(l, c.logits[i]!)));
    assert.ok(worst <= 1e-4, `bf16 logits within 1e-4: ${worst}`);
  });

  test("Hugging Face transformers' LlamaForCausalLM: the same next tokens, logits within 1e-4 (where Python has it)", async (t) => {
    const config: LlamaConfig = TINY;
    const weights = syntheticWeights(config, 3);
    const dir = mkdtempSync(join(tmpdir(), 'cg-llama-'));
    try {
      writeFileSync(join(dir, 'config.json'), JSON.stringify(toHuggingFaceConfig(config)));
      saveLlamaWeights(join(dir, 'model.safetensors'), weights, 'F32');
      const seqs = prompts.map((p) => [...p]);
      writeFileSync(join(dir, 'seqs.json'), JSON.stringify(seqs));
      const script = fileURLToPath(new URL('../../../scripts/llama-reference.py', import.meta.url));
      const r = spawnSync('python3', [script, dir, join(dir, 'seqs.json'), join(dir, 'out.json'), '--all-positions'], { encoding: 'utf8', timeout: 240_000 });
      if (r.status === 3) {
        t.skip(`transformers is not importable here: ${r.stderr.trim().split('\n').at(-1)}`);
        return;
      }
      assert.equal(r.status, 0, r.stderr);
      const hf = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as { transformers: string; results: { next: number; logits: number[][] }[] };
      using gpu = new GpuDecodeEngine({ config, weights: source(weights), slots: 4, maxBatch: 4, maxPositions: 64 });
      let worst = 0;
      for (const [slot, p] of prompts.entries()) {
        for (let pos = 0; pos < p.length; pos++) {
          const step = await gpu.step([{ slot, token: p[pos]!, position: pos }], { logits: true });
          worst = Math.max(worst, relativeError(step.logits!, Float32Array.from(hf.results[slot]!.logits[pos]!)));
          if (pos === p.length - 1) assert.equal(step.tokens[0], hf.results[slot]!.next, `prompt ${slot}: the next token`);
        }
      }
      process.stdout.write(`# llm: worst logit error against transformers ${hf.transformers}: ${worst.toExponential(2)}\n`);
      assert.ok(worst <= 1e-4, `logits within 1e-4 of transformers': ${worst}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('refusals: empty or oversize batches, a slot repeated out of order, positions and tokens out of range, a disposed engine', async () => {
    const weights = syntheticWeights(TINY, 2);
    const engine = new GpuDecodeEngine({ config: TINY, weights: source(weights), slots: 2, maxBatch: 2, maxPositions: 16 });
    const refused = (p: Promise<unknown>, re: RegExp) => assert.rejects(p, (e: unknown) => e instanceof InvalidArgumentError && re.test((e as Error).message));
    assert.throws(() => new GpuDecodeEngine({ config: TINY, weights: source(weights), pdl: 'yes' as unknown as boolean }), (e: unknown) => e instanceof InvalidArgumentError && /^GpuDecodeEngine: pdl/.test((e as Error).message));
    assert.throws(() => new GpuDecodeEngine({ config: TINY, weights: source(weights), graphs: 1 as unknown as boolean }), (e: unknown) => e instanceof InvalidArgumentError && /^GpuDecodeEngine: graphs/.test((e as Error).message));
    await refused(engine.step([]), /^GpuDecodeEngine\.step: entries/);
    await refused(engine.step([{ slot: 0, token: 1, position: 0 }, { slot: 1, token: 1, position: 0 }, { slot: 0, token: 1, position: 1 }]), /1 to 2 entries/);
    await refused(engine.step([{ slot: 1, token: 1, position: 0 }, { slot: 1, token: 2, position: 0 }]), /^GpuDecodeEngine\.step: entries\[1\]\.position \(0\): slot 1 is at position 0 in entries\[0\], so a later entry of it must be at the next position \(1\)/);
    await refused(engine.step([{ slot: 1, token: 1, position: 3 }, { slot: 1, token: 2, position: 2 }]), /entries\[1\]\.position \(2\).*next position \(4\)/);
    await refused(engine.step([{ slot: 2, token: 1, position: 0 }]), /slot/);
    await refused(engine.step([{ slot: 0, token: 1, position: 16 }]), /position/);
    await refused(engine.step([{ slot: 0, token: TINY.vocab, position: 0 }]), /token/);
    const ok = await engine.step([{ slot: 0, token: 256, position: 0 }]);
    assert.equal(ok.tokens.length, 1);
    engine.dispose();
    await assert.rejects(engine.step([{ slot: 0, token: 1, position: 0 }]), DisposedError);
  });
});
