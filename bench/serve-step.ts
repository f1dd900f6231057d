/**
 * Per-token decode step time of the GPU decoder, eager against graphed (with programmatic
 * dependent launch, and without it where the GPU has it), at several batch sizes, interleaved (`npm run bench:serve` runs it; also `node dist/bench/serve-step.js`). Each sample
 * is one step of B sequences (each at a position near --position), awaited; µs per step and per
 * token. Also checks that both engines give the same tokens.
 *
 *   node dist/bench/serve-step.js [--batches 1,4,16] [--rounds 5] [--reps 50] [--dtype f32|bf16] [--position 128]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LLAMA_CONFIG } from '../src/llm/config.js';
import { GpuDecodeEngine } from '../src/llm/gpu-engine.js';
import { syntheticWeights } from '../src/llm/weights.js';
import { median } from './gpu/stats.js';
import { flag as flagValue } from './args.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string): string => flagValue(argv, name, dflt);
const BATCHES = flag('--batches', '1,4,16').split(',').map(Number);
const ROUNDS = Number(flag('--rounds', '5'));
const REPS = Number(flag('--reps', '50'));
const DTYPE = flag('--dtype', 'f32') as 'f32' | 'bf16';
const POSITION = Number(flag('--position', '128'));
const config = DEFAULT_LLAMA_CONFIG;
// Room for the filled cache and the timed steps, at least 1024 positions (as a server's engine has).
const MAX_POSITIONS = Math.min(config.maxPositions, Math.max(1024, POSITION + 1));

// The default decoder with the seeded synthetic weights (src/llm/weights.ts).
const synthetic = syntheticWeights(config, 1);
const weights = (name: string): Float32Array => synthetic.get(name)!.data;

const maxBatch = Math.max(...BATCHES);
const t0 = performance.now();
const graphed = new GpuDecodeEngine({ config, weights, dtype: DTYPE, graphs: true, slots: maxBatch, maxBatch, maxPositions: MAX_POSITIONS });
const eager = new GpuDecodeEngine({ config, weights, dtype: DTYPE, graphs: false, slots: maxBatch, maxBatch, maxPositions: MAX_POSITIONS });
// Graphed without programmatic edges, where the default has them: what PDL adds.
const plain = graphed.name.includes('without PDL') ? null : new GpuDecodeEngine({ config, weights, dtype: DTYPE, graphs: true, pdl: false, slots: maxBatch, maxBatch, maxPositions: MAX_POSITIONS });
const engines = [['eager', eager], ['graphed', graphed], ...(plain !== null ? [['graphed without PDL', plain] as const] : [])] as const;
const startMs = performance.now() - t0;

// Fill every slot's cache up to POSITION the same way in both engines, checking the tokens agree.
let same = true;
// Slot i starts from byte token 65 + i, then feeds back its own greedy tokens.
let prev: Int32Array[] = engines.map(() => Int32Array.from({ length: maxBatch }, (_, i) => 65 + i));
for (let p = 0; p < POSITION; p++) {
  const outs: Int32Array[] = [];
  for (const [k, [, engine]] of engines.entries()) {
    const r = await engine.step(Array.from({ length: maxBatch }, (_, i) => ({ slot: i, token: prev[k]![i]!, position: p })));
    outs.push(r.tokens);
  }
  if (outs.some((o) => o.some((t, i) => t !== outs[0]![i]))) same = false;
  prev = outs;
}

const perStep: Record<string, number[]> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const B of BATCHES) {
    for (const [label, engine] of engines) {
      const entries = Array.from({ length: B }, (_, i) => ({ slot: i, token: 65, position: POSITION }));
      const xs: number[] = [];
      for (let i = 0; i < REPS; i++) {
        const a = performance.now();
        await engine.step(entries);
        xs.push((performance.now() - a) * 1000);
      }
      (perStep[`${label} B=${B}`] ??= []).push(median(xs));
    }
  }
}
const rows = BATCHES.map((B) => {
  const e = median(perStep[`eager B=${B}`]!);
  const g = median(perStep[`graphed B=${B}`]!);
  const np = plain !== null ? median(perStep[`graphed without PDL B=${B}`]!) : null;
  return { batch: B, eagerUs: e, graphedUs: g, graphedWithoutPdlUs: np, eagerPerTokenUs: e / B, graphedPerTokenUs: g / B, speedup: e / g };
});
const results = { date: new Date().toISOString(), gpu: graphed.device.name, dtype: DTYPE, config, position: POSITION, startMs, sameTokens: same, rows, graphStats: graphed.stats(), perStep };
if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve-step.json'), JSON.stringify(results, null, 2));
process.stdout.write(`decode step, ${results.gpu}, ${DTYPE}, ${config.layers} layers × ${config.dim}, position ${POSITION}; engines started in ${startMs.toFixed(0)} ms; every engine gives the same tokens: ${same}\n`);
for (const r of rows) {
  const np = r.graphedWithoutPdlUs !== null ? `, without PDL ${r.graphedWithoutPdlUs.toFixed(1)} µs` : '';
  process.stdout.write(`  B=${String(r.batch).padStart(2)}  eager ${r.eagerUs.toFixed(1)} µs  graphed ${r.graphedUs.toFixed(1)} µs${np}  (${r.speedup.toFixed(2)}×; per token ${r.eagerPerTokenUs.toFixed(1)} / ${r.graphedPerTokenUs.toFixed(1)} µs)\n`);
}
for (const [, engine] of engines) engine.dispose();
