/**
 * The step benches of `npm run bench:serve`, side by side in one run: cudagraph's decoder eager and
 * graphed (bench/serve-step.ts, a child process), then the same model in PyTorch
 * (scripts/torch-decode-bench.py: transformers' LlamaForCausalLM eager, with a static cache, in a
 * CUDA graph, under torch.compile), on the same config and the same seeded weights, written as a
 * Hugging Face model directory; then one table of every figure with each one's spread over rounds
 * and its ratio to cudagraph graphed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LLAMA_CONFIG } from '../src/llm/config.js';
import { toHuggingFaceConfig } from '../src/llm/hf-config.js';
import { saveLlamaWeights } from '../src/llm/safetensors.js';
import { syntheticWeights } from '../src/llm/weights.js';
import { median } from './gpu/stats.js';

/** What `runStepBenches` runs. */
export interface StepBenchOptions {
  /** The package root (dist/ and scripts/ under it). */
  readonly root: string;
  /** Where the two benches write their JSON and the model directory goes. */
  readonly dir: string;
  /** Comma-separated batch sizes, rounds and repetitions a round, as the scripts take them. */
  readonly batches: string;
  readonly rounds: string;
  readonly reps: string;
  /** PyTorch's modes (scripts/torch-decode-bench.py --modes), or `null` to skip PyTorch. */
  readonly torchModes: string | null;
}

/** One row of the combined table: an implementation at a batch size. */
export interface StepRow {
  readonly batch: number;
  readonly impl: string;
  /** Median over rounds of each round's median step time, µs; and the rounds' range. */
  readonly us: number;
  readonly lo: number;
  readonly hi: number;
}

/** The rows of serve-step.json: per batch size, each cudagraph engine (eager, graphed, …). */
export function cudagraphRows(stepJson: { perStep: Record<string, number[]> }): StepRow[] {
  const rows: StepRow[] = [];
  for (const [key, rounds] of Object.entries(stepJson.perStep)) {
    const m = /^(.+) B=(\d+)$/.exec(key);
    if (m === null || rounds.length === 0) continue;
    rows.push({ batch: Number(m[2]), impl: `cudagraph ${m[1]}`, us: median(rounds), lo: Math.min(...rounds), hi: Math.max(...rounds) });
  }
  return rows;
}

/** The rows of torch-step.json: one per PyTorch mode and batch size. */
export function torchRows(torchJson: { rows: { batch: number; mode: string; perRound: number[] }[] }): StepRow[] {
  return torchJson.rows
    .filter((r) => r.perRound.length > 0)
    .map((r) => ({ batch: r.batch, impl: `torch ${r.mode}`, us: median(r.perRound), lo: Math.min(...r.perRound), hi: Math.max(...r.perRound) }));
}

/** The combined table: per batch size, each implementation's step time, range and ratio to cudagraph graphed. */
export function formatStepTable(rows: readonly StepRow[]): string {
  const lines = ['| batch | implementation | µs a step [range over rounds] | µs a token | × cudagraph graphed |', '|---:|---|---:|---:|---:|'];
  for (const batch of [...new Set(rows.map((r) => r.batch))].sort((a, b) => a - b)) {
    const base = rows.find((r) => r.batch === batch && r.impl === 'cudagraph graphed');
    for (const r of rows.filter((x) => x.batch === batch)) {
      const ratio = base === undefined ? '—' : `${(r.us / base.us).toFixed(2)}×`;
      lines.push(`| ${batch} | ${r.impl} | ${r.us.toFixed(1)} [${r.lo.toFixed(1)}–${r.hi.toFixed(1)}] | ${(r.us / batch).toFixed(1)} | ${ratio} |`);
    }
  }
  return lines.join('\n');
}

/** Runs both step benches (see the file's comment), prints the table, returns what they gave. */
export function runStepBenches(o: StepBenchOptions): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const env = { ...process.env, OUT: o.dir };
  const step = spawnSync(process.execPath, [join(o.root, 'dist/bench/serve-step.js'), '--batches', o.batches, '--rounds', o.rounds, '--reps', o.reps], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env, timeout: 300_000 });
  process.stdout.write(step.stdout);
  const rows: StepRow[] = [];
  if (step.status === 0 && existsSync(join(o.dir, 'serve-step.json'))) {
    const json = JSON.parse(readFileSync(join(o.dir, 'serve-step.json'), 'utf8'));
    rows.push(...cudagraphRows(json));
    result['position'] = json.position;
  } else {
    result['cudagraph'] = `failed: exit status ${step.status}`;
  }
  if (o.torchModes !== null) {
    // The same model as serve-step's: the default config and syntheticWeights(config, 1).
    const model = join(o.dir, 'torch-model');
    mkdirSync(model, { recursive: true });
    writeFileSync(join(model, 'config.json'), JSON.stringify(toHuggingFaceConfig(DEFAULT_LLAMA_CONFIG)));
    saveLlamaWeights(join(model, 'model.safetensors'), syntheticWeights(DEFAULT_LLAMA_CONFIG, 1), 'F32');
    const out = join(o.dir, 'torch-step.json');
    const args = [join(o.root, 'scripts/torch-decode-bench.py'), model, out, '--batches', o.batches, '--rounds', o.rounds, '--reps', o.reps, '--modes', o.torchModes, '--position', String(result['position'] ?? 128)];
    const torch = spawnSync('python3', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 900_000 });
    process.stdout.write(torch.stdout ?? '');
    if (torch.status === 0 && existsSync(out)) {
      const json = JSON.parse(readFileSync(out, 'utf8'));
      rows.push(...torchRows(json));
      result['torch'] = { torch: json.torch, transformers: json.transformers, errors: json.errors };
    } else {
      result['torch'] = `not run: python3 exited with ${torch.status ?? torch.error?.message} (it needs torch and transformers)`;
      process.stdout.write(`PyTorch: ${String(result['torch'])}\n`);
    }
  }
  result['rows'] = rows;
  process.stdout.write(`\ndecode step, side by side\n${formatStepTable(rows)}\n\n`);
  return result;
}
