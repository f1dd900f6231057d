/*
 * A stand-in for libcuda that models what makes JS host functions dangerous, for CPU tests of the
 * host-call gate (src/driver/host-gate.ts) and of deferred frees (src/cuda/lifetime.ts).
 *
 * It keeps a queue of operations per stream and a "GPU" thread that runs them in order. A host
 * function (cuLaunchHostFunc, or a host node of a launched graph) is called on that thread; for a
 * JS function, koffi blocks the thread until the JS event loop has run it, exactly as with the
 * real driver. The calls that wait for the GPU on the real driver (measured on CUDA 13.0:
 * synchronizations, cuMemFree, cuModuleLoadDataEx, cuModuleUnload, cuMemHostUnregister,
 * synchronous copies, copies into pageable memory, copies from it once STAGING bytes are staged)
 * wait here until every queue is empty, and an enqueue waits while its stream holds QUEUE_CAP
 * operations. Where the real driver
 * would then hang for ever, this one gives up after DEADLOCK_MS and ends the process with exit
 * code 86 and a line on stderr naming the call: a test that makes such a call fails quickly
 * instead of hanging.
 *
 * Counters (exported, read by tests through koffi): waits (calls that waited for the GPU), allocs,
 * frees, loads, unloads, registers, unregisters, launches, host_calls_run.
 *
 * Built with -z nodelete: koffi closes a library when its last handle is finalized (at the latest
 * when the Node environment is torn down), and the GPU thread may still be running this library's
 * code then, so it must stay mapped until the process ends.
 *
 *   gcc -O1 -fPIC -shared -pthread -Wl,-z,nodelete -o libcuda-hazard.so hazard-driver.c
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long u64;
typedef void (*HostFn)(void *);

#define QUEUE_CAP 1021
#define STAGING (4u << 20) /* bytes of pageable host-to-device copies the driver stages before it waits */
#define DEADLOCK_MS 3000
#define MAX_STREAMS 64
#define MAX_OPS 8192
#define MAX_GRAPHS 64
#define MAX_NODES 64
#define MAX_PINNED 64

enum { OP_KERNEL = 1, OP_HOST = 2, OP_RECORD = 3, OP_WAIT = 4, OP_MEM = 5, OP_SLEEP = 6 };
typedef struct { int kind; HostFn fn; void *data; int event; u64 seq; } Op;
typedef struct { u64 handle; int used; int destroyed; int capturing; int graph; Op ops[MAX_OPS]; int head, tail; int busy; } Stream;
typedef struct { int kind; HostFn fn; void *data; } Node; /* kind: 1 kernel, 2 host, 5 memset/copy */
typedef struct { int used; int n; Node nodes[MAX_NODES]; } Graph;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static Stream streams[MAX_STREAMS];
static Graph graphs[MAX_GRAPHS];
static u64 event_done_seq[1024];
static u64 event_rec_seq[1024];
static int next_event = 1;
static u64 next_seq = 1;
static u64 next_mem = 0xd0000000ull;
static u64 next_module = 0x7000, next_fn = 0xf000;
static u64 current_ctx;
static void *pinned[MAX_PINNED];
static size_t pinned_len[MAX_PINNED];
static int started, stopping, stopped;
static u64 staged; /* pageable bytes staged since the GPU was last idle */

u64 waits, allocs, frees, loads, unloads, registers, unregisters, launches, host_calls_run, graph_launches, pool_destroys;
/* The context current when the last kernel was launched (tests of the context mirror). */
u64 last_launch_ctx;

static u64 now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (u64)t.tv_sec * 1000 + (u64)t.tv_nsec / 1000000;
}

static void deadlock(const char *call) {
  fprintf(stderr, "stand-in driver: deadlock: %s waited %d ms for the GPU, which waits for a host function the JS thread cannot run\n", call, DEADLOCK_MS);
  fflush(stderr);
  _exit(86);
}

