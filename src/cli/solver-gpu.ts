/**
 * The conjugate-gradient solver on the GPU, three ways, on the same kernels (solver-kernels.ts):
 *
 *   - `while`: the whole solve is one graph: set-up kernels, then a WHILE node whose body is one
 *     CG iteration; the iteration's last kernel decides on the GPU whether to go on. One launch,
 *     one wait.
 *   - `host`: what a framework without conditional nodes does: the iteration's four kernels launched
 *     from the host, then the go-on flag copied back and waited for, every iteration.
 *   - `graph-per-iteration`: one iteration captured as a graph, relaunched from the host, with the
 *     same copy and wait per iteration.
 *
 * Each returns the iteration count, the final relative residual ‖r‖/‖b‖ and the solution.
 */
import {
  DeviceBuffer,
  Module,
  PinnedHostBuffer,
  StreamGraphCapture,
  arg,
  captureGraph,
  type CapturedGraph,
  type Device,
  type GraphExec,
  type Kernel,
  type KernelArg,
  type LaunchConfig,
  type PreparedLaunch,
  type Stream,
} from '../index.js';
import { BLOCK, SCALAR, SOLVER_SOURCE } from './solver-kernels.js';

/** How a solve is driven. */
export type SolverVariant = 'while' | 'host' | 'graph-per-iteration';

/** The variants, in the order the tables show them. */
export const SOLVER_VARIANTS: readonly SolverVariant[] = ['while', 'graph-per-iteration', 'host'];

/** What one solve gave. */
export interface SolveResult {
  readonly iterations: number;
  /** ‖r‖ / ‖b‖ at the end (from the solver's own r·r). */
  readonly relativeResidual: number;
}

/** The problem: an n×n grid, stop when ‖r‖/‖b‖ < tol or after maxIterations. */
export interface SolverProblem {
  readonly n: number;
  readonly tol: number;
  readonly maxIterations: number;
}

/** The right-hand side of the demo problem: a smooth source, b(i, j) = sin(π(i+1)/(n+1)) · sin(2π(j+1)/(n+1)) + 1/2. */
export function rightHandSide(n: number): Float64Array {
  const b = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) b[i * n + j] = Math.sin((Math.PI * (i + 1)) / (n + 1)) * Math.sin((2 * Math.PI * (j + 1)) / (n + 1)) + 0.5;
  }
  return b;
}

/** The solver's kernels on one device (compiled once with NVRTC). */
export class SolverKernels {
  readonly init: Kernel;
  readonly first: Kernel;
  readonly spmvDot: Kernel;
  readonly updateXr: Kernel;
  readonly updateP: Kernel;
  readonly step: Kernel;
  readonly module: Module;

  constructor(device: Device) {
    this.module = Module.compile(device, SOLVER_SOURCE);
    this.init = this.module.function('cg_init');
    this.first = this.module.function('cg_first');
    this.spmvDot = this.module.function('cg_spmv_dot');
    this.updateXr = this.module.function('cg_update_xr');
    this.updateP = this.module.function('cg_update_p');
    this.step = this.module.function('cg_step');
  }

  dispose(): void {
    this.module.dispose();
  }
}

/** One problem's buffers on the device, and the three ways of solving it. */
export class GpuSolver {
  readonly problem: SolverProblem;
  readonly #k: SolverKernels;
  readonly #s: Stream;
  readonly #x: DeviceBuffer;
  readonly #r: DeviceBuffer;
  readonly #p: DeviceBuffer;
  readonly #q: DeviceBuffer;
  readonly #b: DeviceBuffer;
  readonly #scalars: DeviceBuffer;
  readonly #state: DeviceBuffer;
  readonly #host: PinnedHostBuffer;
  readonly #iteration: PreparedLaunch[];
  readonly #setUp: PreparedLaunch[];
  #whileGraph: CapturedGraph | null = null;
  #iterationGraph: GraphExec | null = null;

  constructor(device: Device, kernels: SolverKernels, stream: Stream, problem: SolverProblem) {
    this.problem = problem;
    this.#k = kernels;
    this.#s = stream;
    const N = problem.n * problem.n;
    const bytes = 8 * N;
    this.#x = DeviceBuffer.alloc(device, bytes);
    this.#r = DeviceBuffer.alloc(device, bytes);
    this.#p = DeviceBuffer.alloc(device, bytes);
    this.#q = DeviceBuffer.alloc(device, bytes);
    this.#b = DeviceBuffer.alloc(device, bytes);
    this.#scalars = DeviceBuffer.alloc(device, 32);
    this.#state = DeviceBuffer.alloc(device, 8);
    this.#host = PinnedHostBuffer.alloc(device, 32);
    this.#b.copyFromHost(rightHandSide(problem.n));
    this.#setUp = [kernels.init.prepare(this.#vector([this.#x, this.#r, this.#p, this.#b, this.#scalars, arg.i32(N)])), kernels.first.prepare(this.#one(0n))];
    this.#iteration = this.#iterationLaunches(0n).map((l) => l.kernel.prepare(l.config));
  }

