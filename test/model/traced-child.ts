/**
 * Runs a module in a child Node process with V8's deoptimization trace and returns the part of its
 * output between two markers the module prints, for the tests that check which compiled code V8
 * throws away (kept-shapes.test.ts, search-feedback.test.ts). A child that does not finish, fails,
 * or never prints both markers fails the test.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

/** The output of `code` (an ES module) from the line starting with `from` up to `until`; `flags` are Node's, `--trace-deopt` added. */
export function tracedChild(code: string, flags: readonly string[], from: string, until: string): string {
  const r = spawnSync(process.execPath, [...flags, '--trace-deopt', '--input-type=module', '-e', code], {
    encoding: 'utf8',
    timeout: 110_000,
    maxBuffer: 64 << 20,
  });
  assert.equal(r.signal, null, `the child was stopped (${r.signal}): it did not finish within the time limit`);
  assert.equal(r.status, 0, r.stderr);
  const start = r.stdout.indexOf(from);
  const end = r.stdout.indexOf(until);
  assert.ok(start >= 0 && end > start, `the child printed '${from}' and then '${until}'`);
  return r.stdout.slice(start, end);
}
