/*
 * cudagraph_hot: the two CUDA driver calls on cudagraph's hot path, called from Node-API instead
 * of koffi (docs/ffi-decision.md has the numbers that justify it).
 *
 *   - a prepared kernel launch: cuLaunchKernel with a launch registered once (function, grid,
 *     block, shared memory, the address of the argument block packed once), launched by a small
 *     integer id and a stream handle;
 *   - a launch sequence: many registered launches, each with its stream, submitted by one call
 *     that loops cuLaunchKernel here (a LaunchSequence: no Node-API call per kernel);
 *   - cuGraphLaunch(exec, stream);
 *   - a batch of kernel nodes added to a graph: one call that loops cuGraphAddKernelNode_v2 here,
 *     each node's dependencies being nodes of the graph or nodes added earlier in the batch;
 *   - one kernel node added (cuGraphAddKernelNode_v2), one exec's kernel node updated
 *     (cuGraphExecKernelNodeSetParams_v2), and one exec's node switched on or off
 *     (cuGraphNodeSetEnabled), in mailbox form only;
 *   - waits for GPU work that leave the event loop free (completion.c: one polling thread per
 *     environment, finished waits handed to JS in batches).
 *
 * The per-call hot functions also have a "mailbox" form that takes no Node-API arguments and
 * returns nothing: the JS side writes the launch id, stream and graph into a small ArrayBuffer
 * shared with this addon (one per Node environment, made once by mailbox()), calls
 * launchFromMailbox() / graphLaunchFromMailbox(), and reads the CUresult back from the same buffer.
 * Reading each Node-API argument and creating the result costs about 5-7 ns apiece, a third to a
 * half of the call (docs/ffi-decision.md, "mailbox"); the buffer costs a plain memory access.
 *
 * Everything else stays on koffi, which also remains the whole binding where this addon is absent.
 *
 * The addon links nothing but Node-API (resolved from the node process) and libc's allocator: it
 * does NOT link or dlopen libcuda. The JS side gives it the addresses of the driver functions that
 * cudagraph's loader already resolved (koffi's lib.symbol), so the lazy loading and the no-driver
 * behaviour are koffi's. A call whose driver function is not bound yet answers HOT_NOT_BOUND and
 * the JS side binds it (or uses koffi) and calls again.
 *
 * Plain C against node_api.h, Node-API version 8 (ABI-stable across Node >= 20): one build runs on
 * every Node version. Context-aware: each Node environment (main thread, worker threads) gets its
 * own table of prepared launches, passed to every function as its callback data.
 *
 * Build: scripts/build-native.sh (the result is committed under native/prebuilt/<platform>-<arch>/).
 */
#include "completion.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bumped whenever a function's signature or meaning changes; the JS loader refuses other values. */
#define HOT_ABI 7

/* Negative results are the addon's own; zero and positive ones are CUresult values. */
#define HOT_NOT_BOUND (-1)  /* the driver function has not been bound yet */
#define HOT_BAD_ID (-2)     /* no registered launch has this id */
_Static_assert(HOT_NOT_BOUND == COMPLETION_NOT_BOUND, "one not-bound code");

typedef int (*cu_launch_kernel_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared_mem, void *stream,
                                   void **params, void **extra);
typedef int (*cu_graph_launch_fn)(void *exec, void *stream);
typedef int (*cu_graph_add_kernel_node_fn)(uint64_t *node, void *graph, const uint64_t *deps, size_t n_deps,
                                           const void *params);
typedef int (*cu_graph_exec_kernel_node_set_params_fn)(void *exec, void *node, const void *params);
typedef int (*cu_graph_node_set_enabled_fn)(void *exec, void *node, unsigned enabled);

typedef struct {
  void *fn;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_mem;
  void **params;
  int32_t next_free; /* -1 while in use; else the next free slot (or -2 at the end of the list) */
} prepared;