/* Waits (mu held) for a change, or a millisecond. */
static void nap(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += 1000000;
  if (t.tv_nsec >= 1000000000) { t.tv_sec++; t.tv_nsec -= 1000000000; }
  pthread_cond_timedwait(&cv, &mu, &t);
}

static int queue_len(Stream *s) { return s->tail - s->head; }

static int all_idle(void) {
  for (int i = 0; i < MAX_STREAMS; i++)
    if (streams[i].used && (queue_len(&streams[i]) > 0 || streams[i].busy)) return 0;
  return 1;
}

/* The GPU: runs the head operation of each stream that can run, in turn. */
static void *gpu(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!stopping) {
    int ran = 0;
    for (int i = 0; i < MAX_STREAMS; i++) {
      Stream *s = &streams[i];
      if (s->used && s->destroyed && queue_len(s) == 0 && !s->busy) s->used = 0; /* its work is done: the slot is free */
      if (!s->used || queue_len(s) == 0) continue;
      Op op = s->ops[s->head % MAX_OPS];
      if (op.kind == OP_WAIT && event_done_seq[op.event] < op.seq) continue; /* waits for the record */
      s->busy = 1;
      if (op.kind == OP_HOST) {
        pthread_mutex_unlock(&mu);
        op.fn(op.data); /* koffi blocks here until the JS thread has run a JS function */
        pthread_mutex_lock(&mu);
        host_calls_run++;
      } else if (op.kind == OP_RECORD) {
        event_done_seq[op.event] = op.seq;
      } else if (op.kind == OP_SLEEP) {
        pthread_mutex_unlock(&mu);
        usleep((useconds_t)op.event * 1000u); /* a long kernel */
        pthread_mutex_lock(&mu);
      }
      s->head++;
      s->busy = 0;
      ran = 1;
      pthread_cond_broadcast(&cv);
    }
    if (!ran) {
      if (all_idle()) staged = 0;
      nap();
    }
  }
  stopped = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* At exit, stop the GPU thread (bounded: it may be blocked in a host function the JS thread no
 * longer runs; the library stays mapped, so a thread still in it does no harm). */
__attribute__((destructor)) static void stop(void) {
  pthread_mutex_lock(&mu);
  if (!started) {
    pthread_mutex_unlock(&mu);
    return;
  }
  stopping = 1;
  pthread_cond_broadcast(&cv);
  u64 t0 = now_ms();
  while (!stopped && now_ms() - t0 < 200) {
    nap();
  }
  pthread_mutex_unlock(&mu);
}

static void start(void) {
  if (started) return;
  started = 1;
  pthread_t t;
  pthread_create(&t, NULL, gpu, NULL);
  pthread_detach(t);
}

/* Waits (called with mu held) until the GPU is idle, as the real driver's waiting calls do. */
static void wait_idle(const char *call) {
  waits++;
  u64 t0 = now_ms();
  while (!all_idle()) {
    if (now_ms() - t0 > DEADLOCK_MS) deadlock(call);
    nap();
  }
}

static Stream *find(u64 h) {
  if (h == 0 || h == 1 || h == 2) h = 0x5000; /* the legacy and per-thread streams: stream 0 */
  for (int i = 0; i < MAX_STREAMS; i++) if (streams[i].used && !streams[i].destroyed && streams[i].handle == h) return &streams[i];
  return NULL;
}

/* Appends an operation (mu held); waits while the stream's queue is full, as the real driver does. */
static int enqueue(u64 h, Op op, const char *call) {
  Stream *s = find(h);
  if (!s) return 400; /* CUDA_ERROR_INVALID_HANDLE */
  if (s->capturing) {
    if (op.kind != OP_RECORD && op.kind != OP_WAIT) {
      Graph *g = &graphs[s->graph];
      if (g->n < MAX_NODES) g->nodes[g->n++] = (Node){op.kind, op.fn, op.data};
    }
    return 0;
  }
  u64 t0 = now_ms();
  while (queue_len(s) >= QUEUE_CAP) {
    if (now_ms() - t0 > DEADLOCK_MS) deadlock(call);
    nap();
  }
  op.seq = next_seq++;
  s->ops[s->tail % MAX_OPS] = op;
  s->tail++;
  pthread_cond_broadcast(&cv);
  return 0;
}

