/*
 * completion: the addon's wait for GPU work that does not block the event loop.
 *
 * One completion thread per Node environment (the main thread, each worker thread) polls every
 * pending wait's event with cuEventQuery and queues the finished ones for JS, which drains them in
 * batches (on its own turns of the event loop, or woken by a thread-safe function). A thousand awaits are a thousand entries of one list, not a thousand
 * threads. cudagraph_hot.c registers the two functions and owns the driver function pointers.
 */
#ifndef CUDAGRAPH_COMPLETION_H
#define CUDAGRAPH_COMPLETION_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <stdint.h>

/* The addon's answer for a call whose driver function is not bound yet (HOT_NOT_BOUND). */
#define COMPLETION_NOT_BOUND (-1)

typedef int (*cu_event_query_fn)(void *event);
typedef int (*cu_stream_query_fn)(void *stream);
typedef int (*cu_event_record_fn)(void *event, void *stream);
typedef int (*cu_ctx_set_current_fn)(void *ctx);

/* The driver functions the completion thread and the submission call use (set by bind()). */
typedef struct {
  cu_event_query_fn cu_event_query;
  cu_stream_query_fn cu_stream_query;
  cu_event_record_fn cu_event_record;
  cu_ctx_set_current_fn cu_ctx_set_current;
} completion_driver;

/* The state of one environment's completion thread (opaque outside completion.c). */
typedef struct completion_waiter completion_waiter;

/*
 * waiterStart(onComplete: (done: number[]) => void, spinNs: number, maxSleepNs: number): undefined
 * -- makes this environment's thread-safe function and completion thread (once; a second call
 * throws). `done` holds [id, result, id, result, ...] of the waits finished since the last drain;
 * it is called when the thread woke the event loop (JS was not polling).
 */
napi_value completion_start(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter **slot);

/*
 * waitEvent(id: number, ctx: bigint, event: bigint, stream: bigint): number -- records `event` on
 * `stream` first unless `stream` is 0n (cuEventRecord), then hands the wait to the completion
 * thread, which reports `id` with cuEventQuery's result once it is not CUDA_ERROR_NOT_READY.
 * Returns 0, or the record's CUresult (nothing handed over), or HOT_NOT_BOUND.
 */
napi_value completion_wait(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter *w);

/*
 * waitStream(id: number, ctx: bigint, stream: bigint): number -- hands a wait for all the work of
 * `stream` to the completion thread, which polls it with cuStreamQuery (enqueues nothing: for a
 * stream that must not take more work, e.g. one held up by a host function). Returns 0 or
 * HOT_NOT_BOUND.
 */
napi_value completion_wait_stream(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter *w);

/*
 * waitsDrain(): number[] | undefined -- the finished waits not reported yet, [id, result, ...]
 * (undefined when none; a counter read, no lock).
 */
napi_value completion_drain(napi_env env, completion_waiter *w);

/*
 * waitsPolling(on: boolean): undefined -- whether JS drains the queue itself on every turn of its
 * event loop (the thread then sends no wake-up). Turning it off, JS must drain once more after.
 */
napi_value completion_polling(napi_env env, napi_callback_info info, completion_waiter *w);

/* waitsPending(): number -- waits handed over and not yet reported to JS (tests). */
napi_value completion_pending(napi_env env, completion_waiter *w);

#endif
