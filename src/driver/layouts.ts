/**
 * Byte layouts (x86-64 / aarch64 LP64) of the cuda.h structs cudagraph reads or writes, and the
 * driver enum values it passes. Structs are read through a DataView rather than koffi struct
 * marshalling: no object is built per call and the offsets are checked in one place.
 * `test/driver/header.test.ts` compiles a C program against /usr/local/cuda/include/cuda.h and
 * checks every offset and size below with the compiler's own `offsetof`/`sizeof`.
 */

/** `CUDA_KERNEL_NODE_PARAMS_v2` (what `cuGraphKernelNodeGetParams_v2` fills). */
export const KERNEL_NODE_PARAMS = {
  size: 72,
  func: 0,
  gridDimX: 8,
  gridDimY: 12,
  gridDimZ: 16,
  blockDimX: 20,
  blockDimY: 24,
  blockDimZ: 28,
  sharedMemBytes: 32,
  kernelParams: 40,
  extra: 48,
  kern: 56,
  ctx: 64,
} as const;

/** `CUDA_MEMSET_NODE_PARAMS` (v1, what `cuGraphMemsetNodeGetParams` fills). */
export const MEMSET_NODE_PARAMS = {
  size: 40,
  dst: 0,
  pitch: 8,
  value: 16,
  elementSize: 20,
  width: 24,
  height: 32,
} as const;

/** `CUDA_MEMCPY3D` (v2, what `cuGraphMemcpyNodeGetParams` fills). */
export const MEMCPY3D = {
  size: 200,
  srcMemoryType: 32,
  srcHost: 40,
  srcDevice: 48,
  dstMemoryType: 120,
  dstHost: 128,
  dstDevice: 136,
  WidthInBytes: 176,
  Height: 184,
  Depth: 192,
  // Written when lowering a copy (appended; the fields above are the ones read back).
  srcPitch: 72,
  srcHeight: 80,
  dstPitch: 160,
  dstHeight: 168,
} as const;

/** `CUDA_HOST_NODE_PARAMS` (v1: what `cuGraphAddHostNode` takes and `cuGraphHostNodeGetParams` fills). */
export const HOST_NODE_PARAMS = {
  size: 16,
  fn: 0,
  userData: 8,
} as const;

/** `CUgraphExecUpdateResultInfo` (v1, filled by `cuGraphExecUpdate_v2`). */
export const EXEC_UPDATE_RESULT_INFO = {
  size: 24,
  result: 0,
  errorNode: 8,
  errorFromNode: 16,
} as const;

/** `CUDA_GRAPH_INSTANTIATE_PARAMS` (read and written by `cuGraphInstantiateWithParams`). */
export const GRAPH_INSTANTIATE_PARAMS = {
  size: 32,
  flags: 0,
  hUploadStream: 8,
  hErrNode_out: 16,
  result_out: 24,
} as const;

/** `CUgraphEdgeData` (8 bytes per edge, written by `cuGraphGetEdges_v2`, read by `cuGraphAddDependencies_v2`). */
export const GRAPH_EDGE_DATA = { size: 8, from_port: 0, to_port: 1, type: 2 } as const;

/** `CUgraphDependencyType`. */
export const CU_GRAPH_DEPENDENCY_TYPE = { DEFAULT: 0, PROGRAMMATIC: 1 } as const;

/** `CU_GRAPH_KERNEL_NODE_PORT_*`: the ports a kernel node's outgoing edges leave by. */
export const CU_GRAPH_KERNEL_NODE_PORT = { DEFAULT: 0, PROGRAMMATIC: 1, LAUNCH_ORDER: 2 } as const;

/** `CUDA_MEM_ALLOC_NODE_PARAMS` (v1: `cuGraphAddMemAllocNode`, `cuGraphMemAllocNodeGetParams`); `poolProps` is a `CUmemPoolProps`. */
export const MEM_ALLOC_NODE_PARAMS = {
  size: 120,
  poolProps: 0,
  accessDescs: 88,
  accessDescCount: 96,
  bytesize: 104,
  dptr: 112,
} as const;

/** `CUmemPoolProps` (v1, read by `cuMemPoolCreate`). */
export const MEM_POOL_PROPS = {
  size: 88,
  allocType: 0,
  handleTypes: 4,
  location: 8,
  win32SecurityAttributes: 16,
  maxSize: 24,
  usage: 32,
  reserved: 34,
} as const;

