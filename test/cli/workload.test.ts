import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MLP, MLP_PROGRAM, bufferBytes, nodeSteps, type ProgramArg } from '../../src/cli/workload.js';
import { referenceForward, relativeError, workloadData } from '../../src/cli/workload-data.js';
import { graphFromReadBack, modelGraph, sameDag } from '../../src/cli/workload-model.js';
import type { GraphReadBack } from '../../src/index.js';

/**
 * Runs the program's steps on the CPU, thread by thread over each launch's grid, with each
 * kernel's semantics as KERNEL_SOURCE defines them. It checks the program's wiring (buffers,
 * offsets, leading dimensions, grid sizes, stream order of the steps) against the reference, which
 * is written from the maths instead.
 */
function emulate(): Map<string, Float32Array | Int32Array> {
  const data = workloadData(MLP_PROGRAM);
  const mem = new Map<string, Float32Array | Int32Array>();
  for (const b of MLP_PROGRAM.buffers) {
    const init = data.get(b.name);
    mem.set(b.name, init ? init.slice() : b.type === 'i32' ? new Int32Array(b.elements).fill(-1) : new Float32Array(b.elements).fill(NaN));
  }
  for (const step of MLP_PROGRAM.steps) {
    if (step.op !== 'kernel') continue;
    const a = step.args.map((x: ProgramArg) => ('buf' in x ? mem.get(x.buf)! : 'i32' in x ? x.i32 : x.f32));
    const F = (i: number): Float32Array => a[i] as Float32Array;
    const I = (i: number): Int32Array => a[i] as Int32Array;
    const n = (i: number): number => a[i] as number;
    const threads = step.grid * step.block;
    for (let t = 0; t < threads; t++) {
      switch (step.fn) {
        case 'scale_shift':
          if (t < n(2)) F(1)[t] = F(0)[t]! * n(3) + n(4);
          break;
        case 'gemm': {
          const [aOff, lda, bOff, ldb, cOff, ldc, M, N, K] = [n(1), n(2), n(4), n(5), n(7), n(8), n(9), n(10), n(11)];
          if (t >= M * N) break;
          const m = Math.floor(t / N);
          const c = t % N;
          let acc = 0;
          for (let k = 0; k < K; k++) acc += F(0)[aOff + m * lda + k]! * F(3)[bOff + k * ldb + c]!;
          F(6)[cOff + m * ldc + c] = acc;
          break;
        }
        case 'add_bias': {
          const [cOff, ldc, bOff, M, N] = [n(1), n(2), n(4), n(5), n(6)];
          if (t < M * N) F(0)[cOff + Math.floor(t / N) * ldc + (t % N)]! += F(3)[bOff + (t % N)]!;
          break;
        }
        case 'relu': {
          const [cOff, ldc, M, N] = [n(1), n(2), n(3), n(4)];
          const i = cOff + Math.floor(t / N) * ldc + (t % N);
          if (t < M * N) F(0)[i] = Math.max(F(0)[i]!, 0);
          break;
        }
        case 'sum2_bias':
          if (t < n(4) * n(5)) F(3)[t] = F(0)[t]! + F(1)[t]! + F(2)[t % n(5)]!;
          break;
        case 'softmax_rows': {
          if (t >= n(3)) break;
          const r = t + n(2);
          const N = n(4);
          const z = F(0).subarray(r * N, (r + 1) * N);
          const mx = Math.max(...z);
          const e = Array.from(z, (v) => Math.exp(v - mx));
          const sum = e.reduce((x, y) => x + y, 0);
          e.forEach((v, j) => (F(1)[r * N + j] = v / sum));
          break;
        }
        case 'argmax_rows': {
          if (t >= n(3)) break;
          const r = t + n(2);
          const p = F(0).subarray(r * n(4), (r + 1) * n(4));
          let best = 0;
          for (let j = 1; j < p.length; j++) if (p[j]! > p[best]!) best = j;
          I(1)[r] = best;
          break;
        }
        case 'cross_entropy': {
          if (t >= n(5)) break;
          F(3)[t] = -Math.log(Math.max(F(0)[t * n(6) + I(1)[t]!]!, 1e-30));
          I(4)[t] = I(2)[t] === I(1)[t] ? 1 : 0;
          break;
        }
        case 'reduce_stats': {
          if (t !== 0) break;
          let loss = 0;
          let hits = 0;
          for (let r = 0; r < n(3); r++) {
            loss += F(0)[r]!;
            hits += I(1)[r]!;
          }
          F(2)[0] = loss / n(3);
          F(2)[1] = hits / n(3);
          break;
        }
      }
    }
  }
  return mem;
}

