/**
 * The I/O rows of `npm run bench:model`: saving and loading a graph as JSON, streamed
 * (`writeJSON`, `ComputeGraph.readJSON`) beside the in-memory path (`JSON.stringify(graph)` +
 * `writeFileSync`, `readFileSync` + `fromJSON`), in the binary form (`writeBinary`, `readBinary`), and its DOT (`writeDot` beside `toDot()` +
 * `writeFileSync`), at 1M nodes; with `--io-10m` also at 10M nodes (several minutes on 2 cores;
 * the in-memory path is not run there: its text is past V8's 512 MiB string limit from about
 * 3.5M nodes, and `JSON.stringify` throws RangeError).
 *
 * Each row runs in a fresh process (this file, run with `--io-row`), so one row's memory cannot
 * hide another's: the graph is built there (an 8-stream capture shaped like bench:model's), then
 * the peak resident memory is reset (Linux: /proc/self/clear_refs) and the step runs; the row
 * reports its time and how far the peak rose above the resident memory before the step.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaptureEvent, ComputeGraph, MemcpyDir, StreamCapture, StreamId } from '../src/index.js';
import { mulberry32 } from '../src/util/random.js';

/** An 8-stream capture of `n` ops: 80 % kernels, 10 % copies, 5 % fills, 5 % host callbacks, 5 % joins. */
function capture(n: number): ComputeGraph {
  const rand = mulberry32(2026);
  const cap = new StreamCapture();
  const streams = Array.from({ length: 8 }, (_, i) => StreamId(i));
  for (const s of streams) cap.beginCapture(s);
  const names = Array.from({ length: 64 }, (_, i) => `kernel_${i}`);
  for (let i = 0; i < n; i++) {
    const s = streams[Math.floor(rand() * 8)]!;
    if (rand() < 0.05) {
      const from = streams[Math.floor(rand() * 8)]!;
      if (from !== s) {
        const e = CaptureEvent(Math.floor(rand() * 1024));
        cap.recordEvent(from, e);
        cap.waitEvent(s, e);
      }
    }
    const r = rand();
    const name = names[Math.floor(rand() * names.length)]!;
    if (r < 0.8) cap.recordKernel(s, name, 128, 256, 0);
    else if (r < 0.9) cap.recordMemcpy(s, name, MemcpyDir.DeviceToDevice, 1 << 20);
    else if (r < 0.95) cap.recordMemset(s, name, 4096, 0);
    else cap.recordHostCallback(s, name);
  }
  return cap.endCapture(streams[0]!);
}

/** The resident memory now and its peak since the last reset, in bytes (Linux /proc; elsewhere the process's maxRSS). */
function rss(): { now: number; peak: number } {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
    return { now: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { now: process.memoryUsage().rss, peak: process.resourceUsage().maxRSS * 1024 };
  }
}

function resetPeak(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Not Linux: the peak then counts from the start of the process (the row says less than it could).
  }
}

/** The steps a row may run; each returns the number of nodes it handled. */
const STEPS: Record<string, (n: number, file: string) => Promise<number>> = {
  'save-stream': async (n, file) => {
    const g = capture(n);
    return measure(async () => void (await g.writeJSON(file)), g.nodeCount());
  },
  'save-memory': async (n, file) => {
    const g = capture(n);
    return measure(async () => writeFileSync(file, JSON.stringify(g)), g.nodeCount());
  },
  'save-binary': async (n, file) => {
    const g = capture(n);
    return measure(async () => void (await g.writeBinary(file)), g.nodeCount());
  },
  'load-binary': async (n, file) => measure(async () => void (await ComputeGraph.readBinary(file)), n),
  'load-stream': async (n, file) => measure(async () => void (await ComputeGraph.readJSON(file)), n),
  'load-memory': async (n, file) => measure(async () => void ComputeGraph.fromJSON(readFileSync(file, 'utf8')), n),
  'dot-stream': async (n, file) => {
    const g = capture(n);
    return measure(async () => void (await g.writeDot(file, { highlight: g.criticalPath().nodes })), g.nodeCount());
  },
  'dot-memory': async (n, file) => {
    const g = capture(n);
    return measure(async () => writeFileSync(file, g.toDot({ highlight: g.criticalPath().nodes })), g.nodeCount());
  },
};

