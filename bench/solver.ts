/**
 * `npm run bench:solver`: the conjugate-gradient solver (2-D Poisson, double precision) solved
 * whole on the GPU in one WHILE node, side by side in one run with the same kernels driven from
 * the host (a copy and wait of the go-on flag every iteration), a graph of one iteration relaunched
 * from the host, and CuPy's `cupyx.scipy.sparse.linalg.cg` where CuPy is importable. The GPU
 * variants run interleaved in every round (their order rotating); a sample is one whole solve,
 * set-up included, to its result on the host. Each size is checked against a float64 CPU solve:
 * the same iteration count ±1, and the solution's relative difference.
 *
 *   npm run bench:solver -- [--sizes 128,256,512,1024] [--rounds 10] [--tol 1e-8]
 *   (writes $OUT/solver.json when OUT is set, else bench/results/<date>-<gpu>-solver.json)
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Device } from '../src/index.js';
import { GpuSolver, SOLVER_VARIANTS, SolverKernels, type SolverVariant } from '../src/cli/solver-gpu.js';
import { solveOnCpu } from '../src/cli/solver-reference.js';
import { median, runVariants } from '../src/cli/solver-run.js';

const argv = process.argv.slice(2);
function option(flag: string, dflt: string): string {
  const i = argv.indexOf(flag);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : dflt;
}
const SIZES = option('--sizes', '128,256,512,1024').split(',').map(Number);
const ROUNDS = Number(option('--rounds', '10'));
const TOL = Number(option('--tol', '1e-8'));
if (SIZES.some((n) => !Number.isInteger(n) || n < 2 || n > 4096) || !Number.isInteger(ROUNDS) || ROUNDS < 1 || !(TOL > 0 && TOL < 1)) {
  process.stderr.write('bench:solver: --sizes are integers in 2..4096, --rounds an integer ≥ 1, --tol in (0, 1)\n');
  process.exit(2);
}
/** The target speedup of the WHILE solve over the host-driven loop, by size (the others: none). */
const TARGETS: Record<number, number> = { 128: 2.5, 256: 2, 1024: 1 };


const d = Device.get(0);
const stream = d.createStream({ nonBlocking: true });
const kernels = new SolverKernels(d);
const here = fileURLToPath(new URL('.', import.meta.url));
const cupyScript = join(here, '..', '..', 'bench', 'solver', 'cupy_cg.py');

interface SizeResult {
  n: number;
  unknowns: number;
  maxIterations: number;
  cpu: { iterations: number; relativeResidual: number; ms: number };
  variants: Record<string, { ms: number[]; median: number; iterations: number; relativeResidual: number; perIterationUs: number; solutionVsCpu: number }>;
  cupy: { ms: number[]; median: number; iterations: number; relativeResidual: number; version: string } | { skipped: string };
  /** host / while and the others, per round (the same round's samples), median and range. */
  speedups: Record<string, { median: number; lo: number; hi: number }>;
  target: number | null;
  iterationsMatch: boolean;
}

