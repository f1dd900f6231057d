/*
 * completion: waits for GPU work without blocking the event loop, and at a blocking wait's cost.
 *
 * Why a thread of our own: a wait on a worker of a thread pool (koffi's asynchronous calls) pays a
 * hand-over to a sleeping pool thread, a blocking cuStreamSynchronize there, and a hand-back, about
 * 12 us per wait on an H200 host against an 11 us round trip. Here one thread per Node environment
 * polls the events of every pending wait:
 *
 *   - cuEventQuery of each pending event, round after round, while there has been activity (a wait
 *     handed over or one finished) in the last `spin_ns`: a wait ends within a fraction of a
 *     microsecond of the GPU work, and a wait handed over right after the last finds the thread
 *     awake. Then it sleeps between rounds for a sixteenth of the time since the last activity (at
 *     most `max_sleep_ns`): a long wait costs little CPU and ends at most ~6 % late. With nothing
 *     pending and nothing recent it sleeps on a condition variable until a wait is handed over.
 *   - every wait found finished goes to a queue of finished waits; the thread wakes the event loop
 *     through a thread-safe function once for however many finished, and its callback drains the
 *     queue into one JS call.
 *
 * The thread is for waits that last: a young wait is polled by JS itself on turns of an event loop
 * kept awake (eventQuery() below; src/driver/result/wait.ts says why), and handed over only when
 * it outlives that window, or when too many are young at once.
 *   - no call on this thread blocks (cuEventQuery returns at once), so stopping it is bounded: the
 *     environment's teardown and the process's exit both stop and join it before the driver goes.
 *
 * Waits are events: submission records one on the stream (or takes the user's event), so a wait
 * means the work submitted before it, not what is submitted later on the same stream.
 *
 * Threads and locks are libuv's (exported by every Node binary), so the addon needs nothing newer
 * from glibc than it did.
 */
/* uv.h needs the POSIX types (threads, addrinfo) that -std=c11 alone hides. */
#define _POSIX_C_SOURCE 200809L
#include "completion.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define CUDA_ERROR_NOT_READY 600

/* One pending wait: `query(target)` is cuEventQuery of an event or cuStreamQuery of a stream; the
 * driver functions are those bound when it was handed over. */
typedef struct {
  uint32_t id;
  void *ctx;
  void *target;
  int (*query)(void *target);
  cu_ctx_set_current_fn set_ctx;
} wait_entry;

/* Finished waits: [id, result] pairs. */
typedef struct {
  int64_t *pairs;
  size_t n, cap; /* in pairs */
} done_list;

static bool done_push(done_list *d, int64_t id, int64_t rc) {
  if (d->n == d->cap) {
    size_t next = d->cap == 0 ? 16 : 2 * d->cap;
    int64_t *grown = realloc(d->pairs, 2 * next * sizeof(int64_t));
    if (grown == NULL) return false;
    d->pairs = grown;
    d->cap = next;
  }
  d->pairs[2 * d->n] = id;
  d->pairs[2 * d->n + 1] = rc;
  d->n++;
  return true;
}

struct completion_waiter {
  uv_mutex_t mu;
  uv_cond_t cv;
  /* Guarded by mu: waits handed over and not yet taken by the thread; the stop flag; the queue of
   * finished waits (and a spare list, swapped with it by a drain). */
  wait_entry *incoming;
  size_t n_incoming, cap_incoming;
  bool stop;
  done_list done, spare;
  /* Lock-free views: finished waits queued (so an empty drain takes no lock); whether a wake-up is
   * sent and its callback has not run (one wake-up for however many finish meanwhile). */
  atomic_size_t n_done;
  atomic_bool signal_pending;
  /* The thread's state (set once). */
  uv_thread_t thread;
  bool joined;
  uint64_t spin_ns, max_sleep_ns;
  napi_threadsafe_function tsfn;
  napi_async_context async_context;
  /* Main thread only: waits handed over and not reported yet; whether the tsfn holds the loop. */
  uint32_t pending_js;
  bool refed;
  /* The list of live waiters, for the exit handler. */
  completion_waiter *next_live;
};

static uv_once_t live_once = UV_ONCE_INIT;
static uv_mutex_t live_mu;
static completion_waiter *live = NULL;

static void stop_and_join(completion_waiter *w) {
  uv_mutex_lock(&w->mu);
  w->stop = true;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu);
  if (!w->joined) {
    w->joined = true;
    uv_thread_join(&w->thread);
  }
}

/* At exit the driver tears itself down in its own exit handler, registered before ours (it was
 * loaded and initialised before any wait): stop the threads first, so none is inside it then. */
