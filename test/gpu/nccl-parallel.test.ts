/**
 * The two multi-GPU steps users graph, over every GPU of the machine (one rank a GPU, one
 * process, up to 8): a data-parallel step (each rank computes, all-reduce, update) and a
 * tensor-parallel pair (all-gather, a column-split and a row-split matrix product,
 * reduce-scatter). Graphed equals eager equals a single-GPU reference and a float64 CPU one, bit
 * for bit (small integers keep every sum exact), over many replays. On a machine of one GPU the
 * ranks are one and the collectives copies: the code path runs, the data movement between GPUs
 * does not (test/gpu/nccl-multi.test.ts needs two GPUs).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, NcclComm, captureMultiDevice, type NcclClique, type Stream } from '../../src/index.js';
import { ncclSuite, ncclBanner, StepKernels, readF32 } from './nccl-fixtures.js';
import { TensorParallelPair, cpuPair, singleGpuPair, smallIntegers, type PairShape } from '../../fixtures/nccl-tensor-parallel.js';

ncclSuite('data- and tensor-parallel steps over every GPU of the machine', () => {
  let ranks: number;
  let devices: Device[];
  let streams: Stream[];
  let clique: NcclClique;

  before(() => {
    ranks = Math.min(8, Device.count());
    devices = Array.from({ length: ranks }, (_, i) => Device.get(i));
    console.log(`# ${ncclBanner()}; ${ranks} rank(s): ${devices.map(String).join(', ')}`);
    streams = devices.map((d) => d.createStream());
    clique = NcclComm.initAll(devices);
  });

  after(() => {
    clique?.dispose();
    for (const s of streams ?? []) s.dispose();
  });

  const sync = (): void => streams.forEach((s) => s.synchronize());

  test('data-parallel step: x += rank + 1, g = allReduce_sum(x), w = g / 2 — graphed = eager = the closed form, over 500 steps', () => {
    const n = 3000;
    const kernels = devices.map((d) => new StepKernels(d));
    const mk = (): DeviceBuffer[] => devices.map((d) => DeviceBuffer.alloc(d, 4 * n));
    const sets = [0, 1].map(() => ({ x: mk(), g: mk(), w: mk() }));
    const init = (r: number): Float32Array => Float32Array.from({ length: n }, (_, i) => ((i * 7 + r) % 31) - 15);
    try {
      for (const set of sets) {
        set.x.forEach((b, r) => b.copyFromHost(init(r)));
        set.g.forEach((b, r) => b.memsetAsync(streams[r]!, 0));
        set.w.forEach((b, r) => b.memsetAsync(streams[r]!, 0));
      }
      sync();
      const step = (set: (typeof sets)[number]) => (st: readonly Stream[]): void => {
        for (let r = 0; r < ranks; r++) kernels[r]!.add(st[r]!, set.x[r]!, r + 1, n);
        clique.allReduce(st, (r) => ({ send: set.x[r]!, recv: set.g[r]!, count: n, type: 'f32', op: 'sum' }));
        for (let r = 0; r < ranks; r++) kernels[r]!.scale(st[r]!, set.g[r]!, set.w[r]!, 0.5, n);
      };
      const eager = step(sets[0]!);
      // NCCL connects its peers on the first collective: once eagerly before the capture.
      eager(streams);
      sync();
      sets[1]!.x.forEach((b, r) => b.copyFromHost(init(r)));
      using graphs = captureMultiDevice(streams, step(sets[1]!));
      assert.equal(graphs.execs.length, ranks);
      // The eager set has had one step; one more eagerly and a launch of the graphs (on the
      // freshly loaded set) make the two agree from here on.
      graphs.launch();
      sync();
      for (let s = 1; s < 500; s++) {
        eager(streams);
        graphs.launch();
      }
      eager(streams);
      sync();
      // After k steps: x_r = init_r + k(r + 1); w = (Σ_r x_r) / 2, the same on every rank.
      const k = 501;
      const expect = Float32Array.from({ length: n }, (_, i) => {
        let sum = 0;
        for (let r = 0; r < ranks; r++) sum += init(r)[i]! + k * (r + 1);
        return sum / 2;
      });
      const graphedK = 500;
      const expectGraphed = Float32Array.from({ length: n }, (_, i) => {
        let sum = 0;
        for (let r = 0; r < ranks; r++) sum += init(r)[i]! + graphedK * (r + 1);
        return sum / 2;
      });
      for (let r = 0; r < ranks; r++) {
        assert.deepEqual(readF32(sets[0]!.w[r]!), expect, `eager, rank ${r}`);
        assert.deepEqual(readF32(sets[1]!.w[r]!), expectGraphed, `graphed, rank ${r}`);
      }
      // One more graphed step brings the graphed set to the eager one's count: equal bit for bit.
      graphs.launch();
      sync();
      for (let r = 0; r < ranks; r++) assert.deepEqual(readF32(sets[1]!.w[r]!), readF32(sets[0]!.w[r]!), `graphed = eager, rank ${r}`);
    } finally {
      for (const set of sets) for (const b of [...set.x, ...set.g, ...set.w]) b.dispose();
      for (const k of kernels) k.dispose();
    }
  });

  test('tensor-parallel pair: all-gather, X·A_r, ·B_r, reduce-scatter — graphed = eager = one GPU = float64 CPU, over 200 replays', () => {
    const shape: PairShape = { tokens: 8 * ranks, hidden: 64, inner: 96 * ranks };
    const x = smallIntegers(shape.tokens * shape.hidden, 1);
    const a = smallIntegers(shape.hidden * shape.inner, 2);
    const b = smallIntegers(shape.inner * shape.hidden, 3);
    const cpu = cpuPair(shape, x, a, b);
    const one = singleGpuPair(devices[0]!, shape, x, a, b);
    assert.deepEqual(one, cpu, 'one GPU = CPU');
    assert.ok(cpu.some((v) => v !== 0) && cpu.some((v) => v < 0), 'a result with content');

    const pair = new TensorParallelPair(clique, shape);
    try {
      pair.load(x, a, b);
      pair.clear(streams);
      pair.step(streams);
      sync();
      assert.deepEqual(pair.result(), cpu, `eager over ${ranks} rank(s) = CPU`);
      using graphs = captureMultiDevice(streams, (st) => pair.step(st));
      const nodes = graphs.nodeCounts;
      console.log(`# tensor-parallel pair: graph nodes per rank ${nodes.join(', ')}`);
      // Two matrix products and the collectives' nodes on every rank.
      for (const c of nodes) assert.ok(c >= 3, `nodes per rank: ${c}`);
      pair.clear(streams);
      sync();
      assert.ok(pair.result().every((v) => v === 0), 'cleared');
      for (let i = 0; i < 200; i++) graphs.launch();
      sync();
      assert.deepEqual(pair.result(), cpu, `graphed over ${ranks} rank(s), 200 replays = CPU`);
      // New inputs through the same buffers: the graph computes on them (nothing baked in).
      const x2 = smallIntegers(shape.tokens * shape.hidden, 4);
      pair.load(x2, a, b);
      pair.clear(streams);
      graphs.launch();
      sync();
      assert.deepEqual(pair.result(), cpuPair(shape, x2, a, b), 'graphed on new inputs');
    } finally {
      pair.dispose();
    }
  });
});
