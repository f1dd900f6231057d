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
      {"bind", probe_bind}, {"timedLaunch", probe_timed_launch}, {"cycle", probe_cycle}, {"sync", probe_sync}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn);
    napi_set_named_property(env, exports, fns[i].name, fn);
  }
  return exports;
}
