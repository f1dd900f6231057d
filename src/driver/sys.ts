/**
 * The raw CUDA driver and NVRTC declarations: one koffi prototype per C entry point, no policy.
 * This is the only file that touches koffi's untyped function objects; everything above it sees
 * the typed `DriverApi` / `NvrtcApi` signatures.
 *
 * Versioned ABIs: cuda.h maps public names to versioned symbols with macros
 * (`#define cuStreamBeginCapture __CUDA_API_PTSZ(cuStreamBeginCapture_v2)`), so a plain
 * `dlsym("cuStreamBeginCapture")` returns the legacy ABI. Every name below is the symbol the
 * CUDA 13.0 header's macros resolve to (default-stream build, no `_ptsz`/`_ptds`); the CPU test
 * `test/driver/header.test.ts` checks each against /usr/local/cuda/include/cuda.h.
 *
 * Symbols resolve lazily, one by one, on first use: a symbol missing from an older driver fails
 * that call alone, with `CUDA_ERROR_NOT_SUPPORTED` (801) naming the symbol.
 *
 * Conventions of the prototypes: handles (`CUstream`, `CUgraph`, …) and out-parameters are
 * `void *` (JS passes a bigint handle, or a TypedArray whose memory receives the result);
 * `CUdeviceptr` is `uint64_t`; `CUresult`/`nvrtcResult` and C enums are `int`.
 */
import { CudaError, NvrtcError } from '../errors/cuda-error.js';
import { koffi, type KoffiLibrary } from './koffi.js';
import {
  driverCandidates,
  nvrtcCandidates,
  loadFirst,
  describeAttempts,
  DRIVER_ADVICE,
  NVRTC_ADVICE,
  type LoadAttempt,
  type LoadedLibrary,
  type LibraryCandidate,
} from './loader.js';
import { nativeAddon, type HotAddon, type HotSymbol } from './native.js';
import { gate, passGate, type HostWait } from './host-gate.js';

/** An opaque driver handle (`CUstream`, `CUevent`, `CUgraph`, …): a bigint address, or null. */
export type Handle = bigint | null;
/** Host memory passed to C: a TypedArray/Buffer (its bytes), a raw bigint address, or null. */
export type HostPtr = ArrayBufferView | bigint | null;
/** A device address (`CUdeviceptr`, 64-bit). */
export type DevicePtr = bigint;

