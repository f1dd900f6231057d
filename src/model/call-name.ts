/**
 * Refusals name the public call the user made. A class that is built on another one (a
 * `MultiDeviceCapture` records through a `StreamCapture`) runs the inner call through `asCall`, so
 * `StreamCapture.recordKernel: stream 3 is not capturing` reaches the user as
 * `MultiDeviceCapture.recordKernel: stream 3 is not capturing`.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';

/** The leading `Operation.name: ` of a message. */
const PREFIX = /^(?:new )?[A-Za-z_$][\w$.]*: /;

/**
 * `e` reworded to name `op` when it is an `InvalidArgumentError` or `GraphError` that names another
 * call (same class, kind, code and parameter; the original is the `cause` where the class takes
 * one); any other value is returned as it is. `within`, when given, says where in `op` it happened
 * (`StreamCapture.recordIf: otherwise: stream 1 has work not joined back …`).
 */
export function renamed(e: unknown, op: string, within?: string): unknown {
  const at = within === undefined ? '' : `${within}: `;
  if (e instanceof InvalidArgumentError) {
    return e.operation === op && at === '' ? e : new InvalidArgumentError(op, e.parameter, at + e.message.slice(e.operation.length + 2));
  }
  if (e instanceof GraphError) {
    const m = PREFIX.exec(e.message);
    if (m !== null && (m[0] !== `${op}: ` || at !== '')) return new GraphError(e.kind, e.code, `${op}: ${at}${e.message.slice(m[0].length)}`, { cause: e });
  }
  return e;
}

/** Runs `body` on behalf of the public call `op`: what it refuses is re-thrown naming `op` (see `renamed`). */
export function asCall<T>(op: string, body: () => T): T {
  try {
    return body();
  } catch (e) {
    throw renamed(e, op);
  }
}
