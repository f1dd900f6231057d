"""CuPy's conjugate gradient on the same problem as cudagraph's solver bench (bench/solver.ts).

    python3 bench/solver/cupy_cg.py <n> <tol> <max_iter> <rounds>

Builds the 5-point Laplacian of an n x n grid (zero boundary) as a CSR matrix and the same
right-hand side, then times cupyx.scipy.sparse.linalg.cg (which tests the residual on the host
every iteration) over <rounds> solves after one warm-up. Prints one JSON line: the per-solve
times in ms, the iteration count and the relative residual; or {"skipped": reason}.
"""
import json
import math
import sys
import time

try:
    import cupy as cp
    import cupyx.scipy.sparse as sp
    import cupyx.scipy.sparse.linalg as spl
except Exception as e:  # noqa: BLE001 - any import failure means: skip CuPy
    print(json.dumps({"skipped": f"CuPy is not importable: {e}"}))
    sys.exit(0)

n, tol, max_iter, rounds = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
N = n * n
one_d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr", dtype=cp.float64)
eye = sp.identity(n, format="csr", dtype=cp.float64)
A = (sp.kron(eye, one_d) + sp.kron(one_d, eye)).tocsr()
i = cp.arange(n, dtype=cp.float64)
b = (cp.sin(math.pi * (i[:, None] + 1) / (n + 1)) * cp.sin(2 * math.pi * (i[None, :] + 1) / (n + 1)) + 0.5).ravel()

iterations = 0


def count(_x):
    global iterations
    iterations += 1


def solve():
    global iterations
    iterations = 0
    try:
        x, info = spl.cg(A, b, rtol=tol, atol=0.0, maxiter=max_iter, callback=count)
    except TypeError:  # older CuPy names it tol
        x, info = spl.cg(A, b, tol=tol, atol=0.0, maxiter=max_iter, callback=count)
    cp.cuda.get_current_stream().synchronize()
    return x


solve()
times = []
for _ in range(rounds):
    t0 = time.perf_counter()
    x = solve()
    times.append((time.perf_counter() - t0) * 1e3)
r = b - A @ x
print(json.dumps({
    "ms": times,
    "iterations": iterations,
    "relativeResidual": float(cp.linalg.norm(r) / cp.linalg.norm(b)),
    "version": cp.__version__,
}))
