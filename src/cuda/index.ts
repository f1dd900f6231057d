/**
 * The object layer, one layer in sub-folders: `core/` (lifetimes, the current context, the check
 * epoch, the capture bookkeeping every object shares), `device/` (devices, streams, events),
 * `memory/`, `kernel/` (modules, kernels, launches), `host/` (host functions), `graph/` (graphs,
 * executable graphs, lowering), `capture/` (driver-backed capture, the guard, captured graphs,
 * device scalars) and `pool/` (capture pools).
 */
export { Device } from './device/device.js';
export { Stream, type StreamOptions } from './device/stream.js';
export { Event, type EventOptions } from './device/event.js';
export { DeviceBuffer, type MemsetOptions, type HostCopyOptions, type DeviceCopyOptions } from './memory/device-buffer.js';
export { PinnedHostBuffer } from './memory/pinned-host-buffer.js';
export { Module, imageKind, type ModuleImageKind } from './kernel/module.js';
export { nvrtcVersion, type CompileOptions } from './kernel/nvrtc.js';
export { Kernel } from './kernel/kernel.js';
export { PreparedLaunch } from './kernel/prepared-launch.js';
export { LaunchSequence, type LaunchSequenceEntry } from './kernel/launch-sequence.js';
export { arg, KernelArgValue, type KernelArg, type ArgType } from './kernel/arg.js';
export type { Dim3, LaunchConfig } from './kernel/launch-config.js';
export { driverAvailable } from './device/availability.js';
export { HostFunction, type HostFunctionOptions } from './host/host-function.js';
export { setContextCheck, getContextCheck, type ContextCheck } from './core/context.js';

// Graphs and capture: StreamGraphCapture → Graph → GraphExec; the scoped guard, captured graphs and pools.
export { StreamGraphCapture, requireCaptureSupport, MIN_CAPTURE_DRIVER_VERSION, type CaptureFailure } from './capture/stream-graph-capture.js';
export { GraphExec } from './graph/graph-exec.js';
export { Graph, DOT_FLAGS, type DotFlag } from './graph/graph.js';
export { CudaNode, type GraphAllocation } from './graph/cuda-node.js';
export type { NodeMemory, MemcpyNodeParams, Memcpy3DNodeParams, PitchedMemory, MemsetNodeParams } from './graph/node-params.js';
export type { NodeEdge } from './graph/explicit-nodes.js';
export type { KernelNodeEntry } from './graph/kernel-batch.js';
export { ConditionalHandle, CONDITIONAL_DEVICE_API, BODY_NODE_KINDS, type ConditionalKind, type ConditionalNode } from './graph/conditional.js';
export type { ConditionalBody } from './capture/conditional-capture.js';
// Loaded for its effect: it gives Stream its conditional capture (captureWhile, captureIf, captureSwitch).
import './capture/conditional-capture.js';
export { lowerGraph, LoweredGraph, type LowerBindings } from './graph/lower.js';
export { CaptureMode, DEFAULT_CAPTURE_MODE } from './capture/capture-mode.js';
export type { InstantiateFlags } from './graph/instantiate-flags.js';
export type {
  CapturedNodeInfo,
  GraphReadBack,
  GraphNodeType,
  KernelNodeInfo,
  MemcpyNodeInfo,
  MemsetNodeInfo,
  HostNodeInfo,
} from './graph/node-info.js';
export { GraphCaptureGuard, captureGraph, attachCleanupFailure, type GuardState } from './capture/guard.js';
export { ASYNC_CAPTURE_RULE, type CaptureOptions, type CaptureBody, type NotAPromise } from './capture/capture-options.js';
export { CaptureStateError, type CaptureStateErrorCode } from './capture/guard-errors.js';
export { explainCaptureStatus, INVALIDATION_CAUSES, type GuardStatusReport } from './capture/guard-status.js';
export { CapturedGraph, type KernelNodeRef } from './capture/captured-graph.js';
export { CapturePool, type CapturePoolOptions } from './pool/capture-pool.js';
export { graphPoolHandle, capturePoolForHandle, releaseGraphPoolHandle, type GraphPoolHandle } from './pool/pool-registry.js';
export { DeviceScalar } from './capture/device-scalar.js';
export { makeGraphed, type MakeGraphedOptions } from './capture/make-graphed.js';
export {
  GraphCache,
  type CacheKey,
  type CacheOverflow,
  type CacheLaunch,
  type CacheRunOptions,
  type CacheInput,
  type CacheOutput,
  type CacheScalar,
  type CacheScalars,
  type GraphCacheOptions,
  type GraphCacheStats,
} from './capture/graph-cache.js';
