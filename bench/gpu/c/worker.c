/*
 * The C reference worker of `npm run bench:gpu`: the CUDA driver API called directly, the floor
 * every other implementation is compared with. The orchestrator builds it on the device:
 *
 *   gcc -O2 -Wall -Wextra -I/usr/local/cuda/include worker.c -o worker -lcuda
 *
 * Usage: worker <kernels.ptx>. It initialises once (primary context, one non-blocking stream,
 * the PTX module with `empty` and `add2`, a 256-float buffer), prints one JSON line
 * {"ready":true,...} (or {"ready":false,"error":...} and exits 1), then answers commands on stdin,
 * one JSON line each:
 *
 *   row <name> <n> <reps> [<launches>]   ->  {"ok":true,"row":...,"n":...,"samples":{...}}
 *   quit
 *
 * What each row times is defined in docs/benchmark.md; the Python and Node workers time the same
 * spans. cuda.h maps the public names to the versioned symbols (cuStreamBeginCapture ->
 * cuStreamBeginCapture_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags, cuMemAlloc ->
 * cuMemAlloc_v2, ...), so the calls below bind the current ABIs.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 10000
#define ADD2_ELEMENTS 256

static CUcontext ctx;
static CUdevice dev;
static CUstream stream;
static CUfunction fn_empty, fn_add2;
static CUdeviceptr buf;
static int add2_n = ADD2_ELEMENTS;
/* Kernel arguments packed once, in memory that stays put (static storage). */
static void *add2_params[2];

/* A failed driver call: the message is printed as the command's error, then the worker goes on
 * (init failures end it). */
static char err_msg[512];

static int check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 0;
  const char *name = NULL, *desc = NULL;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &desc);
  snprintf(err_msg, sizeof err_msg, "%s: %s (%d): %s", what, name ? name : "?", (int)r,
           desc ? desc : "?");
  return -1;
}
#define CHECK(call) do { if (check((call), #call)) return -1; } while (0)

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static void print_samples(const char *key, const double *xs, int n, int first) {
  printf("%s\"%s\":[", first ? "" : ",", key);
  for (int i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", xs[i]);
  putchar(']');
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len + 1);
  if (text && fread(text, 1, (size_t)len, f) != (size_t)len) { free(text); text = NULL; }
  if (text) text[len] = '\0';
  fclose(f);
  return text;
}

static int init(const char *ptx_path) {
  char *ptx = read_file(ptx_path);
  if (!ptx) {
    snprintf(err_msg, sizeof err_msg, "cannot read %s", ptx_path);
    return -1;
  }
  CUmodule module;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuModuleLoadData(&module, ptx));
  free(ptx);
  CHECK(cuModuleGetFunction(&fn_empty, module, "empty"));
  CHECK(cuModuleGetFunction(&fn_add2, module, "add2"));
  CHECK(cuMemAlloc(&buf, ADD2_ELEMENTS * sizeof(float)));
  CHECK(cuMemsetD32Async(buf, 0, ADD2_ELEMENTS, stream));
  CHECK(cuStreamSynchronize(stream));
  add2_params[0] = &buf;
  add2_params[1] = &add2_n;
  return 0;
}

/* One launch of the kernel a row uses: `empty` (grid 1, block 32, no arguments) or `add2`
 * (grid 1, block 256, the packed arguments). */
static CUresult launch_kernel(int with_args) {
  return with_args
    ? cuLaunchKernel(fn_add2, 1, 1, 1, ADD2_ELEMENTS, 1, 1, 0, stream, add2_params, NULL)
    : cuLaunchKernel(fn_empty, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL);
}

/* eager: n launches, stream idle before; timed from before the first to after the last call
 * returns (no sync inside the span). Result: microseconds per launch. */
static int rep_eager(int n, int with_args, double *per_launch) {
  CHECK(cuStreamSynchronize(stream));
  double t0 = now_us();
  for (int i = 0; i < n; i++) CHECK(launch_kernel(with_args));
  double t1 = now_us();
  CHECK(cuStreamSynchronize(stream));
  *per_launch = (t1 - t0) / n;
  return 0;
}

/* Capture n launches into a graph and instantiate it. `capture` spans begin + the n launches;
 * `instantiate` spans end-capture + instantiate (where CuPy and PyTorch instantiate too). */
