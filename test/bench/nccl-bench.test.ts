/** bench/nccl.ts's pure parts: the NVLink status parser and the bus-bandwidth formula. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNvlinkStatus, allReduceBusBandwidth } from '../../bench/nccl.js';

test('nvidia-smi nvlink -s: the first GPU\'s active links are summed; inactive links and other GPUs are left out', () => {
  const text = [
    'GPU 0: NVIDIA H200 (UUID: GPU-aaaa)',
    '\t Link 0: 26.562 GB/s',
    '\t Link 1: 26.562 GB/s',
    '\t Link 2: <inactive>',
    '\t Link 3: 26.562 GB/s',
    'GPU 1: NVIDIA H200 (UUID: GPU-bbbb)',
    '\t Link 0: 26.562 GB/s',
  ].join('\n');
  assert.deepEqual(parseNvlinkStatus(text), { links: [26.562, 26.562, 26.562], totalGBs: 79.686 });
  assert.equal(parseNvlinkStatus(''), null);
  assert.equal(parseNvlinkStatus('GPU 0: NVIDIA H200\n\t Link 0: <inactive>\n'), null);
  assert.equal(parseNvlinkStatus('NVML: Unable to retrieve NVLink information as all links are inActive'), null);
});

test('bus bandwidth of an all-reduce is algbw · 2(n−1)/n (nccl-tests), so 2 ranks move it once', () => {
  assert.equal(allReduceBusBandwidth(100, 2), 100);
  assert.equal(allReduceBusBandwidth(100, 8), 175);
  assert.equal(allReduceBusBandwidth(100, 1), 0);
});