static int is_pinned(const void *p) {
  for (int i = 0; i < MAX_PINNED; i++)
    if (pinned[i] && (const char *)p >= (const char *)pinned[i] && (const char *)p < (const char *)pinned[i] + pinned_len[i]) return 1;
  return 0;
}

#define LOCKED(body) do { pthread_mutex_lock(&mu); start(); body; pthread_mutex_unlock(&mu); } while (0)

int cuInit(unsigned f) { (void)f; LOCKED(if (!find(0x5000)) { streams[0].used = 1; streams[0].handle = 0x5000; }); return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuGetErrorString(int e, const char **s) { (void)e; (void)s; return 1; }
int cuGetErrorName(int e, const char **s) { (void)e; (void)s; return 1; }
/* STAND_IN_DEVICES (environment) devices, default 1. */
int cuDeviceGetCount(int *n) { const char *e = getenv("STAND_IN_DEVICES"); *n = e ? atoi(e) : 1; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "hazard stand-in", len); return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) { (void)dev; *v = attr == 75 ? 9 : attr == 76 ? 0 : 128; return 0; }
int cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = (size_t)1 << 30; return 0; }
int cuDevicePrimaryCtxRetain(u64 *ctx, int dev) { *ctx = 0xc0 + dev; return 0; }
int cuCtxSetCurrent(u64 ctx) { current_ctx = ctx; return 0; }
int cuCtxGetCurrent(u64 *ctx) { *ctx = current_ctx; return 0; }
int cuCtxGetStreamPriorityRange(int *lo, int *hi) { *lo = 0; *hi = -5; return 0; }
int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)1 << 29; *t = (size_t)1 << 30; return 0; }
int cuCtxSynchronize(void) { LOCKED(wait_idle("cuCtxSynchronize")); return 0; }