/*
 * The mailbox's layout (little-endian, as the JS typed arrays over it see it):
 *   bytes 0-3   u32  id      registered launch to launch (launchFromMailbox)
 *   bytes 4-7   i32  result  what the last mailbox call returned: a CUresult or HOT_NOT_BOUND/BAD_ID
 *   bytes 8-15  u64  stream  the stream of both launches
 *   bytes 16-23 u64  exec    the executable graph (graphLaunchFromMailbox, execKernelParamsFromMailbox,
 *                            nodeSetEnabledFromMailbox)
 *   bytes 24-31 u64  graph   the graph a node is added to (addKernelNodeFromMailbox)
 *   bytes 32-39 u64  params  the address of a CUDA_KERNEL_NODE_PARAMS_v2 (both kernel node calls)
 *   bytes 40-47 u64  deps    the address of `count` node handles, the new node's dependencies
 *   bytes 48-51 u32  count   how many; for nodeSetEnabledFromMailbox, 1 to enable the node, 0 to disable it
 *   bytes 56-63 u64  node    the node added (out), or the exec's node to update or switch (in)
 */
#define MAILBOX_BYTES 64
typedef struct {
  uint32_t id;
  int32_t result;
  uint64_t stream;
  uint64_t exec;
  uint64_t graph;
  uint64_t params;
  uint64_t deps;
  uint32_t count;
  uint32_t unused;
  uint64_t node;
} mailbox_layout;
_Static_assert(sizeof(mailbox_layout) == MAILBOX_BYTES, "the mailbox's layout fills it");

typedef struct {
  cu_launch_kernel_fn cu_launch_kernel;
  cu_graph_launch_fn cu_graph_launch;
  cu_graph_add_kernel_node_fn cu_graph_add_kernel_node;
  cu_graph_exec_kernel_node_set_params_fn cu_graph_exec_kernel_node_set_params;
  cu_graph_node_set_enabled_fn cu_graph_node_set_enabled;
  prepared *slots;
  uint32_t capacity;
  uint32_t used;       /* slots handed out at least once: [0, used) */
  int32_t free_head;   /* first free slot below `used`, or -2 */
  mailbox_layout *mailbox; /* the backing store of the ArrayBuffer mailbox() made, or NULL */
  napi_ref mailbox_ref;    /* keeps that ArrayBuffer (and so its backing store) alive */
  completion_driver completion; /* the driver functions of the waits */
  completion_waiter *waiter;    /* this environment's completion thread, once waiterStart ran */
} hot_state;

#define IN_USE (-1)
#define END_OF_LIST (-2)

static napi_value throw_type(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

static napi_value int_result(napi_env env, int32_t rc) {
  napi_value out;
  napi_create_int32(env, rc, &out);
  return out;
}

static bool get_u64(napi_env env, napi_value v, uint64_t *out) {
  bool lossless;
  return napi_get_value_bigint_uint64(env, v, out, &lossless) == napi_ok && lossless;
}

/* launch(id: number, stream: bigint): number -- cuLaunchKernel of registered launch `id`. */
static napi_value hot_launch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint32_t id;
  uint64_t stream;
  if (napi_get_value_uint32(env, argv[0], &id) != napi_ok || !get_u64(env, argv[1], &stream)) {
    return throw_type(env, "launch(id: number, stream: bigint)");
  }
  if (st->cu_launch_kernel == NULL) return int_result(env, HOT_NOT_BOUND);
  if (id >= st->used || st->slots[id].next_free != IN_USE) return int_result(env, HOT_BAD_ID);
  const prepared *p = &st->slots[id];
  int rc = st->cu_launch_kernel(p->fn, p->grid[0], p->grid[1], p->grid[2], p->block[0], p->block[1],
                                p->block[2], p->shared_mem, (void *)(uintptr_t)stream, p->params, NULL);
  return int_result(env, rc);
}

/*
 * mailbox(): ArrayBuffer -- this environment's mailbox (layout above), made on the first call; the
 * same buffer on every later call. It stays alive, at the same address, as long as the environment.
 */
static napi_value hot_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  napi_value ab;
  if (st->mailbox_ref != NULL) {
    if (napi_get_reference_value(env, st->mailbox_ref, &ab) != napi_ok || ab == NULL) {
      napi_throw_error(env, NULL, "mailbox: lost the mailbox");
      return NULL;
    }
    return ab;
  }
  void *data;
  if (napi_create_arraybuffer(env, MAILBOX_BYTES, &data, &ab) != napi_ok ||
      napi_create_reference(env, ab, 1, &st->mailbox_ref) != napi_ok) {
    napi_throw_error(env, NULL, "mailbox: could not make the mailbox");
    return NULL;
  }
  memset(data, 0, MAILBOX_BYTES);
  st->mailbox = data;
  return ab;
}

