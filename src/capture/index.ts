/** Driver-backed capture: StreamGraphCapture → Graph → GraphExec; the scoped guard, captured graphs and pools. */
export { StreamGraphCapture, requireCaptureSupport, MIN_CAPTURE_DRIVER_VERSION, type CaptureFailure } from './stream-graph-capture.js';
export { GraphExec } from './graph-exec.js';
export { Graph } from './graph.js';
export { lowerGraph, LoweredGraph, type LowerBindings } from './lower.js';
export { CaptureMode, DEFAULT_CAPTURE_MODE } from './capture-mode.js';
export type { InstantiateFlags } from './instantiate-flags.js';
export type {
  CapturedNodeInfo,
  GraphReadBack,
  GraphNodeType,
  KernelNodeInfo,
  MemcpyNodeInfo,
  MemsetNodeInfo,
  HostNodeInfo,
} from './node-info.js';
export {
  GraphCaptureGuard,
  captureGraph,
  attachCleanupFailure,
  ASYNC_CAPTURE_RULE,
  type GuardState,
  type CaptureOptions,
  type CaptureBody,
} from './guard.js';
export { CaptureStateError, type CaptureStateErrorCode } from './guard-errors.js';
export { explainCaptureStatus, INVALIDATION_CAUSES, type GuardStatusReport } from './guard-status.js';
export { CapturedGraph, type KernelNodeRef } from './captured-graph.js';
export { CapturePool, type CapturePoolOptions } from './capture-pool.js';
export { graphPoolHandle, capturePoolForHandle, releaseGraphPoolHandle, type GraphPoolHandle } from './pool-registry.js';
export { DeviceScalar } from './device-scalar.js';
export { makeGraphed, type MakeGraphedOptions } from './make-graphed.js';
