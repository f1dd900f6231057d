/**
 * The raw binding: `sys` (koffi declarations, lazily resolved), the loader, and `result` (checked
 * calls grouped by area). Published as the subpath `cudagraph/driver` (src/entries/driver.ts) for
 * tools that need a raw call the object layer does not wrap; the package root exports the object
 * layer, which is what programs use.
 */
export * as result from './result/index.js';
export { driverSymbol, nvrtcSymbol, probeDriver, driverLibraryPath, nvrtcLibraryPath, hasDriverSymbol } from './sys.js';
export { nativeStatus } from './hot.js';
export type { NativeStatus } from './hot.js';
export type { DriverApi, DriverSymbol, NvrtcApi, NvrtcSymbol, Handle, HostPtr, DevicePtr } from './sys.js';
export { driverCandidates, nvrtcCandidates, loadFirst, describeAttempts } from './loader.js';
export type { LoadAttempt, LibraryCandidate, LoadOutcome } from './loader.js';
export { check, cudaError, setCaptureErrorListener } from './result/check.js';
