/**
 * `npm run bench:gpu`: the GPU benchmark against C, CuPy and PyTorch, run on a GPU machine. It builds the C
 * reference worker, starts one long-lived worker per implementation (C driver API, cudagraph,
 * CuPy, PyTorch; those that cannot start are reported and skipped), runs the plan's rows in
 * interleaved rounds (A B C D, rotating who goes first), and writes
 * bench/results/<date>-<gpu>.{json,md} (and the same under $OUT), printing the table last.
 * Definitions of the rows and statistics: docs/benchmark.md.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCWorker } from './gpu/build-c.js';
import { IMPLS, USAGE, parseOptions, type GpuBenchOptions } from './gpu/options.js';
import { benchPaths, repoRoot } from './gpu/paths.js';
import { STEPS, commandFor, runsStep } from './gpu/plan.js';
import { buildRows, checkTargets, formatMarkdown, formatText, targetSummary, type BenchResults, type ImplStatus, type StepSamples } from './gpu/report.js';
import { interleave } from './gpu/stats.js';
import { WorkerProcess, type WorkerSpec } from './gpu/worker-process.js';

const log = (msg: string): void => {
  process.stderr.write(`bench:gpu: ${msg}\n`);
};

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A file-name-safe form of the GPU name: `NVIDIA H200` → `nvidia-h200`. */
function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'unknown-gpu';
}

/** `<dir>/<base>.json` and `.md`, with `-2`, `-3`… added when a run of the same day exists. */
function freshBase(dir: string, base: string): string {
  for (let k = 1; ; k++) {
    const name = k === 1 ? base : `${base}-${k}`;
    if (!existsSync(join(dir, `${name}.json`)) && !existsSync(join(dir, `${name}.md`))) return name;
  }
}

/** The worker command of each selected implementation, or why it cannot run. */
function specsFor(opts: GpuBenchOptions, paths: ReturnType<typeof benchPaths>): { specs: WorkerSpec[]; skipped: ImplStatus[] } {
  const specs: WorkerSpec[] = [];
  const skipped: ImplStatus[] = [];
  const python = process.env.PYTHON || 'python3';
  for (const impl of IMPLS.filter((i) => opts.only.includes(i.id))) {
    const { id, label } = impl;
    switch (id) {
      case 'c': {
        const built = buildCWorker(paths.cSource, paths.cBinary);
        if (built.ok) {
          log(`C worker built: ${built.command}`);
          specs.push({ id, label, command: paths.cBinary, args: [paths.ptx] });
        } else {
          skipped.push({ id, label, status: 'skipped', reason: `build failed: ${built.attempts.join(' ;; ')}` });
        }
        break;
      }
      case 'cudagraph':
      case 'cudagraph-koffi':
        if (existsSync(paths.cudagraphWorker)) {
          // The same worker; CUDAGRAPH_NATIVE=0 puts its hot calls on koffi instead of the addon.
          const env = id === 'cudagraph-koffi' ? { CUDAGRAPH_NATIVE: '0' } : undefined;
          specs.push({ id, label, command: process.execPath, args: [paths.cudagraphWorker, paths.ptx], ...(env ? { env } : {}) });
        } else {
          skipped.push({
            id, label, status: 'skipped',
            reason: 'dist/bench/gpu/cudagraph-worker.js not built (bench/gpu/cudagraph-worker.ts.pending waits for the driver layer)',
          });
        }
        break;
      case 'cupy':
        specs.push({ id, label, command: python, args: [paths.cupyWorker, paths.ptx] });
        break;
      case 'torch':
        specs.push({ id, label, command: python, args: [paths.torchWorker, paths.ptx] });
        break;
    }
  }
  return { specs, skipped };
}