/*
 * launchFromMailbox(): undefined -- launch(mailbox.id, mailbox.stream), its result written to
 * mailbox.result. Does nothing (result BAD_ID) before mailbox() has been called.
 */
static napi_value hot_launch_from_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  mailbox_layout *m = st->mailbox;
  if (m == NULL) return NULL;
  const uint32_t id = m->id;
  if (st->cu_launch_kernel == NULL) {
    m->result = HOT_NOT_BOUND;
  } else if (id >= st->used || st->slots[id].next_free != IN_USE) {
    m->result = HOT_BAD_ID;
  } else {
    const prepared *p = &st->slots[id];
    m->result = st->cu_launch_kernel(p->fn, p->grid[0], p->grid[1], p->grid[2], p->block[0], p->block[1], p->block[2],
                                     p->shared_mem, (void *)(uintptr_t)m->stream, p->params, NULL);
  }
  return NULL;
}

/* graphLaunchFromMailbox(): undefined -- cuGraphLaunch(mailbox.exec, mailbox.stream) into mailbox.result. */
static napi_value hot_graph_launch_from_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  mailbox_layout *m = st->mailbox;
  if (m == NULL) return NULL;
  m->result = st->cu_graph_launch == NULL
                  ? HOT_NOT_BOUND
                  : st->cu_graph_launch((void *)(uintptr_t)m->exec, (void *)(uintptr_t)m->stream);
  return NULL;
}

/*
 * addKernelNodeFromMailbox(): undefined -- cuGraphAddKernelNode_v2(&mailbox.node, mailbox.graph,
 * mailbox.deps (NULL when mailbox.count is 0), mailbox.count, mailbox.params), the result into
 * mailbox.result (mailbox.node is 0 unless it is 0). The driver reads the parameters and the
 * dependencies during the call only.
 */
static napi_value hot_add_kernel_node_from_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  mailbox_layout *m = st->mailbox;
  if (m == NULL) return NULL;
  uint64_t node = 0;
  if (st->cu_graph_add_kernel_node == NULL) {
    m->result = HOT_NOT_BOUND;
  } else {
    m->result = st->cu_graph_add_kernel_node(&node, (void *)(uintptr_t)m->graph,
                                             m->count == 0 ? NULL : (const uint64_t *)(uintptr_t)m->deps, m->count,
                                             (const void *)(uintptr_t)m->params);
  }
  m->node = m->result == 0 ? node : 0;
  return NULL;
}

/*
 * execKernelParamsFromMailbox(): undefined -- cuGraphExecKernelNodeSetParams_v2(mailbox.exec,
 * mailbox.node, mailbox.params), the result into mailbox.result.
 */
static napi_value hot_exec_kernel_params_from_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  mailbox_layout *m = st->mailbox;
  if (m == NULL) return NULL;
  m->result = st->cu_graph_exec_kernel_node_set_params == NULL
                  ? HOT_NOT_BOUND
                  : st->cu_graph_exec_kernel_node_set_params((void *)(uintptr_t)m->exec, (void *)(uintptr_t)m->node,
                                                             (const void *)(uintptr_t)m->params);
  return NULL;
}

/*
 * nodeSetEnabledFromMailbox(): undefined -- cuGraphNodeSetEnabled(mailbox.exec, mailbox.node,
 * mailbox.count), the result into mailbox.result.
 */
static napi_value hot_node_set_enabled_from_mailbox(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  mailbox_layout *m = st->mailbox;
  if (m == NULL) return NULL;
  m->result = st->cu_graph_node_set_enabled == NULL
                  ? HOT_NOT_BOUND
                  : st->cu_graph_node_set_enabled((void *)(uintptr_t)m->exec, (void *)(uintptr_t)m->node, m->count);
  return NULL;
}

/* The elements of a typed array of `type`; false when `v` is not one. */
static bool typed_array(napi_env env, napi_value v, napi_typedarray_type type, void **data, size_t *length) {
  bool is;
  napi_typedarray_type actual;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  return napi_get_typedarray_info(env, v, &actual, length, data, NULL, NULL) == napi_ok && actual == type;
}