/** `CUmemLocation` (v1, inside `CUmemPoolProps`). */
export const MEM_LOCATION = { size: 8, type: 0, id: 4 } as const;

/** `CUmemPool_attribute` values cudagraph reads or sets. */
export const CU_MEMPOOL_ATTR = {
  RELEASE_THRESHOLD: 4,
  RESERVED_MEM_CURRENT: 5,
  RESERVED_MEM_HIGH: 6,
  USED_MEM_CURRENT: 7,
  USED_MEM_HIGH: 8,
} as const;

/** `CUstreamCaptureStatus`. */
export const CU_STREAM_CAPTURE_STATUS = { NONE: 0, ACTIVE: 1, INVALIDATED: 2 } as const;

/** `CUstreamCaptureMode`. */
export const CU_STREAM_CAPTURE_MODE = { GLOBAL: 0, THREAD_LOCAL: 1, RELAXED: 2 } as const;

/** `CUgraphInstantiate_flags`. */
export const CUDA_GRAPH_INSTANTIATE_FLAG = {
  AUTO_FREE_ON_LAUNCH: 1,
  UPLOAD: 2,
  DEVICE_LAUNCH: 4,
  USE_NODE_PRIORITY: 8,
} as const;

/**
 * `CUgraphNodeParams` (what `cuGraphAddNode_v2` takes: the node type, then one kind's parameters
 * in a 232-byte union), with the offsets of its conditional member (`CUDA_CONDITIONAL_NODE_PARAMS`
 * at 16): the handle, the conditional type, the body count, the driver-owned array of body graphs
 * it fills, and the context.
 */
export const GRAPH_NODE_PARAMS = {
  size: 256,
  type: 0,
  conditionalHandle: 16,
  conditionalType: 24,
  conditionalSize: 28,
  conditionalGraphs: 32,
  conditionalCtx: 40,
} as const;

/** `CUgraphConditionalNodeType`. */
export const CU_GRAPH_COND_TYPE = { IF: 0, WHILE: 1, SWITCH: 2 } as const;

/** `CU_GRAPH_COND_ASSIGN_DEFAULT`: a handle's default value is applied at the start of every launch. */
export const CU_GRAPH_COND_ASSIGN_DEFAULT = 0x1;

/** `CUgraphNodeType`, value → cudagraph's name. */
export const CU_GRAPH_NODE_TYPE = [
  'kernel', // 0 CU_GRAPH_NODE_TYPE_KERNEL
  'memcpy', // 1 CU_GRAPH_NODE_TYPE_MEMCPY
  'memset', // 2 CU_GRAPH_NODE_TYPE_MEMSET
  'hostCallback', // 3 CU_GRAPH_NODE_TYPE_HOST (the model's name for a host node)
  'graph', // 4 CU_GRAPH_NODE_TYPE_GRAPH
  'empty', // 5 CU_GRAPH_NODE_TYPE_EMPTY
  'waitEvent', // 6 CU_GRAPH_NODE_TYPE_WAIT_EVENT
  'eventRecord', // 7 CU_GRAPH_NODE_TYPE_EVENT_RECORD
  'extSemasSignal', // 8 CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL
  'extSemasWait', // 9 CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT
  'memAlloc', // 10 CU_GRAPH_NODE_TYPE_MEM_ALLOC
  'memFree', // 11 CU_GRAPH_NODE_TYPE_MEM_FREE
  'batchMemOp', // 12 CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
  'conditional', // 13 CU_GRAPH_NODE_TYPE_CONDITIONAL
] as const;

/** `CUgraphExecUpdateResult`, value → constant name. */
export const CU_GRAPH_EXEC_UPDATE_RESULT = [
  'CU_GRAPH_EXEC_UPDATE_SUCCESS',
  'CU_GRAPH_EXEC_UPDATE_ERROR',
  'CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED',
  'CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED',
  'CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED',
  'CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED',
  'CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED',
  'CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE',
  'CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED',
] as const;

/** `CUgraphInstantiateResult`, value → constant name. */
export const CUDA_GRAPH_INSTANTIATE_RESULT = [
  'CUDA_GRAPH_INSTANTIATE_SUCCESS',
  'CUDA_GRAPH_INSTANTIATE_ERROR',
  'CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE',
  'CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED',
  'CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED',
  'CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED',
] as const;