/** The CUDA driver entry points cudagraph binds, with the versioned symbol names of CUDA 13.0. */
export interface DriverApi {
  cuInit(flags: number): number;
  cuDriverGetVersion(version: HostPtr): number;
  cuGetErrorName(error: number, str: HostPtr): number;
  cuGetErrorString(error: number, str: HostPtr): number;
  cuDeviceGetCount(count: HostPtr): number;
  cuDeviceGet(device: HostPtr, ordinal: number): number;
  cuDeviceGetName(name: HostPtr, len: number, dev: number): number;
  cuDeviceGetAttribute(value: HostPtr, attrib: number, dev: number): number;
  cuDeviceTotalMem_v2(bytes: HostPtr, dev: number): number;
  cuDevicePrimaryCtxRetain(ctx: HostPtr, dev: number): number;
  cuDevicePrimaryCtxRelease_v2(dev: number): number;
  cuCtxSetCurrent(ctx: Handle): number;
  cuCtxGetCurrent(ctx: HostPtr): number;
  cuCtxPushCurrent_v2(ctx: Handle): number;
  cuCtxPopCurrent_v2(ctx: HostPtr): number;
  cuCtxSynchronize(): number;
  cuCtxGetStreamPriorityRange(least: HostPtr, greatest: HostPtr): number;
  cuMemGetInfo_v2(free: HostPtr, total: HostPtr): number;
  cuStreamCreateWithPriority(stream: HostPtr, flags: number, priority: number): number;
  cuStreamDestroy_v2(stream: Handle): number;
  cuStreamSynchronize(stream: Handle): number;
  cuStreamQuery(stream: Handle): number;
  cuStreamWaitEvent(stream: Handle, event: Handle, flags: number): number;
  cuStreamBeginCapture_v2(stream: Handle, mode: number): number;
  cuStreamEndCapture(stream: Handle, graph: HostPtr): number;
  cuStreamIsCapturing(stream: Handle, status: HostPtr): number;
  cuStreamGetCaptureInfo_v3(
    stream: Handle,
    status: HostPtr,
    id: HostPtr,
    graph: HostPtr,
    deps: HostPtr,
    edgeData: HostPtr,
    numDeps: HostPtr,
  ): number;
  cuThreadExchangeStreamCaptureMode(mode: HostPtr): number;
  cuLaunchHostFunc(stream: Handle, fn: Handle, userData: Handle): number;
  cuEventCreate(event: HostPtr, flags: number): number;
  cuEventDestroy_v2(event: Handle): number;
  cuEventRecord(event: Handle, stream: Handle): number;
  cuEventQuery(event: Handle): number;
  cuEventSynchronize(event: Handle): number;
  cuEventElapsedTime_v2(ms: HostPtr, start: Handle, end: Handle): number;
  cuMemAlloc_v2(dptr: HostPtr, bytes: number): number;
  cuMemFree_v2(dptr: DevicePtr): number;
  cuMemAllocAsync(dptr: HostPtr, bytes: number, stream: Handle): number;
  cuMemFreeAsync(dptr: DevicePtr, stream: Handle): number;
  cuMemAllocFromPoolAsync(dptr: HostPtr, bytes: number, pool: Handle, stream: Handle): number;
  cuMemPoolCreate(pool: HostPtr, props: HostPtr): number;
  cuMemPoolDestroy(pool: Handle): number;
  cuMemPoolTrimTo(pool: Handle, minBytesToKeep: number): number;
  cuMemPoolGetAttribute(pool: Handle, attr: number, value: HostPtr): number;
  cuMemPoolSetAttribute(pool: Handle, attr: number, value: HostPtr): number;
  cuMemsetD8Async(dst: DevicePtr, value: number, count: number, stream: Handle): number;
  cuMemsetD16Async(dst: DevicePtr, value: number, count: number, stream: Handle): number;
  cuMemsetD32Async(dst: DevicePtr, value: number, count: number, stream: Handle): number;
  cuMemcpyHtoDAsync_v2(dst: DevicePtr, src: HostPtr, bytes: number, stream: Handle): number;
  cuMemcpyDtoHAsync_v2(dst: HostPtr, src: DevicePtr, bytes: number, stream: Handle): number;
  cuMemcpyDtoDAsync_v2(dst: DevicePtr, src: DevicePtr, bytes: number, stream: Handle): number;
  cuMemcpyHtoD_v2(dst: DevicePtr, src: HostPtr, bytes: number): number;
  cuMemcpyDtoH_v2(dst: HostPtr, src: DevicePtr, bytes: number): number;
  cuMemHostRegister_v2(ptr: HostPtr, bytes: number, flags: number): number;
  cuMemHostUnregister(ptr: HostPtr): number;
  cuPointerGetAttribute(data: HostPtr, attribute: number, ptr: DevicePtr): number;
  cuModuleLoadDataEx(module: HostPtr, image: HostPtr, numOptions: number, options: HostPtr, values: HostPtr): number;
  cuModuleUnload(module: Handle): number;
  cuModuleGetFunction(fn: HostPtr, module: Handle, name: string): number;
  cuFuncGetName(name: HostPtr, fn: Handle): number;
  cuKernelGetName(name: HostPtr, kernel: Handle): number;
  cuFuncGetParamInfo(fn: Handle, index: number, offset: HostPtr, size: HostPtr): number;
  cuLaunchKernel(
    fn: Handle,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedMem: number,
    stream: Handle,
    params: HostPtr,
    extra: HostPtr,
  ): number;
  cuGraphCreate(graph: HostPtr, flags: number): number;
  cuGraphDestroy(graph: Handle): number;
  cuGraphGetNodes(graph: Handle, nodes: HostPtr, count: HostPtr): number;
  cuGraphGetEdges_v2(graph: Handle, from: HostPtr, to: HostPtr, edgeData: HostPtr, count: HostPtr): number;
  cuGraphNodeGetType(node: Handle, type: HostPtr): number;
  cuGraphKernelNodeGetParams_v2(node: Handle, params: HostPtr): number;
  cuGraphMemcpyNodeGetParams(node: Handle, params: HostPtr): number;
  cuGraphMemsetNodeGetParams(node: Handle, params: HostPtr): number;
  cuGraphInstantiateWithFlags(exec: HostPtr, graph: Handle, flags: bigint): number;
  cuGraphInstantiateWithParams(exec: HostPtr, graph: Handle, params: HostPtr): number;
  cuGraphExecDestroy(exec: Handle): number;
  cuGraphLaunch(exec: Handle, stream: Handle): number;
  cuGraphUpload(exec: Handle, stream: Handle): number;
  cuGraphExecUpdate_v2(exec: Handle, graph: Handle, resultInfo: HostPtr): number;
  cuGraphExecKernelNodeSetParams_v2(exec: Handle, node: Handle, params: HostPtr): number;
  cuGraphDebugDotPrint(graph: Handle, path: string, flags: number): number;
  // Explicit graph construction (lowering a ComputeGraph), appended after the capture calls.
  cuGraphAddKernelNode_v2(node: HostPtr, graph: Handle, deps: HostPtr, numDeps: number, params: HostPtr): number;
  cuGraphAddMemcpyNode(node: HostPtr, graph: Handle, deps: HostPtr, numDeps: number, params: HostPtr, ctx: Handle): number;
  cuGraphAddMemsetNode(node: HostPtr, graph: Handle, deps: HostPtr, numDeps: number, params: HostPtr, ctx: Handle): number;
  cuGraphAddHostNode(node: HostPtr, graph: Handle, deps: HostPtr, numDeps: number, params: HostPtr): number;
  cuGraphAddEmptyNode(node: HostPtr, graph: Handle, deps: HostPtr, numDeps: number): number;
  cuGraphAddDependencies_v2(graph: Handle, from: HostPtr, to: HostPtr, edgeData: HostPtr, count: number): number;
  cuGraphHostNodeGetParams(node: Handle, params: HostPtr): number;
}

