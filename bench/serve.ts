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
 * plain, dropped mid-stream, refused) and reports whether its memory stayed flat. Last, the time
 * to first token by prompt length, chunked prefill against token by token (bench/serve-prefill.ts;
 * `--no-prefill` skips it).
 *
 *   npm run bench:serve -- [--requests 64] [--max-tokens 32] [--concurrency 1,4,16,64]
 *       [--batches 1,4,16] [--rounds 5] [--reps 40] [--torch-modes eager,static,cuda-graph,compile]
 *       [--soak 10000] [--prefill-lengths 16,128,512,1024] [--prefill-requests 8]
 *   (writes $OUT/serve.json, serve-step.json and torch-step.json when OUT is set)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatLoadReport, loadTest, type LevelReport } from './serve-load.js';
import { flag as flagValue } from './args.js';
import { runStepBenches } from './serve-compare.js';
import { formatSoakReport, soak, type SoakReport } from './serve-soak.js';
import { startServer, waitHealthy } from './serve-server.js';
import { formatPrefillReport, prefillBench } from './serve-prefill.js';

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

if (argv.includes('--steps-only')) {
  if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve.json'), JSON.stringify(out, null, 2));
  process.exit(0);
}
const loads: Record<string, { levels: LevelReport[]; server: string[]; soak?: SoakReport }> = {};
const soakRequests = Number(flag('--soak', '0'));
const given = argv.includes('--url') ? flag('--url', '') : null;
for (const [i, engine] of (given !== null ? ['given'] : ['gpu', 'gpu-eager']).entries()) {
  const server = given !== null ? null : await startServer(root, 8431 + i, ['--engine', engine, '--slots', '64', '--max-batch', '32', '--queue', '256']);
  const url = given ?? server!.url;
  try {
    if (given !== null) await waitHealthy(url, 120_000);
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
    await server?.stop();
  }
}
out['load'] = loads;
if (given === null && !argv.includes('--no-prefill')) {
  const prefill = await prefillBench({ root, port: 8433, lengths: flag('--prefill-lengths', '16,128,512,1024').split(',').map(Number), requests: Number(flag('--prefill-requests', '8')) });
  process.stdout.write(`== time to first token by prompt length, chunked prefill against token by token (cudagraph serve --engine gpu, one request at a time)\n${formatPrefillReport(prefill)}\n`);
  out['prefill'] = prefill;
}
if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve.json'), JSON.stringify(out, null, 2));