int cuStreamCreateWithPriority(u64 *out, unsigned flags, int prio) {
  (void)flags; (void)prio;
  int rc = 2;
  LOCKED(
    for (int i = 1; i < MAX_STREAMS; i++) if (!streams[i].used) {
      memset(&streams[i], 0, sizeof streams[i]);
      streams[i].used = 1;
      static u64 next_stream = 0x5000;
      streams[i].handle = next_stream += 0x10;
      *out = streams[i].handle;
      rc = 0;
      break;
    });
  return rc;
}
/* Destroying a stream with work returns at once; the work still runs (as the driver documents). */
int cuStreamDestroy_v2(u64 h) {
  int rc = 400;
  LOCKED(Stream *s = find(h); if (s && s != &streams[0]) { s->destroyed = 1; rc = 0; pthread_cond_broadcast(&cv); });
  return rc;
}
int cuStreamSynchronize(u64 h) {
  (void)h;
  LOCKED(wait_idle("cuStreamSynchronize"));
  return 0;
}
int cuStreamQuery(u64 h) {
  int rc = 0;
  LOCKED(Stream *s = find(h); if (s && (queue_len(s) > 0 || s->busy)) rc = 600);
  return rc;
}
int cuStreamBeginCapture_v2(u64 h, int mode) {
  (void)mode;
  int rc = 400;
  LOCKED(
    Stream *s = find(h);
    if (s) for (int g = 1; g < MAX_GRAPHS; g++) if (!graphs[g].used) {
      graphs[g].used = 1; graphs[g].n = 0; s->capturing = 1; s->graph = g; rc = 0; break;
    });
  return rc;
}
int cuStreamEndCapture(u64 h, u64 *graph) {
  int rc = 906;
  LOCKED(Stream *s = find(h); if (s && s->capturing) { s->capturing = 0; *graph = 0x9000 + (u64)s->graph; rc = 0; });
  return rc;
}
int cuStreamIsCapturing(u64 h, int *status) {
  LOCKED(Stream *s = find(h); *status = s && s->capturing ? 1 : 0);
  return 0;
}
int cuStreamWaitEvent(u64 h, u64 ev, unsigned flags) {
  (void)flags;
  int rc;
  LOCKED(int e = (int)(ev - 0xe000); rc = enqueue(h, (Op){OP_WAIT, NULL, NULL, e, 0}, "cuStreamWaitEvent");
         Stream *s = find(h); if (s && !s->capturing) s->ops[(s->tail - 1) % MAX_OPS].seq = event_rec_seq[e]);
  return rc;
}
int cuLaunchHostFunc(u64 h, HostFn fn, void *data) {
  int rc;
  LOCKED(rc = enqueue(h, (Op){OP_HOST, fn, data, 0, 0}, "cuLaunchHostFunc"));
  return rc;
}
int cuEventCreate(u64 *ev, unsigned flags) { (void)flags; LOCKED(*ev = 0xe000 + (u64)next_event++); return 0; }
int cuEventDestroy_v2(u64 ev) { (void)ev; return 0; }
int cuEventRecord(u64 ev, u64 h) {
  int rc;
  LOCKED(int e = (int)(ev - 0xe000); rc = enqueue(h, (Op){OP_RECORD, NULL, NULL, e, 0}, "cuEventRecord");
         Stream *s = find(h); if (s && !s->capturing && rc == 0) event_rec_seq[e] = s->ops[(s->tail - 1) % MAX_OPS].seq);
  return rc;
}
int cuEventQuery(u64 ev) {
  int rc;
  LOCKED(int e = (int)(ev - 0xe000); rc = event_done_seq[e] >= event_rec_seq[e] ? 0 : 600);
  return rc;
}
int cuEventSynchronize(u64 ev) { (void)ev; LOCKED(wait_idle("cuEventSynchronize")); return 0; }

