/**
 * The raw CUDA driver and NVRTC binding: the libraries, loaded on first use, and their entry points,
 * resolved one by one; no policy. This is the only file that touches koffi's untyped function
 * objects; everything above it sees the typed `DriverApi` / `NvrtcApi` signatures.
 *
 * The declarations themselves (`DriverApi`, `DRIVER_PROTOTYPES`, NVRTC's) are generated from the
 * headers into `api.generated.ts` and `nvrtc-api.generated.ts` by `scripts/gen-bindings.mjs`, from
 * the lists in `entry-points.txt` and `nvrtc-entry-points.txt` (docs/driver.md, "Adding an entry
 * point"). Versioned ABIs: cuda.h maps public names to versioned symbols with macros
 * (`#define cuStreamBeginCapture __CUDA_API_PTSZ(cuStreamBeginCapture_v2)`), so a plain
 * `dlsym("cuStreamBeginCapture")` returns the legacy ABI; the generator binds the symbol the
 * macros resolve to (default-stream build), and `test/driver/header.test.ts` checks each.
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
import { gate, passGate, type HostWait } from './host-gate.js';
// The declarations themselves are generated from cuda.h and nvrtc.h by scripts/gen-bindings.mjs,
// from the lists in entry-points.txt and nvrtc-entry-points.txt beside this file.
import { DRIVER_PROTOTYPES, type DriverApi, type DriverSymbol } from './api.generated.js';
import { NVRTC_PROTOTYPES, type NvrtcApi, type NvrtcSymbol } from './nvrtc-api.generated.js';

export { DRIVER_PROTOTYPES, NVRTC_PROTOTYPES };
export type { DriverApi, DriverSymbol, NvrtcApi, NvrtcSymbol };

/** An opaque driver handle (`CUstream`, `CUevent`, `CUgraph`, …): a bigint address, or null. */
export type Handle = bigint | null;
/** Host memory passed to C: a TypedArray/Buffer (its bytes), a raw bigint address, or null. */
export type HostPtr = ArrayBufferView | bigint | null;
/** A device address (`CUdeviceptr`, 64-bit). */
export type DevicePtr = bigint;

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
  cuMemHostGetDevicePointer_v2: 'none',
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
  cuGraphAddEventRecordNode: 'none',
  cuGraphAddEventWaitNode: 'none',
  // Clones the child graph on the host; nothing runs on the GPU.
  cuGraphAddChildGraphNode: 'none',
  // Reserves address space for the graph's memory; not probed yet, so classed as waiting (see above).
  cuGraphAddMemAllocNode: 'gpu',
  cuGraphAddMemFreeNode: 'none',
  cuGraphEventRecordNodeGetEvent: 'none',
  cuGraphEventWaitNodeGetEvent: 'none',
  cuGraphChildGraphNodeGetGraph: 'none',
  cuGraphMemAllocNodeGetParams: 'none',
  cuGraphMemFreeNodeGetParams: 'none',
  cuGraphNodeSetEnabled: 'none',
  cuGraphNodeGetEnabled: 'none',
  cuGraphClone: 'none',
  cuGraphNodeFindInClone: 'none',
  cuGraphRemoveDependencies_v2: 'none',
  cuGraphDestroyNode: 'none',
  cuGraphNodeGetDependencies_v2: 'none',
  cuGraphNodeGetDependentNodes_v2: 'none',
  cuGraphExecMemcpyNodeSetParams: 'none',
  cuGraphExecMemsetNodeSetParams: 'none',
  cuGraphExecHostNodeSetParams: 'none',
  cuGraphExecChildGraphNodeSetParams: 'none',
  cuGraphExecEventRecordNodeSetEvent: 'none',
  cuGraphExecEventWaitNodeSetEvent: 'none',
  cuDeviceGetGraphMemAttribute: 'none',
  cuDeviceSetGraphMemAttribute: 'none',
  // Unprobed: trimming returns memory to the OS, which may wait for the GPU as a free does.
  cuDeviceGraphMemTrim: 'gpu',
  cuStreamUpdateCaptureDependencies_v2: 'none',
  cuStreamBeginCaptureToGraph: 'none',
  cuGraphConditionalHandleCreate: 'none',
  cuGraphAddNode_v2: 'none',
  cuLaunchKernelEx: 'queue',
  cuGraphKernelNodeSetAttribute: 'none',
  cuGraphKernelNodeGetAttribute: 'none',
  cuGraphNodeGetToolsId: 'none',
  cuGraphNodeGetLocalId: 'none',
  cuEventRecordWithFlags: 'queue',
};

