/**
 * Conditional nodes inside a live stream capture (`stream.captureWhile`, `captureIf`,
 * `captureSwitch`, on any capturing stream: inside `captureGraph`, a `GraphCaptureGuard` or a
 * `StreamGraphCapture`). The conditional node is added to the capture's graph after the stream's
 * frontier (`cuStreamGetCaptureInfo`) and becomes the frontier (`cuStreamUpdateCaptureDependencies`);
 * each body is then captured into its body graph on a stream of its own
 * (`cuStreamBeginCaptureToGraph`), which the body function receives: the outer capture stays live
 * meanwhile, so nothing it recorded is paused or re-begun. A body that throws ends its own capture,
 * its error propagates unchanged, and the outer capture can then only fail: ending it discards
 * the graph and says which body failed (its error is the `cause`).
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, isThenable } from '../../util/validate.js';
import { captureSplice as cs } from '../../driver/result/index.js';
import type { Stream } from '../device/stream.js';
import { registerConditionalCapture, type ConditionalCaptureCall } from '../device/stream.js';
import { addConditional, makeHandle, switchBodies, type ConditionalHandle, type ConditionalKind, type ConditionalNode } from '../graph/conditional.js';
import type { Graph } from '../graph/graph.js';
import { captureRecordOf } from './stream-graph-capture.js';

/** A body: the work to record, on the stream it is given. */
export type ConditionalBody = (stream: Stream) => void;

function liveRecord(op: string, stream: Stream) {
  stream.handleFor(op);
  const record = captureRecordOf(stream);
  if (record === null) {
    throw new InvalidArgumentError(op, 'stream', 'the stream is not capturing: conditional capture splices a node into a live capture (captureGraph, GraphCaptureGuard, StreamGraphCapture.begin); on a graph, use graph.addWhileNode / addIfNode / addSwitchNode');
  }
  return record;
}

/** `stream.conditionalHandle(options)`: a handle of the graph the stream's capture records into. */
export function captureHandle(op: string, stream: Stream, options: unknown): ConditionalHandle {
  return makeHandle(liveRecord(op, stream).graphFor(op), options, op);
}

/**
 * Adds a conditional node of `kind` to the capture `stream` records into, after its frontier,
 * then captures `bodies[i]` (each a function, or undefined for an empty body) into body `i`.
 */
export function captureConditional(op: string, stream: Stream, kind: ConditionalKind, handle: unknown, bodies: readonly unknown[], size: number): ConditionalNode {
  if (kind === 'switch') switchBodies(op, size);
  for (let i = 0; i < bodies.length; i++) {
    const b = bodies[i];
    // Every body is a function; only an IF's else may be left out (an empty WHILE body would loop for ever).
    if (typeof b !== 'function' && !(kind === 'if' && i === 1 && b === undefined)) {
      const name = kind === 'while' ? 'body' : kind === 'if' ? (i === 0 ? 'then' : 'otherwise') : `cases[${i}]`;
      throw new InvalidArgumentError(op, name, `${name} must be a function (stream) => void, got ${describe(b)}`);
    }
  }
  const record = liveRecord(op, stream);
  const graph = record.graphFor(op);
  const h = stream.handleFor(op);
  const frontier = record.liveInfo(op, h).dependencies.map((d) => graph.nodeOf(op, d));
  const made = addConditional(op, graph, kind, handle, size, frontier);
  try {
    cs.updateCaptureDependencies(op, h, BigUint64Array.of(made.node.handle), cs.CAPTURE_DEPENDENCIES.SET);
  } catch (e) {
    // The node is in the capture's graph but not in its order: the graph can only be discarded.
    record.poisoned ??= { op, error: e };
    throw e;
  }
  for (let i = 0; i < bodies.length; i++) {
    const fn = bodies[i] as ConditionalBody | undefined;
    if (fn === undefined) continue;
    try {
      captureBody(op, stream, made.bodies[i]!, fn, record.mode);
    } catch (e) {
      // The node stays in the capture's graph with an incomplete body: ending the capture fails.
      record.poisoned ??= { op, error: e };
      throw e;
    }
  }
  return made;
}

/** Captures `fn` into `body` on a stream made for it (disposed after), in the outer capture's mode. */
function captureBody(op: string, outer: Stream, body: Graph, fn: ConditionalBody, mode: unknown): void {
  const side = outer.device.createStream({ nonBlocking: true });
  try {
    body.captureIntoFor(op, side, (s) => {
      const r: unknown = fn(s);
      if (isThenable(r)) {
        throw new InvalidArgumentError(op, 'body', 'a body returned a promise: a conditional body records synchronous work only');
      }
    }, { mode });
  } finally {
    side.dispose();
  }
}

const call: ConditionalCaptureCall = {
  handle: captureHandle,
  conditional: captureConditional,
};
registerConditionalCapture(call);
