/**
 * How the decoder's GEMVs split a row over warps: by the matrix and the device, never by the
 * batch (a sequence's sums must not depend on its bucket), and never into more blocks than the
 * device holds at once at batch 1 (a second wave waits for the first before loading its weights).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GEMV_BLOCKS_PER_SM, gemvSplit, interleaveRows } from '../../src/llm/gpu-kernels.js';

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

test('gemvSplit with pairs: a block keeps both rows of each gate|up pair (at most 4 warps a row)', () => {
  assert.equal(gemvSplit(4096, 256, 132, true), 4);
  assert.equal(gemvSplit(4096, 256, 132), 8);
  assert.equal(gemvSplit(512, 3072, 132, true), 1);
  for (const [cols, rows, n] of [[4096, 512, 132], [8192, 64, 132], [2048, 100, 1]] as const) {
    const k = gemvSplit(cols, rows, n, true);
    // A block holds 8 / k row groups of the tile's rows each: even for every tile, one row a warp included.
    assert.equal((8 / k) % 2, 0, `${cols}×${rows}: split ${k}`);
  }
});

test('interleaveRows: gate row j at 2j, up row j at 2j + 1', () => {
  const cols = 3;
  const gate = Float32Array.from({ length: 4 * cols }, (_, i) => i);
  const up = Float32Array.from({ length: 4 * cols }, (_, i) => 100 + i);
  const out = interleaveRows(gate, up, cols);
  assert.equal(out.length, 8 * cols);
  for (let j = 0; j < 4; j++) {
    assert.deepEqual([...out.subarray(2 * j * cols, (2 * j + 1) * cols)], [...gate.subarray(j * cols, (j + 1) * cols)]);
    assert.deepEqual([...out.subarray((2 * j + 1) * cols, (2 * j + 2) * cols)], [...up.subarray(j * cols, (j + 1) * cols)]);
  }
});
