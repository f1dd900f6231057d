/*
 * completion: the addon's wait for GPU work that does not block the event loop.
 *
 * One completion thread per Node environment (the main thread, each worker thread) polls every
 * pending wait's event with cuEventQuery and hands the finished ones to JS in batches, waking the
 * event loop through a thread-safe function. Young waits JS polls itself (eventQuery). A thousand awaits are a thousand entries of one list, not a thousand
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
 * throws). `done` holds [id, result, id, result, ...] of the waits finished since the last call.
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

/* eventRecord(event: bigint, stream: bigint): number -- cuEventRecord's result (or HOT_NOT_BOUND). */
napi_value completion_event_record(napi_env env, napi_callback_info info, completion_driver *driver);

/* eventQuery(event: bigint): number -- cuEventQuery's result (or HOT_NOT_BOUND): JS's own poll of a young wait. */
napi_value completion_event_query(napi_env env, napi_callback_info info, completion_driver *driver);

/* waitsPending(): number -- waits handed over and not yet reported to JS (tests). */
napi_value completion_pending(napi_env env, completion_waiter *w);

#endif
