/**
 * `initNcclFromEnvironment` with the real NCCL: on one GPU a job of one rank (WORLD_SIZE=1: no
 * socket is opened, the id goes straight to ncclCommInitRank), and on two GPUs two Node processes
 * started as torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1,
 * MASTER_PORT), joined through the TCP rendezvous, checking an all-reduce across them. Skipped with
 * the reason without a driver or NCCL (failed under CUDA_TESTS=require), and the two-process part
 * where fewer than two GPUs are present.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceBuffer, initNcclFromEnvironment } from '../../src/index.js';
import { ncclSuite, multiGpuSuite, ncclBanner, readF32 } from './nccl-fixtures.js';
import { startHost, freePort, shown } from '../nccl/host-processes.js';

const env = (rank: number, worldSize: number, port: number): Record<string, string> => ({
  RANK: `${rank}`,
  WORLD_SIZE: `${worldSize}`,
  LOCAL_RANK: `${rank}`,
  LOCAL_WORLD_SIZE: `${worldSize}`,
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: `${port}`,
});

ncclSuite('initNcclFromEnvironment on one GPU (WORLD_SIZE=1)', () => {
  test('rank 0 of 1 on device LOCAL_RANK 0; an all-reduce on it leaves the vector as it was', async () => {
    console.log(`# ${ncclBanner()}`);
    using comm = await initNcclFromEnvironment({ env: env(0, 1, 29500), timeoutMs: 30_000 });
    assert.deepEqual([comm.rank, comm.size, comm.device.ordinal, comm.localRanks], [0, 1, 0, 1]);
    const n = 256;
    using s = comm.device.createStream();
    using x = DeviceBuffer.alloc(comm.device, 4 * n);
    const host = Float32Array.from({ length: n }, (_, i) => i * 0.5 - 3);
    x.copyFromHost(host);
    comm.allReduce(s, { send: x, count: n, type: 'f32', op: 'sum' });
    s.synchronize();
    assert.deepEqual(readF32(x), host);
    assert.equal(comm.asyncError(), 'ncclSuccess');
  });
});

multiGpuSuite('initNcclFromEnvironment across two processes (two GPUs, rendezvous on 127.0.0.1)', 2, () => {
  test('both ranks join through MASTER_ADDR:MASTER_PORT and an all-reduce of rank + 1 gives 3 on each', async () => {
    const port = await freePort();
    const hosts = [1, 0].map((rank) => startHost(['env-nccl'], { ...env(rank, 2, port), TEST_TIMEOUT_MS: '60000', NCCL_NVLS_ENABLE: '0' }, 120_000));
    const outcomes = await Promise.all(hosts.map((h) => h.done));
    for (const o of outcomes) {
      assert.equal(o.exitCode, 0, shown(o));
      assert.ok(o.result, shown(o));
    }
    const [r1, r0] = outcomes.map((o) => o.result!);
    assert.deepEqual(r0, { rank: 0, size: 2, device: 0, localRanks: 1, sums: [3], asyncError: 'ncclSuccess' });
    assert.deepEqual(r1, { rank: 1, size: 2, device: 1, localRanks: 1, sums: [3], asyncError: 'ncclSuccess' });
  });
});