/** A driver symbol cudagraph binds. */
export type DriverSymbol = keyof DriverApi;

/**
 * The koffi prototype of every bound symbol. Parameter names follow cuda.h; types follow the
 * conventions in the file comment.
 */
export const DRIVER_PROTOTYPES: { readonly [K in DriverSymbol]: string } = {
  cuInit: 'int cuInit(unsigned int Flags)',
  cuDriverGetVersion: 'int cuDriverGetVersion(void *driverVersion)',
  cuGetErrorName: 'int cuGetErrorName(int error, void *pStr)',
  cuGetErrorString: 'int cuGetErrorString(int error, void *pStr)',
  cuDeviceGetCount: 'int cuDeviceGetCount(void *count)',
  cuDeviceGet: 'int cuDeviceGet(void *device, int ordinal)',
  cuDeviceGetName: 'int cuDeviceGetName(void *name, int len, int dev)',
  cuDeviceGetAttribute: 'int cuDeviceGetAttribute(void *pi, int attrib, int dev)',
  cuDeviceTotalMem_v2: 'int cuDeviceTotalMem_v2(void *bytes, int dev)',
  cuDevicePrimaryCtxRetain: 'int cuDevicePrimaryCtxRetain(void *pctx, int dev)',
  cuDevicePrimaryCtxRelease_v2: 'int cuDevicePrimaryCtxRelease_v2(int dev)',
  cuCtxSetCurrent: 'int cuCtxSetCurrent(void *ctx)',
  cuCtxGetCurrent: 'int cuCtxGetCurrent(void *pctx)',
  cuCtxPushCurrent_v2: 'int cuCtxPushCurrent_v2(void *ctx)',
  cuCtxPopCurrent_v2: 'int cuCtxPopCurrent_v2(void *pctx)',
  cuCtxSynchronize: 'int cuCtxSynchronize()',
  cuCtxGetStreamPriorityRange: 'int cuCtxGetStreamPriorityRange(void *leastPriority, void *greatestPriority)',
  cuMemGetInfo_v2: 'int cuMemGetInfo_v2(void *free, void *total)',
  cuStreamCreateWithPriority: 'int cuStreamCreateWithPriority(void *phStream, unsigned int flags, int priority)',
  cuStreamDestroy_v2: 'int cuStreamDestroy_v2(void *hStream)',
  cuStreamSynchronize: 'int cuStreamSynchronize(void *hStream)',
  cuStreamQuery: 'int cuStreamQuery(void *hStream)',
  cuStreamWaitEvent: 'int cuStreamWaitEvent(void *hStream, void *hEvent, unsigned int Flags)',
  cuStreamBeginCapture_v2: 'int cuStreamBeginCapture_v2(void *hStream, int mode)',
  cuStreamEndCapture: 'int cuStreamEndCapture(void *hStream, void *phGraph)',
  cuStreamIsCapturing: 'int cuStreamIsCapturing(void *hStream, void *captureStatus)',
  cuStreamGetCaptureInfo_v3:
    'int cuStreamGetCaptureInfo_v3(void *hStream, void *captureStatus_out, void *id_out, void *graph_out, void *dependencies_out, void *edgeData_out, void *numDependencies_out)',
  cuThreadExchangeStreamCaptureMode: 'int cuThreadExchangeStreamCaptureMode(void *mode)',
  cuLaunchHostFunc: 'int cuLaunchHostFunc(void *hStream, void *fn, void *userData)',
  cuEventCreate: 'int cuEventCreate(void *phEvent, unsigned int Flags)',
  cuEventDestroy_v2: 'int cuEventDestroy_v2(void *hEvent)',
  cuEventRecord: 'int cuEventRecord(void *hEvent, void *hStream)',
  cuEventQuery: 'int cuEventQuery(void *hEvent)',
  cuEventSynchronize: 'int cuEventSynchronize(void *hEvent)',
  cuEventElapsedTime_v2: 'int cuEventElapsedTime_v2(void *pMilliseconds, void *hStart, void *hEnd)',
  cuMemAlloc_v2: 'int cuMemAlloc_v2(void *dptr, size_t bytesize)',
  cuMemFree_v2: 'int cuMemFree_v2(uint64_t dptr)',
  cuMemAllocAsync: 'int cuMemAllocAsync(void *dptr, size_t bytesize, void *hStream)',
  cuMemFreeAsync: 'int cuMemFreeAsync(uint64_t dptr, void *hStream)',
  cuMemAllocFromPoolAsync: 'int cuMemAllocFromPoolAsync(void *dptr, size_t bytesize, void *pool, void *hStream)',
  cuMemPoolCreate: 'int cuMemPoolCreate(void *pool, const void *poolProps)',
  cuMemPoolDestroy: 'int cuMemPoolDestroy(void *pool)',
  cuMemPoolTrimTo: 'int cuMemPoolTrimTo(void *pool, size_t minBytesToKeep)',
  cuMemPoolGetAttribute: 'int cuMemPoolGetAttribute(void *pool, int attr, void *value)',
  cuMemPoolSetAttribute: 'int cuMemPoolSetAttribute(void *pool, int attr, void *value)',
  cuMemsetD8Async: 'int cuMemsetD8Async(uint64_t dstDevice, uint8_t uc, size_t N, void *hStream)',
  cuMemsetD16Async: 'int cuMemsetD16Async(uint64_t dstDevice, uint16_t us, size_t N, void *hStream)',
  cuMemsetD32Async: 'int cuMemsetD32Async(uint64_t dstDevice, uint32_t ui, size_t N, void *hStream)',
  cuMemcpyHtoDAsync_v2: 'int cuMemcpyHtoDAsync_v2(uint64_t dstDevice, const void *srcHost, size_t ByteCount, void *hStream)',
  cuMemcpyDtoHAsync_v2: 'int cuMemcpyDtoHAsync_v2(void *dstHost, uint64_t srcDevice, size_t ByteCount, void *hStream)',
  cuMemcpyDtoDAsync_v2:
    'int cuMemcpyDtoDAsync_v2(uint64_t dstDevice, uint64_t srcDevice, size_t ByteCount, void *hStream)',
  cuMemcpyHtoD_v2: 'int cuMemcpyHtoD_v2(uint64_t dstDevice, const void *srcHost, size_t ByteCount)',
  cuMemcpyDtoH_v2: 'int cuMemcpyDtoH_v2(void *dstHost, uint64_t srcDevice, size_t ByteCount)',
  cuMemHostRegister_v2: 'int cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)',
  cuMemHostUnregister: 'int cuMemHostUnregister(void *p)',
  cuPointerGetAttribute: 'int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr)',
  cuModuleLoadDataEx:
    'int cuModuleLoadDataEx(void *module, const void *image, unsigned int numOptions, void *options, void *optionValues)',
  cuModuleUnload: 'int cuModuleUnload(void *hmod)',
  cuModuleGetFunction: 'int cuModuleGetFunction(void *hfunc, void *hmod, const char *name)',
  cuFuncGetName: 'int cuFuncGetName(void *name, void *hfunc)',
  cuKernelGetName: 'int cuKernelGetName(void *name, void *hfunc)',
  cuFuncGetParamInfo: 'int cuFuncGetParamInfo(void *func, size_t paramIndex, void *paramOffset, void *paramSize)',
  cuLaunchKernel:
    'int cuLaunchKernel(void *f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, void *hStream, void *kernelParams, void *extra)',
  cuGraphCreate: 'int cuGraphCreate(void *phGraph, unsigned int flags)',
  cuGraphDestroy: 'int cuGraphDestroy(void *hGraph)',
  cuGraphGetNodes: 'int cuGraphGetNodes(void *hGraph, void *nodes, void *numNodes)',
  cuGraphGetEdges_v2: 'int cuGraphGetEdges_v2(void *hGraph, void *from, void *to, void *edgeData, void *numEdges)',
  cuGraphNodeGetType: 'int cuGraphNodeGetType(void *hNode, void *type)',
  cuGraphKernelNodeGetParams_v2: 'int cuGraphKernelNodeGetParams_v2(void *hNode, void *nodeParams)',
  cuGraphMemcpyNodeGetParams: 'int cuGraphMemcpyNodeGetParams(void *hNode, void *nodeParams)',
  cuGraphMemsetNodeGetParams: 'int cuGraphMemsetNodeGetParams(void *hNode, void *nodeParams)',
  cuGraphInstantiateWithFlags: 'int cuGraphInstantiateWithFlags(void *phGraphExec, void *hGraph, uint64_t flags)',
  cuGraphInstantiateWithParams: 'int cuGraphInstantiateWithParams(void *phGraphExec, void *hGraph, void *instantiateParams)',
  cuGraphExecDestroy: 'int cuGraphExecDestroy(void *hGraphExec)',
  cuGraphLaunch: 'int cuGraphLaunch(void *hGraphExec, void *hStream)',
  cuGraphUpload: 'int cuGraphUpload(void *hGraphExec, void *hStream)',
  cuGraphExecUpdate_v2: 'int cuGraphExecUpdate_v2(void *hGraphExec, void *hGraph, void *resultInfo)',
  cuGraphExecKernelNodeSetParams_v2:
    'int cuGraphExecKernelNodeSetParams_v2(void *hGraphExec, void *hNode, const void *nodeParams)',
  cuGraphDebugDotPrint: 'int cuGraphDebugDotPrint(void *hGraph, const char *path, unsigned int flags)',
  cuGraphAddKernelNode_v2:
    'int cuGraphAddKernelNode_v2(void *phGraphNode, void *hGraph, void *dependencies, size_t numDependencies, void *nodeParams)',
  cuGraphAddMemcpyNode:
    'int cuGraphAddMemcpyNode(void *phGraphNode, void *hGraph, void *dependencies, size_t numDependencies, void *copyParams, void *ctx)',
  cuGraphAddMemsetNode:
    'int cuGraphAddMemsetNode(void *phGraphNode, void *hGraph, void *dependencies, size_t numDependencies, void *memsetParams, void *ctx)',
  cuGraphAddHostNode:
    'int cuGraphAddHostNode(void *phGraphNode, void *hGraph, void *dependencies, size_t numDependencies, void *nodeParams)',
  cuGraphAddEmptyNode: 'int cuGraphAddEmptyNode(void *phGraphNode, void *hGraph, void *dependencies, size_t numDependencies)',
  cuGraphAddDependencies_v2:
    'int cuGraphAddDependencies_v2(void *hGraph, void *from, void *to, void *edgeData, size_t numDependencies)',
  cuGraphHostNodeGetParams: 'int cuGraphHostNodeGetParams(void *hNode, void *nodeParams)',
};