static void stop_all_at_exit(void) {
  uv_mutex_lock(&live_mu);
  for (completion_waiter *w = live; w != NULL; w = w->next_live) stop_and_join(w);
  uv_mutex_unlock(&live_mu);
}

static void live_init(void) {
  uv_mutex_init(&live_mu);
  atexit(stop_all_at_exit);
}

static void relax(void) {
  for (int i = 0; i < 8; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
}

static bool grow(wait_entry **items, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t next = *cap == 0 ? 16 : *cap;
  while (next < need) next *= 2;
  wait_entry *grown = realloc(*items, next * sizeof(wait_entry));
  if (grown == NULL) return false;
  *items = grown;
  *cap = next;
  return true;
}

/* Queues the round's finished waits and wakes the event loop, unless a wake-up is still on its way
 * (its callback clears the flag before it drains, so nothing queued after the drain is missed). */
static void deliver(completion_waiter *w, const done_list *round) {
  uv_mutex_lock(&w->mu);
  for (size_t i = 0; i < round->n; i++) done_push(&w->done, round->pairs[2 * i], round->pairs[2 * i + 1]);
  atomic_store(&w->n_done, w->done.n);
  uv_mutex_unlock(&w->mu);
  if (!atomic_exchange(&w->signal_pending, true)) {
    if (napi_call_threadsafe_function(w->tsfn, NULL, napi_tsfn_nonblocking) != napi_ok) atomic_store(&w->signal_pending, false);
  }
}

static void run(void *arg) {
  completion_waiter *w = arg;
  wait_entry *pending = NULL;
  size_t n = 0, cap = 0;
  done_list round = {NULL, 0, 0};
  void *current_ctx = NULL;
  uint64_t last_activity = uv_hrtime();
  uv_mutex_lock(&w->mu);
  for (;;) {
    if (w->stop) break;
    if (w->n_incoming > 0) {
      if (grow(&pending, &cap, n + w->n_incoming)) {
        memcpy(pending + n, w->incoming, w->n_incoming * sizeof(wait_entry));
        n += w->n_incoming;
        w->n_incoming = 0;
      }
      last_activity = uv_hrtime();
    }
    uv_mutex_unlock(&w->mu);

    round.n = 0;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      wait_entry *e = &pending[i];
      if (e->set_ctx != NULL && e->ctx != NULL && e->ctx != current_ctx) {
        e->set_ctx(e->ctx);
        current_ctx = e->ctx;
      }
      int rc = e->query(e->target);
      /* Not ready, or no memory to report it yet: poll it again next round. */
      if (rc == CUDA_ERROR_NOT_READY || !done_push(&round, e->id, rc)) pending[kept++] = *e;
    }
    n = kept;
    uint64_t now = uv_hrtime();
    bool finished = round.n > 0;
    if (finished) {
      deliver(w, &round);
      last_activity = now;
    }

    uv_mutex_lock(&w->mu);
    if (w->stop || w->n_incoming > 0 || finished) continue;
    uint64_t idle = now - last_activity;
    if (idle < w->spin_ns) {
      /* Recent activity: poll again at once (and find a new wait at once). */
      uv_mutex_unlock(&w->mu);
      relax();
      uv_mutex_lock(&w->mu);
    } else if (n == 0) {
      uv_cond_wait(&w->cv, &w->mu);
    } else {
      uint64_t sleep = idle / 16;
      if (sleep > w->max_sleep_ns) sleep = w->max_sleep_ns;
      uv_cond_timedwait(&w->cv, &w->mu, sleep);
    }
  }
  uv_mutex_unlock(&w->mu);
  free(pending);
  free(round.pairs);
}

/* The finished waits queued, as a JS array [id, result, ...], or NULL when none; the event loop is
 * let go once nothing is pending. Main thread only. */
static napi_value drain(napi_env env, completion_waiter *w) {
  if (atomic_load(&w->n_done) == 0) return NULL;
  uv_mutex_lock(&w->mu);
  done_list taken = w->done;
  w->done = w->spare;
  w->done.n = 0;
  atomic_store(&w->n_done, 0);
  uv_mutex_unlock(&w->mu);
  napi_value out;
  napi_create_array_with_length(env, 2 * taken.n, &out);
  for (size_t i = 0; i < 2 * taken.n; i++) {
    napi_value v;
    napi_create_int64(env, taken.pairs[i], &v);
    napi_set_element(env, out, (uint32_t)i, v);
  }
  w->pending_js -= (uint32_t)taken.n;
  /* The emptied list becomes the spare (the thread only appends to w->done, under the lock). */
  uv_mutex_lock(&w->mu);
  taken.n = 0;
  w->spare = taken;
  uv_mutex_unlock(&w->mu);
  if (w->pending_js == 0 && w->refed) {
    /* Nothing to wait for: the thread-safe function must not keep the process alive. */
    napi_unref_threadsafe_function(env, w->tsfn);
    w->refed = false;
  }
  return out;
}

