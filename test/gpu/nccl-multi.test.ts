/**
 * NCCL across two GPUs, both shapes: one process driving both (`ncclCommInitAll`, collectives in
 * groups, the step captured on both devices by `captureMultiDevice`), and two Node processes of one
 * rank each (`ncclGetUniqueId` in rank 0, the id passed as hex, `ncclCommInitRank` in each).
 * Skipped, with the reason, where fewer than two GPUs are present (also under CUDA_TESTS=require).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import {
  Device,
  DeviceBuffer,
  NcclComm,
  MultiDeviceCapture,
  captureMultiDevice,
  InvalidArgumentError,
  type NcclClique,
  type Stream,
} from '../../src/index.js';
import { multiGpuSuite, ncclBanner, StepKernels, readF32 } from './nccl-fixtures.js';

multiGpuSuite('NCCL on two GPUs, one process (ncclCommInitAll)', 2, () => {
  let clique: NcclClique;
  let streams: Stream[];
  let kernels: StepKernels[];
  const n = 8192;

  before(() => {
    console.log(`# ${ncclBanner()}`);
    const devices = [Device.get(0), Device.get(1)];
    clique = NcclComm.initAll(devices);
    streams = devices.map((d) => d.createStream());
    kernels = devices.map((d) => new StepKernels(d));
  });

  after(() => {
    for (const k of kernels ?? []) k.dispose();
    clique?.dispose();
    for (const s of streams ?? []) s.dispose();
  });

  const alloc = (fill: (r: number, i: number) => number, count = n): DeviceBuffer[] =>
    clique.comms.map((c) => {
      const b = DeviceBuffer.alloc(c.device, 4 * count);
      b.copyFromHost(Float32Array.from({ length: count }, (_, i) => fill(c.rank, i)));
      return b;
    });
  const sync = (): void => streams.forEach((s) => s.synchronize());

  test('two ranks on devices 0 and 1; a collective outside a group is refused (it could deadlock)', () => {
    assert.deepEqual(clique.comms.map((c) => [c.rank, c.size, c.device.ordinal, c.localRanks]), [[0, 2, 0, 2], [1, 2, 1, 2]]);
    const [x] = alloc(() => 1);
    try {
      assert.throws(
        () => clique.comm(0).allReduce(streams[0]!, { send: x!, count: n, type: 'f32', op: 'sum' }),
        (e: unknown) => e instanceof InvalidArgumentError && /inside one group/.test(e.message),
      );
      assert.throws(() => clique.comm(0).allReduce(streams[1]!, { send: x!, count: n, type: 'f32', op: 'sum' }), /stream is on device 1/);
    } finally {
      x!.dispose();
    }
  });

  test('allReduce sum and max, broadcast, allGather, reduceScatter move the right numbers between the GPUs', () => {
    const xs = alloc((r, i) => (r + 1) * 10 + (i % 5));
    const ys = alloc(() => 0, 2 * n);
    try {
      clique.allReduce(streams, (r) => ({ send: xs[r]!, recv: ys[r]!, count: n, type: 'f32', op: 'sum' }));
      sync();
      for (const y of ys) assert.ok(readF32(y).subarray(0, n).every((v, i) => v === 30 + 2 * (i % 5)), 'sum');
      clique.allReduce(streams, (r) => ({ send: xs[r]!, recv: ys[r]!, count: n, type: 'f32', op: 'max' }));
      sync();
      for (const y of ys) assert.ok(readF32(y).subarray(0, n).every((v, i) => v === 20 + (i % 5)), 'max');
      clique.broadcast(streams, (r) => ({ send: xs[r]!, recv: ys[r]!, count: n, type: 'f32', root: 1 }));
      sync();
      for (const y of ys) assert.ok(readF32(y).subarray(0, n).every((v, i) => v === 20 + (i % 5)), 'broadcast from rank 1');
      clique.allGather(streams, (r) => ({ send: xs[r]!, recv: ys[r]!, count: n, type: 'f32' }));
      sync();
      for (const y of ys) {
        const v = readF32(y);
        assert.ok(v.subarray(0, n).every((x, i) => x === 10 + (i % 5)) && v.subarray(n).every((x, i) => x === 20 + (i % 5)), 'allGather');
      }
      // reduceScatter: each rank sends 2 blocks of n/2 and receives the sum of its block.
      clique.reduceScatter(streams, (r) => ({ send: xs[r]!, recv: ys[r]!, count: n / 2, type: 'f32', op: 'sum' }));
      sync();
      for (const [r, y] of ys.entries()) {
        assert.ok(readF32(y).subarray(0, n / 2).every((v, i) => v === 30 + 2 * ((r * (n / 2) + i) % 5)), `reduceScatter rank ${r}`);
      }
    } finally {
      for (const b of [...xs, ...ys]) b.dispose();
    }
  });

  test('the data-parallel step: eager and captured on both GPUs give the same numbers; 1,000 replays stay right; the model matches', () => {
    // Each GPU: x += 1 (its half of the work), g = allReduce_sum(x), w = 0.5·g (the update).
    const init = (r: number, i: number): number => (r === 0 ? i % 11 : 100 - (i % 7));
    const step = (st: readonly Stream[], x: DeviceBuffer[], g: DeviceBuffer[], w: DeviceBuffer[]): void => {
      for (let r = 0; r < 2; r++) kernels[r]!.add(st[r]!, x[r]!, 1, n);
      clique.allReduce(st, (r) => ({ send: x[r]!, recv: g[r]!, count: n, type: 'f32', op: 'sum' }));
      for (let r = 0; r < 2; r++) kernels[r]!.scale(st[r]!, g[r]!, w[r]!, 0.5, n);
    };
    const [ex, eg, ew] = [alloc(init), alloc(() => 0), alloc(() => 0)];
    const [gx, gg, gw] = [alloc(init), alloc(() => 0), alloc(() => 0)];
    try {
      for (let i = 0; i < 3; i++) step(streams, ex, eg, ew);
      sync();
      using graphs = captureMultiDevice(streams, (st) => step(st, gx, gg, gw));
      console.log(`# two-GPU step graphs: ${graphs}`);
      for (let i = 0; i < 3; i++) graphs.launch();
      graphs.synchronize();
      for (let r = 0; r < 2; r++) assert.deepEqual(readF32(gw[r]!), readF32(ew[r]!), `rank ${r}: graph = eager`);
      for (let i = 0; i < 997; i++) graphs.launch();
      graphs.synchronize();
      const expect = Float32Array.from({ length: n }, (_, i) => 0.5 * (init(0, i) + 1000 + init(1, i) + 1000));
      for (let r = 0; r < 2; r++) assert.deepEqual(readF32(gw[r]!), expect, `rank ${r} after 1,000 replays`);
      // The CPU model of the same step, against what each device's graph holds.
      const cap = new MultiDeviceCapture(2);
      cap.beginCapture();
      for (let r = 0; r < 2; r++) cap.recordKernel(r, 'add_f32', Math.ceil(n / 256), 256, 0);
      cap.recordCollective({ op: 'allReduce', type: 'f32', count: n, redOp: 'sum' });
      for (let r = 0; r < 2; r++) cap.recordKernel(r, 'scale_into', Math.ceil(n / 256), 256, 0);
      const model = cap.endCapture();
      for (let r = 0; r < 2; r++) {
        const rb = graphs.execs[r]!.graph.readBack();
        const names = rb.nodes.map((x) => x.kernel?.name ?? x.type);
        console.log(`# device ${r} graph: ${names.join(', ')}`);
        const ours = names.filter((x) => x === 'add_f32' || x === 'scale_into');
        assert.deepEqual(ours, ['add_f32', 'scale_into'].filter((x) => model.nodesOf(r).some((id) => model.graph.node(id).name === x)));
        assert.equal(ours.length, model.rankSummary()[r]!.kernels);
        assert.ok(rb.nodes.length > ours.length, 'NCCL added its own node(s) to the graph');
      }
    } finally {
      for (const b of [...ex, ...eg, ...ew, ...gx, ...gg, ...gw]) b.dispose();
    }
  });
});

const worker = join(dirname(fileURLToPath(import.meta.url)), 'nccl-worker.js');

/** Runs one worker; resolves with its lines. `onLine` sees each as it arrives. */
function runWorker(args: string[], onLine: (line: string) => void): { child: ChildProcess; done: Promise<number> } {
  const child = spawn(process.execPath, [worker, ...args], {
    env: { ...process.env, NCCL_NVLS_ENABLE: process.env['NCCL_NVLS_ENABLE'] ?? '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout! }).on('line', onLine);
  const done = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  return { child, done };
}

multiGpuSuite('NCCL on two GPUs, two processes (ncclGetUniqueId + ncclCommInitRank)', 2, () => {
  test('rank 0 makes the id, rank 1 gets it as hex; both all-reduce eagerly and over 1,000 graph replays', { timeout: 180_000 }, async () => {
    const results: Record<number, unknown> = {};
    const errors: string[] = [];
    const onLine = (rank: number) => (line: string): void => {
      if (line.startsWith('RESULT ')) results[rank] = JSON.parse(line.slice(7));
      else if (line.startsWith('ERROR ')) errors.push(`rank ${rank}: ${line.slice(6)}`);
    };
    let gotId: (hex: string) => void = () => {};
    const idReady = new Promise<string>((resolve) => (gotId = resolve));
    const r0 = runWorker(['0', '2'], (line) => {
      if (line.startsWith('ID ')) gotId(line.slice(3));
      onLine(0)(line);
    });
    const timer = setTimeout(() => r0.child.kill('SIGKILL'), 170_000);
    try {
      const hex = await Promise.race([idReady, r0.done.then((c) => Promise.reject(new Error(`rank 0 exited (${c}) before printing its id: ${errors.join('; ')}`)))]);
      assert.equal(hex.length, 256);
      const r1 = runWorker(['1', '2', hex], onLine(1));
      const kill1 = setTimeout(() => r1.child.kill('SIGKILL'), 170_000);
      const codes = await Promise.all([r0.done, r1.done]);
      clearTimeout(kill1);
      assert.deepEqual(codes, [0, 0], errors.join('; '));
    } finally {
      clearTimeout(timer);
    }
    console.log(`# two processes: ${JSON.stringify(results)}`);
    for (const r of [0, 1]) {
      assert.deepEqual(
        (({ rank, size, device, eagerOk, graphOk }) => ({ rank, size, device, eagerOk, graphOk }))(results[r] as Record<string, unknown>),
        { rank: r, size: 2, device: r, eagerOk: true, graphOk: true },
      );
    }
  });
});
