/**
 * How the decoder's GEMVs split a row over warps: by the matrix and the device, never by the
 * batch (a sequence's sums must not depend on its bucket), and never into more blocks than the
 * device holds at once at batch 1 (a second wave waits for the first before loading its weights).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GEMV_BLOCKS_PER_SM, gemvSplit } from '../../src/llm/gpu-kernels.js';

test('gemvSplit: about one warp per 256 columns, fewer where batch 1 would need a second wave of blocks', () => {
  const sms = 132; // an H200
  // The default decoder's matrices: Q|K|V, output, gate|up, down, logits.
  assert.equal(gemvSplit(512, 1536, sms), 2);
  assert.equal(gemvSplit(512, 512, sms), 2);
  assert.equal(gemvSplit(1536, 512, sms), 4);
  assert.equal(gemvSplit(512, 256, sms), 2);
  // gate|up: 3,072 rows in blocks of 4 would be 768 blocks, past 4 × 132 = 528: one warp a row (384 blocks).
  assert.equal(gemvSplit(512, 3072, sms), 1);
  // Wide rows on a small device split less; never below one warp, never past 8.
  assert.equal(gemvSplit(4096, 256, sms), 8);
  assert.equal(gemvSplit(4096, 4096, 16), 1);
  for (const [cols, rows, n] of [[512, 3072, 132], [1536, 512, 8], [4096, 8192, 132], [2048, 100, 1]] as const) {
    const k = gemvSplit(cols, rows, n);
    assert.ok(k === 1 || Math.ceil(rows / (8 / k)) <= GEMV_BLOCKS_PER_SM * n, `${cols}×${rows} on ${n} SMs: split ${k}`);
    assert.equal(cols % (4 * k), 0);
  }
});