static void call_js(napi_env env, napi_value js_callback, void *context, void *data) {
  (void)data;
  if (env == NULL || js_callback == NULL) return; /* the environment is going away */
  completion_waiter *w = context;
  /* Cleared before the drain: a wait finished after it sends a new wake-up. */
  atomic_store(&w->signal_pending, false);
  napi_value done = drain(env, w);
  if (done == NULL) return; /* JS drained them first */
  napi_value global, result;
  napi_get_global(env, &global);
  /* As a callback from native code: the promise reactions it queues run when it returns. */
  if (napi_make_callback(env, w->async_context, global, js_callback, 1, &done, &result) == napi_pending_exception) {
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
}

static void finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  completion_waiter *w = data;
  uv_mutex_lock(&live_mu);
  stop_and_join(w);
  for (completion_waiter **p = &live; *p != NULL; p = &(*p)->next_live) {
    if (*p == w) {
      *p = w->next_live;
      break;
    }
  }
  uv_mutex_unlock(&live_mu);
  napi_async_destroy(env, w->async_context);
  uv_cond_destroy(&w->cv);
  uv_mutex_destroy(&w->mu);
  free(w->incoming);
  free(w->done.pairs);
  free(w->spare.pairs);
  free(w);
}

static napi_value fail(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

napi_value completion_start(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter **slot) {
  (void)driver;
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_valuetype type;
  double spin_ns, max_sleep_ns;
  if (argc < 3 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function ||
      napi_get_value_double(env, argv[1], &spin_ns) != napi_ok || napi_get_value_double(env, argv[2], &max_sleep_ns) != napi_ok ||
      !(spin_ns >= 0) || !(max_sleep_ns >= 1000)) {
    napi_throw_type_error(env, NULL, "waiterStart(onComplete: function, spinNs: number >= 0, maxSleepNs: number >= 1000)");
    return NULL;
  }
  if (*slot != NULL) return fail(env, "waiterStart: already started");
  uv_once(&live_once, live_init);
  completion_waiter *w = calloc(1, sizeof(completion_waiter));
  if (w == NULL) return fail(env, "waiterStart: out of memory");
  w->spin_ns = (uint64_t)spin_ns;
  w->max_sleep_ns = (uint64_t)max_sleep_ns;
  napi_value name;
  napi_create_string_utf8(env, "cudagraph:wait", NAPI_AUTO_LENGTH, &name);
  if (uv_mutex_init(&w->mu) != 0) {
    free(w);
    return fail(env, "waiterStart: no mutex");
  }
  if (uv_cond_init(&w->cv) != 0) {
    uv_mutex_destroy(&w->mu);
    free(w);
    return fail(env, "waiterStart: no condition variable");
  }
  napi_value resource;
  napi_create_object(env, &resource);
  if (napi_async_init(env, resource, name, &w->async_context) != napi_ok) {
    uv_cond_destroy(&w->cv);
    uv_mutex_destroy(&w->mu);
    free(w);
    return fail(env, "waiterStart: napi_async_init failed");
  }
  /* The thread must exist before the tsfn can be finalized (the finalizer joins it). */
  if (uv_thread_create(&w->thread, run, w) != 0) {
    napi_async_destroy(env, w->async_context);
    uv_cond_destroy(&w->cv);
    uv_mutex_destroy(&w->mu);
    free(w);
    return fail(env, "waiterStart: could not start the completion thread");
  }
  if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, w, finalize, w, call_js, &w->tsfn) != napi_ok) {
    stop_and_join(w);
    napi_async_destroy(env, w->async_context);
    uv_cond_destroy(&w->cv);
    uv_mutex_destroy(&w->mu);
    free(w);
    return fail(env, "waiterStart: napi_create_threadsafe_function failed");
  }
  /* Idle until a wait is handed over: the process may exit meanwhile. */
  napi_unref_threadsafe_function(env, w->tsfn);
  uv_mutex_lock(&live_mu);
  w->next_live = live;
  live = w;
  uv_mutex_unlock(&live_mu);
  *slot = w;
  return NULL;
}

