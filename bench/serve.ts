/**
 * `npm run bench:serve` on a GPU machine: the decoder's step time, eager against graphed
 * (bench/serve-step.ts, in a child process), then the server under load: for each GPU engine,
 * `cudagraph serve --engine <gpu|gpu-eager>` on 127.0.0.1 and the bounded load generator
 * (bench/serve-load.ts) at concurrency 1, 4, 16, 64, with the server's own figures from `/metrics`
 * after the runs (step time, batch sizes, the event loop's delay). The servers run at once and the
 * load takes them in turn, round after round (bench/serve-rounds.ts); `--baseline <dir>` adds the
 * same two engines from another checkout (built), to measure a change side by side. Between the two, the same model
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
 *   npm run bench:serve -- [--requests N (default max(64, 4 × concurrency))] [--max-tokens 32]
 *       [--concurrency 1,4,16,64] [--load-rounds 3] [--baseline dir]
 *       [--batches 1,4,16] [--rounds 5] [--reps 40] [--torch-modes eager,static,cuda-graph,compile]
 *       [--soak 10000] [--prefill-lengths 16,128,512,1024] [--prefill-requests 8]
 *   (writes $OUT/serve.json, serve-step.json and torch-step.json when OUT is set)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultRequests, formatRounds, interleavedLoad, pairedRatios, summarizeRounds, type LoadTarget } from './serve-rounds.js';
import { flag as flagValue } from './args.js';
import { runStepBenches } from './serve-compare.js';
import { formatSoakReport, soak, type SoakReport } from './serve-soak.js';
import { startServer, waitHealthy } from './serve-server.js';
import { formatPrefillReport, prefillBench } from './serve-prefill.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string): string => flagValue(argv, name, dflt);
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
const soakRequests = Number(flag('--soak', '0'));
const given = argv.includes('--url') ? flag('--url', '') : null;
const baseline = argv.includes('--baseline') ? flag('--baseline', '') : null;
const rounds = Number(flag('--load-rounds', '3'));
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`bench:serve: --load-rounds must be an integer ≥ 1, got ${flag('--load-rounds', '3')}`);
const requestsFlag = argv.includes('--requests') ? Number(flag('--requests', '')) : null;
// Every server runs from the start to the end, so that the rounds can take them in turn.
const plans: { name: string; root: string; engine: string }[] = given !== null ? [] : [
  { name: 'graphed', root, engine: 'gpu' },
  { name: 'eager', root, engine: 'gpu-eager' },
  ...(baseline !== null ? [{ name: 'baseline graphed', root: baseline, engine: 'gpu' }, { name: 'baseline eager', root: baseline, engine: 'gpu-eager' }] : []),
];
const servers = await Promise.all(plans.map((p, i) => startServer(p.root, 8431 + i, ['--engine', p.engine, '--slots', '64', '--max-batch', '32', '--queue', '256'])));
const load: Record<string, unknown> = {};
try {
  const targets: LoadTarget[] = given !== null ? [{ name: 'given', url: given }] : plans.map((p, i) => ({ name: p.name, url: servers[i]!.url }));
  if (given !== null) await waitHealthy(given, 120_000);
  const result = await interleavedLoad({ targets, concurrency, rounds, requests: (c) => requestsFlag ?? defaultRequests(c), maxTokens });
  const pairs: [string, string][] = [['graphed', 'eager'], ['graphed', 'baseline graphed'], ['eager', 'baseline eager']];
  process.stdout.write(`== cudagraph serve under load, ${targets.map((t) => t.name).join(', ')}\n${formatRounds(result, pairs)}\n`);
  load['rounds'] = result;
  load['summary'] = summarizeRounds(result);
  load['ratios'] = Object.fromEntries(pairs.filter(([a, b]) => result[a] && result[b]).map(([a, b]) => [`${a} / ${b}`, pairedRatios(result, a, b)]));
  const figures: Record<string, string[]> = {};
  for (const t of targets) {
    figures[t.name] = await serverFigures(t.url);
    process.stdout.write(`  ${t.name}:\n${figures[t.name]!.map((l) => `    ${l}`).join('\n')}\n`);
  }
  load['server'] = figures;
  if (soakRequests > 0) {
    const t = targets[0]!;
    const report = await soak({ url: t.url, requests: soakRequests, concurrency: 64 });
    process.stdout.write(`== soak of cudagraph serve (${t.name})\n${formatSoakReport(report)}\n`);
    load['soak'] = report;
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
out['load'] = load;
if (given === null && !argv.includes('--no-prefill')) {
  const prefill = await prefillBench({ root, port: 8433, lengths: flag('--prefill-lengths', '16,128,512,1024').split(',').map(Number), requests: Number(flag('--prefill-requests', '8')) });
  process.stdout.write(`== time to first token by prompt length, chunked prefill against token by token (cudagraph serve --engine gpu, one request at a time)\n${formatPrefillReport(prefill)}\n`);
  out['prefill'] = prefill;
}
if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'serve.json'), JSON.stringify(out, null, 2));