/**
 * How each bound entry point behaves while a JS host function blocks a stream: `'gpu'` can wait
 * for GPU work (refused while a host call is in flight), `'queue'` enqueues work (counted, refused
 * past the queue limit), `'none'` returns at once (host-gate.ts). Measured on the CUDA 13.0 driver
 * by test/gpu/fixtures/host-block-probe.c; the GPU test compares the probe with this table.
 * The copies between device and host memory are `'queue'` here because, from pinned memory, they
 * are; from pageable memory they can wait for the GPU, and their callers pass the gate as `'gpu'`.
 */
export const DRIVER_WAITS: { readonly [K in DriverSymbol]: HostWait } = {
  cuInit: 'none',
  cuDriverGetVersion: 'none',
  cuGetErrorName: 'none',
  cuGetErrorString: 'none',
  cuDeviceGetCount: 'none',
  cuDeviceGet: 'none',
  cuDeviceGetName: 'none',
  cuDeviceGetAttribute: 'none',
  cuDeviceTotalMem_v2: 'none',
  cuDevicePrimaryCtxRetain: 'none',
  cuDevicePrimaryCtxRelease_v2: 'none',
  cuCtxSetCurrent: 'none',
  cuCtxGetCurrent: 'none',
  cuCtxPushCurrent_v2: 'none',
  cuCtxPopCurrent_v2: 'none',
  cuCtxSynchronize: 'gpu',
  cuCtxGetStreamPriorityRange: 'none',
  cuMemGetInfo_v2: 'none',
  cuStreamCreateWithPriority: 'none',
  cuStreamDestroy_v2: 'none',
  cuStreamSynchronize: 'gpu',
  cuStreamQuery: 'none',
  cuStreamWaitEvent: 'queue',
  cuStreamBeginCapture_v2: 'none',
  cuStreamEndCapture: 'none',
  cuStreamIsCapturing: 'none',
  cuStreamGetCaptureInfo_v3: 'none',
  cuThreadExchangeStreamCaptureMode: 'none',
  cuLaunchHostFunc: 'queue',
  cuEventCreate: 'none',
  cuEventDestroy_v2: 'none',
  cuEventRecord: 'queue',
  cuEventQuery: 'none',
  cuEventSynchronize: 'gpu',
  cuEventElapsedTime_v2: 'none',
  cuMemAlloc_v2: 'none',
  cuMemFree_v2: 'gpu',
  cuMemAllocAsync: 'queue',
  cuMemFreeAsync: 'queue',
  cuMemAllocFromPoolAsync: 'queue',
  cuMemPoolCreate: 'none',
  cuMemPoolDestroy: 'none',
  cuMemPoolTrimTo: 'none',
  cuMemPoolGetAttribute: 'none',
  cuMemPoolSetAttribute: 'none',
  cuMemsetD8Async: 'queue',
  cuMemsetD16Async: 'queue',
  cuMemsetD32Async: 'queue',
  cuMemcpyHtoDAsync_v2: 'queue',
  cuMemcpyDtoHAsync_v2: 'queue',
  cuMemcpyDtoDAsync_v2: 'queue',
  cuMemcpyHtoD_v2: 'gpu',
  cuMemcpyDtoH_v2: 'gpu',
  cuMemHostRegister_v2: 'none',
  cuMemHostUnregister: 'gpu',
  cuPointerGetAttribute: 'none',
  cuModuleLoadDataEx: 'gpu',
  cuModuleUnload: 'gpu',
  cuModuleGetFunction: 'none',
  cuFuncGetName: 'none',
  cuKernelGetName: 'none',
  cuFuncGetParamInfo: 'none',
  cuLaunchKernel: 'queue',
  cuGraphCreate: 'none',
  cuGraphDestroy: 'none',
  cuGraphGetNodes: 'none',
  cuGraphGetEdges_v2: 'none',
  cuGraphNodeGetType: 'none',
  cuGraphKernelNodeGetParams_v2: 'none',
  cuGraphMemcpyNodeGetParams: 'none',
  cuGraphMemsetNodeGetParams: 'none',
  cuGraphInstantiateWithFlags: 'none',
  cuGraphInstantiateWithParams: 'none',
  cuGraphExecDestroy: 'none',
  cuGraphLaunch: 'queue',
  cuGraphUpload: 'queue',
  cuGraphExecUpdate_v2: 'none',
  cuGraphExecKernelNodeSetParams_v2: 'none',
  cuGraphDebugDotPrint: 'none',
  cuGraphAddKernelNode_v2: 'none',
  cuGraphAddMemcpyNode: 'none',
  cuGraphAddMemsetNode: 'none',
  cuGraphAddHostNode: 'none',
  cuGraphAddEmptyNode: 'none',
  cuGraphAddDependencies_v2: 'none',
  cuGraphHostNodeGetParams: 'none',
};

