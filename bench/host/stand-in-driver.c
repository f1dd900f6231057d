/*
 * A no-op stand-in for libcuda, for `npm run bench:host`: it answers the calls that create a
 * device, a stream, a module, a kernel, a buffer and a captured graph with made-up handles, and
 * every cuLaunchKernel / cuGraphLaunch with success at once. Timing cudagraph's hot calls against
 * it measures what cudagraph and its binding add on top of the driver, on a machine without a GPU.
 *
 * Tests build it too (test/driver/hot-path-checks.test.ts as it is; test/driver/launch-sequence.test.ts
 * with -DSTAND_IN_DEVICES=2 -DSTAND_IN_OWN_LAUNCH and a cuLaunchKernel of its own that writes down
 * each launch, using `launches` and `current_ctx` from here).
 */
#ifndef STAND_IN_DEVICES
#define STAND_IN_DEVICES 1
#endif
#include <stddef.h>
#include <string.h>
typedef unsigned long long u64;
u64 current_ctx;
static u64 next_stream = 0x5000, next_module = 0x7000, next_fn = 0xf000, next_mem = 0xd0000000ull;
static int capturing;
u64 launches, graph_launches;
/* The order of destroys (for tests): 1 = cuGraphDestroy, 2 = cuGraphExecDestroy; the first 64. */
u64 destroy_log[64], destroys;
static void log_destroy(u64 kind) {
  if (destroys < 64) destroy_log[destroys] = kind;
  destroys++;
}
int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuGetErrorString(int e, const char **s) { (void)e; (void)s; return 1; }
int cuGetErrorName(int e, const char **s) { (void)e; (void)s; return 1; }
int cuDeviceGetCount(int *n) { *n = STAND_IN_DEVICES; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "stand-in", len); return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) { (void)dev; *v = attr == 75 ? 9 : attr == 76 ? 0 : 128; return 0; }
int cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = 1u << 30; return 0; }
int cuDevicePrimaryCtxRetain(u64 *ctx, int dev) { *ctx = 0xc0 + dev; return 0; }
int cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
int cuCtxSetCurrent(u64 ctx) { current_ctx = ctx; return 0; }
int cuCtxGetCurrent(u64 *ctx) { *ctx = current_ctx; return 0; }
int cuCtxGetStreamPriorityRange(int *lo, int *hi) { *lo = 0; *hi = -5; return 0; }
int cuStreamCreateWithPriority(u64 *s, unsigned flags, int prio) { (void)flags; (void)prio; *s = next_stream += 0x10; return 0; }
int cuStreamDestroy_v2(u64 s) { (void)s; return 0; }
int cuStreamSynchronize(u64 s) { (void)s; return 0; }
int cuStreamQuery(u64 s) { (void)s; return 0; }
int cuMemAlloc_v2(u64 *p, size_t n) { *p = next_mem; next_mem += (n + 255) & ~(size_t)255; return 0; }
int cuMemFree_v2(u64 p) { (void)p; return 0; }
int cuModuleLoadDataEx(u64 *m, const void *img, unsigned n, void *o, void *v) { (void)img; (void)n; (void)o; (void)v; *m = next_module += 0x10; return 0; }
int cuModuleUnload(u64 m) { (void)m; return 0; }
int cuModuleGetFunction(u64 *f, u64 m, const char *name) { (void)m; (void)name; *f = next_fn += 0x10; return 0; }
#ifndef STAND_IN_OWN_LAUNCH
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shm, void *stream, void **params, void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)stream; (void)params; (void)extra;
  launches++;
  return 0;
}
#endif
int cuStreamBeginCapture_v2(u64 s, int mode) { (void)s; (void)mode; capturing = 1; return 0; }
int cuStreamEndCapture(u64 s, u64 *g) { (void)s; capturing = 0; *g = 0x9000; return 0; }
int cuStreamIsCapturing(u64 s, int *status) { (void)s; *status = capturing; return 0; }
int cuGraphGetNodes(u64 g, u64 *nodes, size_t *n) { (void)g; if (nodes) nodes[0] = 0xa000; *n = 1; return 0; }
int cuGraphInstantiateWithFlags(u64 *e, u64 g, u64 flags) { (void)g; (void)flags; *e = 0xb000; return 0; }
int cuGraphExecDestroy(u64 e) { (void)e; log_destroy(2); return 0; }
int cuGraphDestroy(u64 g) { (void)g; log_destroy(1); return 0; }
int cuGraphLaunch(u64 e, u64 s) { (void)e; (void)s; graph_launches++; return 0; }
