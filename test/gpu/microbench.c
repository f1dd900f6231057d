/*
 * C reference for the driver microbenchmark (test/gpu/microbench.ts): the same driver calls the
 * TypeScript binding makes, from C, through the same versioned symbols (dlopen'ed like koffi
 * does). Prints one JSON object of per-repetition samples in microseconds.
 *   gcc -O2 -I/usr/local/cuda/include microbench.c -o microbench -ldl
 *   ./microbench kernels.ptx REPS
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x) do { CUresult rc_ = (x); if (rc_ != CUDA_SUCCESS) { fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)rc_); exit(1); } } while (0)

typedef CUresult (*pInit)(unsigned);
typedef CUresult (*pDeviceGet)(CUdevice *, int);
typedef CUresult (*pCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*pCtxSet)(CUcontext);
typedef CUresult (*pStreamCreate)(CUstream *, unsigned, int);
typedef CUresult (*pStreamSync)(CUstream);
typedef CUresult (*pModuleLoad)(CUmodule *, const void *);
typedef CUresult (*pGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*pLaunch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*pBegin)(CUstream, CUstreamCaptureMode);
typedef CUresult (*pEnd)(CUstream, CUgraph *);
typedef CUresult (*pInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*pGraphLaunch)(CUgraphExec, CUstream);
typedef CUresult (*pExecDestroy)(CUgraphExec);
typedef CUresult (*pGraphDestroy)(CUgraph);
typedef CUresult (*pMemAlloc)(CUdeviceptr *, size_t);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) { fprintf(stderr, "missing %s\n", name); exit(1); }
  return p;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: microbench kernels.ptx reps\n"); return 2; }
  int reps = atoi(argv[2]);
  FILE *f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
  char *ptx = calloc(len + 1, 1); if (fread(ptx, 1, len, f) != (size_t)len) return 1; fclose(f);

  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  pInit init = (pInit)sym(lib, "cuInit");
  pDeviceGet deviceGet = (pDeviceGet)sym(lib, "cuDeviceGet");
  pCtxRetain retain = (pCtxRetain)sym(lib, "cuDevicePrimaryCtxRetain");
  pCtxSet setCurrent = (pCtxSet)sym(lib, "cuCtxSetCurrent");
  pStreamCreate streamCreate = (pStreamCreate)sym(lib, "cuStreamCreateWithPriority");
  pStreamSync streamSync = (pStreamSync)sym(lib, "cuStreamSynchronize");
  pModuleLoad moduleLoad = (pModuleLoad)sym(lib, "cuModuleLoadData");
  pGetFunction getFunction = (pGetFunction)sym(lib, "cuModuleGetFunction");
  pLaunch launch = (pLaunch)sym(lib, "cuLaunchKernel");
  pBegin begin = (pBegin)sym(lib, "cuStreamBeginCapture_v2");
  pEnd end = (pEnd)sym(lib, "cuStreamEndCapture");
  pInstantiate instantiate = (pInstantiate)sym(lib, "cuGraphInstantiateWithFlags");
  pGraphLaunch graphLaunch = (pGraphLaunch)sym(lib, "cuGraphLaunch");
  pExecDestroy execDestroy = (pExecDestroy)sym(lib, "cuGraphExecDestroy");
  pGraphDestroy graphDestroy = (pGraphDestroy)sym(lib, "cuGraphDestroy");
  pMemAlloc memAlloc = (pMemAlloc)sym(lib, "cuMemAlloc_v2");

  CUdevice dev; CUcontext ctx; CUstream s; CUmodule mod; CUfunction empty, two;
  CHECK(init(0)); CHECK(deviceGet(&dev, 0)); CHECK(retain(&ctx, dev)); CHECK(setCurrent(ctx));
  CHECK(streamCreate(&s, CU_STREAM_NON_BLOCKING, 0));
  CHECK(moduleLoad(&mod, ptx));
  CHECK(getFunction(&empty, mod, "empty_kernel"));
  CHECK(getFunction(&two, mod, "two_args"));
  CUdeviceptr buf; CHECK(memAlloc(&buf, 1024));
  int n = 1;
  void *args2[2] = { &buf, &n };

  const int N = 1000;
  printf("{\"eager_launch\":[");
  for (int r = 0; r < reps; r++) {
    CHECK(streamSync(s));
    double t0 = now_us();
    for (int i = 0; i < N; i++) CHECK(launch(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    double t1 = now_us();
    CHECK(streamSync(s));
    printf("%s%.4f", r ? "," : "", (t1 - t0) / N);
  }
  printf("],\"eager_launch_2args\":[");
  for (int r = 0; r < reps; r++) {
    CHECK(streamSync(s));
    double t0 = now_us();
    for (int i = 0; i < N; i++) CHECK(launch(two, 1, 1, 1, 32, 1, 1, 0, s, args2, NULL));
    double t1 = now_us();
    CHECK(streamSync(s));
    printf("%s%.4f", r ? "," : "", (t1 - t0) / N);
  }
  printf("],\"capture_per_node\":[");
  double inst[256], both[256]; int instN = reps < 256 ? reps : 256;
  for (int r = 0; r < reps; r++) {
    CUgraph g; CUgraphExec e;
    double t0 = now_us();
    CHECK(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < N; i++) CHECK(launch(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CHECK(end(s, &g));
    double t1 = now_us();
    CHECK(instantiate(&e, g, 0));
    double t2 = now_us();
    if (r < instN) { inst[r] = (t2 - t1) / N; both[r] = (t2 - t0) / N; }
    printf("%s%.4f", r ? "," : "", (t1 - t0) / N);
    CHECK(execDestroy(e)); CHECK(graphDestroy(g));
  }
  printf("],\"instantiate_per_node\":[");
  for (int r = 0; r < instN; r++) printf("%s%.4f", r ? "," : "", inst[r]);
  printf("],\"capture+inst_per_node\":[");
  for (int r = 0; r < instN; r++) printf("%s%.4f", r ? "," : "", both[r]);
  printf("]");
  int sizes[3] = { 10, 1000, 10000 };
  for (int k = 0; k < 3; k++) {
    CUgraph g; CUgraphExec e;
    CHECK(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < sizes[k]; i++) CHECK(launch(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CHECK(end(s, &g));
    CHECK(instantiate(&e, g, 0));
    CHECK(graphLaunch(e, s)); CHECK(streamSync(s));
    printf(",\"graph_launch_%d\":[", sizes[k]);
    for (int r = 0; r < reps; r++) {
      CHECK(streamSync(s));
      double t0 = now_us();
      CHECK(graphLaunch(e, s));
      double t1 = now_us();
      printf("%s%.4f", r ? "," : "", t1 - t0);
    }
    printf("]");
    if (k == 0) {
      /* Steady state: 100 launches back to back, host time per call. */
      printf(",\"graph_launch_10_loop\":[");
      for (int r = 0; r < reps; r++) {
        CHECK(streamSync(s));
        double t0 = now_us();
        for (int i = 0; i < 100; i++) CHECK(graphLaunch(e, s));
        double t1 = now_us();
        printf("%s%.4f", r ? "," : "", (t1 - t0) / 100);
      }
      printf("]");
    }
    CHECK(streamSync(s));
    CHECK(execDestroy(e)); CHECK(graphDestroy(g));
  }
  printf("}\n");
  return 0;
}
