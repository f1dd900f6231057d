/**
 * The completions server on the device: `CompletionServer` over the graphed GPU decoder, many
 * requests at once (batched), each completion equal to the CPU reference's greedy one for its
 * prompt; streamed and plain responses; the engine's graph figures in `/metrics`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { llamaConfig } from '../../src/llm/config.js';
import { GpuDecodeEngine } from '../../src/llm/gpu-engine.js';
import { CpuDecodeEngine } from '../../src/llm/reference-engine.js';
import { EOS, encode } from '../../src/llm/tokenizer.js';
import { syntheticWeights } from '../../src/llm/weights.js';
import { CompletionServer } from '../../src/serve/http.js';
import { Scheduler } from '../../src/serve/scheduler.js';
import { gpuSuite } from './gpu.js';

const CONFIG = llamaConfig('test', { layers: 2, dim: 128, heads: 4, kvHeads: 2, hidden: 384, maxPositions: 128 });

/** The reference's greedy completion of `prompt`: its tokens up to `max` (or EOS, not included). */
async function greedy(engine: CpuDecodeEngine, prompt: Int32Array, max: number): Promise<number[]> {
  const out: number[] = [];
  let token = prompt[0]!;
  for (let pos = 0; out.length < max; pos++) {
    const r = await engine.step([{ slot: 0, token, position: pos }]);
    if (pos + 1 < prompt.length) token = prompt[pos + 1]!;
    else {
      if (r.tokens[0] === EOS) break;
      out.push(r.tokens[0]!);
      token = r.tokens[0]!;
    }
  }
  return out;
}

gpuSuite('the completions server on the device', () => {
  test('twelve requests at once through the graphed decoder: batched, prompts in chunks, each the reference greedy completion; seeded sampling repeats', async () => {
    const weights = syntheticWeights(CONFIG, 21);
    const gpu = new GpuDecodeEngine({ config: CONFIG, weights: (n) => weights.get(n)!.data, slots: 16, maxBatch: 16, maxPositions: 128 });
    const cpu = new CpuDecodeEngine(CONFIG, weights, { slots: 1, maxPositions: 128 });
    const server = new CompletionServer({ scheduler: new Scheduler(gpu, { queueLimit: 64 }) });
    try {
      const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${port}`;
      const prompts = Array.from({ length: 12 }, (_, i) => `prompt number ${i}${'!'.repeat(i)}`);
      const replies = await Promise.all(prompts.map(async (prompt, i) => {
        const stream = i % 2 === 0;
        const res = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt, max_tokens: 20, stream }) });
        assert.equal(res.status, 200);
        if (!stream) return ((await res.json()) as { choices: { text: string }[] }).choices[0]!.text;
        // Server-sent events: the text of every chunk before [DONE].
        let text = '';
        for (const line of (await res.text()).split('\n')) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          text += (JSON.parse(line.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '';
        }
        return text;
      }));
      for (const [i, prompt] of prompts.entries()) {
        const want = await greedy(cpu, encode(prompt), 20);
        const text = new TextDecoder().decode(Uint8Array.from(want.filter((t) => t < 256)));
        assert.equal(replies[i], text, `request ${i}`);
      }
      // Sampled: the step's logits come back from the device; a seed repeats its text, alone or batched with others.
      const sampled = (extra: object) => fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'sample me', max_tokens: 16, temperature: 1.3, top_k: 40, seed: 5, ...extra }) })
        .then((r) => r.json() as Promise<{ choices: { text: string }[] }>)
        .then((j) => j.choices[0]!.text);
      const first = await sampled({});
      const [second] = await Promise.all([sampled({}), ...prompts.slice(0, 4).map((prompt) => fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt, max_tokens: 8 }) }))]);
      assert.equal(second, first, 'a seeded sample repeats');
      assert.notEqual(await sampled({ seed: 6 }), first, 'another seed, another text');
      const metrics = await (await fetch(`${url}/metrics`)).text();
      assert.match(metrics, /cudagraph_engine_stat\{stat="graphHits"\} [1-9]/);
      assert.match(metrics, /cudagraph_engine_stat\{stat="deviceMemoryUsedBytes"\} [1-9]/);
      const batches = gpu.stats();
      assert.ok(batches['tokens']! > batches['steps']!, `requests were batched: ${batches['tokens']} tokens in ${batches['steps']} steps`);
      assert.ok(batches['prefillSteps']! > 0, `prompts were fed in chunks: ${batches['prefillSteps']} prefill steps`);
    } finally {
      await server.close();
      gpu.dispose();
      cpu.dispose();
    }
  });
});