/*
 * launchSequence(ids: Uint32Array, streams: BigUint64Array, done: Uint32Array): number --
 * cuLaunchKernel of registered launch ids[i] on streams[i], for i = 0, 1, ... in order, stopping
 * at the first that fails. Returns 0 when every launch was submitted, else the failed call's
 * CUresult; done[0] is then the number submitted (the index of the failed entry). NOT_BOUND and
 * BAD_ID (any id not registered) are answered before anything is launched (done[0] = 0).
 * The arrays are read where they are now, on every call: nothing keeps a pointer into them.
 */
static napi_value hot_launch_sequence(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  void *ids_data, *streams_data, *done_data;
  size_t n, n_streams, n_done;
  if (argc < 3 || !typed_array(env, argv[0], napi_uint32_array, &ids_data, &n) ||
      !typed_array(env, argv[1], napi_biguint64_array, &streams_data, &n_streams) ||
      !typed_array(env, argv[2], napi_uint32_array, &done_data, &n_done) || n_streams != n || n_done < 1 ||
      n > UINT32_MAX) {
    return throw_type(env, "launchSequence(ids: Uint32Array, streams: BigUint64Array (as long as ids), done: Uint32Array)");
  }
  const uint32_t *ids = ids_data;
  const uint64_t *streams = streams_data;
  uint32_t *done = done_data;
  done[0] = 0;
  if (st->cu_launch_kernel == NULL) return int_result(env, HOT_NOT_BOUND);
  for (size_t i = 0; i < n; i++) {
    if (ids[i] >= st->used || st->slots[ids[i]].next_free != IN_USE) return int_result(env, HOT_BAD_ID);
  }
  const cu_launch_kernel_fn launch = st->cu_launch_kernel;
  const prepared *slots = st->slots;
  for (size_t i = 0; i < n; i++) {
    const prepared *p = &slots[ids[i]];
    int rc = launch(p->fn, p->grid[0], p->grid[1], p->grid[2], p->block[0], p->block[1], p->block[2], p->shared_mem,
                    (void *)(uintptr_t)streams[i], p->params, NULL);
    if (rc != 0) {
      done[0] = (uint32_t)i;
      return int_result(env, rc);
    }
  }
  done[0] = (uint32_t)n;
  return int_result(env, 0);
}

/* Size in bytes of one CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h; the JS side checks it against its layout). */
#define KERNEL_NODE_PARAMS_BYTES 72
/* Dependencies a node of a batch can list without a heap allocation. */
#define STACK_DEPS 32

/*
 * addKernelNodes(graph: bigint, blocks: Uint8Array, blockOf: Uint32Array, depStart: Uint32Array,
 *                depIndex: Int32Array, depHandle: BigUint64Array, out: BigUint64Array,
 *                done: Uint32Array): number --
 * for i = 0, 1, ... n - 1 (n = blockOf.length), cuGraphAddKernelNode_v2(&out[i], graph, deps,
 * params = blocks + 72 * blockOf[i]), where node i's dependencies are entries depStart[i] to
 * depStart[i + 1] - 1: entry k is out[depIndex[k]] (a node added earlier in this call) when
 * depIndex[k] >= 0, else depHandle[k]. Stops at the first failure: returns 0 when every node was
 * added, else that call's CUresult, with done[0] the number added (the caller removes them).
 * NOT_BOUND, and BAD_ID for an array that does not describe such a batch (an index out of range, a
 * forward reference), come before any node is added. Nothing keeps a pointer into the arrays.
 */