/** A function bound by koffi. */
type KoffiFunction = (...args: unknown[]) => unknown;

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
 * One library loaded on first use: the first candidate that loads (and, given `identity`, exports
 * that symbol) wins; a failure is remembered (the attempts), so later calls fail fast with the same
 * list. Also used by the NCCL binding. @internal
 */
export class LibrarySlot {
  lib: LazyLibrary | null = null;
  attempts: readonly LoadAttempt[] | null = null;

  /**
   * @param identity A symbol every version of the library exports, and what the library is called:
   *   a candidate without it is another library (`cuInit` for the driver), not an old version.
   */
  constructor(
    private readonly candidates: () => readonly LibraryCandidate[],
    private readonly prototypes: Readonly<Record<string, string>>,
    private readonly fail: (op: string, attempts: readonly LoadAttempt[], cause?: unknown) => Error,
    private readonly identity?: { readonly symbol: string; readonly library: string },
  ) {}

  /** Why `lib` is not this slot's library, or null when it is (or nothing identifies it). */
  #refuse(lib: KoffiLibrary): string | null {
    const id = this.identity;
    const proto = id === undefined ? undefined : this.prototypes[id.symbol];
    if (id === undefined || proto === undefined) return null;
    try {
      lib.func(proto);
      return null;
    } catch {
      return `loads, but exports no ${id.symbol}: not ${id.library}`;
    }
  }

  get(op: string): LazyLibrary {
    if (this.lib !== null) return this.lib;
    if (this.attempts !== null) throw this.fail(op, this.attempts);
    let outcome;
    try {
      // Without koffi no library can load: say that once, not once per candidate.
      if (loadOverride === null) koffi();
      outcome = loadFirst(this.candidates(), loadOverride ?? undefined, process.env, (lib) => this.#refuse(lib));
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

const driverSlot = new LibrarySlot(() => driverCandidates(), DRIVER_PROTOTYPES, loaderError, { symbol: 'cuInit', library: 'the CUDA driver library' });

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
 * @param op The public call that asks, which starts the error's message (default `probeDriver`).
 * @returns `{ ok: true, path }` or `{ ok: false, error }` (the CudaError that calls would throw).
 */
export function probeDriver(op = 'probeDriver'): { ok: true; path: string } | { ok: false; error: CudaError } {
  try {
    return { ok: true, path: driver(op).path };
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

/**
 * The address of driver function `name` in the loaded library (the function koffi calls), for the
 * hot-call addon (`hot.ts`), which calls it from C; null when the library gives no address. Resolves
 * the symbol as `driverSymbol` does, so a missing driver or symbol throws the same errors.
 * @throws CudaError 3 when no driver library loads; CudaError 801 when this driver lacks `name`.
 */
export function symbolAddress(op: string, name: DriverSymbol): bigint | null {
  const lib = driver(op);
  const fn = lib.resolve(name);
  if (typeof fn === 'string') throw missingSymbol(op, lib, name, fn);
  try {
    const address = (lib.lib as { symbol?: (n: string) => unknown }).symbol?.(name);
    return typeof address === 'bigint' && address !== 0n ? address : null;
  } catch {
    return null;
  }
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

const nvrtcSlot = new LibrarySlot(() => nvrtcCandidates(), NVRTC_PROTOTYPES, nvrtcLoaderError, { symbol: 'nvrtcVersion', library: 'NVRTC' });

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
  // Modules that keep a function or an address of the forgotten library drop it (hot.ts unbinds the addon).
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
