/**
 * `cudagraph demo solver`: a conjugate-gradient solver that never leaves the GPU. 2-D Poisson on an
 * n×n grid (double precision, matrix-free 5-point stencil); the whole CG iteration inside one WHILE
 * node whose last kernel decides on the GPU whether to go on. With a GPU: solve it that way, and
 * with the same kernels driven from the host (a wait per iteration) and as a one-iteration graph
 * relaunched from the host; check each against a float64 CPU solve; time all three. Without one:
 * solve on the CPU and record the same program in the model (the loop a conditional node whose
 * body is the iteration). Either way, write the program's graph (solver.json, a graph file; solver.dot,
 * solver.svg); `--json` prints the report.
 */
import { resolve } from 'node:path';
import { MemcpyDir, StreamCapture, StreamId, type ComputeGraph } from '../index.js';
import { cudaVersionText, describeDevice, probeGpu } from './gpu-probe.js';
import type { Output } from './output.js';
import { GpuSolver, SOLVER_VARIANTS, SolverKernels, type SolverVariant } from './solver-gpu.js';
import { solveOnCpu } from './solver-reference.js';
import { median, runVariants } from './solver-run.js';
import { UsageError } from './usage-error.js';
import { terminalText } from './terminal-text.js';
import { writeGraphFiles, type DemoMode } from './demo.js';

/** Options of `cudagraph demo solver`. */
export interface SolverDemoOptions {
  readonly out: string;
  readonly json: boolean;
  readonly mode: DemoMode;
  /** Grid side: n×n unknowns. */
  readonly n: number;
  /** Stop when ‖r‖/‖b‖ < tol. */
  readonly tol: number;
  /** GPU: timing rounds (the three variants alternate). */
  readonly rounds: number;
}

/** The problem's iteration cap: CG on this problem needs about 2n iterations at tol 1e-8. */
export const maxIterationsFor = (n: number): number => 20 * n;

/** The solver's program in the CPU model: set-up, then a WHILE node around one iteration (`estimate`: its trips). */
export function solverModel(n: number, estimate: number): ComputeGraph {
  const cap = new StreamCapture();
  const s = StreamId(0);
  cap.beginCapture(s);
  const N = n * n;
  const blocks = Math.ceil(N / 256);
  cap.recordMemcpy(s, 'upload b', MemcpyDir.HostToDevice, 8 * N);
  cap.recordMemset(s, 'zero scalars', 32, 0);
  cap.recordKernel(s, 'cg_init', blocks, 256, 0);
  cap.recordKernel(s, 'cg_first', 1, 32, 0);
  const h = cap.conditionalHandle({ assignDefault: false });
  cap.recordWhile(
    s,
    h,
    (body, bs) => {
      body.recordKernel(bs, 'cg_spmv_dot', blocks, 256, 0);
      body.recordKernel(bs, 'cg_update_xr', blocks, 256, 0);
      body.recordKernel(bs, 'cg_update_p', blocks, 256, 0);
      body.recordKernel(bs, 'cg_step', 1, 32, 0);
    },
    { name: 'CG iteration (while not converged)', estimate },
  );
  cap.recordMemcpy(s, 'download x', MemcpyDir.DeviceToHost, 8 * N);
  return cap.endCapture(s);
}

/**
 * Runs `cudagraph demo solver` and returns the exit status: 1 when a GPU solve disagrees with the
 * CPU (iterations beyond ±1, or the solution beyond max(1e-9, 100 tol) relative), else 0.
 * @throws UsageError when `--mode gpu` is asked for and no GPU is usable, or the files cannot be written.
 */
