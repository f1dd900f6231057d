/**
 * The checked driver calls, grouped by area. Each takes the public operation name first (it
 * starts the message of any error), turns out-parameters into return values, and throws
 * `CudaError` on failure; destroy/free calls return the CUresult instead, for the cleanup path
 * that must not throw.
 */
export * as init from './init.js';
export * as device from './device.js';
export * as stream from './stream.js';
export * as event from './event.js';
export * as memory from './memory.js';
export * as mempool from './mempool.js';
export * as module from './module.js';
export * as launch from './launch.js';
export * as graph from './graph.js';
export * as nvrtc from './nvrtc.js';
export * as graphBuild from './graph-build.js';
export * as execUpdate from './exec-update.js';
export * as captureSplice from './capture-splice.js';
export * as launchEx from './launch-ex.js';
export * as host from './host.js';
export * as wait from './wait.js';
export { cudaError, check, setCaptureErrorListener } from './check.js';
// The host-call gate and the process-wide record, for the object layer's policy (driver/host-gate.ts).
export { gate, passGate, hostCallsSubmitted, hostCallStarted, hostCallFinished, QUEUE_LIMIT, STAGED_LIMIT } from '../host-gate.js';
export { processState, type DeferredCleanup } from '../process-state.js';
export * as conditional from './conditional.js';