/** The NVRTC entry points cudagraph binds (nvrtc.h; NVRTC has no versioned symbols). */
export interface NvrtcApi {
  nvrtcVersion(major: HostPtr, minor: HostPtr): number;
  nvrtcGetErrorString(result: number): string;
  nvrtcCreateProgram(
    prog: HostPtr,
    src: string,
    name: string,
    numHeaders: number,
    headers: HostPtr,
    includeNames: HostPtr,
  ): number;
  nvrtcDestroyProgram(prog: HostPtr): number;
  nvrtcCompileProgram(prog: Handle, numOptions: number, options: readonly string[] | null): number;
  nvrtcGetProgramLogSize(prog: Handle, size: HostPtr): number;
  nvrtcGetProgramLog(prog: Handle, log: HostPtr): number;
  nvrtcGetPTXSize(prog: Handle, size: HostPtr): number;
  nvrtcGetPTX(prog: Handle, ptx: HostPtr): number;
  nvrtcGetCUBINSize(prog: Handle, size: HostPtr): number;
  nvrtcGetCUBIN(prog: Handle, cubin: HostPtr): number;
  nvrtcAddNameExpression(prog: Handle, name: string): number;
  nvrtcGetLoweredName(prog: Handle, name: string, lowered: HostPtr): number;
}