  /** A launch over the grid's N points. */
  #vector(args: readonly KernelArg[]): LaunchConfig {
    const N = this.problem.n * this.problem.n;
    return { grid: Math.ceil(N / BLOCK), block: BLOCK, args };
  }

  /** A one-thread bookkeeping launch (`cg_first`, `cg_step`) with the condition `handle` (0n: none). */
  #one(handle: bigint): LaunchConfig {
    const tol2 = this.problem.tol * this.problem.tol;
    return { grid: 1, block: 32, args: [this.#scalars, this.#state, arg.u32(this.problem.maxIterations), arg.f64(tol2), arg.u64(handle)] };
  }

  /** One CG iteration's four launches; `handle` (0n: none) is the WHILE node's condition. */
  #iterationLaunches(handle: bigint): Array<{ kernel: Kernel; config: LaunchConfig }> {
    const k = this.#k;
    const N = this.problem.n * this.problem.n;
    return [
      { kernel: k.spmvDot, config: this.#vector([this.#p, this.#q, this.#scalars, arg.i32(this.problem.n)]) },
      { kernel: k.updateXr, config: this.#vector([this.#x, this.#r, this.#p, this.#q, this.#scalars, arg.i32(N)]) },
      { kernel: k.updateP, config: this.#vector([this.#p, this.#r, this.#scalars, arg.i32(N)]) },
      { kernel: k.step, config: this.#one(handle) },
    ];
  }

  /** Records the set-up on `s`: scalars zeroed, r = p = b, x = 0, the first go-on test. */
  #recordSetUp(s: Stream, handle: bigint): void {
    this.#scalars.memsetAsync(s, 0);
    this.#k.init.launch(s, this.#vector([this.#x, this.#r, this.#p, this.#b, this.#scalars, arg.i32(this.problem.n * this.problem.n)]));
    this.#k.first.launch(s, this.#one(handle));
  }

  /** The whole solve as one graph: set-up, then a WHILE node around one iteration. Built on first use. */
  #whileExec(): CapturedGraph {
    if (this.#whileGraph === null) {
      this.#whileGraph = captureGraph(this.#s, (s) => {
        const h = s.conditionalHandle({ assignDefault: false });
        this.#recordSetUp(s, h.value);
        s.captureWhile(h, (body) => {
          for (const l of this.#iterationLaunches(h.value)) l.kernel.launch(body, l.config);
        });
      });
    }
    return this.#whileGraph;
  }

  /** One iteration as a graph (no condition), built on first use. */
  #iterationExec(): GraphExec {
    if (this.#iterationGraph === null) {
      const cap = StreamGraphCapture.begin(this.#s);
      try {
        for (const l of this.#iteration) l.launch(this.#s);
      } catch (e) {
        cap.dispose();
        throw e;
      }
      this.#iterationGraph = cap.end();
    }
    return this.#iterationGraph;
  }

  /** Builds what `variant` replays (graphs are captured once, outside any timing). */
  prepare(variant: SolverVariant): void {
    if (variant === 'while') this.#whileExec();
    else if (variant === 'graph-per-iteration') this.#iterationExec();
  }

  /** Solves once with `variant` and waits for the result. */
  solve(variant: SolverVariant): SolveResult {
    const s = this.#s;
    if (variant === 'while') {
      this.#whileExec().launch(s);
    } else {
      this.#scalars.memsetAsync(s, 0);
      for (const l of this.#setUp) l.launch(s);
      const flags = this.#host.asUint32();
      this.#state.copyToHostAsync(s, flags.subarray(0, 2));
      s.synchronize();
      const exec = variant === 'graph-per-iteration' ? this.#iterationExec() : null;
      while (flags[1] !== 0) {
        if (exec !== null) exec.launch(s);
        else for (const l of this.#iteration) l.launch(s);
        this.#state.copyToHostAsync(s, flags.subarray(0, 2));
        s.synchronize();
      }
    }
    return this.#result();
  }

  #result(): SolveResult {
    const s = this.#s;
    const host = this.#host;
    this.#state.copyToHostAsync(s, host.asUint32().subarray(0, 2));
    s.synchronize();
    const iterations = host.asUint32()[0]!;
    this.#scalars.copyToHostAsync(s, host.asFloat64());
    s.synchronize();
    const v = host.asFloat64();
    return { iterations, relativeResidual: Math.sqrt(v[SCALAR.RR]! / v[SCALAR.BB]!) };
  }

  /** The solution of the last solve. */
  solution(): Float64Array {
    const out = new Float64Array(this.problem.n * this.problem.n);
    this.#x.copyToHost(out);
    return out;
  }

  dispose(): void {
    this.#whileGraph?.dispose();
    this.#iterationGraph?.dispose();
    for (const l of [...this.#setUp, ...this.#iteration]) l.dispose();
    for (const b of [this.#x, this.#r, this.#p, this.#q, this.#b, this.#scalars, this.#state]) b.dispose();
    this.#host.dispose();
  }
}
