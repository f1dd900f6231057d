/**
 * What running a script gives, in a form both recorders and the reference share: a graph, or the
 * first refused call (with how the capture then ended), as a small vocabulary of error classes.
 */
import type { ComputeGraph } from '../../src/index.js';

/**
 * The error classes the suite compares: the CUDA error a driver call returned, or the model's
 * `GraphError` code for the same situation.
 *
 * - `unjoined`: 904 / `CAPTURE_UNJOINED`;
 * - `invalidated`: 901 / `CAPTURE_INVALIDATED`;
 * - `isolation`: 905 / `CAPTURE_ISOLATION` (a dependency across the capture boundary);
 * - `unsupported`: 900 (no model counterpart);
 * - `unmatched`: 903 / `CAPTURE_UNMATCHED`;
 * - anything else: `other:<code>`.
 */
export type ErrorClass = string;

/** The result of running a script. */
export type Outcome =
  | { readonly kind: 'graph'; readonly graph: ComputeGraph }
  | {
      readonly kind: 'error';
      /** The index of the refused op, or `'end'` when ending the capture failed. */
      readonly at: number | 'end';
      readonly error: ErrorClass;
      /** After a refused op: how ending the capture then went (`'ok'` or an error class). */
      readonly endError?: ErrorClass;
    };

/** A one-line description of an outcome, for messages and logs. */
export function describeOutcome(o: Outcome): string {
  if (o.kind === 'graph') return `graph(${o.graph.nodeCount()} nodes, ${o.graph.edgeCount()} edges)`;
  return `error ${o.error} at ${o.at}${o.endError !== undefined ? `, then end: ${o.endError}` : ''}`;
}
