/**
 * The CPU model of a multi-GPU step (`MultiDeviceCapture`): per-rank work on one modelled stream
 * per rank, collectives that join the ranks, and what the resulting graph lets a user check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MultiDeviceCapture,
  MemcpyDir,
  GraphError,
  InvalidArgumentError,
  StreamId,
  collectiveLabel,
  type NodeId,
} from '../../src/index.js';

/** The data-parallel step on `ranks` GPUs: upload, forward/backward, all-reduce, update, download. */
function dataParallelStep(ranks: number) {
  const cap = new MultiDeviceCapture(ranks);
  cap.beginCapture();
  const grad: NodeId[] = [];
  for (let r = 0; r < ranks; r++) {
    cap.recordMemcpy(r, `batch[${r}]`, MemcpyDir.HostToDevice, 1 << 20);
    grad.push(cap.recordKernel(r, 'forward_backward', 128, 256, 0));
  }
  const ar = cap.recordCollective({ op: 'allReduce', type: 'f32', count: 1 << 18, redOp: 'sum' });
  const upd: NodeId[] = [];
  for (let r = 0; r < ranks; r++) {
    upd.push(cap.recordKernel(r, 'sgd_update', 128, 256, 0));
    cap.recordMemcpy(r, `weights[${r}]`, MemcpyDir.DeviceToHost, 1 << 20);
  }
  return { step: cap.endCapture(), grad, ar, upd };
}

test('a data-parallel step: every rank\'s update waits for every rank\'s gradient, through the collective', () => {
  const { step, grad, ar, upd } = dataParallelStep(2);
  const g = step.graph;
  assert.equal(g.nodeCount(), 2 * 5);
  assert.deepEqual(g.streams(), [StreamId(0), StreamId(1)]);
  for (const a of grad) for (const b of upd) assert.ok(g.isReachable(a, b), `${a} → ${b}`);
  // Before the collective the ranks are independent: neither gradient waits for the other.
  assert.equal(g.isReachable(grad[0]!, grad[1]!), false);
  assert.equal(g.isReachable(grad[1]!, grad[0]!), false);
  // After it too: the updates run side by side.
  assert.equal(g.isReachable(upd[0]!, upd[1]!), false);
  // The collective is one node per rank, on that rank's stream, named after the NCCL call.
  assert.equal(ar.length, 2);
  assert.deepEqual(ar.map((n) => step.rankOf(n)), [0, 1]);
  assert.equal(g.node(ar[0]!).name, 'ncclAllReduce(sum, f32 × 262144)');
  assert.equal(g.node(ar[0]!).kind, 'kernel');
  assert.deepEqual(ar.map((n) => step.collectiveOf(n)), [0, 0]);
  assert.equal(step.collectiveOf(grad[0]!), null);
  // The rendezvous: cross-rank edges all end at collective nodes, one from each other rank.
  const cross = step.crossRankEdges();
  assert.deepEqual(cross.sort(), [[grad[0], ar[1]], [grad[1], ar[0]]].sort());
  assert.ok(cross.every(([, b]) => step.collectiveOf(b) !== null));
  // Each rank's part has the shape of that device's captured graph: 2 copies, 2 kernels, 1 collective.
  assert.deepEqual(step.rankSummary(), [
    { rank: 0, nodes: 5, kernels: 2, memcpys: 2, memsets: 0, hostCallbacks: 0, collectives: 1 },
    { rank: 1, nodes: 5, kernels: 2, memcpys: 2, memsets: 0, hostCallbacks: 0, collectives: 1 },
  ]);
  assert.deepEqual(step.nodesOf(1).map((n) => g.node(n).name), ['batch[1]', 'forward_backward', 'ncclAllReduce(sum, f32 × 262144)', 'sgd_update', 'weights[1]']);
  assert.equal(step.toString(), 'MultiDeviceGraph(2 ranks, 10 nodes, 1 collective)');
  // Drawn: one cluster per rank, the rendezvous edges dashed.
  const dot = step.toDot({ title: 'data-parallel step' });
  assert.match(dot, /cluster/);
  assert.match(dot, /ncclAllReduce\(sum, f32 × 262144\)/);
  assert.match(dot, /dashed/);
});