/** An NVRTC symbol cudagraph binds. */
export type NvrtcSymbol = keyof NvrtcApi;

/** The koffi prototype of every bound NVRTC symbol (nvrtc.h). */
export const NVRTC_PROTOTYPES: { readonly [K in NvrtcSymbol]: string } = {
  nvrtcVersion: 'int nvrtcVersion(void *major, void *minor)',
  nvrtcGetErrorString: 'const char *nvrtcGetErrorString(int result)',
  nvrtcCreateProgram:
    'int nvrtcCreateProgram(void *prog, const char *src, const char *name, int numHeaders, void *headers, void *includeNames)',
  nvrtcDestroyProgram: 'int nvrtcDestroyProgram(void *prog)',
  nvrtcCompileProgram: 'int nvrtcCompileProgram(void *prog, int numOptions, const char **options)',
  nvrtcGetProgramLogSize: 'int nvrtcGetProgramLogSize(void *prog, void *logSizeRet)',
  nvrtcGetProgramLog: 'int nvrtcGetProgramLog(void *prog, void *log)',
  nvrtcGetPTXSize: 'int nvrtcGetPTXSize(void *prog, void *ptxSizeRet)',
  nvrtcGetPTX: 'int nvrtcGetPTX(void *prog, void *ptx)',
  nvrtcGetCUBINSize: 'int nvrtcGetCUBINSize(void *prog, void *cubinSizeRet)',
  nvrtcGetCUBIN: 'int nvrtcGetCUBIN(void *prog, void *cubin)',
  nvrtcAddNameExpression: 'int nvrtcAddNameExpression(void *prog, const char *name_expression)',
  nvrtcGetLoweredName: 'int nvrtcGetLoweredName(void *prog, const char *name_expression, void *lowered_name)',
};

/** A koffi function's asynchronous form: runs the call on a worker thread, then calls back. */
export type AsyncCall = (...args: [...unknown[], (err: unknown, result: number) => void]) => void;

interface KoffiFunction {
  (...args: unknown[]): unknown;
  async: AsyncCall;
}

/**
 * A lazily bound library: symbols resolved on first use, failures remembered. Also used by the
 * NCCL binding (`src/nccl/sys.ts`). @internal
 */
export class LazyLibrary {
  readonly #resolved = new Map<string, KoffiFunction>();
  readonly #missing = new Map<string, string>();

  constructor(
    readonly lib: KoffiLibrary,
    readonly path: string,
    private readonly prototypes: Readonly<Record<string, string>>,
  ) {}