test('the program computes the MLP: its steps, run thread by thread, agree with the float64 reference', () => {
  const ref = referenceForward(workloadData(MLP_PROGRAM));
  const mem = emulate();
  const probs = mem.get('probs')!;
  assert.ok(probs.every((v) => Number.isFinite(v)), 'every probability was written');
  assert.ok(relativeError(probs, ref.probs) < 1e-5, `probs relative error ${relativeError(probs, ref.probs)}`);
  assert.deepEqual(Array.from(mem.get('pred')!), Array.from(ref.pred));
  const stats = mem.get('stats')!;
  assert.ok(Math.abs(stats[0]! - ref.loss) < 1e-4 * ref.loss, `loss ${stats[0]} vs ${ref.loss}`);
  assert.equal(stats[1], ref.accuracy);
  // Sensible data: the classes are not all the same and the loss is near ln 10 for random weights.
  assert.ok(new Set(Array.from(ref.pred)).size > 1);
  assert.ok(ref.loss > 1 && ref.loss < 5, String(ref.loss));
});

test('the workload: a few dozen small kernels over three streams, forks joined back', () => {
  const steps = nodeSteps(MLP_PROGRAM);
  assert.equal(steps.filter((s) => s.op === 'kernel').length, 34);
  assert.equal(steps.length, 39);
  const g = modelGraph(MLP_PROGRAM);
  assert.equal(g.nodeCount(), 39);
  assert.deepEqual(g.streams(), [0, 1, 2]);
  // Node i is step i, named by the step.
  assert.deepEqual(g.nodes().map((n) => n.name), steps.map((s) => s.name));
  // Both halves of every hidden layer feed both halves of the next one (the A ↔ B joins).
  const id = (name: string): number => steps.findIndex((s) => s.name === name);
  for (let l = 1; l < MLP.widths.length - 2; l++) {
    for (const from of ['a', 'b']) {
      for (const to of ['a', 'b']) assert.ok(g.isReachable(id(`layer${l}.relu ${from}`) as never, id(`layer${l + 1}.gemm ${to}`) as never), `${l} ${from}→${to}`);
    }
  }
  // The last download depends on everything.
  const last = g.nodeCount() - 1;
  for (let i = 0; i < last; i++) assert.ok(g.isReachable(i as never, last as never), String(i));
  // Buffer sizes: the batch upload is batch × inputs floats.
  const up = g.node(0 as never);
  assert.equal(up.kind === 'memcpy' && up.sizeBytes, bufferBytes(MLP_PROGRAM.buffers[0]!));
});

test('graphFromReadBack: a read-back whose nodes are the program steps gets their names and streams, and the model DAG', () => {
  const model = modelGraph(MLP_PROGRAM);
  const steps = nodeSteps(MLP_PROGRAM);
  // What the driver reports for the captured program: kinds, kernel names, shapes, and the edges.
  const readBack: GraphReadBack = {
    nodes: steps.map((s, index) =>
      s.op === 'kernel'
        ? { index, type: 'kernel', kernel: { name: s.fn, grid: [s.grid, 1, 1], block: [s.block, 1, 1], sharedMem: 0 } }
        : { index, type: 'memcpy', memcpy: { direction: s.op === 'upload' ? 'HostToDevice' : 'DeviceToHost', byteLength: 8, src: 1n, dst: 2n } },
    ),
    edges: model.edges().map(([a, b]) => [a, b] as const),
    edgeData: model.edges().map(() => ({ fromPort: 0, type: 0 })),
  };
  const { graph, matchesProgram } = graphFromReadBack(readBack, MLP_PROGRAM);
  assert.equal(matchesProgram, true);
  assert.ok(sameDag(graph, model));
  assert.equal(graph.node(3 as never).name, 'layer1.gemm a');
  const k = graph.node(3 as never);
  assert.equal(k.kind === 'kernel' ? k.functionName : k.kind, 'gemm');

  // An edge less: not the same DAG. Nodes out of order: no names or streams from the program.
  const fewer = graphFromReadBack({ ...readBack, edges: readBack.edges.slice(1) }, MLP_PROGRAM);
  assert.equal(sameDag(fewer.graph, model), false);
  const shuffled = graphFromReadBack({ nodes: [...readBack.nodes].reverse(), edges: [], edgeData: [] }, MLP_PROGRAM);
  assert.equal(shuffled.matchesProgram, false);
  assert.deepEqual(shuffled.graph.streams(), []);
  assert.equal(shuffled.graph.node(0 as never).name, 'memcpy DeviceToHost');
});
