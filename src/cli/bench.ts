/**
 * `cudagraph bench`: this GPU's launch-overhead table. For each graph size N, N empty kernels
 * (grid 1, block 32) launched eagerly against the same N captured into one graph and launched with
 * one call: the host cost of submitting, the time until the work is done, and the capture +
 * instantiate cost. Eager and graph samples alternate within each round, and the rounds alternate
 * which goes first, because a machine's speed drifts (measured on the H200: docs/benchmark.md); figures are medians of the round
 * medians, with the min–max of the round medians as the spread.
 *
 * This is the quick, self-contained check of one machine; `npm run bench:gpu` (bench/gpu/) is the
 * full comparison with C, CuPy and PyTorch.
 */
import { Device, Module, StreamGraphCapture, type GraphExec, type PreparedLaunch, type Stream } from '../index.js';
import { median } from './stats.js';
import { cudaVersionText, describeDevice, probeGpu } from './gpu-probe.js';
import { intListOption, intOption } from './options.js';
import type { Output } from './output.js';
import { PROBE_PTX } from './probe-kernels.js';
import { ProgressBar } from './progress.js';
import { UsageError } from './usage-error.js';

/** Options of `cudagraph bench`, as given on the command line. */
export interface BenchOptions {
  readonly json: boolean;
  readonly quick: boolean;
  readonly sizes?: string;
  readonly rounds?: string;
  readonly reps?: string;
}

/** A figure: the median of the round medians and their min–max, in µs. */
export interface Figure {
  readonly median: number;
  readonly lo: number;
  readonly hi: number;
}

/** One row of the table: graphs of `kernels` nodes. */
export interface BenchRow {
  readonly kernels: number;
  /** Eager: from before the first launch to the return of the last (host cost). */
  readonly eagerSubmit: Figure;
  /** Eager submit per kernel. */
  readonly eagerPerKernel: Figure;
  /** Eager: from before the first launch until the stream is done. */
  readonly eagerDone: Figure;
  /** Graph: one `GraphExec.launch` call (host cost). */
  readonly graphLaunch: Figure;
  /** Graph: from before the launch until the stream is done. */
  readonly graphDone: Figure;
  /** eagerDone / graphDone (medians). */
  readonly speedup: number;
  /** Begin capture + N launches + end + instantiate. */
  readonly captureInstantiate: Figure;
}

/** Default and `--quick` sizes of a run. */
export const BENCH_DEFAULTS = { sizes: [10, 100, 1000], rounds: 5, reps: 20, quickRounds: 3, quickReps: 5 } as const;

function figure(roundMedians: number[]): Figure {
  return { median: median(roundMedians), lo: Math.min(...roundMedians), hi: Math.max(...roundMedians) };
}

const now = (): bigint => process.hrtime.bigint();
const us = (a: bigint, b: bigint): number => Number(b - a) / 1e3;

function capture(s: Stream, p: PreparedLaunch, n: number): GraphExec {
  const cap = StreamGraphCapture.begin(s, 'global');
  try {
    for (let i = 0; i < n; i++) p.launch(s);
    return cap.end();
  } finally {
    cap.dispose();
  }
}

/** Measures one graph size. */
function measure(s: Stream, p: PreparedLaunch, n: number, rounds: number, reps: number, tick: (round: number) => void): BenchRow {
  const exec = capture(s, p, n);
  try {
    const m = { submit: [] as number[], done: [] as number[], launch: [] as number[], gdone: [] as number[], cap: [] as number[] };
    const eager = (): [number, number] => {
      s.synchronize();
      const t0 = now();
      for (let i = 0; i < n; i++) p.launch(s);
      const t1 = now();
      s.synchronize();
      return [us(t0, t1), us(t0, now())];
    };
    const graph = (): [number, number] => {
      s.synchronize();
      const t0 = now();
      exec.launch(s);
      const t1 = now();
      s.synchronize();
      return [us(t0, t1), us(t0, now())];
    };
    eager();
    graph();
    for (let r = 0; r < rounds; r++) {
      const submit: number[] = [];
      const done: number[] = [];
      const launch: number[] = [];
      const gdone: number[] = [];
      for (let i = 0; i < reps; i++) {
        const first = (r + i) % 2 === 0;
        const a = first ? eager() : graph();
        const b = first ? graph() : eager();
        const [e, g] = first ? [a, b] : [b, a];
        submit.push(e[0]);
        done.push(e[1]);
        launch.push(g[0]);
        gdone.push(g[1]);
      }
      // Capture + instantiate, a few times a round (the 1000-node graph takes milliseconds).
      const caps: number[] = [];
      for (let i = 0; i < Math.min(reps, 5); i++) {
        s.synchronize();
        const t0 = now();
        const x = capture(s, p, n);
        caps.push(us(t0, now()));
        x.dispose();
      }
      m.submit.push(median(submit));
      m.done.push(median(done));
      m.launch.push(median(launch));
      m.gdone.push(median(gdone));
      m.cap.push(median(caps));
      tick(r + 1);
    }
    const eagerDone = figure(m.done);
    const graphDone = figure(m.gdone);
    return {
      kernels: n,
      eagerSubmit: figure(m.submit),
      eagerPerKernel: figure(m.submit.map((x) => x / n)),
      eagerDone,
      graphLaunch: figure(m.launch),
      graphDone,
      speedup: eagerDone.median / graphDone.median,
      captureInstantiate: figure(m.cap),
    };
  } finally {
    exec.dispose();
  }
}

