/**
 * The raw binding: `sys` (koffi declarations, lazily resolved), the loader, and `result` (checked
 * calls grouped by area). Internal to cudagraph: the public API is the object layer
 * (`src/cuda/`) and the capture layer (`src/capture/`). Exported for tools that need a raw call
 * the object layer does not wrap.
 */
export * as result from './result/index.js';
export { driverSymbol, nvrtcSymbol, probeDriver, driverLibraryPath, nvrtcLibraryPath, hasDriverSymbol } from './sys.js';
export { nativeStatus } from './native.js';
export type { NativeStatus } from './native.js';
export type { DriverApi, DriverSymbol, NvrtcApi, NvrtcSymbol, Handle, HostPtr, DevicePtr } from './sys.js';
export { driverCandidates, nvrtcCandidates, loadFirst, describeAttempts } from './loader.js';
export type { LoadAttempt, LibraryCandidate, LoadOutcome } from './loader.js';
export { check, cudaError, setCaptureErrorListener } from './result/check.js';
