/**
 * The float64 CPU reference of the solver: the same conjugate-gradient iteration, on the same
 * problem (solver-gpu.ts), with sequential sums. The GPU's dot products add in another order, so
 * its iteration count may differ by one at the stopping test, and its solution by rounding.
 */
import { rightHandSide, type SolveResult, type SolverProblem } from './solver-gpu.js';

/** q = A p for the 5-point Laplacian with zero boundary values. */
function applyLaplacian(n: number, p: Float64Array, q: Float64Array): void {
  for (let row = 0; row < n; row++) {
    const base = row * n;
    for (let col = 0; col < n; col++) {
      const i = base + col;
      let a = 4 * p[i]!;
      if (col > 0) a -= p[i - 1]!;
      if (col < n - 1) a -= p[i + 1]!;
      if (row > 0) a -= p[i - n]!;
      if (row < n - 1) a -= p[i + n]!;
      q[i] = a;
    }
  }
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Solves the problem on the CPU; returns the iterations, the residual and the solution. */
export function solveOnCpu(problem: SolverProblem): SolveResult & { readonly x: Float64Array } {
  const { n, tol, maxIterations } = problem;
  const b = rightHandSide(n);
  const N = n * n;
  const x = new Float64Array(N);
  const r = Float64Array.from(b);
  const p = Float64Array.from(b);
  const q = new Float64Array(N);
  const bb = dot(b, b);
  let rr = bb;
  const tol2 = tol * tol;
  let it = 0;
  while (rr > tol2 * bb && it < maxIterations) {
    applyLaplacian(n, p, q);
    const alpha = rr / dot(p, q);
    let rrNew = 0;
    for (let i = 0; i < N; i++) {
      x[i] = x[i]! + alpha * p[i]!;
      const ri = r[i]! - alpha * q[i]!;
      r[i] = ri;
      rrNew += ri * ri;
    }
    const beta = rrNew / rr;
    for (let i = 0; i < N; i++) p[i] = r[i]! + beta * p[i]!;
    rr = rrNew;
    it++;
  }
  return { iterations: it, relativeResidual: Math.sqrt(rr / bb), x };
}

/** The largest difference between `a` and `b`, relative to the largest magnitude of `b`. */
export function relativeDifference(a: Float64Array, b: Float64Array): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return scale === 0 ? diff : diff / scale;
}