function fmt(x: number): string {
  return x >= 1000 ? x.toFixed(0) : x >= 100 ? x.toFixed(1) : x.toFixed(2);
}

function cell(f: Figure): string {
  return `${fmt(f.median)} (${fmt(f.lo)}–${fmt(f.hi)})`;
}

/** The table as aligned text (a Markdown table). */
export function formatTable(rows: readonly BenchRow[]): string[] {
  const head = ['kernels', 'eager submit µs', 'µs/kernel', 'eager until done µs', 'graph launch call µs', 'graph until done µs', 'speedup', 'capture+instantiate µs'];
  const body = rows.map((r) => [
    String(r.kernels),
    cell(r.eagerSubmit),
    fmt(r.eagerPerKernel.median),
    cell(r.eagerDone),
    cell(r.graphLaunch),
    cell(r.graphDone),
    `${r.speedup.toFixed(1)}×`,
    cell(r.captureInstantiate),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 1) + ':').join('|')}|`, ...body.map(line)];
}

/**
 * Runs `cudagraph bench`.
 * @throws UsageError for bad options or when no GPU is usable here.
 */
export function bench(options: BenchOptions, io: Output): void {
  const sizes = options.sizes === undefined ? [...BENCH_DEFAULTS.sizes] : intListOption('--sizes', options.sizes, 1, 100_000);
  const rounds = options.rounds !== undefined ? intOption('--rounds', options.rounds, 1, 1000) : options.quick ? BENCH_DEFAULTS.quickRounds : BENCH_DEFAULTS.rounds;
  const reps = options.reps !== undefined ? intOption('--reps', options.reps, 1, 100_000) : options.quick ? BENCH_DEFAULTS.quickReps : BENCH_DEFAULTS.reps;
  const probe = probeGpu(false);
  if (!probe.ok) throw new UsageError(`bench measures a GPU and none is usable here: ${probe.reason} (\`cudagraph doctor\` says what to check)`);
  const device: Device = probe.device;

  const stream = device.createStream();
  const module = Module.load(device, PROBE_PTX);
  const empty = module.function('empty').prepare({ grid: 1, block: 32, args: [] });
  const bar = new ProgressBar(io, sizes.length * rounds);
  const rows: BenchRow[] = [];
  try {
    for (const n of sizes) rows.push(measure(stream, empty, n, rounds, reps, (r) => bar.tick(`${n} kernels, round ${r}/${rounds}`)));
  } finally {
    bar.done();
    empty.dispose();
    module.dispose();
    stream.dispose();
  }

  const kernel = 'empty kernel, grid 1, block 32 (PTX, JIT-compiled)';
  if (options.json) {
    io.out(
      JSON.stringify({ device: device.name, computeCapability: device.computeCapability, driverVersion: probe.driverVersion, kernel, rounds, reps, unit: 'µs', rows }, null, 2) + '\n',
    );
    return;
  }
  io.out(
    [
      `cudagraph bench: launch overhead on ${describeDevice(device)}, driver for CUDA ${cudaVersionText(probe.driverVersion)}`,
      `N ${kernel} per iteration, eager (N prepared launches) vs graph (one launch of the N captured); medians of ${rounds} rounds × ${reps} repetitions, (min–max of the round medians)`,
      '',
      ...formatTable(rows),
      '',
      '"submit" and "launch call" are host time until the call(s) return; "until done" adds the wait for the stream (stream idle before each).',
    ].join('\n') + '\n',
  );
}