test('the step\'s graph is read-only, so the ranks it reports stay those of the recorded nodes; a clone is editable', () => {
  const { step } = dataParallelStep(2);
  const before = JSON.stringify(step.graph);
  assert.equal(step.graph.readOnly, true);
  // A node added to the step belonged to no rank: rankOf answered −stream, rankSummary threw a raw TypeError.
  for (const change of [
    () => step.graph.addNode({ kind: 'empty' }),
    () => step.graph.addNode({ kind: 'kernel', functionName: 'k', grid: 1, block: 32, stream: StreamId(7) }),
    () => step.graph.addEdge(0 as NodeId, 1 as NodeId),
    () => step.graph.addEdges([[0 as NodeId, 2 as NodeId]]),
  ]) {
    assert.throws(change, (e: unknown) => e instanceof GraphError && e.code === 'GRAPH_READ_ONLY' && /this graph is a MultiDeviceGraph's step and cannot change; clone\(\) it to edit a copy$/.test(e.message));
  }
  assert.equal(JSON.stringify(step.graph), before);
  assert.deepEqual(step.rankSummary().map((r) => r.nodes), [5, 5]);
  const copy = step.graph.clone();
  assert.equal(copy.readOnly, false);
  copy.addNode({ kind: 'empty' });
  assert.equal(copy.nodeCount(), 11);
  // An empty step's graph is read-only too.
  const cap = new MultiDeviceCapture(1);
  cap.beginCapture();
  const inner = cap.endCapture();
  assert.throws(() => inner.graph.addNode({ kind: 'empty' }), /MultiDeviceGraph's step/);
});

test('one rank: a collective joins nothing and adds no cross edge', () => {
  const { step } = dataParallelStep(1);
  assert.equal(step.crossRankEdges().length, 0);
  assert.equal(step.graph.edgeCount(), 4); // a chain of five nodes
});

test('a collective on ranks with no work yet depends only on what exists; ranks with work are joined', () => {
  const cap = new MultiDeviceCapture(3, { firstStream: 10 });
  cap.beginCapture();
  const k = cap.recordKernel(2, 'only_rank_2', 1, 32, 0);
  const b = cap.recordCollective({ op: 'broadcast', type: 'bf16', count: 8, root: 2 });
  const step = cap.endCapture();
  assert.equal(step.graph.node(b[0]!).name, 'ncclBroadcast(root 2, bf16 × 8)');
  assert.deepEqual(step.graph.streams(), [StreamId(10), StreamId(11), StreamId(12)]);
  for (const n of b) assert.ok(step.graph.isReachable(k, n));
  assert.deepEqual(step.graph.predecessors(b[0]!), [k]);
});

test('collective specs are checked before anything is recorded', () => {
  const cap = new MultiDeviceCapture(2);
  assert.throws(() => cap.recordCollective({ op: 'allReduce', type: 'f32', count: 1, redOp: 'sum' }), (e: unknown) => e instanceof GraphError && e.code === 'CAPTURE_NOT_ACTIVE');
  cap.beginCapture();
  assert.throws(() => cap.beginCapture(), (e: unknown) => e instanceof GraphError && e.code === 'CAPTURE_ALREADY_ACTIVE');
  const bad: Array<[unknown, RegExp]> = [
    [{ op: 'allToAll', type: 'f32', count: 1 }, /op must be one of 'allReduce'/],
    [{ op: 'allReduce', type: 'float', count: 1, redOp: 'sum' }, /type must be one of/],
    [{ op: 'allReduce', type: 'f32', count: -1, redOp: 'sum' }, /count must be an integer/],
    [{ op: 'allReduce', type: 'f32', count: 1 }, /redOp must be one of 'sum', 'prod', 'max', 'min', 'avg', got undefined/],
    [{ op: 'allGather', type: 'f32', count: 1, redOp: 'sum' }, /allGather takes no redOp/],
    [{ op: 'allReduce', type: 'f32', count: 1, redOp: 'sum', root: 0 }, /allReduce takes no root/],
    [{ op: 'broadcast', type: 'f32', count: 1, root: 2 }, /root must be an integer in 0\.\.1, got 2/],
    [{ op: 'broadcast', type: 'f32', count: 1, root: 0, extra: 1 }, /unknown option 'extra'/],
    [undefined, /spec must be/],
  ];
  for (const [spec, message] of bad) {
    assert.throws(
      () => cap.recordCollective(spec as never),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('MultiDeviceCapture.recordCollective: ') && message.test(e.message),
      JSON.stringify(spec),
    );
  }
  assert.equal(cap.nodeCount(), 0, 'nothing was recorded by refused calls');
  assert.throws(() => cap.recordKernel(2, 'k', 1, 1, 0), /rank must be an integer in 0\.\.1, got 2/);
  assert.throws(() => new MultiDeviceCapture(0), /ranks must be an integer in 1\.\.4096/);
  cap.recordKernel(0, 'k', 1, 1, 0);
  cap.endCapture();
  assert.throws(() => cap.recordCollective({ op: 'allGather', type: 'u8', count: 4 }), (e: unknown) => e instanceof GraphError && e.code === 'CAPTURE_SESSION_ENDED');
  assert.throws(() => cap.recordKernel(0, 'k', 1, 1, 0), GraphError);
});

test('labels name the NCCL call and its arguments', () => {
  assert.equal(collectiveLabel({ op: 'reduceScatter', type: 'f16', count: 3, redOp: 'max' }), 'ncclReduceScatter(max, f16 × 3)');
  // A spec recordCollective would refuse is refused here too (it was labelled `undefined(undefined × undefined)`).
  for (const [spec, message] of [
    [{}, /^collectiveLabel: op must be one of 'allReduce'/],
    [undefined, /^collectiveLabel: spec must be \{ op, type, count, … \}/],
    [{ op: 'allReduce', type: 'f32', count: 1 }, /^collectiveLabel: redOp must be one of/],
    [{ op: 'broadcast', type: 'f32', count: 1, root: 4096 }, /^collectiveLabel: root must be an integer in 0\.\.4095, got 4096$/],
    [{ op: 'allGather', type: 'f32', count: 1.5 }, /^collectiveLabel: count must be an integer/],
  ] as const) {
    assert.throws(() => collectiveLabel(spec as never), (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message), message.source);
  }
  assert.equal(collectiveLabel({ op: 'reduce', type: 'i32', count: 1, redOp: 'min', root: 1 }), 'ncclReduce(min, root 1, i32 × 1)');
  assert.equal(collectiveLabel({ op: 'allGather', type: 'u64', count: 0 }), 'ncclAllGather(u64 × 0)');
});

test('property: for any sequence of per-rank work and collectives, collectives order exactly what they separate', () => {
  // A program: steps are either work on one rank or a collective on all. Two nodes on one rank are
  // ordered by record order; across ranks only a collective that both reach orders them.
  const stepArb = fc.oneof(fc.record({ work: fc.nat(3) }), fc.constant({ collective: true as const }));
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.array(stepArb, { maxLength: 24 }), (ranks, program) => {
      const cap = new MultiDeviceCapture(ranks);
      cap.beginCapture();
      const epochOf = new Map<number, { rank: number; epoch: number; seq: number; collective: boolean }>();
      let epoch = 0;
      let seq = 0;
      for (const s of program) {
        if ('collective' in s) {
          const nodes = cap.recordCollective({ op: 'allReduce', type: 'f32', count: 4, redOp: 'sum' });
          nodes.forEach((n, r) => epochOf.set(n, { rank: r, epoch, seq: seq++, collective: true }));
          epoch++;
        } else {
          const r = s.work % ranks;
          const n = cap.recordKernel(r, 'work', 1, 32, 0);
          epochOf.set(n, { rank: r, epoch, seq: seq++, collective: false });
        }
      }
      const step = cap.endCapture();
      const ids = [...epochOf.keys()];
      for (const a of ids) {
        for (const b of ids) {
          if (a === b) continue;
          const A = epochOf.get(a)!;
          const B = epochOf.get(b)!;
          // Across ranks the only edges run from a rank's last node before collective k into the
          // other ranks' collective-k nodes. So b waits for a exactly when the first collective
          // after a on a's rank comes no later than the last collective at or before b on b's.
          const after = A.collective ? A.epoch + 1 : A.epoch;
          const upTo = B.collective ? B.epoch : B.epoch - 1;
          const expected = A.rank === B.rank ? B.seq > A.seq : after <= upTo;
          assert.equal(step.graph.isReachable(a as NodeId, b as NodeId), expected, `${JSON.stringify(A)} → ${JSON.stringify(B)}`);
        }
      }
    }),
    { numRuns: 150 },
  );
});