  /** The function, or the loader's message when the symbol is missing. */
  resolve(name: string): KoffiFunction | string {
    const hit = this.#resolved.get(name);
    if (hit !== undefined) return hit;
    const miss = this.#missing.get(name);
    if (miss !== undefined) return miss;
    const proto = this.prototypes[name];
    if (proto === undefined) return `no prototype is declared for ${name}`;
    try {
      const fn = this.lib.func(proto) as KoffiFunction;
      this.#resolved.set(name, fn);
      return fn;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.#missing.set(name, why);
      return why;
    }
  }
}

/**
 * One library loaded on first use: the first candidate that loads wins; a failure is remembered
 * (the attempts), so later calls fail fast with the same list. Also used by the NCCL binding. @internal
 */
export class LibrarySlot {
  lib: LazyLibrary | null = null;
  attempts: readonly LoadAttempt[] | null = null;

  constructor(
    private readonly candidates: () => readonly LibraryCandidate[],
    private readonly prototypes: Readonly<Record<string, string>>,
    private readonly fail: (op: string, attempts: readonly LoadAttempt[], cause?: unknown) => Error,
  ) {}

  get(op: string): LazyLibrary {
    if (this.lib !== null) return this.lib;
    if (this.attempts !== null) throw this.fail(op, this.attempts);
    let outcome;
    try {
      outcome = loadFirst(this.candidates(), loadOverride ?? undefined);
    } catch (e) {
      // koffi itself failed to load: there is no FFI, hence no library.
      this.attempts = [{ path: 'koffi', source: 'the FFI module', error: e instanceof Error ? e.message : String(e) }];
      throw this.fail(op, this.attempts, e);
    }
    if (!outcome.ok) {
      this.attempts = outcome.attempts;
      throw this.fail(op, outcome.attempts);
    }
    this.lib = new LazyLibrary(outcome.loaded.lib, outcome.loaded.path, this.prototypes);
    return this.lib;
  }

  reset(): void {
    this.lib = null;
    this.attempts = null;
  }
}

let loadOverride: ((path: string) => KoffiLibrary) | null = null;

function loaderError(op: string, attempts: readonly LoadAttempt[], cause?: unknown): CudaError {
  return new CudaError({
    code: 3,
    operation: op,
    description: 'the CUDA driver library (libcuda) is not available, so the driver cannot be initialized',
    detail: describeAttempts('The CUDA driver library', attempts, DRIVER_ADVICE),
    details: { tried: attempts.map((a) => a.path).join(', ') },
    cause,
  });
}

const driverSlot = new LibrarySlot(() => driverCandidates(), DRIVER_PROTOTYPES, loaderError);

/** The loaded driver library, loading it on first use. @throws CudaError 3 listing every attempt. */
function driver(op: string): LazyLibrary {
  return driverSlot.lib ?? driverSlot.get(op);
}

/** Where the driver was loaded from, or null when it is not loaded (yet, or at all). */
export function driverLibraryPath(): string | null {
  return driverSlot.lib?.path ?? null;
}

/**
 * Whether the driver library loads here (loads it on first call). Never throws.
 * @returns `{ ok: true, path }` or `{ ok: false, error }` (the CudaError that calls would throw).
 */
export function probeDriver(): { ok: true; path: string } | { ok: false; error: CudaError } {
  try {
    return { ok: true, path: driver('probeDriver').path };
  } catch (e) {
    return { ok: false, error: e as CudaError };
  }
}

function missingSymbol(op: string, lib: LazyLibrary, name: string, why: string): CudaError {
  let version = '';
  const v = lib.resolve('cuDriverGetVersion');
  if (typeof v !== 'string') {
    const out = new Int32Array(1);
    if (v(out) === 0) version = ` (driver reports CUDA ${Math.floor(out[0]! / 1000)}.${(out[0]! % 1000) / 10})`;
  }
  return new CudaError({
    code: 801,
    operation: op,
    driverCall: name,
    detail: `The symbol ${name} is missing from ${lib.path}${version}: this driver predates the call. Update the NVIDIA driver. (${why})`,
    details: { symbol: name },
  });
}

let symbolObserver: ((name: DriverSymbol) => void) | null = null;

/**
 * Test hook: `observer` is told the name of every driver function fetched through `driverSymbol`
 * (null removes it). Calls whose function the result layer caches after the first fetch (the
 * launch hot paths) are seen once; every other call fetches its function each time, so the count
 * of a name is the number of calls made to it.
 * @internal
 */
export function observeDriverSymbols(observer: ((name: DriverSymbol) => void) | null): void {
  symbolObserver = observer;
}

/**
 * The driver function `name`, resolved on first use.
 * While a JS host call is in flight, the call passes the host-call gate first (host-gate.ts).
 * @throws CudaError 3 when no driver library loads (the message lists every path tried);
 *   CudaError 801 `CUDA_ERROR_NOT_SUPPORTED` naming the symbol when this driver lacks it;
 *   HostCallbackError `ERR_HOST_CALL_PENDING` when the call could wait for ever behind a host call.
 */
