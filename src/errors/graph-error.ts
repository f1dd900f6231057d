import { CudagraphError } from './base.js';

/**
 * The kinds of `GraphError`: the seed's variant names (oxicuda_graph `GraphError`), plus the
 * variants this project adds. A `kind` groups failures; `code` names the exact one.
 */
export type GraphErrorKind =
  | 'Internal'
  | 'ValidationFailed'
  | 'NodeNotFound'
  | 'CycleDetected'
  | 'EmptyGraph'
  | 'InvalidPlan'
  | 'BufferSizeMismatch'
  | 'UpdateNotPossible';

/**
 * An error from the graph model (`StreamCapture`, `ComputeGraph` and the tools built on them).
 *
 * @example
 * try { graph.node(NodeId(99)); }
 * catch (e) { if (e instanceof GraphError && e.kind === 'NodeNotFound') … }
 */
export class GraphError extends CudagraphError {
  /** The seed's variant name, e.g. `NodeNotFound`. */
  readonly kind: GraphErrorKind;
  /** The specific, stable failure code, e.g. `GRAPH_NODE_NOT_FOUND`. */
  readonly code: string;

  constructor(kind: GraphErrorKind, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
    this.code = code;
  }
}