/** `CUmemorytype`. */
export const CU_MEMORYTYPE = { HOST: 1, DEVICE: 2, ARRAY: 3, UNIFIED: 4 } as const;

/** `CUlaunchConfig` (what `cuLaunchKernelEx` takes). */
export const LAUNCH_CONFIG = {
  size: 56,
  gridDimX: 0,
  gridDimY: 4,
  gridDimZ: 8,
  blockDimX: 12,
  blockDimY: 16,
  blockDimZ: 20,
  sharedMemBytes: 24,
  hStream: 32,
  attrs: 40,
  numAttrs: 48,
} as const;

/** `CUlaunchAttribute`: the id, then the 64-byte `CUlaunchAttributeValue` union at `value`. */
export const LAUNCH_ATTRIBUTE = { size: 72, id: 0, value: 8 } as const;

/** `CUlaunchAttributeID` values cudagraph sets (launches and kernel nodes). */
export const CU_LAUNCH_ATTRIBUTE = {
  CLUSTER_DIMENSION: 4,
  PROGRAMMATIC_STREAM_SERIALIZATION: 6,
  PROGRAMMATIC_EVENT: 7,
  PRIORITY: 8,
} as const;

/** `CUgraphMem_attribute`: graph memory in use and reserved, now and at its high-water mark. */
export const CU_GRAPH_MEM_ATTR = { USED_MEM_CURRENT: 0, USED_MEM_HIGH: 1, RESERVED_MEM_CURRENT: 2, RESERVED_MEM_HIGH: 3 } as const;

/** `CU_EVENT_RECORD_EXTERNAL` / `CU_EVENT_WAIT_EXTERNAL`: under capture, an event record or wait node instead of a capture dependency. */
export const CU_EVENT_EXTERNAL = { RECORD: 1, WAIT: 1 } as const;

/** `CUstreamUpdateCaptureDependencies_flags`. */
export const CU_STREAM_CAPTURE_DEPENDENCIES = { ADD: 0, SET: 1 } as const;

/** `CUgraphDebugDot_flags`, by cudagraph's name (`graph.debugDot({ flags })`). */
export const CU_GRAPH_DEBUG_DOT_FLAGS = {
  verbose: 1 << 0,
  runtimeTypes: 1 << 1,
  kernelNodeParams: 1 << 2,
  memcpyNodeParams: 1 << 3,
  memsetNodeParams: 1 << 4,
  hostNodeParams: 1 << 5,
  eventNodeParams: 1 << 6,
  extSemasSignalNodeParams: 1 << 7,
  extSemasWaitNodeParams: 1 << 8,
  kernelNodeAttributes: 1 << 9,
  handles: 1 << 10,
  memAllocNodeParams: 1 << 11,
  memFreeNodeParams: 1 << 12,
  batchMemOpNodeParams: 1 << 13,
  extraTopoInfo: 1 << 14,
  conditionalNodeParams: 1 << 15,
} as const;

/** Other driver constants cudagraph passes (values from cuda.h). */
export const CU = {
  STREAM_NON_BLOCKING: 1,
  EVENT_DISABLE_TIMING: 2,
  MEMHOSTREGISTER_PORTABLE: 1,
  MEMHOSTREGISTER_DEVICEMAP: 2,
  DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 16,
  DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 75,
  DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 76,
  DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: 115,
  /** `CU_MEM_ALLOCATION_TYPE_PINNED`, the only allocation type a memory pool takes. */
  MEM_ALLOCATION_TYPE_PINNED: 1,
  /** `CU_MEM_LOCATION_TYPE_DEVICE`: `CUmemLocation.id` is a device ordinal. */
  MEM_LOCATION_TYPE_DEVICE: 1,
  POINTER_ATTRIBUTE_MEMORY_TYPE: 2,
  JIT_INFO_LOG_BUFFER: 3,
  JIT_INFO_LOG_BUFFER_SIZE_BYTES: 4,
  JIT_ERROR_LOG_BUFFER: 5,
  JIT_ERROR_LOG_BUFFER_SIZE_BYTES: 6,
  GRAPH_DEBUG_DOT_FLAGS_VERBOSE: 1,
  /** `CU_STREAM_LEGACY`, the legacy NULL stream's special handle. */
  STREAM_LEGACY: 1n,
  /** `CU_STREAM_PER_THREAD`. */
  STREAM_PER_THREAD: 2n,
} as const;