export async function demoSolver(options: SolverDemoOptions, io: Output): Promise<number> {
  const dir = resolve(options.out);
  const { n, tol, rounds } = options;
  const problem = { n, tol, maxIterations: maxIterationsFor(n) };
  const probe = options.mode === 'cpu' ? null : probeGpu(true);
  if (probe !== null && !probe.ok && options.mode === 'gpu') throw new UsageError(`demo solver --mode gpu: ${probe.reason} (\`cudagraph doctor\` says what to check)`);
  const t0 = performance.now();
  const cpu = solveOnCpu(problem);
  const cpuMs = performance.now() - t0;
  const what = `CG on 2-D Poisson, ${n}×${n} grid (${n * n} unknowns, double), until ‖r‖/‖b‖ < ${tol} (at most ${problem.maxIterations} iterations)`;

  if (probe === null || !probe.ok) {
    const reason = probe === null ? '--mode cpu was given' : probe.reason;
    const graph = solverModel(n, cpu.iterations);
    const report = { mode: 'cpu-model', reason, problem, cpu: { iterations: cpu.iterations, relativeResidual: cpu.relativeResidual, ms: cpuMs } };
    const files = await writeGraphFiles(graph, dir, 'solver', `CG solver recorded in the CPU model: the iteration is the body of one WHILE node (${cpu.iterations} trips estimated)`);
    if (options.json) io.out(JSON.stringify({ ...report, nodes: graph.nodeCount(), files }, null, 2) + '\n');
    else {
      const loop = graph.nodes().find((x) => x.kind === 'conditional');
      io.out(
        [
          `cudagraph demo solver: CPU model mode: ${terminalText(reason)}; the solver was run on the CPU and its GPU program recorded with StreamCapture.`,
          `problem:   ${what}`,
          `CPU solve: ${cpu.iterations} iterations, ‖r‖/‖b‖ = ${cpu.relativeResidual.toExponential(2)}, ${cpuMs.toFixed(0)} ms (float64)`,
          `program:   ${graph.nodeCount()} nodes: ${graph.nodes().map((x) => x.name).join(' → ')}`,
          loop !== undefined && loop.kind === 'conditional'
            ? `loop body: ${loop.bodies[0]!.nodes().map((x) => x.name).join(' → ')} (a WHILE node: the GPU runs it until cg_step clears the condition)`
            : 'loop body: (not found)',
          `picture:   ${terminalText(files.svg)}  (also ${terminalText(files.dot)} and ${terminalText(files.json)})`,
        ].join('\n') + '\n',
      );
    }
    return 0;
  }

  const device = probe.device;
  const gpu = `${describeDevice(device)}, driver for CUDA ${cudaVersionText(probe.driverVersion)}`;
  const stream = device.createStream({ nonBlocking: true });
  const kernels = new SolverKernels(device);
  const solver = new GpuSolver(device, kernels, stream, problem);
  try {
    const { checks, samples } = runVariants(solver, cpu.x, rounds);
    const ms = Object.fromEntries(SOLVER_VARIANTS.map((v) => [v, median(samples[v])])) as Record<SolverVariant, number>;
    // An iteration more or less moves the solution by about tol: the check allows that, not a wrong result.
    const bound = Math.max(1e-9, 100 * tol);
    const ok = SOLVER_VARIANTS.every((v) => Math.abs(checks[v]!.iterations - cpu.iterations) <= 1 && checks[v]!.solutionVsCpu < bound);
    const iterations = checks['while']!.iterations;
    const graph = solverModel(n, iterations);
    const report = {
      mode: 'gpu', device: device.name, problem,
      cpu: { iterations: cpu.iterations, relativeResidual: cpu.relativeResidual, ms: cpuMs },
      gpu: Object.fromEntries(SOLVER_VARIANTS.map((v) => [v, { ...checks[v], msPerSolve: ms[v], samples: samples[v] }])),
      speedup: { host: ms.host / ms.while, 'graph-per-iteration': ms['graph-per-iteration'] / ms.while },
      ok,
    };
    const files = await writeGraphFiles(graph, dir, 'solver', `CG solver on ${device.name}: the iteration is the body of one WHILE node (${iterations} trips)`);
    if (options.json) io.out(JSON.stringify({ ...report, files }, null, 2) + '\n');
    else {
      const line = (v: SolverVariant, label: string): string =>
        `${label}${ms[v].toFixed(2)} ms per solve (${((ms[v] * 1000) / Math.max(1, checks[v]!.iterations)).toFixed(1)} µs per iteration; ${checks[v]!.iterations} iterations; solution vs CPU ${checks[v]!.solutionVsCpu.toExponential(1)})`;
      io.out(
        [
          `cudagraph demo solver: GPU mode: found ${gpu}.`,
          `problem:   ${what}`,
          `CPU solve: ${cpu.iterations} iterations, ‖r‖/‖b‖ = ${cpu.relativeResidual.toExponential(2)}, ${cpuMs.toFixed(0)} ms (float64, the reference)`,
          line('while', 'while node: '),
          line('graph-per-iteration', 'graph/iter: '),
          line('host', 'host loop:  '),
          `speedup:   ${report.speedup.host.toFixed(2)}× over the host-driven loop, ${report.speedup['graph-per-iteration'].toFixed(2)}× over a graph per iteration (medians of ${rounds} rounds, the three alternating)`,
          `results:   ${ok ? 'every GPU solve agrees with the CPU' : 'a GPU solve DISAGREES with the CPU'} (iterations ±1, solution within ${bound.toExponential(0)} relative)`,
          `picture:   ${terminalText(files.svg)}  (also ${terminalText(files.dot)} and ${terminalText(files.json)})`,
        ].join('\n') + '\n',
      );
    }
    if (!ok) io.err('cudagraph: demo solver: a GPU solve failed its check against the CPU (see "results" above)\n');
    return ok ? 0 : 1;
  } finally {
    solver.dispose();
    kernels.dispose();
    stream.dispose();
  }
}
