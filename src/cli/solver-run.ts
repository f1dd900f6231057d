/**
 * One problem solved every way on the GPU, as `demo solver` and `bench:solver` both run it: each
 * variant prepared (its graph captured) and solved once, checked against the float64 CPU solve;
 * then `rounds` rounds of one timed solve per variant, their order rotating from round to round.
 */
import { SOLVER_VARIANTS, type GpuSolver, type SolverVariant } from './solver-gpu.js';
import { relativeDifference } from './solver-reference.js';

/** A variant's first solve, against the CPU's. */
export interface VariantCheck {
  readonly iterations: number;
  readonly relativeResidual: number;
  /** The largest difference from the CPU's solution, relative to its largest magnitude. */
  readonly solutionVsCpu: number;
}

/** The checks and the timed samples (ms per solve, one per round) of every variant. */
export interface SolverRun {
  readonly checks: Readonly<Record<SolverVariant, VariantCheck>>;
  readonly samples: Readonly<Record<SolverVariant, number[]>>;
}

/** Checks every variant against the CPU solution `cpuX`, then times `rounds` rounds. */
export function runVariants(solver: GpuSolver, cpuX: Float64Array, rounds: number): SolverRun {
  const checks = {} as Record<SolverVariant, VariantCheck>;
  for (const v of SOLVER_VARIANTS) {
    solver.prepare(v);
    const r = solver.solve(v); // the warm-up, and the check
    checks[v] = { ...r, solutionVsCpu: relativeDifference(solver.solution(), cpuX) };
  }
  const samples: Record<SolverVariant, number[]> = { while: [], host: [], 'graph-per-iteration': [] };
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < SOLVER_VARIANTS.length; k++) {
      const v = SOLVER_VARIANTS[(round + k) % SOLVER_VARIANTS.length]!;
      const a = performance.now();
      solver.solve(v);
      samples[v].push(performance.now() - a);
    }
  }
  return { checks, samples };
}

/** The median of `xs` (non-empty). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