static napi_value hot_add_kernel_nodes(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint64_t graph;
  void *blocks_data, *block_of_data, *dep_start_data, *dep_index_data, *dep_handle_data, *out_data, *done_data;
  size_t n_blocks, n, n_start, n_index, n_handle, n_out, n_done;
  if (argc < 8 || !get_u64(env, argv[0], &graph) || !typed_array(env, argv[1], napi_uint8_array, &blocks_data, &n_blocks) ||
      !typed_array(env, argv[2], napi_uint32_array, &block_of_data, &n) ||
      !typed_array(env, argv[3], napi_uint32_array, &dep_start_data, &n_start) ||
      !typed_array(env, argv[4], napi_int32_array, &dep_index_data, &n_index) ||
      !typed_array(env, argv[5], napi_biguint64_array, &dep_handle_data, &n_handle) ||
      !typed_array(env, argv[6], napi_biguint64_array, &out_data, &n_out) ||
      !typed_array(env, argv[7], napi_uint32_array, &done_data, &n_done) || n_start != n + 1 || n_handle != n_index ||
      n_out < n || n_done < 1 || n > UINT32_MAX) {
    return throw_type(env,
                      "addKernelNodes(graph: bigint, blocks: Uint8Array, blockOf: Uint32Array, depStart: Uint32Array (n + 1), "
                      "depIndex: Int32Array, depHandle: BigUint64Array (as long as depIndex), out: BigUint64Array (n), done: Uint32Array)");
  }
  const uint8_t *blocks = blocks_data;
  const uint32_t *block_of = block_of_data, *dep_start = dep_start_data;
  const int32_t *dep_index = dep_index_data;
  const uint64_t *dep_handle = dep_handle_data;
  uint64_t *out = out_data;
  uint32_t *done = done_data;
  done[0] = 0;
  if (st->cu_graph_add_kernel_node == NULL) return int_result(env, HOT_NOT_BOUND);
  /* The whole batch is checked before the first node: a bad array adds nothing. */
  size_t max_deps = 0;
  if (dep_start[0] != 0 || dep_start[n] != n_index) return int_result(env, HOT_BAD_ID);
  for (size_t i = 0; i < n; i++) {
    if ((size_t)block_of[i] >= n_blocks / KERNEL_NODE_PARAMS_BYTES || dep_start[i + 1] < dep_start[i]) {
      return int_result(env, HOT_BAD_ID);
    }
    for (uint32_t k = dep_start[i]; k < dep_start[i + 1]; k++) {
      if (dep_index[k] >= 0 && (size_t)dep_index[k] >= i) return int_result(env, HOT_BAD_ID);
    }
    if (dep_start[i + 1] - dep_start[i] > max_deps) max_deps = dep_start[i + 1] - dep_start[i];
  }
  uint64_t stack_deps[STACK_DEPS];
  uint64_t *deps = stack_deps;
  if (max_deps > STACK_DEPS) {
    deps = malloc(max_deps * sizeof(uint64_t));
    if (deps == NULL) {
      napi_throw_error(env, NULL, "addKernelNodes: out of memory");
      return NULL;
    }
  }
  const cu_graph_add_kernel_node_fn add = st->cu_graph_add_kernel_node;
  int rc = 0;
  size_t i = 0;
  for (; i < n; i++) {
    const uint32_t first = dep_start[i], count = dep_start[i + 1] - first;
    for (uint32_t k = 0; k < count; k++) {
      const int32_t j = dep_index[first + k];
      deps[k] = j >= 0 ? out[j] : dep_handle[first + k];
    }
    rc = add(&out[i], (void *)(uintptr_t)graph, count == 0 ? NULL : deps, count,
             blocks + (size_t)block_of[i] * KERNEL_NODE_PARAMS_BYTES);
    if (rc != 0) break;
  }
  if (deps != stack_deps) free(deps);
  done[0] = (uint32_t)i;
  return int_result(env, rc);
}

/*
 * launchKernel(fn: bigint, gx, gy, gz, bx, by, bz, sharedMem: number, stream: bigint,
 *              params: bigint): number -- cuLaunchKernel with every argument given.
 */
static napi_value hot_launch_kernel(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint64_t fn, stream, params;
  uint32_t dims[7];
  bool ok = get_u64(env, argv[0], &fn) && get_u64(env, argv[8], &stream) && get_u64(env, argv[9], &params);
  for (int i = 0; ok && i < 7; i++) ok = napi_get_value_uint32(env, argv[1 + i], &dims[i]) == napi_ok;
  if (!ok) {
    return throw_type(env, "launchKernel(fn: bigint, gx, gy, gz, bx, by, bz, sharedMem: number, stream: bigint, params: bigint)");
  }
  if (st->cu_launch_kernel == NULL) return int_result(env, HOT_NOT_BOUND);
  int rc = st->cu_launch_kernel((void *)(uintptr_t)fn, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                dims[6], (void *)(uintptr_t)stream, (void **)(uintptr_t)params, NULL);
  return int_result(env, rc);
}

/* graphLaunch(exec: bigint, stream: bigint): number -- cuGraphLaunch. */
static napi_value hot_graph_launch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint64_t exec, stream;
  if (!get_u64(env, argv[0], &exec) || !get_u64(env, argv[1], &stream)) {
    return throw_type(env, "graphLaunch(exec: bigint, stream: bigint)");
  }
  if (st->cu_graph_launch == NULL) return int_result(env, HOT_NOT_BOUND);
  return int_result(env, st->cu_graph_launch((void *)(uintptr_t)exec, (void *)(uintptr_t)stream));
}