/** Runs `step` after resetting the peak, and prints `{ ms, peakDelta, nodes }` for the parent. */
async function measure(step: () => Promise<void>, nodes: number): Promise<number> {
  resetPeak();
  const before = rss().now;
  const t0 = process.hrtime.bigint();
  let error: string | null = null;
  try {
    await step();
  } catch (e) {
    error = `${(e as Error).name}: ${(e as Error).message.slice(0, 80)}`;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stdout.write(JSON.stringify({ ms, peakDelta: rss().peak - before, nodes, error }) + '\n');
  return nodes;
}

interface RowResult {
  ms: number;
  peakDelta: number;
  nodes: number;
  error: string | null;
}

/** Runs one row in a fresh process. */
function row(step: string, n: number, file: string): RowResult {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, ['--max-old-space-size=16384', self, '--io-row', step, String(n), file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || !line.startsWith('{')) return { ms: NaN, peakDelta: NaN, nodes: n, error: `exit ${r.status}: ${r.stderr.trim().split('\n').at(-1) ?? ''}` };
  return JSON.parse(line) as RowResult;
}

/** The I/O table of bench:model (markdown), at 1M nodes and, with `big`, 10M. */
export function ioTable(big: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-bench-io-'));
  const lines = [
    '| figure | nodes | ms | nodes/s | peak RSS rise | file |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  const fmt = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 0 });
  const mib = (b: number): string => `${(Math.max(0, b) / 2 ** 20).toLocaleString('en-US', { maximumFractionDigits: 0 })} MiB`;
  try {
    for (const n of big ? [1_000_000, 10_000_000] : [1_000_000]) {
      const json = join(dir, `g${n}.json`);
      const dot = join(dir, `g${n}.dot`);
      const bin = join(dir, `g${n}.cgraph`);
      const plan: [string, string, string][] = [
        ['save JSON, streamed (writeJSON)', 'save-stream', json],
        ['save JSON, in memory (JSON.stringify + writeFileSync)', 'save-memory', json],
        ['load JSON, streamed (readJSON)', 'load-stream', json],
        ['load JSON, in memory (readFileSync + fromJSON)', 'load-memory', json],
        ['save binary, streamed (writeBinary)', 'save-binary', bin],
        ['load binary, streamed (readBinary)', 'load-binary', bin],
        ['DOT with the critical path, streamed (writeDot)', 'dot-stream', dot],
        ['DOT with the critical path, in memory (toDot + writeFileSync)', 'dot-memory', dot],
      ];
      for (const [figure, step, file] of plan) {
        // Past the string limit the in-memory path cannot run (see the file comment).
        if (n > 3_500_000 && step.endsWith('-memory')) {
          lines.push(`| ${figure} | ${fmt(n)} | | | | not run: past V8's string limit |`);
          continue;
        }
        // The in-memory save replaces the streamed one's file: both write the same text.
        const r = row(step, n, file);
        let size = '';
        try {
          size = mib(readFileSync(file).length);
        } catch {
          // No file (the step failed).
        }
        if (r.error !== null) lines.push(`| ${figure} | ${fmt(n)} | | | | failed: ${r.error} |`);
        else lines.push(`| ${figure} | ${fmt(n)} | ${fmt(r.ms)} | ${fmt((r.nodes / r.ms) * 1000)} | ${mib(r.peakDelta)} | ${size} |`);
      }
      rmSync(json, { force: true });
      rmSync(dot, { force: true });
      rmSync(bin, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return lines.join('\n');
}

/** Prints the I/O table under its heading (bench/model.ts calls this last). */
export function printIoRows(argv: readonly string[]): void {
  const big = argv.includes('--io-10m');
  console.log('');
  console.log(`saving and loading, each row in a fresh process${big ? '' : ' (--io-10m adds 10M-node rows: several minutes)'}`);
  console.log('');
  console.log(ioTable(big));
}

const at = process.argv.indexOf('--io-row');
if (at >= 0) {
  const [step, n, file] = process.argv.slice(at + 1);
  await STEPS[step!]!(Number(n), file!);
}