async function main(): Promise<number> {
  let opts: GpuBenchOptions;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${errorText(e)}\n${USAGE}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;
  const paths = benchPaths(repoRoot(import.meta.url));
  const found = specsFor(opts, paths);
  const { skipped } = found;
  // Pinning: the spread between rounds on the device is largely per process (docs/benchmark.md);
  // the same cores for every worker take core placement out of the comparison.
  const specs = opts.pin === null ? found.specs : found.specs.map((s) => ({ ...s, command: 'taskset', args: ['-c', opts.pin!, s.command, ...s.args] }));

  // Start every worker at once: imports and context creation are not timed.
  const starts = await Promise.allSettled(specs.map((s) => WorkerProcess.start(s, opts.timeoutSeconds * 1000)));
  const workers: WorkerProcess[] = [];
  const statuses = new Map<string, ImplStatus>(skipped.map((s) => [s.id, s]));
  starts.forEach((s, k) => {
    const { id, label } = specs[k]!;
    if (s.status === 'rejected') {
      statuses.set(id, { id, label, status: 'skipped', reason: errorText(s.reason) });
    } else if (!s.value.ready.ready) {
      statuses.set(id, { id, label, status: 'skipped', reason: s.value.ready.error });
    } else {
      const r = s.value.ready;
      workers.push(s.value.worker);
      statuses.set(id, {
        id, label, status: 'ran',
        ...(r.version !== undefined ? { version: r.version } : {}),
        ...(r.device !== undefined ? { device: r.device } : {}),
        ...(r.driverVersion !== undefined ? { driverVersion: r.driverVersion } : {}),
      });
    }
  });
  const implementations = IMPLS.filter((i) => statuses.has(i.id)).map((i) => statuses.get(i.id)!);
  for (const s of implementations) {
    log(s.status === 'ran' ? `${s.label}: ready (${s.version ?? '?'}, ${s.device ?? '?'})` : `${s.label}: skipped: ${s.reason}`);
  }
  if (workers.length === 0) {
    log('no implementation could run; nothing measured');
    return 1;
  }

  const samples = new Map<string, StepSamples[]>(workers.map((w) => [w.spec.id, STEPS.map(() => ({ rounds: [], errors: [] }))]));
  const runRound = async (round: number, reps: number, record: boolean): Promise<void> => {
    for (const turn of interleave(workers, STEPS.length, round)) {
      const w = turn.impl;
      if (!w.alive || !runsStep(STEPS[turn.step]!, w.spec.id)) continue;
      const cmd = commandFor(STEPS[turn.step]!, reps);
      const into = samples.get(w.spec.id)![turn.step]!;
      try {
        const reply = await w.request(cmd, opts.timeoutSeconds * 1000);
        if (!reply.ok) into.errors.push(reply.error);
        else if (record) into.rounds.push({ round, samples: reply.samples });
      } catch (e) {
        into.errors.push(errorText(e));
      }
    }
  };

  log(`warm-up round (${workers.map((w) => w.spec.id).join(', ')})`);
  await runRound(0, 2, false);
  let roundsRun = 0;
  let stoppedEarly: string | null = null;
  let lastRound = 0;
  for (let r = 0; r < opts.rounds; r++) {
    if (r > 0 && elapsed() + lastRound > opts.budgetSeconds) {
      stoppedEarly = `time budget of ${opts.budgetSeconds} s reached after ${r} rounds`;
      log(stoppedEarly);
      break;
    }
    const t = elapsed();
    await runRound(r, opts.reps, true);
    lastRound = elapsed() - t;
    roundsRun++;
    log(`round ${r + 1}/${opts.rounds}: ${lastRound.toFixed(1)} s`);
  }
  await Promise.all(workers.map((w) => w.quit()));
  for (const [id, steps] of samples) {
    const errs = steps.flatMap((s) => s.errors);
    if (errs.length > 0) log(`${id}: ${errs.length} failed command(s), first: ${errs[0]}`);
  }

  const ran = implementations.filter((s) => s.status === 'ran');
  const first = ran.find((s) => s.id === 'c') ?? ran[0]!;
  const labels = Object.fromEntries(IMPLS.map((i) => [i.id, i.label]));
  const rows = buildRows(ran.map((s) => s.id), samples);
  const results: BenchResults = {
    schema: 2,
    date: new Date().toISOString(),
    gpu: first.device ?? 'unknown GPU',
    driverVersion: ran.find((s) => s.driverVersion !== undefined)?.driverVersion ?? null,
    options: { reps: opts.reps, rounds: opts.rounds, budgetSeconds: opts.budgetSeconds, quick: opts.quick, only: opts.only, pin: opts.pin },
    implementations,
    roundsRun,
    stoppedEarly,
    elapsedSeconds: elapsed(),
    rows,
    targets: checkTargets(rows, labels),
    steps: STEPS.map((s) => ({ row: s.row, n: s.n, reps: commandFor(s, opts.reps).reps, ...(s.only ? { only: s.only } : {}) })),
    raw: Object.fromEntries(samples),
  };

  const base = `${results.date.slice(0, 10)}-${slug(results.gpu)}`;
  // Samples rounded to 0.1 ns and arrays of numbers kept on one line: a readable file, not 20 000 lines.
  const json = JSON.stringify(results, (_k, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1e4) / 1e4 : v), 1)
    .replace(/\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]/g, (_m, list: string) => `[${list.replace(/\s+/g, '')}]`) + '\n';
  const md = formatMarkdown(results);
  for (const dir of [paths.results, ...(opts.outDir ? [opts.outDir] : [])]) {
    try {
      mkdirSync(dir, { recursive: true });
      const name = freshBase(dir, base);
      writeFileSync(join(dir, `${name}.json`), json);
      writeFileSync(join(dir, `${name}.md`), md);
      log(`wrote ${join(dir, name)}.{json,md}`);
    } catch (e) {
      log(`could not write results to ${dir}: ${errorText(e)}`);
    }
  }
  if (results.targets.length > 0) {
    log(`cudagraph targets: ${targetSummary(results.targets)}`);
    for (const t of results.targets) if (t.outcome !== 'met') log(`  ${t.outcome}: ${t.label}, N=${t.n}: ${t.target}: ${t.detail}`);
  }
  process.stdout.write(`\n${results.gpu}, driver ${results.driverVersion ?? '?'}, ${roundsRun} rounds × ${opts.reps} reps, ${elapsed().toFixed(0)} s\n`);
  process.stdout.write(formatText(results) + '\n');
  return 0;
}

process.exitCode = await main();