static int capture_graph(int n, int with_args, CUgraphExec *exec, double *t_capture,
                         double *t_instantiate) {
  CUgraph graph = NULL;
  CHECK(cuStreamSynchronize(stream));
  double t0 = now_us();
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < n; i++) {
    if (check(launch_kernel(with_args), "cuLaunchKernel (capturing)")) {
      /* Leave the stream usable for the next command: end the broken capture, drop its graph. */
      if (cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS && graph) cuGraphDestroy(graph);
      return -1;
    }
  }
  double t1 = now_us();
  CHECK(cuStreamEndCapture(stream, &graph));
  if (check(cuGraphInstantiate(exec, graph, 0), "cuGraphInstantiate")) {
    cuGraphDestroy(graph);
    return -1;
  }
  double t2 = now_us();
  /* The exec does not need its template: destroy it now, like PyTorch and CuPy do. */
  CHECK(cuGraphDestroy(graph));
  if (t_capture) *t_capture = t1 - t0;
  if (t_instantiate) *t_instantiate = t2 - t1;
  return 0;
}

static int rep_capture(int n, int with_args, double *capture, double *instantiate, double *total) {
  CUgraphExec exec;
  double tc, ti;
  if (capture_graph(n, with_args, &exec, &tc, &ti)) return -1;
  CHECK(cuGraphExecDestroy(exec));
  *capture = tc / n;
  *instantiate = ti / n;
  *total = (tc + ti) / n;
  return 0;
}

/* A graph of n empty nodes, launched once (which uploads it) so the timed launches find it warm. */
static int ready_graph(int n, CUgraphExec *exec) {
  if (capture_graph(n, 0, exec, NULL, NULL)) return -1;
  CHECK(cuGraphLaunch(*exec, stream));
  CHECK(cuStreamSynchronize(stream));
  return 0;
}

/* launch: one cuGraphLaunch call on an idle stream; the span ends when the call returns. The clock
 * is read once right after the wait and the span starts at a second read, in every worker alike:
 * the first read after a blocking wait is slow (cold), by an amount that differs between languages,
 * and belongs to the harness, not to the call. `timer` is that first span (docs/benchmark.md). */
static int rep_launch(CUgraphExec exec, double *call, double *timer) {
  CHECK(cuStreamSynchronize(stream));
  double ta = now_us();
  double t0 = now_us();
  CHECK(cuGraphLaunch(exec, stream));
  double t1 = now_us();
  CHECK(cuStreamSynchronize(stream));
  *call = t1 - t0;
  *timer = t0 - ta;
  return 0;
}

/* roundtrip: one cuGraphLaunch and the blocking wait for it, on an idle stream, timed from a second
 * clock read after the wait before (as `launch`). C has no wait that leaves an event loop free: the
 * other workers' awaited round trips are compared with this one. */
static int rep_roundtrip(CUgraphExec exec, double *span) {
  CHECK(cuStreamSynchronize(stream));
  (void)now_us();
  double t0 = now_us();
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  *span = now_us() - t0;
  return 0;
}

/* replay: `launches` back-to-back launches then a sync, all inside the span: device time per
 * node once the host keeps ahead. */
static int rep_replay(CUgraphExec exec, int n, int launches, double *per_node) {
  CHECK(cuStreamSynchronize(stream));
  double t0 = now_us();
  for (int i = 0; i < launches; i++) CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  double t1 = now_us();
  *per_node = (t1 - t0) / ((double)launches * n);
  return 0;
}

/* Untimed repetitions before a `launch` row's timed ones, as in every worker (bench/gpu/protocol.ts,
 * launchWarmupReps, says why). */
static int launch_warmup_reps(int n) {
  int r = (10000 + n - 1) / n;
  return r < 1 ? 1 : r > 1000 ? 1000 : r;
}

/* The `add2` launch as a kernel node's parameters. */
static CUDA_KERNEL_NODE_PARAMS add2_node(void **params) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = fn_add2;
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = ADD2_ELEMENTS;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = params;
  return p;
}

/* A chain of n `add2` kernel nodes in `graph` (cuGraphAddKernelNode, each after the one before);
 * `mid` receives the middle node when not NULL. */
