/**
 * One rank of the two-process NCCL test (test/gpu/nccl-multi.test.ts), run as its own Node process:
 *   node dist/test/gpu/nccl-worker.js <rank> <size> [<unique id as hex>]
 * Rank 0, given no id, makes one (`ncclGetUniqueId`) and prints `ID <hex>` first, for the parent
 * to hand to the other ranks. Each rank then joins (`ncclCommInitRank`) on GPU <rank>, checks an
 * eager all-reduce, captures the data-parallel step (x += 1; y = allReduce_sum(x)) in a CUDA graph,
 * replays it 1,000 times, and prints `RESULT <json>`; any failure prints `ERROR <message>` and
 * exits 1. Not a test file itself (the runner only picks up *.test.js).
 */
import { Device, DeviceBuffer, NcclComm, NcclUniqueId, StreamGraphCapture } from '../../src/index.js';
import { StepKernels, readF32 } from '../../fixtures/nccl-step.js';

function main(): void {
  const rank = Number(process.argv[2]);
  const size = Number(process.argv[3]);
  let hex = process.argv[4];
  if (hex === undefined) {
    hex = NcclUniqueId.create().toHex();
    process.stdout.write(`ID ${hex}\n`);
  }
  const d = Device.get(rank);
  using s = d.createStream();
  using comm = NcclComm.initRank(d, { id: hex, rank, size });
  const n = 4096;
  // Rank r holds x_r[i] = (r + 1) · (i % 13); the sum over ranks is known to every rank.
  const xr = (r: number): Float32Array => Float32Array.from({ length: n }, (_, i) => (r + 1) * (i % 13));
  const sumOver = (f: (r: number, i: number) => number): Float32Array =>
    Float32Array.from({ length: n }, (_, i) => {
      let t = 0;
      for (let r = 0; r < size; r++) t += f(r, i);
      return t;
    });
  using k = { m: new StepKernels(d), [Symbol.dispose]() { this.m.dispose(); } };
  using x = DeviceBuffer.alloc(d, 4 * n);
  using y = DeviceBuffer.alloc(d, 4 * n);
  x.copyFromHost(xr(rank));
  comm.allReduce(s, { send: x, recv: y, count: n, type: 'f32', op: 'sum' });
  s.synchronize();
  const eagerOk = sameArray(readF32(y), sumOver((r, i) => (r + 1) * (i % 13)));

  let exec;
  {
    using cap = StreamGraphCapture.begin(s, 'global');
    k.m.add(s, x, 1, n);
    comm.allReduce(s, { send: x, recv: y, count: n, type: 'f32', op: 'sum' });
    exec = cap.end();
  }
  using graph = exec;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 1000; i++) graph.launch(s);
  s.synchronize();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const graphOk = sameArray(readF32(y), sumOver((r, i) => (r + 1) * (i % 13) + 1000));
  process.stdout.write(`RESULT ${JSON.stringify({ rank, size, device: d.ordinal, eagerOk, graphOk, nodes: graph.nodeCount, ms })}\n`);
}

function sameArray(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

try {
  main();
} catch (e) {
  process.stdout.write(`ERROR ${e instanceof Error ? e.message.replace(/\n/g, ' | ') : String(e)}\n`);
  process.exitCode = 1;
}
