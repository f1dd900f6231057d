/** The model tests' check of a refusal: the error's type, and a message that starts with the call the user made. */
import assert from 'node:assert/strict';

/** `call` throws `type` whose message starts with `op: ` (and matches `pattern`, when given); returns the error. */
export function refused(call: () => unknown, type: new (...args: never[]) => Error, op: string, pattern?: RegExp): Error {
  let caught: unknown;
  assert.throws(call, (e: unknown) => {
    caught = e;
    return true;
  });
  assert.ok(caught instanceof type, `${op}: a ${type.name}, got ${String(caught)}`);
  assert.ok((caught as Error).message.startsWith(`${op}: `), `names ${op}: ${(caught as Error).message}`);
  if (pattern !== undefined) assert.match((caught as Error).message, pattern);
  return caught as Error;
}
