/**
 * The stable `code` strings of the `GraphError`s the model throws. `kind` groups failures (the
 * seed's variant names); `code` names the exact one, and programs may switch on it.
 *
 * | code | kind | thrown when |
 * |---|---|---|
 * | `CAPTURE_NOT_ACTIVE` | Internal | the stream was never begun (status `None`) |
 * | `CAPTURE_ALREADY_ACTIVE` | Internal | `beginCapture` on an `Active` stream |
 * | `CAPTURE_STREAM_INVALIDATED` | Internal | a record/event/wait/invalidate on an `Invalidated` stream |
 * | `CAPTURE_INVALIDATED` | ValidationFailed | `endCapture` after any stream of the session was invalidated |
 * | `CAPTURE_UNJOINED` | ValidationFailed | `endCapture(s, { requireJoined: true })` with forked work not joined back into `s` |
 * | `CAPTURE_SESSION_ENDED` | Internal | any call on a session after a successful `endCapture` |
 * | `CAPTURE_ISOLATION` | ValidationFailed | (`semantics: 'cuda'`) a capturing stream waited on an event recorded outside the capture; the capture is invalidated, as CUDA does (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`, 905) |
 * | `CAPTURE_UNMATCHED` | Internal | (`semantics: 'cuda'`) `endCapture` on a stream that joined the capture instead of the one it began on (`CUDA_ERROR_STREAM_CAPTURE_UNMATCHED`, 903) |
 * | `BUILDER_BUILT` | Internal | a `GraphBuilder` call after `build()` |
 * | `UPDATE_NOT_POSSIBLE` | UpdateNotPossible | `ExecGraph.update` with a graph the executable cannot take in place (the reason is in the message) |
 * | `GRAPH_NODE_NOT_FOUND` | NodeNotFound | an id ≥ `nodeCount()` |
 * | `GRAPH_CYCLE` | CycleDetected | a self-loop, or an edge whose target already reaches its source |
 * | `GRAPH_EMPTY` | EmptyGraph | ordering or scheduling a graph with no nodes |
 * | `GRAPH_JSON_INVALID` | ValidationFailed | `ComputeGraph.fromJSON` given a value that is not a valid graph document |
 * | `GRAPH_COST_OVERFLOW` | ValidationFailed | `criticalPath`, `timing`, `boundedMakespan` when the costs add up to more than `Number.MAX_VALUE` |
 * | `GRAPH_BUSY` | Internal | a change to a graph while one of its calls runs a user callback (`costOf`, the `edges` iterable of `addEdges`), or to a `StreamCapture` while it records a conditional body (`recordWhile`, `recordIf`, `recordSwitch`) |
 * | `GRAPH_READ_ONLY` | ValidationFailed | a change to a read-only graph (a child graph node's copy; `clone()` it to edit) |
 * | `GRAPH_EDGE_CONFLICT` | ValidationFailed | an edge added again with other data (`kind`, `port`) than the edge already there |
 * | `GRAPH_MEMORY_ORDER` | InvalidPlan | `ExecGraph.instantiate` of a graph whose free node is not ordered after its allocation node |
 * | `GRAPH_ALLOCATION_NOT_FREED` | InvalidPlan | `ExecGraph.launch` while the last launch's unfreed allocation is still outstanding (no `autoFreeOnLaunch`), or `ExecGraph.freeAllocation` with nothing to free |
 */
export const GraphErrorCode = {
  CaptureNotActive: 'CAPTURE_NOT_ACTIVE',
  CaptureAlreadyActive: 'CAPTURE_ALREADY_ACTIVE',
  CaptureStreamInvalidated: 'CAPTURE_STREAM_INVALIDATED',
  CaptureInvalidated: 'CAPTURE_INVALIDATED',
  CaptureUnjoined: 'CAPTURE_UNJOINED',
  CaptureSessionEnded: 'CAPTURE_SESSION_ENDED',
  CaptureIsolation: 'CAPTURE_ISOLATION',
  CaptureUnmatched: 'CAPTURE_UNMATCHED',
  UpdateNotPossible: 'UPDATE_NOT_POSSIBLE',
  BuilderBuilt: 'BUILDER_BUILT',
  NodeNotFound: 'GRAPH_NODE_NOT_FOUND',
  Cycle: 'GRAPH_CYCLE',
  Empty: 'GRAPH_EMPTY',
  JsonInvalid: 'GRAPH_JSON_INVALID',
  CostOverflow: 'GRAPH_COST_OVERFLOW',
  Busy: 'GRAPH_BUSY',
  ReadOnly: 'GRAPH_READ_ONLY',
  EdgeConflict: 'GRAPH_EDGE_CONFLICT',
  MemoryOrder: 'GRAPH_MEMORY_ORDER',
  AllocationNotFreed: 'GRAPH_ALLOCATION_NOT_FREED',
} as const;

/** One of the `GraphErrorCode` values. */
export type GraphErrorCode = (typeof GraphErrorCode)[keyof typeof GraphErrorCode];
