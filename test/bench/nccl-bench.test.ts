/** bench/nccl.ts's pure parts: the NVLink status and nccl-tests parsers and the bus-bandwidth formula. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNvlinkStatus, allReduceBusBandwidth, parseNcclTests } from '../../bench/nccl.js';

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

test('nccl-tests output: the in-place time, algbw and busbw of each size, with or without a root column', () => {
  const withRoot = [
    '# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0',
    '#  Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] NVIDIA H200',
    '#                                                              out-of-place                       in-place          ',
    '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong',
    '#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ',
    '           8             2     float     sum      -1    24.21    0.00    0.00      0    23.56    0.00    0.00      0',
    '  1073741824     268435456     float     sum      -1   4655.1  230.66  403.66      0   4650.3  230.90  404.07      0',
    '# Out of bounds values : 0 OK',
    '# Avg bus bandwidth    : 201.5 ',
  ].join('\n');
  assert.deepEqual(parseNcclTests(withRoot), [
    { bytes: 8, us: 23.56, algbw: 0, busbw: 0 },
    { bytes: 1073741824, us: 4650.3, algbw: 230.9, busbw: 404.07 },
  ]);
  const older = '        1024           256     float     sum    30.12    0.03    0.06  2e-07    29.80    0.03    0.06  2e-07\n';
  assert.deepEqual(parseNcclTests(older), [{ bytes: 1024, us: 29.8, algbw: 0.03, busbw: 0.06 }]);
  assert.deepEqual(parseNcclTests('no table here\n# size count\n'), []);
  // A value nccl-tests could not measure leaves the row out rather than reading it as 0.
  assert.deepEqual(parseNcclTests('        2048           512     float     sum    30.12    0.07    0.12      0      N/A     N/A     N/A    N/A\n'), []);
});