export function driverSymbol<K extends DriverSymbol>(op: string, name: K): DriverApi[K] {
  if (symbolObserver !== null) symbolObserver(name);
  if (gate.calls !== 0) passGate(op, name, DRIVER_WAITS[name]);
  const lib = driver(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') throw missingSymbol(op, lib, name, fn);
  return fn as unknown as DriverApi[K];
}

/** Driver functions bound into the addon from the loaded library: true bound, false no address. */
const nativeBindings = new Map<HotSymbol, boolean>();

/**
 * Binds driver function `name` into the Node-API addon with the address the loaded library
 * resolved (the same function koffi calls). Resolves the symbol as `driverSymbol` does, so a missing
 * driver or symbol throws the same errors. Returns false when the library gives no address (koffi
 * must make the call); the outcome is remembered.
 * @throws CudaError 3 when no driver library loads; CudaError 801 when this driver lacks `name`.
 */
export function bindNativeSymbol(op: string, addon: HotAddon, name: HotSymbol): boolean {
  const known = nativeBindings.get(name);
  if (known !== undefined) return known;
  const lib = driver(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') throw missingSymbol(op, lib, name, fn);
  let address: unknown = null;
  try {
    address = (lib.lib as { symbol?: (n: string) => unknown }).symbol?.(name);
  } catch {
    address = null;
  }
  const bound = typeof address === 'bigint' && address !== 0n && addon.bind(name, address);
  nativeBindings.set(name, bound);
  return bound;
}

/** The asynchronous form of a driver function: the call runs on one of koffi's worker threads. */
export function driverSymbolAsync(op: string, name: DriverSymbol): AsyncCall {
  const lib = driver(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') throw missingSymbol(op, lib, name, fn);
  return fn.async;
}

/** Whether this driver exports `name` (loads the driver; false when no driver loads). */
export function hasDriverSymbol(name: DriverSymbol): boolean {
  try {
    return typeof driver('hasDriverSymbol').resolve(name) !== 'string';
  } catch {
    return false;
  }
}

function nvrtcLoaderError(op: string, attempts: readonly LoadAttempt[], cause?: unknown): NvrtcError {
  return new NvrtcError(
    op,
    'NVRTC_NOT_LOADED',
    -1,
    describeAttempts('NVRTC (the CUDA run-time compiler, libnvrtc)', attempts, NVRTC_ADVICE),
    '',
    { cause },
  );
}

const nvrtcSlot = new LibrarySlot(() => nvrtcCandidates(), NVRTC_PROTOTYPES, nvrtcLoaderError);

/** Where NVRTC was loaded from, or null. */
export function nvrtcLibraryPath(): string | null {
  return nvrtcSlot.lib?.path ?? null;
}

/**
 * The NVRTC function `name`, resolved on first use.
 * @throws NvrtcError `NVRTC_NOT_LOADED` listing every path tried, or naming the missing symbol.
 */
export function nvrtcSymbol<K extends NvrtcSymbol>(op: string, name: K): NvrtcApi[K] {
  const lib = nvrtcSlot.get(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') {
    throw new NvrtcError(op, 'NVRTC_NOT_LOADED', -1, `the symbol ${name} is missing from ${lib.path} (${fn})`);
  }
  return fn as unknown as NvrtcApi[K];
}

const resetListeners: Array<() => void> = [];

/**
 * Registers `forget`, called when the test hook below forgets the loaded libraries: modules that
 * keep a resolved function for their hot path drop it there. @internal
 */
export function onLibrariesReset(forget: () => void): void {
  resetListeners.push(forget);
}

/**
 * Test hook: forget the loaded libraries and load through `load` instead of koffi (null restores
 * koffi). Lets CPU tests drive the loader's failure path and the lazy-symbol path without a GPU.
 * @internal
 */
export function resetLibrariesForTesting(load: ((path: string) => KoffiLibrary) | null): void {
  driverSlot.reset();
  nvrtcSlot.reset();
  loadOverride = load;
  // Addresses bound into the addon belong to the library just forgotten.
  const addon = nativeAddon();
  for (const name of nativeBindings.keys()) addon?.bind(name, 0n);
  nativeBindings.clear();
  for (const forget of resetListeners) forget();
}

let hostFnType: ReturnType<ReturnType<typeof koffi>['pointer']> | null = null;

/**
 * Registers `fn` with koffi as a C `CUhostFn` (`void fn(void *userData)`) and returns its function
 * pointer, for `cuLaunchHostFunc` and host graph nodes. The driver calls it on one of its own
 * threads; koffi queues the call to the JS thread and blocks that driver thread until the JS
 * event loop has run it (see docs/driver.md, host callbacks). The registration is never undone
 * here: the caller keeps one trampoline for the life of the process, so no graph can ever call
 * a slot that was released.
 * @throws Error when koffi cannot be loaded.
 */
export function registerHostFunction(fn: (userData: bigint | null) => void): bigint {
  const k = koffi();
  hostFnType ??= k.pointer(k.proto('void cudagraph_CUhostFn(void *userData)'));
  return k.register(fn, hostFnType);
}

/** Re-exported so higher layers never import koffi themselves. */
export { koffi };
export type { LoadedLibrary };
