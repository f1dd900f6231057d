/** What the decoder tests share: the tiny config they run, and closeness checks for float arrays. */
import assert from 'node:assert/strict';
import { llamaConfig, type LlamaConfig } from '../../src/llm/config.js';

/** 2 layers of width 64, 4 heads of 16 over 2 kv heads, MLP 128: grouped-query attention, decoding in well under a millisecond. */
export const TINY: LlamaConfig = llamaConfig('test', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128, maxPositions: 64 });

/** Every `actual[i]` within `tol · (1 + |expected[i]|)` of `expected[i]`. */
export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what = 'values'): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    assert.ok(Math.abs(a - e) <= tol * (1 + Math.abs(e)), `${what}[${i}]: ${a} is not within ${tol} of ${e}`);
  }
}

/** The largest |a − b| over two arrays of one length. */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