/*
 * register(fn: bigint, gx, gy, gz, bx, by, bz, sharedMem: number, params: bigint): number --
 * keeps a launch and returns its id (reused after release). `params` must stay valid until release.
 */
static napi_value hot_register(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint64_t fn, params;
  uint32_t dims[7];
  bool ok = get_u64(env, argv[0], &fn) && get_u64(env, argv[8], &params);
  for (int i = 0; ok && i < 7; i++) ok = napi_get_value_uint32(env, argv[1 + i], &dims[i]) == napi_ok;
  if (!ok) return throw_type(env, "register(fn: bigint, gx, gy, gz, bx, by, bz, sharedMem: number, params: bigint)");
  uint32_t id;
  if (st->free_head != END_OF_LIST) {
    id = (uint32_t)st->free_head;
    st->free_head = st->slots[id].next_free;
  } else {
    if (st->used == st->capacity) {
      uint32_t grown = st->capacity == 0 ? 64 : st->capacity * 2;
      if (grown > (uint32_t)INT32_MAX) {
        napi_throw_range_error(env, NULL, "register: too many prepared launches");
        return NULL;
      }
      prepared *slots = realloc(st->slots, (size_t)grown * sizeof(prepared));
      if (slots == NULL) {
        napi_throw_error(env, NULL, "register: out of memory");
        return NULL;
      }
      st->slots = slots;
      st->capacity = grown;
    }
    id = st->used++;
  }
  prepared *p = &st->slots[id];
  p->fn = (void *)(uintptr_t)fn;
  for (int i = 0; i < 3; i++) {
    p->grid[i] = dims[i];
    p->block[i] = dims[3 + i];
  }
  p->shared_mem = dims[6];
  p->params = (void **)(uintptr_t)params;
  p->next_free = IN_USE;
  napi_value out;
  napi_create_uint32(env, id, &out);
  return out;
}

/* release(id: number): boolean -- forgets launch `id`; false when no such launch is registered. */
static napi_value hot_release(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  uint32_t id;
  if (napi_get_value_uint32(env, argv[0], &id) != napi_ok) return throw_type(env, "release(id: number)");
  bool released = id < st->used && st->slots[id].next_free == IN_USE;
  if (released) {
    memset(&st->slots[id], 0, sizeof(prepared));
    st->slots[id].next_free = st->free_head;
    st->free_head = (int32_t)id;
  }
  napi_value out;
  napi_get_boolean(env, released, &out);
  return out;
}

/* registered(): number -- how many launches are registered now (for tests). */
static napi_value hot_registered(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  uint32_t n = 0;
  for (uint32_t i = 0; i < st->used; i++) n += st->slots[i].next_free == IN_USE;
  napi_value out;
  napi_create_uint32(env, n, &out);
  return out;
}

/* waiterStart, waitEvent, waitStream, eventRecord, eventQuery, waitsPending: completion.h documents them. */
static napi_value hot_waiter_start(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_start(env, info, &st->completion, &st->waiter);
}

static napi_value hot_wait_event(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_wait(env, info, &st->completion, st->waiter);
}

static napi_value hot_wait_stream(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_wait_stream(env, info, &st->completion, st->waiter);
}

static napi_value hot_event_record(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_event_record(env, info, &st->completion);
}

static napi_value hot_event_query(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_event_query(env, info, &st->completion);
}

static napi_value hot_waits_pending(napi_env env, napi_callback_info info) {
  hot_state *st;
  napi_get_cb_info(env, info, NULL, NULL, NULL, (void **)&st);
  return completion_pending(env, st->waiter);
}

/*
 * bind(name: string, address: bigint): boolean -- sets the driver function `name`
 * ("cuLaunchKernel", "cuGraphLaunch", "cuGraphAddKernelNode_v2", "cuGraphExecKernelNodeSetParams_v2",
 * "cuGraphNodeSetEnabled",
 * and for the waits "cuEventQuery", "cuStreamQuery", "cuEventRecord", "cuCtxSetCurrent") to
 * `address` (0n unbinds); false for an unknown name. A wait keeps the functions bound when it was
 * handed over.
 */