static int add_chain(CUgraph graph, int n, CUgraphNode *mid) {
  CUDA_KERNEL_NODE_PARAMS p = add2_node(add2_params);
  CUgraphNode prev = NULL, node;
  CHECK(cuGraphAddKernelNode(&prev, graph, NULL, 0, &p));
  if (mid && n == 1) *mid = prev;
  for (int i = 1; i < n; i++) {
    CHECK(cuGraphAddKernelNode(&node, graph, &prev, 1, &p));
    if (mid && i == n / 2) *mid = node;
    prev = node;
  }
  return 0;
}

/* build: the n - 1 calls after the first node of a chain of n kernel nodes, per node; the graph is
 * destroyed outside the span. */
static int rep_build(int n, double *per_node) {
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CUDA_KERNEL_NODE_PARAMS p = add2_node(add2_params);
  CUgraphNode prev, node;
  if (check(cuGraphAddKernelNode(&prev, graph, NULL, 0, &p), "cuGraphAddKernelNode")) { cuGraphDestroy(graph); return -1; }
  double t0 = now_us();
  for (int i = 1; i < n; i++) {
    if (check(cuGraphAddKernelNode(&node, graph, &prev, 1, &p), "cuGraphAddKernelNode")) { cuGraphDestroy(graph); return -1; }
    prev = node;
  }
  double t1 = now_us();
  CHECK(cuGraphDestroy(graph));
  *per_node = (t1 - t0) / n;
  return 0;
}

static double xs_a[MAX_REPS], xs_b[MAX_REPS], xs_c[MAX_REPS];

/* Calls per repetition of the update row's two per-call metrics (bench/gpu/protocol.ts). */
#define UPDATE_CALLS 100

/* update: on a chain of n kernel nodes, instantiated once, each repetition times UPDATE_CALLS
 * in-place updates of the middle node's arguments (cuGraphExecKernelNodeSetParams, alternating the
 * count argument), then UPDATE_CALLS disables and enables of it (cuGraphNodeSetEnabled), per call;
 * then one instantiation of the whole graph (the exec destroyed outside the span). */
