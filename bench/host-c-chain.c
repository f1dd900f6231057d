/*
 * bench:host's C column for explicit construction: the GPU bench's C worker loop (bench/gpu/c/worker.c,
 * rep_build) against the stand-in driver it is linked with: a chain of n kernel nodes, each
 * cuGraphAddKernelNode_v2 after the one before, with one parameter struct filled before the loop.
 * Returns ns per node of the n - 1 calls after the first (the span bench:host times for cudagraph).
 */
#include <stddef.h>
#include <string.h>
#include <time.h>

typedef unsigned long long u64;
int cuGraphCreate(u64 *g, unsigned flags);
int cuGraphDestroy(u64 g);
int cuGraphAddKernelNode_v2(u64 *node, u64 g, const u64 *deps, size_t n, const void *params);

/* CUDA_KERNEL_NODE_PARAMS_v2 (72 bytes; the layout test/driver/header.test.ts checks against cuda.h). */
typedef struct {
  u64 func;
  unsigned grid[3], block[3], shared_mem, pad;
  void **kernel_params, **extra;
  u64 kern, ctx;
} kernel_node_params;
_Static_assert(sizeof(kernel_node_params) == 72, "CUDA_KERNEL_NODE_PARAMS_v2");

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

double bench_c_chain(int n, u64 func, u64 buffer) {
  int count = 256;
  void *args[2] = {&buffer, &count};
  kernel_node_params p;
  memset(&p, 0, sizeof p);
  p.func = func;
  p.grid[0] = p.grid[1] = p.grid[2] = 1;
  p.block[0] = 256;
  p.block[1] = p.block[2] = 1;
  p.kernel_params = args;
  u64 g, prev, node;
  if (cuGraphCreate(&g, 0) != 0 || cuGraphAddKernelNode_v2(&prev, g, NULL, 0, &p) != 0) return -1;
  double t0 = now_ns();
  for (int i = 1; i < n; i++) {
    if (cuGraphAddKernelNode_v2(&node, g, &prev, 1, &p) != 0) return -1;
    prev = node;
  }
  double t1 = now_ns();
  cuGraphDestroy(g);
  return (t1 - t0) / (n - 1);
}
