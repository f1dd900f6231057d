/**
 * What programmatic dependent launch (PDL) saves on a chain of short dependent kernels, eager and
 * graphed, side by side with the same chain without it (`npm run bench:pdl` on a GPU machine).
 *
 * Each kernel waits for the one before (`griddepcontrol.wait`) before it touches memory, then lets
 * the next one start (`griddepcontrol.launch_dependents`); without PDL both instructions do
 * nothing. The four variants run interleaved in every round:
 *   - eager, plain: K `kernel.launch` calls with no attribute (`cuLaunchKernelEx`, no attributes);
 *   - eager, PDL: the same calls with `programmaticStreamSerialization`;
 *   - graphed, plain / PDL: the same K launches captured once (PDL: the capture records
 *     programmatic edges), replayed with one `exec.launch()`.
 * A sample is the span from the first call to the end of `stream.synchronize()`, per kernel. The
 * chain's result is checked against the host after every variant.
 *
 *   npm run bench:pdl -- [--chain 100] [--rounds 10] [--reps 20]   (writes $OUT/pdl-chain.json when OUT is set)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Device, DeviceBuffer, Module, StreamGraphCapture, arg } from '../src/index.js';
import type { GraphExec, LaunchConfig } from '../src/index.js';
import { intFlag } from './args.js';

const argv = process.argv.slice(2);
const num = (name: string, dflt: number): number => intFlag('bench:pdl', argv, name, dflt);
const K = num('--chain', 100);
const ROUNDS = num('--rounds', 10);
const REPS = num('--reps', 20);

const SOURCE = `
extern "C" __global__ void step(float *x, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
  asm volatile("griddepcontrol.launch_dependents;");
}
`;

const d = Device.get(0);
const s = d.createStream();
const m = Module.compile(d, SOURCE);
const step = m.function('step');
const BLOCKS = d.multiprocessorCount;
const N = BLOCKS * 256;
const x = DeviceBuffer.alloc(d, 4 * N);
const plain: LaunchConfig = { grid: BLOCKS, block: 256, args: [x, arg.i32(N)], attributes: {} };
const pdl: LaunchConfig = { ...plain, attributes: { programmaticStreamSerialization: true } };

/** x after K steps from 0: x ← x/2 + 1. */
const expected = (() => {
  let v = 0;
  for (let i = 0; i < K; i++) v = Math.fround(Math.fround(v * 0.5) + 1);
  return v;
})();

function check(label: string): void {
  const host = new Float32Array(N);
  x.copyToHost(host);
  if (!host.every((v) => v === expected)) throw new Error(`bench:pdl: ${label}: the chain computed ${host[0]}, expected ${expected}`);
}

function reset(): void {
  x.memsetAsync(s, 0, { elementSize: 4 });
  s.synchronize();
}

function capture(config: LaunchConfig): GraphExec {
  const cap = StreamGraphCapture.begin(s);
  try {
    for (let i = 0; i < K; i++) step.launch(s, config);
  } catch (e) {
    cap.dispose();
    throw e;
  }
  return cap.end();
}

const graphs = { plain: capture(plain), pdl: capture(pdl) };
const programmaticEdges = graphs.pdl.graph.edgeRefs().filter((e) => e.kind === 'programmatic').length;

const variants: Record<string, () => void> = {
  'eager, plain': () => {
    for (let i = 0; i < K; i++) step.launch(s, plain);
  },
  'eager, PDL': () => {
    for (let i = 0; i < K; i++) step.launch(s, pdl);
  },
  'graphed, plain': () => graphs.plain.launch(s),
  'graphed, PDL': () => graphs.pdl.launch(s),
};
const names = Object.keys(variants);
const perRound: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));

const median = (xs: readonly number[]): number => {
  const a = [...xs].sort((p, q) => p - q);
  const h = a.length >> 1;
  return a.length % 2 ? a[h]! : (a[h - 1]! + a[h]!) / 2;
};

for (let round = -1; round < ROUNDS; round++) {
  // The order rotates every round, so drift hits every variant alike; round -1 warms up.
  const order = names.map((_, i) => names[(i + Math.max(0, round)) % names.length]!);
  for (const name of order) {
    const samples: number[] = [];
    for (let r = 0; r < REPS; r++) {
      reset();
      const t0 = process.hrtime.bigint();
      variants[name]!();
      s.synchronize();
      samples.push(Number(process.hrtime.bigint() - t0) / 1e3 / K);
      check(name);
    }
    if (round >= 0) perRound[name]!.push(median(samples));
  }
}

const summary = names.map((name) => {
  const xs = perRound[name]!;
  return { variant: name, medianUsPerKernel: median(xs), lo: Math.min(...xs), hi: Math.max(...xs) };
});
const ratio = (a: string, b: string): { median: number; lo: number; hi: number } => {
  const rs = perRound[a]!.map((v, i) => v / perRound[b]![i]!);
  return { median: median(rs), lo: Math.min(...rs), hi: Math.max(...rs) };
};
const result = {
  date: new Date().toISOString(),
  gpu: d.name,
  driverVersion: Device.driverVersion(),
  chain: K,
  blocks: BLOCKS,
  rounds: ROUNDS,
  reps: REPS,
  programmaticEdges,
  variants: summary,
  pdlOverPlain: { eager: ratio('eager, PDL', 'eager, plain'), graphed: ratio('graphed, PDL', 'graphed, plain') },
};
const out = process.env['OUT'];
if (out !== undefined && out !== '') writeFileSync(join(out, 'pdl-chain.json'), JSON.stringify(result, null, 2) + '\n');
process.stdout.write(`bench:pdl: ${d.name}, chain of ${K} kernels of ${BLOCKS} blocks, ${ROUNDS} rounds × ${REPS} reps; the PDL graph has ${programmaticEdges} programmatic edges\n`);
for (const v of summary) process.stdout.write(`  ${v.variant.padEnd(16)} ${v.medianUsPerKernel.toFixed(2)} µs per kernel [${v.lo.toFixed(2)}–${v.hi.toFixed(2)}]\n`);
for (const [k, r] of Object.entries(result.pdlOverPlain)) {
  process.stdout.write(`  PDL / plain, ${k}: ${r.median.toFixed(3)}× [${r.lo.toFixed(3)}–${r.hi.toFixed(3)} per round]\n`);
}
graphs.plain.dispose();
graphs.pdl.dispose();