static napi_value hand_over(napi_env env, completion_waiter *w, const wait_entry *e);

static bool get_u64(napi_env env, napi_value v, uint64_t *out) {
  bool lossless;
  return napi_get_value_bigint_uint64(env, v, out, &lossless) == napi_ok && lossless;
}

napi_value completion_wait(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter *w) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t id;
  uint64_t ctx, event, stream;
  if (argc < 4 || napi_get_value_uint32(env, argv[0], &id) != napi_ok || !get_u64(env, argv[1], &ctx) ||
      !get_u64(env, argv[2], &event) || !get_u64(env, argv[3], &stream)) {
    napi_throw_type_error(env, NULL, "waitEvent(id: number, ctx: bigint, event: bigint, stream: bigint)");
    return NULL;
  }
  if (w == NULL) return fail(env, "waitEvent: waiterStart first");
  napi_value out;
  if (driver->cu_event_query == NULL || (stream != 0 && driver->cu_event_record == NULL)) {
    napi_create_int32(env, COMPLETION_NOT_BOUND, &out);
    return out;
  }
  if (stream != 0) {
    int rc = driver->cu_event_record((void *)(uintptr_t)event, (void *)(uintptr_t)stream);
    if (rc != 0) {
      napi_create_int32(env, rc, &out);
      return out;
    }
  }
  wait_entry e = {id, (void *)(uintptr_t)ctx, (void *)(uintptr_t)event, driver->cu_event_query, driver->cu_ctx_set_current};
  return hand_over(env, w, &e);
}

napi_value completion_wait_stream(napi_env env, napi_callback_info info, completion_driver *driver, completion_waiter *w) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t id;
  uint64_t ctx, stream;
  if (argc < 3 || napi_get_value_uint32(env, argv[0], &id) != napi_ok || !get_u64(env, argv[1], &ctx) || !get_u64(env, argv[2], &stream)) {
    napi_throw_type_error(env, NULL, "waitStream(id: number, ctx: bigint, stream: bigint)");
    return NULL;
  }
  if (w == NULL) return fail(env, "waitStream: waiterStart first");
  if (driver->cu_stream_query == NULL) {
    napi_value out;
    napi_create_int32(env, COMPLETION_NOT_BOUND, &out);
    return out;
  }
  wait_entry e = {id, (void *)(uintptr_t)ctx, (void *)(uintptr_t)stream, driver->cu_stream_query, driver->cu_ctx_set_current};
  return hand_over(env, w, &e);
}

/* Queues `e` for the completion thread and holds the event loop while waits are pending. */
static napi_value hand_over(napi_env env, completion_waiter *w, const wait_entry *e) {
  uv_mutex_lock(&w->mu);
  bool ok = grow(&w->incoming, &w->cap_incoming, w->n_incoming + 1);
  if (ok) {
    w->incoming[w->n_incoming++] = *e;
    uv_cond_signal(&w->cv);
  }
  uv_mutex_unlock(&w->mu);
  if (!ok) return fail(env, "wait: out of memory");
  if (!w->refed) {
    napi_ref_threadsafe_function(env, w->tsfn);
    w->refed = true;
  }
  w->pending_js++;
  napi_value out;
  napi_create_int32(env, 0, &out);
  return out;
}

napi_value completion_event_record(napi_env env, napi_callback_info info, completion_driver *driver) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint64_t event, stream;
  if (argc < 2 || !get_u64(env, argv[0], &event) || !get_u64(env, argv[1], &stream)) {
    napi_throw_type_error(env, NULL, "eventRecord(event: bigint, stream: bigint)");
    return NULL;
  }
  int rc = driver->cu_event_record == NULL ? COMPLETION_NOT_BOUND : driver->cu_event_record((void *)(uintptr_t)event, (void *)(uintptr_t)stream);
  napi_value out;
  napi_create_int32(env, rc, &out);
  return out;
}

napi_value completion_event_query(napi_env env, napi_callback_info info, completion_driver *driver) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint64_t event;
  if (argc < 1 || !get_u64(env, argv[0], &event)) {
    napi_throw_type_error(env, NULL, "eventQuery(event: bigint)");
    return NULL;
  }
  int rc = driver->cu_event_query == NULL ? COMPLETION_NOT_BOUND : driver->cu_event_query((void *)(uintptr_t)event);
  napi_value out;
  napi_create_int32(env, rc, &out);
  return out;
}

napi_value completion_pending(napi_env env, completion_waiter *w) {
  napi_value out;
  napi_create_uint32(env, w == NULL ? 0 : w->pending_js, &out);
  return out;
}