static napi_value hot_bind(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  hot_state *st;
  napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&st);
  char name[48];
  size_t len;
  uint64_t address;
  if (napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len) != napi_ok || !get_u64(env, argv[1], &address)) {
    return throw_type(env, "bind(name: string, address: bigint)");
  }
  bool known = true;
  if (strcmp(name, "cuLaunchKernel") == 0) st->cu_launch_kernel = (cu_launch_kernel_fn)(uintptr_t)address;
  else if (strcmp(name, "cuGraphLaunch") == 0) st->cu_graph_launch = (cu_graph_launch_fn)(uintptr_t)address;
  else if (strcmp(name, "cuGraphAddKernelNode_v2") == 0)
    st->cu_graph_add_kernel_node = (cu_graph_add_kernel_node_fn)(uintptr_t)address;
  else if (strcmp(name, "cuGraphExecKernelNodeSetParams_v2") == 0)
    st->cu_graph_exec_kernel_node_set_params = (cu_graph_exec_kernel_node_set_params_fn)(uintptr_t)address;
  else if (strcmp(name, "cuGraphNodeSetEnabled") == 0)
    st->cu_graph_node_set_enabled = (cu_graph_node_set_enabled_fn)(uintptr_t)address;
  else if (strcmp(name, "cuEventQuery") == 0) st->completion.cu_event_query = (cu_event_query_fn)(uintptr_t)address;
  else if (strcmp(name, "cuStreamQuery") == 0) st->completion.cu_stream_query = (cu_stream_query_fn)(uintptr_t)address;
  else if (strcmp(name, "cuEventRecord") == 0) st->completion.cu_event_record = (cu_event_record_fn)(uintptr_t)address;
  else if (strcmp(name, "cuCtxSetCurrent") == 0)
    st->completion.cu_ctx_set_current = (cu_ctx_set_current_fn)(uintptr_t)address;
  else known = false;
  napi_value out;
  napi_get_boolean(env, known, &out);
  return out;
}

static void free_state(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  hot_state *st = data;
  /* The environment is going away: its references and values go with it. */
  free(st->slots);
  free(st);
}

NAPI_MODULE_INIT() {
  hot_state *st = calloc(1, sizeof(hot_state));
  if (st == NULL) {
    napi_throw_error(env, NULL, "cudagraph_hot: out of memory");
    return NULL;
  }
  st->free_head = END_OF_LIST;
  if (napi_set_instance_data(env, st, free_state, NULL) != napi_ok) {
    free(st);
    napi_throw_error(env, NULL, "cudagraph_hot: napi_set_instance_data failed");
    return NULL;
  }
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {
      {"launch", hot_launch},         {"launchKernel", hot_launch_kernel}, {"graphLaunch", hot_graph_launch},
      {"register", hot_register},     {"release", hot_release},            {"registered", hot_registered},
      {"bind", hot_bind},             {"launchSequence", hot_launch_sequence},
      {"mailbox", hot_mailbox},       {"launchFromMailbox", hot_launch_from_mailbox},
      {"graphLaunchFromMailbox", hot_graph_launch_from_mailbox}, {"addKernelNodes", hot_add_kernel_nodes},
      {"addKernelNodeFromMailbox", hot_add_kernel_node_from_mailbox},
      {"execKernelParamsFromMailbox", hot_exec_kernel_params_from_mailbox},
      {"nodeSetEnabledFromMailbox", hot_node_set_enabled_from_mailbox},
      {"waiterStart", hot_waiter_start}, {"waitEvent", hot_wait_event}, {"waitStream", hot_wait_stream},
      {"eventRecord", hot_event_record}, {"eventQuery", hot_event_query}, {"waitsPending", hot_waits_pending},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, st, &fn) != napi_ok ||
        napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok) {
      return NULL;
    }
  }
  napi_value abi, not_bound, bad_id;
  napi_create_int32(env, HOT_ABI, &abi);
  napi_create_int32(env, HOT_NOT_BOUND, &not_bound);
  napi_create_int32(env, HOT_BAD_ID, &bad_id);
  napi_set_named_property(env, exports, "abi", abi);
  napi_set_named_property(env, exports, "NOT_BOUND", not_bound);
  napi_set_named_property(env, exports, "BAD_ID", bad_id);
  return exports;
}