static int run_update(int n, int reps) {
  CUgraph graph;
  CUgraphExec exec, again;
  CUgraphNode mid = NULL;
  CHECK(cuGraphCreate(&graph, 0));
  if (add_chain(graph, n, &mid) || check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate")) { cuGraphDestroy(graph); return -1; }
  int counts[2] = {ADD2_ELEMENTS - 1, ADD2_ELEMENTS};
  void *params[2][2] = {{&buf, &counts[0]}, {&buf, &counts[1]}};
  CUDA_KERNEL_NODE_PARAMS p[2] = {add2_node(params[0]), add2_node(params[1])};
  int failed = 0;
  for (int i = -1; i < reps && !failed; i++) {
    double t0 = now_us();
    for (int j = 0; j < UPDATE_CALLS; j++)
      failed |= check(cuGraphExecKernelNodeSetParams(exec, mid, &p[j & 1]), "cuGraphExecKernelNodeSetParams");
    double t1 = now_us();
    for (int j = 0; j < UPDATE_CALLS; j++)
      failed |= check(cuGraphNodeSetEnabled(exec, mid, (j & 1) != 0), "cuGraphNodeSetEnabled");
    double t2 = now_us();
    failed |= check(cuGraphInstantiate(&again, graph, 0), "cuGraphInstantiate");
    double t3 = now_us();
    if (!failed) cuGraphExecDestroy(again);
    if (i >= 0) { xs_a[i] = (t1 - t0) / UPDATE_CALLS; xs_b[i] = (t2 - t1) / UPDATE_CALLS; xs_c[i] = t3 - t2; }
  }
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  return failed ? -1 : 0;
}

/* Runs one row: an untimed warm-up repetition (index -1), then `reps` timed ones. */
static int run_row(const char *row, int n, int reps, int launches) {
  double scratch_a, scratch_b, scratch_c;
  if (!strcmp(row, "eager") || !strcmp(row, "eager-args")) {
    int with_args = row[5] != '\0';
    for (int i = -1; i < reps; i++)
      if (rep_eager(n, with_args, i < 0 ? &scratch_a : &xs_a[i])) return -1;
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples("eager", xs_a, reps, 1);
    printf("}}\n");
    return 0;
  }
  if (!strcmp(row, "capture") || !strcmp(row, "capture-args")) {
    int with_args = row[7] != '\0';
    for (int i = -1; i < reps; i++) {
      int ok = i < 0 ? rep_capture(n, with_args, &scratch_a, &scratch_b, &scratch_c)
                     : rep_capture(n, with_args, &xs_a[i], &xs_b[i], &xs_c[i]);
      if (ok) return -1;
    }
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples("capture", xs_a, reps, 1);
    print_samples("instantiate", xs_b, reps, 0);
    print_samples("total", xs_c, reps, 0);
    printf("}}\n");
    return 0;
  }
  if (!strcmp(row, "launch") || !strcmp(row, "replay")) {
    int is_launch = row[0] == 'l';
    CUgraphExec exec;
    if (ready_graph(n, &exec)) return -1;
    /* Untimed warm-up: launch_warmup_reps(n) repetitions for `launch`, one for `replay`. */
    for (int i = is_launch ? -launch_warmup_reps(n) : -1; i < reps; i++) {
      double *x = i < 0 ? &scratch_a : &xs_a[i];
      double *t = i < 0 ? &scratch_b : &xs_b[i];
      int failed = is_launch ? rep_launch(exec, x, t) : rep_replay(exec, n, launches, x);
      if (failed) { cuGraphExecDestroy(exec); return -1; }
    }
    CHECK(cuGraphExecDestroy(exec));
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples(row, xs_a, reps, 1);
    if (is_launch) print_samples("timer", xs_b, reps, 0);
    printf("}}\n");
    return 0;
  }
  if (!strcmp(row, "roundtrip")) {
    CUgraphExec exec;
    if (ready_graph(n, &exec)) return -1;
    for (int i = -launch_warmup_reps(n); i < reps; i++) {
      if (rep_roundtrip(exec, i < 0 ? &scratch_a : &xs_a[i])) { cuGraphExecDestroy(exec); return -1; }
    }
    CHECK(cuGraphExecDestroy(exec));
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples("sync", xs_a, reps, 1);
    printf("}}\n");
    return 0;
  }
  if (!strcmp(row, "build")) {
    for (int i = -1; i < reps; i++)
      if (rep_build(n, i < 0 ? &scratch_a : &xs_a[i])) return -1;
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples("build", xs_a, reps, 1);
    printf("}}\n");
    return 0;
  }
  if (!strcmp(row, "update")) {
    if (run_update(n, reps)) return -1;
    printf("{\"ok\":true,\"row\":\"%s\",\"n\":%d,\"samples\":{", row, n);
    print_samples("update", xs_a, reps, 1);
    print_samples("toggle", xs_b, reps, 0);
    print_samples("reinstantiate", xs_c, reps, 0);
    printf("}}\n");
    return 0;
  }
  snprintf(err_msg, sizeof err_msg, "unknown row '%s'", row);
  return -1;
}

static void reply_error(void) {
  printf("{\"ok\":false,\"error\":");
  json_string(err_msg);
  printf("}\n");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <kernels.ptx>\n", argv[0]);
    return 2;
  }
  if (init(argv[1])) {
    printf("{\"ready\":false,\"impl\":\"c\",\"error\":");
    json_string(err_msg);
    printf("}\n");
    return 1;
  }
  char name[256] = "?";
  int version = 0;
  cuDeviceGetName(name, sizeof name, dev);
  cuDriverGetVersion(&version);
  printf("{\"ready\":true,\"impl\":\"c\",\"device\":");
  json_string(name);
  printf(",\"driverVersion\":%d,\"version\":\"CUDA driver API, gcc %d.%d\"}\n", version,
         __GNUC__, __GNUC_MINOR__);
  fflush(stdout);

  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32], row[32];
    int n = 0, reps = 0, launches = 10;
    int got = sscanf(line, "%31s %31s %d %d %d", cmd, row, &n, &reps, &launches);
    if (got >= 1 && !strcmp(cmd, "quit")) break;
    if (got < 4 || strcmp(cmd, "row")) {
      snprintf(err_msg, sizeof err_msg, "bad command: %.200s", line);
      reply_error();
    } else if (n < 1 || reps < 1 || reps > MAX_REPS || launches < 1) {
      snprintf(err_msg, sizeof err_msg, "row %s: need n >= 1, 1 <= reps <= %d, launches >= 1",
               row, MAX_REPS);
      reply_error();
    } else if (run_row(row, n, reps, launches)) {
      reply_error();
    }
    fflush(stdout);
  }
  cuStreamDestroy(stream);
  cuMemFree(buf);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
