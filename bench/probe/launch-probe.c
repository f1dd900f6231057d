/*
 * Diagnostic addon for bench/probe/launch-probe.ts (not shipped): where the time of ONE graph
 * launch call between synchronizes goes in a Node process. It times cuGraphLaunch from C inside the
 * Node process, with the wait made from JS (koffi) or from C, so that the JS-side cost of a call
 * right after a wait can be told apart from the driver call's own cost in this process.
 * Built with: gcc -O2 -fPIC -shared -I/usr/include/node -o launch-probe.node launch-probe.c
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef int (*graph_launch_fn)(void *exec, void *stream);
typedef int (*stream_sync_fn)(void *stream);
static graph_launch_fn graph_launch;
static stream_sync_fn stream_sync;
/* For captureCycle: the C worker's capture repetition, made from C inside this process. */
typedef int (*launch_kernel_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                unsigned shm, void *stream, void **params, void **extra);
typedef int (*begin_capture_fn)(void *stream, int mode);
typedef int (*end_capture_fn)(void *stream, void **graph);
typedef int (*instantiate_fn)(void **exec, void *graph, unsigned long long flags);
typedef int (*destroy_fn)(void *h);
static launch_kernel_fn launch_kernel;
static begin_capture_fn begin_capture;
static end_capture_fn end_capture;
static instantiate_fn instantiate;
static destroy_fn graph_destroy, exec_destroy;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool args_u64(napi_env env, napi_callback_info info, uint64_t *a, uint64_t *b) {
  size_t argc = 2;
  napi_value argv[2];
  bool lossless;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  return argc == 2 && napi_get_value_bigint_uint64(env, argv[0], a, &lossless) == napi_ok &&
         napi_get_value_bigint_uint64(env, argv[1], b, &lossless) == napi_ok;
}

static napi_value number(napi_env env, double x) {
  napi_value out;
  napi_create_double(env, x, &out);
  return out;
}

/* bind(cuGraphLaunch address, cuStreamSynchronize address) */
static napi_value probe_bind(napi_env env, napi_callback_info info) {
  uint64_t a, b;
  if (!args_u64(env, info, &a, &b)) return NULL;
  graph_launch = (graph_launch_fn)(uintptr_t)a;
  stream_sync = (stream_sync_fn)(uintptr_t)b;
  return NULL;
}

/* timedLaunch(exec, stream): ns of cuGraphLaunch timed in C (the wait was made by the caller). */
static napi_value probe_timed_launch(napi_env env, napi_callback_info info) {
  uint64_t exec, stream;
  if (!args_u64(env, info, &exec, &stream)) return NULL;
  (void)now_ns();
  int64_t t0 = now_ns();
  int rc = graph_launch((void *)(uintptr_t)exec, (void *)(uintptr_t)stream);
  int64_t t1 = now_ns();
  return number(env, rc != 0 ? -rc : (double)(t1 - t0));
}

/* cycle(exec, stream): the C worker's repetition inside this process: wait, clock, clock, launch, clock. */
static napi_value probe_cycle(napi_env env, napi_callback_info info) {
  uint64_t exec, stream;
  if (!args_u64(env, info, &exec, &stream)) return NULL;
  int rc = stream_sync((void *)(uintptr_t)stream);
  (void)now_ns();
  int64_t t0 = now_ns();
  rc |= graph_launch((void *)(uintptr_t)exec, (void *)(uintptr_t)stream);
  int64_t t1 = now_ns();
  return number(env, rc != 0 ? -rc : (double)(t1 - t0));
}

/* bindCapture(addresses: BigUint64Array of cuLaunchKernel, cuStreamBeginCapture_v2, cuStreamEndCapture,
 * cuGraphInstantiateWithFlags, cuGraphDestroy, cuGraphExecDestroy). */
static napi_value probe_bind_capture(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data;
  size_t n;
  napi_typedarray_type t;
  napi_get_typedarray_info(env, argv[0], &t, &n, &data, NULL, NULL);
  const uint64_t *a = data;
  if (n < 6) return NULL;
  launch_kernel = (launch_kernel_fn)(uintptr_t)a[0];
  begin_capture = (begin_capture_fn)(uintptr_t)a[1];
  end_capture = (end_capture_fn)(uintptr_t)a[2];
  instantiate = (instantiate_fn)(uintptr_t)a[3];
  graph_destroy = (destroy_fn)(uintptr_t)a[4];
  exec_destroy = (destroy_fn)(uintptr_t)a[5];
  return NULL;
}

/*
 * captureCycle(fn, stream, n, templateFirst): the C worker's capture repetition inside this process:
 * wait, clock, begin, n launches of fn (grid 1, block 32, no arguments), clock, end, instantiate,
 * then destroy the template graph before the exec (templateFirst, as the C worker, CuPy and PyTorch do)
 * or after it (as cudagraph's GraphExec.dispose does). Returns ns per node of the capture span.
 */
static napi_value probe_capture_cycle(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint64_t fn, stream;
  bool lossless, template_first;
  uint32_t n;
  napi_get_value_bigint_uint64(env, argv[0], &fn, &lossless);
  napi_get_value_bigint_uint64(env, argv[1], &stream, &lossless);
  napi_get_value_uint32(env, argv[2], &n);
  napi_get_value_bool(env, argv[3], &template_first);
  void *s = (void *)(uintptr_t)stream, *graph = NULL, *exec = NULL;
  int rc = stream_sync(s);
  int64_t t0 = now_ns();
  rc |= begin_capture(s, 0);
  for (uint32_t i = 0; i < n && rc == 0; i++) rc |= launch_kernel((void *)(uintptr_t)fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
  int64_t t1 = now_ns();
  rc |= end_capture(s, &graph);
  rc |= instantiate(&exec, graph, 0);
  if (template_first) {
    rc |= graph_destroy(graph);
    rc |= exec_destroy(exec);
  } else {
    rc |= exec_destroy(exec);
    rc |= graph_destroy(graph);
  }
  return number(env, rc != 0 ? -rc : (double)(t1 - t0) / n);
}

/* sync(stream): cuStreamSynchronize from C. */
static napi_value probe_sync(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint64_t stream;
  bool lossless;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_get_value_bigint_uint64(env, argv[0], &stream, &lossless);
  return number(env, stream_sync((void *)(uintptr_t)stream));
}

NAPI_MODULE_INIT() {
  const struct { const char *name; napi_callback cb; } fns[] = {
      {"bind", probe_bind}, {"timedLaunch", probe_timed_launch}, {"cycle", probe_cycle}, {"sync", probe_sync},
      {"bindCapture", probe_bind_capture}, {"captureCycle", probe_capture_cycle}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn);
    napi_set_named_property(env, exports, fns[i].name, fn);
  }
  return exports;
}
