/**
 * The CUDA C++ of the conjugate-gradient solver (`cudagraph demo solver`, `npm run bench:solver`):
 * 2-D Poisson, −Δu = b on an n×n grid with zero boundary values (the 5-point stencil, matrix-free),
 * in double precision. One CG iteration is four kernels; the last also decides whether another
 * iteration is needed and, in a WHILE node's body, sets the loop's condition on the GPU.
 *
 * The solver's scalars live in device memory (`double s[4]`): `RR` = r·r, `RR_NEW` = the next r·r
 * (accumulated), `PQ` = p·q (accumulated), `BB` = b·b. Dot products are reduced per block
 * (warp shuffles) and added with one `atomicAdd` per block.
 */
import { CONDITIONAL_DEVICE_API } from '../index.js';

/** Indices into the scalars array. */
export const SCALAR = { RR: 0, RR_NEW: 1, PQ: 2, BB: 3 } as const;

/** Threads per block of the vector kernels. */
export const BLOCK = 256;

export const SOLVER_SOURCE =
  CONDITIONAL_DEVICE_API +
  `
#define RR 0
#define RR_NEW 1
#define PQ 2
#define BB 3

// Every thread of the block calls it (the barrier at the start lets a kernel call it twice).
__device__ __forceinline__ void block_add(double v, double *target) {
  __shared__ double part[32];
  __syncthreads();
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? part[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) atomicAdd(target, v);
  }
}

// x = 0, r = p = b; s[RR] += b·b, s[BB] += b·b (s zeroed before).
extern "C" __global__ void cg_init(double *x, double *r, double *p, const double *b, double *s, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = 0.0;
  if (i < N) { double bi = b[i]; x[i] = 0.0; r[i] = bi; p[i] = bi; v = bi * bi; }
  block_add(v, &s[RR]);
  block_add(v, &s[BB]);
}

// q = A p (A: the 5-point Laplacian, zero boundary), s[PQ] += p·q.
extern "C" __global__ void cg_spmv_dot(const double *p, double *q, double *s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = 0.0;
  if (i < n * n) {
    int row = i / n, col = i - row * n;
    double c = p[i];
    double a = 4.0 * c;
    if (col > 0) a -= p[i - 1];
    if (col < n - 1) a -= p[i + 1];
    if (row > 0) a -= p[i - n];
    if (row < n - 1) a -= p[i + n];
    q[i] = a;
    v = c * a;
  }
  block_add(v, &s[PQ]);
}

// alpha = RR / PQ; x += alpha p; r -= alpha q; s[RR_NEW] += r·r.
extern "C" __global__ void cg_update_xr(double *x, double *r, const double *p, const double *q, double *s, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double alpha = s[RR] / s[PQ];
  double v = 0.0;
  if (i < N) {
    x[i] += alpha * p[i];
    double ri = r[i] - alpha * q[i];
    r[i] = ri;
    v = ri * ri;
  }
  block_add(v, &s[RR_NEW]);
}

// beta = RR_NEW / RR; p = r + beta p.
extern "C" __global__ void cg_update_p(double *p, const double *r, const double *s, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double beta = s[RR_NEW] / s[RR];
  if (i < N) p[i] = r[i] + beta * p[i];
}

// One thread: the iteration's bookkeeping. RR = RR_NEW; RR_NEW = PQ = 0; iterations + 1; goes on
// while RR > tol2 * BB and iterations < max_iter. In a WHILE body (h != 0) it sets the condition.
extern "C" __global__ void cg_step(double *s, unsigned int *state, unsigned int max_iter, double tol2, unsigned long long h) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double rr = s[RR_NEW];
  s[RR] = rr;
  s[RR_NEW] = 0.0;
  s[PQ] = 0.0;
  unsigned int it = ++state[0];
  unsigned int more = (rr > tol2 * s[BB] && it < max_iter) ? 1u : 0u;
  state[1] = more;
  if (h != 0ull) cudaGraphSetConditional(h, more);
}

// Before the loop: whether any iteration is needed at all (b = 0 needs none).
extern "C" __global__ void cg_first(const double *s, unsigned int *state, unsigned int max_iter, double tol2, unsigned long long h) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned int more = (s[RR] > tol2 * s[BB] && max_iter > 0) ? 1u : 0u;
  state[0] = 0;
  state[1] = more;
  if (h != 0ull) cudaGraphSetConditional(h, more);
}
`;