int cuMemAlloc_v2(u64 *p, size_t n) { LOCKED(*p = next_mem; next_mem += (n + 255) & ~(size_t)255; allocs++); return 0; }
int cuMemFree_v2(u64 p) { (void)p; LOCKED(wait_idle("cuMemFree_v2"); frees++); return 0; }
int cuMemAllocAsync(u64 *p, size_t n, u64 h) {
  int rc;
  LOCKED(*p = next_mem; next_mem += (n + 255) & ~(size_t)255; rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemAllocAsync"); if (rc == 0) allocs++);
  return rc;
}
int cuMemFreeAsync(u64 p, u64 h) { (void)p; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemFreeAsync"); frees++); return rc; }
int cuMemsetD8Async(u64 d, unsigned char v, size_t n, u64 h) { (void)d; (void)v; (void)n; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemsetD8Async")); return rc; }
int cuMemsetD16Async(u64 d, unsigned short v, size_t n, u64 h) { (void)d; (void)v; (void)n; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemsetD16Async")); return rc; }
int cuMemsetD32Async(u64 d, unsigned v, size_t n, u64 h) { (void)d; (void)v; (void)n; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemsetD32Async")); return rc; }
/* Copies with pageable host memory wait for the GPU (measured); with registered memory they are queued. */
int cuMemcpyHtoDAsync_v2(u64 d, const void *src, size_t n, u64 h) {
  (void)d;
  int rc;
  LOCKED(
    if (!is_pinned(src)) {
      /* Staged at once while the staging memory has room; then the copy waits for the GPU. */
      u64 cost = n < 1024 ? 1024 : n;
      if (staged + cost > STAGING) { wait_idle("cuMemcpyHtoDAsync_v2 (pageable, staging full)"); staged = 0; }
      staged += cost;
    }
    rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemcpyHtoDAsync_v2"));
  return rc;
}
int cuMemcpyDtoHAsync_v2(void *dst, u64 s, size_t n, u64 h) {
  (void)s; (void)n;
  int rc;
  LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemcpyDtoHAsync_v2"); if (!is_pinned(dst)) wait_idle("cuMemcpyDtoHAsync_v2 (pageable)"));
  return rc;
}
int cuMemcpyDtoDAsync_v2(u64 d, u64 s, size_t n, u64 h) { (void)d; (void)s; (void)n; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemcpyDtoDAsync_v2")); return rc; }
int cuMemcpyHtoD_v2(u64 d, const void *src, size_t n) { (void)d; (void)src; (void)n; LOCKED(wait_idle("cuMemcpyHtoD_v2")); return 0; }
int cuMemcpyDtoH_v2(void *dst, u64 s, size_t n) { (void)dst; (void)s; (void)n; LOCKED(wait_idle("cuMemcpyDtoH_v2")); return 0; }
int cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
  (void)flags;
  int rc = 2;
  LOCKED(for (int i = 0; i < MAX_PINNED; i++) if (!pinned[i]) { pinned[i] = p; pinned_len[i] = n; rc = 0; registers++; break; });
  return rc;
}
int cuMemHostUnregister(void *p) {
  int rc = 712; /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
  LOCKED(wait_idle("cuMemHostUnregister");
         for (int i = 0; i < MAX_PINNED; i++) if (pinned[i] == p) { pinned[i] = NULL; rc = 0; unregisters++; break; });
  return rc;
}
int cuPointerGetAttribute(void *data, int attr, u64 p) { (void)attr; (void)p; *(unsigned *)data = 2; return 0; }
int cuModuleLoadDataEx(u64 *m, const void *img, unsigned n, void *o, void *v) {
  (void)img; (void)n; (void)o; (void)v;
  LOCKED(wait_idle("cuModuleLoadDataEx"); *m = next_module += 0x10; loads++);
  return 0;
}
int cuModuleUnload(u64 m) { (void)m; LOCKED(wait_idle("cuModuleUnload"); unloads++); return 0; }
int cuModuleGetFunction(u64 *f, u64 m, const char *name) { (void)m; (void)name; LOCKED(*f = next_fn += 0x10); return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shm, u64 h, void **params, void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)params; (void)extra;
  int rc;
  LOCKED(rc = enqueue(h, (Op){OP_KERNEL, NULL, NULL, 0, 0}, "cuLaunchKernel"); if (rc == 0) { launches++; last_launch_ctx = current_ctx; });
  return rc;
}

/* Not a driver function: keeps stream `h` busy for `ms` milliseconds, as a long kernel would. */
int stand_in_delay(u64 h, unsigned ms) {
  int rc;
  LOCKED(rc = enqueue(h, (Op){OP_SLEEP, NULL, NULL, (int)ms, 0}, "stand_in_delay"));
  return rc;
}

/* Stream-ordered memory pools: allocations are made up, frees and allocations are queued. */
int cuMemPoolCreate(u64 *pool, const void *props) { (void)props; static u64 next_pool = 0x8000; LOCKED(*pool = next_pool += 0x10); return 0; }
int cuMemPoolDestroy(u64 pool) { (void)pool; LOCKED(pool_destroys++); return 0; }
int cuMemPoolTrimTo(u64 pool, size_t keep) { (void)pool; (void)keep; return 0; }
int cuMemPoolGetAttribute(u64 pool, int attr, u64 *v) { (void)pool; (void)attr; *v = 0; return 0; }
int cuMemPoolSetAttribute(u64 pool, int attr, u64 *v) { (void)pool; (void)attr; (void)v; return 0; }
int cuMemAllocFromPoolAsync(u64 *p, size_t n, u64 pool, u64 h) {
  (void)pool;
  int rc;
  LOCKED(*p = next_mem; next_mem += (n + 255) & ~(size_t)255; rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuMemAllocFromPoolAsync"); if (rc == 0) allocs++);
  return rc;
}
int cuThreadExchangeStreamCaptureMode(int *mode) { static int m = 0; int old = m; m = *mode; *mode = old; return 0; }

/* Graphs: a captured graph is the list of operations recorded into it. */
static Graph *graph_of(u64 g) { int i = (int)(g - 0x9000); return i > 0 && i < MAX_GRAPHS && graphs[i].used ? &graphs[i] : NULL; }
int cuGraphCreate(u64 *g, unsigned flags) {
  (void)flags;
  int rc = 2;
  LOCKED(for (int i = 1; i < MAX_GRAPHS; i++) if (!graphs[i].used) { graphs[i].used = 1; graphs[i].n = 0; *g = 0x9000 + (u64)i; rc = 0; break; });
  return rc;
}
int cuGraphDestroy(u64 g) { LOCKED(Graph *x = graph_of(g); if (x) x->used = 0); return 0; }
/* Node handles: 0xa0000 + graph * 0x100 + index. */
int cuGraphGetNodes(u64 g, u64 *nodes, size_t *n) {
  LOCKED(Graph *x = graph_of(g); size_t k = x ? (size_t)x->n : 0;
         if (nodes) for (size_t i = 0; i < k && i < *n; i++) nodes[i] = 0xa0000 + (g - 0x9000) * 0x100 + i;
         *n = k);
  return 0;
}
static Node *node_of(u64 h) {
  u64 g = (h - 0xa0000) / 0x100, i = (h - 0xa0000) % 0x100;
  Graph *x = graph_of(0x9000 + g);
  return x && i < (u64)x->n ? &x->nodes[i] : NULL;
}
int cuGraphGetEdges_v2(u64 g, u64 *from, u64 *to, void *data, size_t *n) { (void)g; (void)from; (void)to; (void)data; *n = 0; return 0; }
int cuGraphNodeGetType(u64 h, int *type) {
  int rc = 400;
  /* CU_GRAPH_NODE_TYPE_KERNEL 0, MEMSET 2, HOST 3 */
  LOCKED(Node *n = node_of(h); if (n) { *type = n->kind == OP_HOST ? 3 : n->kind == OP_MEM ? 2 : 0; rc = 0; });
  return rc;
}
int cuGraphHostNodeGetParams(u64 h, void **params) {
  int rc = 400;
  LOCKED(Node *n = node_of(h); if (n && n->kind == OP_HOST) { params[0] = (void *)n->fn; params[1] = n->data; rc = 0; });
  return rc;
}
int cuGraphInstantiateWithFlags(u64 *e, u64 g, u64 flags) { (void)flags; *e = 0xb0000 + (g - 0x9000); return 0; }
int cuGraphExecDestroy(u64 e) { (void)e; return 0; }
int cuGraphUpload(u64 e, u64 h) { (void)e; int rc; LOCKED(rc = enqueue(h, (Op){OP_MEM, NULL, NULL, 0, 0}, "cuGraphUpload")); return rc; }
/* A launch enqueues the graph's operations in order (its template must still exist: the exec keeps a copy here). */
int cuGraphLaunch(u64 e, u64 h) {
  int rc = 0;
  LOCKED(
    Graph *x = &graphs[(int)(e - 0xb0000)];
    Stream *s = find(h);
    if (!s) rc = 400;
    else if (s->capturing) rc = 900;
    else {
      for (int i = 0; i < x->n && rc == 0; i++) rc = enqueue(h, (Op){x->nodes[i].kind, x->nodes[i].fn, x->nodes[i].data, 0, 0}, "cuGraphLaunch");
      if (rc == 0) graph_launches++;
    });
  return rc;
}
