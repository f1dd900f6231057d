/** Driver-backed capture: StreamGraphCapture → Graph → GraphExec. */
export { StreamGraphCapture, requireCaptureSupport, MIN_CAPTURE_DRIVER_VERSION, type CaptureFailure } from './stream-graph-capture.js';
export { GraphExec } from './graph-exec.js';
export { Graph } from './graph.js';
export { lowerGraph, LoweredGraph, type LowerBindings } from './lower.js';
export { CaptureMode } from './capture-mode.js';
export type { InstantiateFlags } from './instantiate-flags.js';
export type {
  CapturedNodeInfo,
  GraphReadBack,
  GraphNodeType,
  CopyDirection,
  KernelNodeInfo,
  MemcpyNodeInfo,
  MemsetNodeInfo,
  HostNodeInfo,
} from './node-info.js';
