export { StreamId, CaptureEvent, NodeId } from './ids.js';
export { CaptureStatus } from './capture-status.js';
export { MemcpyDir, type PeerToPeerDir } from './memcpy-dir.js';
export { GraphErrorCode } from './error-codes.js';
export { MultiDeviceCapture, MultiDeviceGraph, collectiveLabel, type CollectiveSpec, type RecordedCollective, type MultiDeviceCaptureOptions } from './multi-device-capture.js';
export type {
  NodeKind,
  Dim3Tuple,
  DimInput,
  NodeBase,
  KernelNode,
  MemcpyNode,
  MemsetNode,
  HostCallbackNode,
  EmptyNode,
  EventRecordNode,
  EventWaitNode,
  ChildGraphNode,
  MemAllocNode,
  MemFreeNode,
  GraphNode,
  NodeSpecBase,
  KernelNodeSpec,
  MemcpyNodeSpec,
  MemsetNodeSpec,
  HostCallbackNodeSpec,
  EmptyNodeSpec,
  EventRecordNodeSpec,
  EventWaitNodeSpec,
  ChildGraphNodeSpec,
  MemAllocNodeSpec,
  MemFreeNodeSpec,
  ConditionalNodeRecord,
  ConditionalNodeSpec,
  NodeSpec,
  EdgeKind,
  EdgePort,
  EdgeData,
  GraphEdge,
  EdgeSpec,
} from './node.js';
export type { ConditionalType, ConditionalHandleRecord, ConditionalHandleSpec } from './conditional.js';
export {
  ComputeGraph,
  type CriticalPath,
  type WidestLevel,
  type NodeTiming,
  type GraphTiming,
  type NodePlacement,
  type BoundedMakespan,
} from './compute-graph.js';
export {
  StreamCapture,
  type EndCaptureOptions,
  type StreamCaptureOptions,
  type CaptureSemantics,
  type RecordKernelOptions,
  type ConditionalHandleOptions,
  type RecordConditionalOptions,
  type BodyRecorder,
} from './stream-capture.js';
export type { DotOptions } from './dot.js';
export type { DotChunkOptions } from './dot-stream.js';
export type { JsonChunkOptions } from './graph-json-stream.js';
export type { GraphSource, ReadGraphOptions } from './graph-json-read.js';
export type { TextSink, TextTarget } from './chunk-sink.js';
export { GRAPH_JSON_FORMAT, GRAPH_JSON_VERSION, GRAPH_JSON_VERSIONS, type ComputeGraphJson, type GraphJsonEdge } from './graph-json.js';
export {
  ExecGraph,
  type ExecGraphDiff,
  type ExecGraphOptions,
  type ExecUpdateResult,
  type NonUpdatableChange,
  type NodeParamUpdate,
  type UpdateRules,
} from './exec-graph.js';
export {
  GraphBuilder,
  type BufferRef,
  type ScalarType,
  type ScalarArg,
  type ArgSpec,
  type NodeBinding,
  type BuiltGraph,
  type NodeOptions,
  type KernelNodeOptions,
  type MemcpyNodeOptions,
  type MemsetNodeOptions,
  type HostNodeOptions,
  type ConditionalNodeOptions,
  type GraphBuilderOptions,
} from './builder.js';
export { ELEMENT_TYPES, ELEMENT_BYTES, SCALAR_TYPES, REDUCE_OPS, COLLECTIVE_OPS, type ElementType, type ReduceOp, type CollectiveOp } from './element-type.js';
export { ModelGraphCache, type ModelGraphCacheOptions, type ModelCacheEntry } from './graph-cache.js';