const results: SizeResult[] = [];
for (const n of SIZES) {
  const problem = { n, tol: TOL, maxIterations: 20 * n };
  const t0 = performance.now();
  const cpu = solveOnCpu(problem);
  const cpuMs = performance.now() - t0;
  const solver = new GpuSolver(d, kernels, stream, problem);
  const { checks: last, samples } = runVariants(solver, cpu.x, ROUNDS);
  solver.dispose();
  const py = spawnSync('python3', [cupyScript, String(n), String(TOL), String(problem.maxIterations), String(ROUNDS)], { encoding: 'utf8', timeout: 300_000 });
  let cupy: SizeResult['cupy'];
  try {
    const line = JSON.parse(py.stdout.trim().split('\n').pop() ?? '{}') as { ms?: number[]; iterations?: number; relativeResidual?: number; version?: string; skipped?: string };
    cupy = line.ms !== undefined ? { ms: line.ms, median: median(line.ms), iterations: line.iterations!, relativeResidual: line.relativeResidual!, version: line.version! } : { skipped: line.skipped ?? `no result (${py.stderr.trim().split('\n').pop() ?? 'no output'})` };
  } catch {
    cupy = { skipped: `CuPy run failed: ${(py.stderr || py.error?.message || 'no output').trim().split('\n').pop()}` };
  }
  const variants: SizeResult['variants'] = {};
  for (const v of SOLVER_VARIANTS) {
    const r = last[v]!;
    const m = median(samples[v]);
    variants[v] = { ms: samples[v], median: m, iterations: r.iterations, relativeResidual: r.relativeResidual, perIterationUs: (m * 1000) / Math.max(1, r.iterations), solutionVsCpu: r.solutionVsCpu };
  }
  const ratio = (other: readonly number[]): { median: number; lo: number; hi: number } => {
    const rs = other.map((x, i) => x / samples.while[i]!);
    return { median: median(rs), lo: Math.min(...rs), hi: Math.max(...rs) };
  };
  const speedups: SizeResult['speedups'] = { host: ratio(samples.host), 'graph-per-iteration': ratio(samples['graph-per-iteration']) };
  if ('ms' in cupy) {
    const w = median(samples.while);
    speedups['cupy'] = { median: cupy.median / w, lo: Math.min(...cupy.ms) / w, hi: Math.max(...cupy.ms) / w };
  }
  const iterationsMatch = SOLVER_VARIANTS.every((v) => Math.abs(last[v]!.iterations - cpu.iterations) <= 1);
  results.push({
    n, unknowns: n * n, maxIterations: problem.maxIterations,
    cpu: { iterations: cpu.iterations, relativeResidual: cpu.relativeResidual, ms: cpuMs },
    variants, cupy, speedups, target: TARGETS[n] ?? null, iterationsMatch,
  });
  process.stderr.write(`bench:solver: n=${n} done (${cpu.iterations} iterations on the CPU)\n`);
}
kernels.dispose();

const date = new Date().toISOString().slice(0, 10);
const out = { schema: 1, date, gpu: d.name, driverVersion: Device.driverVersion(), tol: TOL, rounds: ROUNDS, sizes: results };
const file = process.env['OUT'] ? join(process.env['OUT'], 'solver.json') : join(here, '..', '..', 'bench', 'results', `${date}-${d.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-solver.json`);
writeFileSync(file, JSON.stringify(out, null, 2) + '\n');

const f = (x: number, digits = 2): string => x.toFixed(digits);
console.log(`bench:solver: ${d.name}, driver ${Device.driverVersion()}, ${date}; CG on 2-D Poisson (double), tol ${TOL}, ${ROUNDS} rounds; ms per solve, median [min–max]`);
console.log('| n | iterations (CPU / GPU) | while | graph per iteration | host loop | CuPy | host / while | graph-per-it / while | CuPy / while | target | met |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  const cell = (v: SolverVariant): string => `${f(r.variants[v]!.median)} [${f(Math.min(...r.variants[v]!.ms))}–${f(Math.max(...r.variants[v]!.ms))}]`;
  const sp = (k: string): string => (r.speedups[k] ? `${f(r.speedups[k]!.median)}× [${f(r.speedups[k]!.lo)}–${f(r.speedups[k]!.hi)}]` : '—');
  const cupy = 'ms' in r.cupy ? `${f(r.cupy.median)} (${r.cupy.iterations} it)` : '—';
  const met = r.target === null ? '—' : r.speedups['host']!.median >= r.target ? 'yes' : '**no**';
  console.log(`| ${r.n} | ${r.cpu.iterations} / ${r.variants['while']!.iterations}${r.iterationsMatch ? '' : ' (differ)'} | ${cell('while')} | ${cell('graph-per-iteration')} | ${cell('host')} | ${cupy} | ${sp('host')} | ${sp('graph-per-iteration')} | ${sp('cupy')} | ${r.target === null ? '—' : `≥ ${r.target}×`} | ${met} |`);
}
for (const r of results) {
  const w = r.variants['while']!;
  console.log(`n=${r.n}: while ${f(w.perIterationUs)} µs/iteration, host ${f(r.variants['host']!.perIterationUs)}; solution vs CPU ${w.solutionVsCpu.toExponential(2)}; residual ${w.relativeResidual.toExponential(2)}${'skipped' in r.cupy ? `; CuPy: ${r.cupy.skipped}` : ''}`);
}
console.log(`bench:solver: wrote ${file}`);
