/**
 * `npm run bench:serve` on a GPU machine: the decoder's step time, eager against graphed
 * (bench/serve-step.ts, in a child process), then the server under load: for each GPU engine,
 * `cudagraph serve --engine <gpu|gpu-eager>` on 127.0.0.1 and the bounded load generator
 * (bench/serve-load.ts) at concurrency 1, 4, 16, 64, with the server's own figures from `/metrics`
 * after each run (step time, batch sizes, the event loop's delay). Between the two, the same model
 * (same config, same weights, written as a Hugging Face model directory) in PyTorch: transformers'
 * LlamaForCausalLM eager, with a static cache, in a CUDA graph and under
 * `torch.compile(mode="reduce-overhead")` (scripts/torch-decode-bench.py, where python3 has torch
 * and transformers; reported and skipped where not), and one table of all of them. `--load-only`
 * skips both step benches, `--steps-only` the load, `--no-torch` the PyTorch bench; `--url` loads a
 * server already running.
 *
 * `--soak N` then sends the graphed server N requests of mixed sizes (bench/serve-soak.ts: streamed,
 * plain, dropped mid-stream, refused) and reports whether its memory stayed flat.
 *
 *   npm run bench:serve -- [--requests 64] [--max-tokens 32] [--concurrency 1,4,16,64]
 *       [--batches 1,4,16] [--rounds 5] [--reps 40] [--torch-modes eager,static,cuda-graph,compile]
 *       [--soak 10000]
 *   (writes $OUT/serve.json, serve-step.json and torch-step.json when OUT is set)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatLoadReport, loadTest, type LevelReport } from './serve-load.js';
import { flag as flagValue } from './args.js';
import { runStepBenches } from './serve-compare.js';
import { formatSoakReport, soak, type SoakReport } from './serve-soak.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string): string => flagValue(argv, name, dflt);
const requests = Number(flag('--requests', '64'));
const maxTokens = Number(flag('--max-tokens', '32'));
const concurrency = flag('--concurrency', '1,4,16,64').split(',').map(Number);
const root = fileURLToPath(new URL('../../', import.meta.url));
const out: Record<string, unknown> = { date: new Date().toISOString() };

if (!argv.includes('--load-only')) {
  const dir = process.env['OUT'] ?? mkdtempSync(join(tmpdir(), 'cg-bench-serve-'));
  out['steps'] = runStepBenches({
    root, dir,
    batches: flag('--batches', '1,4,16'), rounds: flag('--rounds', '5'), reps: flag('--reps', '40'),
    torchModes: argv.includes('--no-torch') ? null : flag('--torch-modes', 'eager,static,cuda-graph,compile'),
  });
}

/** The `cudagraph_serve_*` lines of a server's /metrics that say how it ran. */
async function serverFigures(url: string): Promise<string[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split('\n').filter((l) => /^cudagraph_serve_(step_seconds|batch|event_loop|tokens_per_second|time_to_first|inter_token)/.test(l));
}

async function waitHealthy(url: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`bench:serve: ${url} did not become healthy in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

if (argv.includes('--steps-only')) {
  if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve.json'), JSON.stringify(out, null, 2));
  process.exit(0);
}
const loads: Record<string, { levels: LevelReport[]; server: string[]; soak?: SoakReport }> = {};
const soakRequests = Number(flag('--soak', '0'));
const given = argv.includes('--url') ? flag('--url', '') : null;
for (const [i, engine] of (given !== null ? ['given'] : ['gpu', 'gpu-eager']).entries()) {
  const port = 8431 + i;
  const url = given ?? `http://127.0.0.1:${port}`;
  const child = given !== null ? null : spawn(process.execPath, [join(root, 'bin/cudagraph.js'), 'serve', '--engine', engine, '--port', String(port), '--slots', '64', '--max-batch', '32', '--queue', '256'], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitHealthy(url, 120_000);
    const levels = await loadTest({ url, concurrency, requests, maxTokens });
    process.stdout.write(`== cudagraph serve --engine ${engine}\n${formatLoadReport(levels)}\n`);
    const server = await serverFigures(url);
    process.stdout.write(server.map((l) => `  ${l}`).join('\n') + '\n');
    loads[engine] = { levels, server };
    if (soakRequests > 0 && engine !== 'gpu-eager') {
      const report = await soak({ url, requests: soakRequests, concurrency: 64 });
      process.stdout.write(`== soak of cudagraph serve --engine ${engine}\n${formatSoakReport(report)}\n`);
      loads[engine].soak = report;
    }
  } finally {
    child?.kill('SIGTERM');
    if (child) await new Promise((r) => child.once('exit', r));
  }
}
out['load'] = loads;
if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve.json'), JSON.stringify(out, null, 2));
