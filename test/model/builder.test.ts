/** GraphBuilder: nodes, named buffers, data-flow edges, dep/chain/fanIn/fanOut, bindings, refusals. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ExecGraph, GraphBuilder, GraphError, InvalidArgumentError, NodeId, type BufferRef } from '../../src/index.js';
import { refused } from '../support/refused.js';

test('the pipeline: upload → two kernels in parallel → join kernel → download, edges from the buffers alone', () => {
  const b = new GraphBuilder();
  const n = 1024;
  const hin = b.hostBuffer('in', 4 * n);
  const hout = b.hostBuffer('out', 4 * n);
  const x = b.buffer('x', 4 * n);
  const y1 = b.buffer('y1', 4 * n);
  const y2 = b.buffer('y2', 4 * n);
  const z = b.buffer('z', 4 * n);
  const up = b.memcpy({ src: hin, dst: x, name: 'upload' });
  const k1 = b.kernel('scale', { grid: 4, block: 256, args: [x, y1, b.f32(2), b.i32(n)], reads: [x], writes: [y1] });
  const k2 = b.kernel('offset', { grid: 4, block: 256, args: [x, y2, b.f32(1), b.i32(n)], reads: [x], writes: [y2] });
  const j = b.kernel('add', { grid: 4, block: 256, args: [y1, y2, z, b.i32(n)], reads: [y1, y2], writes: [z] });
  const down = b.memcpy({ src: z, dst: hout, name: 'download' });
  const { graph, bindings, buffers } = b.build();
  assert.deepEqual(graph.edges(), [
    [up, k1],
    [up, k2],
    [k1, j],
    [k2, j],
    [j, down],
  ]);
  assert.equal(graph.node(up).kind === 'memcpy' && graph.node(up).name, 'upload');
  const upNode = graph.node(up);
  assert.ok(upNode.kind === 'memcpy' && upNode.dir === 'HostToDevice' && upNode.sizeBytes === 4 * n);
  const downNode = graph.node(down);
  assert.ok(downNode.kind === 'memcpy' && downNode.dir === 'DeviceToHost');
  assert.deepEqual(bindings.get(k1), { kind: 'kernel', args: [x, y1, { kind: 'scalar', type: 'f32', value: 2 }, { kind: 'scalar', type: 'i32', value: n }] });
  assert.deepEqual(bindings.get(up), { kind: 'memcpy', src: hin, dst: x, srcOffset: 0, dstOffset: 0 });
  assert.deepEqual(buffers.map((r) => r.name), ['in', 'out', 'x', 'y1', 'y2', 'z']);
  assert.deepEqual(graph.levels(), [[up], [k1, k2], [j], [down]]);
});

test('hazards: read after write, write after read, write after write; without reads/writes every buffer argument is both', () => {
  const b = new GraphBuilder();
  const a = b.buffer('a', 64);
  const c = b.buffer('c', 64);
  const w1 = b.memset(a, 1); // writes a
  const r1 = b.kernel('read_a', { grid: 1, block: 32, args: [a, c], reads: [a], writes: [c] }); // RAW on a
  const r2 = b.kernel('read_a2', { grid: 1, block: 32, args: [a], reads: [a], writes: [] }); // RAW on a, parallel to r1
  const w2 = b.memset(a, 2); // WAR after r1, r2; WAW after w1
  const both = b.kernel('rw', { grid: 1, block: 32, args: [c] }); // reads and writes c: after r1 (which wrote c)
  const { graph } = b.build();
  assert.ok(graph.hasEdge(w1, r1) && graph.hasEdge(w1, r2));
  assert.ok(!graph.isReachable(r1, r2) && !graph.isReachable(r2, r1));
  assert.ok(graph.hasEdge(r1, w2) && graph.hasEdge(r2, w2) && graph.hasEdge(w1, w2));
  assert.ok(graph.hasEdge(r1, both));
  assert.ok(!graph.isReachable(w2, both) && !graph.isReachable(both, w2), 'a and c are independent after r1');
});

test('inferEdges: false adds no edge; dep, chain, fanIn, fanOut add them by hand', () => {
  const b = new GraphBuilder({ inferEdges: false });
  const buf = b.buffer('buf', 16);
  const m1 = b.memset(buf, 1);
  const m2 = b.memset(buf, 2);
  const fork = b.empty('fork');
  const xs = [b.kernel('k', { grid: 1, block: 1 }), b.kernel('k', { grid: 2, block: 1 }), b.kernel('k', { grid: 3, block: 1 })];
  const join = b.empty('join');
  const h = b.host('log', () => {});
  b.chain([m1, m2, fork]).fanOut(fork, xs).fanIn(xs, join).dep(join, h);
  const { graph, bindings } = b.build();
  assert.equal(graph.edgeCount(), 2 + 3 + 3 + 1);
  assert.ok(graph.isReachable(m1, h));
  assert.equal(graph.node(fork).kind, 'empty');
  assert.equal(graph.node(fork).name, 'fork');
  assert.equal(bindings.get(h)?.kind, 'hostCallback');
});

test('dep refuses a cycle and an unknown node (the upstream builder dropped them silently)', () => {
  const b = new GraphBuilder();
  const a = b.empty();
  const c = b.empty();
  b.dep(a, c);
  assert.throws(() => b.dep(c, a), (e: unknown) => e instanceof GraphError && e.kind === 'CycleDetected');
  assert.throws(() => b.dep(a, NodeId(9)), (e: unknown) => e instanceof GraphError && e.kind === 'NodeNotFound');
});

test('refusals name the operation and the field, and change nothing', () => {
  const b = new GraphBuilder();
  const x = b.buffer('x', 64);
  const h = b.hostBuffer('h', 64);
  const other = new GraphBuilder().buffer('x', 64);
  assert.throws(() => b.buffer('x', 8), /GraphBuilder\.buffer: a buffer named 'x' already exists/);
  assert.throws(() => b.buffer('y', 0), /GraphBuilder\.buffer: sizeBytes must be an integer in 1\.\./);
  assert.throws(() => b.kernel('k', { grid: 0, block: 32 }), (e: unknown) => e instanceof InvalidArgumentError && /^GraphBuilder\.kernel: grid must be/.test(e.message));
  assert.throws(() => b.kernel('k', { grid: 1, block: [32, 64] }), /GraphBuilder\.kernel: block has 32·64·1 = 2048 threads/);
  assert.throws(() => b.kernel('k', { grid: 1, block: 1, args: [3 as never] }), /args\[0\] must be a buffer declared on this builder/);
  assert.throws(() => b.kernel('k', { grid: 1, block: 1, args: [other] }), /args\[0\] must be a buffer declared on this builder/);
  assert.throws(() => b.memcpy({ src: h, dst: h }), /between two host buffers/);
  assert.throws(() => b.memcpy({ src: x, dst: h, sizeBytes: 65 }), /65 bytes at offset 0 do not fit in buffer 'x'/);
  assert.throws(() => b.memset(h, 0), /dst must be a device buffer/);
  assert.throws(() => b.memset(x, 256), /GraphBuilder\.memset: value must be an integer in 0\.\.255/);
  assert.throws(() => b.memset(x, 0, { elementSize: 4, sizeBytes: 6 }), /multiple of elementSize/);
  assert.throws(() => b.host(''), /label must be a non-empty string/);
  assert.throws(() => b.i32(2 ** 31), /GraphBuilder\.i32/);
  assert.throws(() => b.u64(-1), /out of range/);
  assert.throws(() => b.kernel('k', { grid: 1, block: 1, bogus: 1 } as never), /unknown option 'bogus'/);
  const { graph } = b.build();
  assert.equal(graph.nodeCount(), 0, 'refused calls added nothing');
  assert.throws(() => b.empty(), (e: unknown) => e instanceof GraphError && e.code === 'BUILDER_BUILT');
});

test('a hole in reads, writes or args is refused naming its index, and the refused call adds no node', () => {
  const b = new GraphBuilder();
  const x = b.buffer('x', 64);
  const y = b.buffer('y', 64);
  // `map` and `forEach` skip holes: the node went in first and a raw TypeError followed, or the binding held undefined.
  refused(() => b.kernel('k', { grid: 1, block: 1, reads: [x, , y] as never }), InvalidArgumentError, 'GraphBuilder.kernel', /reads\[1\] must be a buffer declared on this builder, got undefined/);
  refused(() => b.kernel('k', { grid: 1, block: 1, writes: [, x] as never }), InvalidArgumentError, 'GraphBuilder.kernel', /writes\[0\] must be a buffer/);
  refused(() => b.kernel('k', { grid: 1, block: 1, args: [x, , b.i32(1)] as never }), InvalidArgumentError, 'GraphBuilder.kernel', /args\[1\] must be a buffer declared on this builder, got undefined/);
  refused(() => b.host('h', undefined, { writes: [x, ,] as never }), InvalidArgumentError, 'GraphBuilder.host', /writes\[1\] must be a buffer/);
  const child = new GraphBuilder();
  child.empty();
  refused(() => b.childGraph(child.build(), { reads: [, x] as never }), InvalidArgumentError, 'GraphBuilder.childGraph', /reads\[0\] must be a buffer/);
  // An offset past the end is refused as such, not as a negative default size.
  refused(() => b.memcpy({ src: x, dst: y, srcOffset: 100 }), InvalidArgumentError, 'GraphBuilder.memcpy', /srcOffset 100 is past the end of buffer 'x' \(64 bytes\)/);
  refused(() => b.memcpy({ src: x, dst: y, dstOffset: 65 }), InvalidArgumentError, 'GraphBuilder.memcpy', /dstOffset 65 is past the end of buffer 'y'/);
  refused(() => b.memset(x, 0, { offset: 100 }), InvalidArgumentError, 'GraphBuilder.memset', /offset 100 is past the end of buffer 'x'/);
  assert.equal(b.memcpy({ src: x, dst: y, srcOffset: 64 }), 0, 'an offset at the end copies nothing, and is allowed');
  const k = b.kernel('k', { grid: 1, block: 1, args: [x, b.i32(1)] });
  const built = b.build();
  assert.equal(built.graph.nodeCount(), 2, 'only the accepted calls added nodes');
  const binding = built.bindings.get(k) as { kind: string; args: unknown[] };
  assert.equal(binding.args.length, 2);
  assert.equal(binding.args[0], x);
  // What build() returns is taken by its brand, so its fields cannot be replaced afterwards.
  assert.ok(Object.isFrozen(built) && Object.isFrozen(built.buffers));
  assert.throws(() => {
    (built as { bindings: unknown }).bindings = 5;
  }, TypeError);
  assert.equal(new GraphBuilder().childGraph(built), 0);
});

test('a node listing many buffers is added in time linear in them (a child graph over thousands of weights)', () => {
  const time = (k: number): number => {
    let best = Infinity;
    for (let r = 0; r < 3; r++) {
      const b = new GraphBuilder();
      const bufs = Array.from({ length: k }, (_, i) => b.buffer(`w${i}`, 4));
      const t0 = performance.now();
      b.host('update', undefined, { reads: bufs, writes: bufs });
      best = Math.min(best, performance.now() - t0);
      assert.equal(b.build().graph.nodeCount(), 1);
    }
    return best;
  };
  time(1000);
  const small = time(4000);
  const large = time(32_000);
  // Linear: about 8×. Looking each read up in the writes list is quadratic: 64× (seconds).
  assert.ok(large < 24 * Math.max(small, 2), `4,000 buffers in ${small.toFixed(1)} ms, 32,000 in ${large.toFixed(1)} ms`);
  // The edges are the same as before: a reader that also writes waits for the last writer, not for itself.
  const b = new GraphBuilder();
  const bufs = Array.from({ length: 20 }, (_, i) => b.buffer(`x${i}`, 4));
  const first = b.host('first', undefined, { writes: bufs });
  const both = b.host('both', undefined, { reads: bufs, writes: bufs });
  const last = b.host('last', undefined, { reads: bufs });
  assert.deepEqual(b.build().graph.edges(), [[first, both], [both, last]]);
});

test('property: the inferred edges order every conflicting pair exactly as the program order does', () => {
  // Random programs over 4 buffers: two nodes conflict when one writes a buffer the other uses.
  const opArb = fc.record({ reads: fc.subarray([0, 1, 2, 3]), writes: fc.subarray([0, 1, 2, 3]) });
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
      const b = new GraphBuilder();
      const bufs: BufferRef[] = [0, 1, 2, 3].map((i) => b.buffer(`b${i}`, 16));
      const ids = ops.map((o, i) =>
        b.kernel('k', { grid: i + 1, block: 1, reads: o.reads.map((r) => bufs[r]!), writes: o.writes.map((w) => bufs[w]!) }),
      );
      const { graph } = b.build();
      for (let i = 0; i < ops.length; i++) {
        for (let j = i + 1; j < ops.length; j++) {
          const a = ops[i]!;
          const c = ops[j]!;
          const conflict =
            a.writes.some((w) => c.reads.includes(w) || c.writes.includes(w)) || c.writes.some((w) => a.reads.includes(w));
          if (conflict) assert.ok(graph.isReachable(ids[i]!, ids[j]!), `${i} → ${j} conflict must be ordered`);
          assert.ok(!graph.isReachable(ids[j]!, ids[i]!), 'edges follow program order');
        }
      }
      // No edge without a reason: each edge joins two conflicting nodes.
      for (const [u, v] of graph.edges()) {
        const a = ops[u]!;
        const c = ops[v]!;
        assert.ok(a.writes.some((w) => c.reads.includes(w) || c.writes.includes(w)) || c.writes.some((w) => a.reads.includes(w)));
      }
    }),
    { numRuns: 200 },
  );
});

test('graph memory: memAlloc orders every user after the allocation, memFree after every user; a freed buffer cannot be used', () => {
  const b = new GraphBuilder();
  const x = b.buffer('x', 1024);
  const tmp = b.memAlloc('tmp', 1024);
  assert.equal(tmp.allocatedBy, 0);
  const k1 = b.kernel('produce', { grid: 1, block: 32, args: [tmp], writes: [tmp] });
  const k2 = b.kernel('consume', { grid: 1, block: 32, args: [tmp, x], reads: [tmp], writes: [x] });
  const k3 = b.kernel('peek', { grid: 1, block: 32, args: [tmp], reads: [tmp] });
  const free = b.memFree(tmp);
  assert.throws(() => b.kernel('late', { grid: 1, block: 32, args: [tmp] }), /GraphBuilder\.kernel: buffer 'tmp' was freed by node 4; it cannot be used afterwards$/);
  assert.throws(() => b.memFree(tmp), /GraphBuilder\.memFree: buffer 'tmp' was freed by node 4/);
  assert.throws(() => b.memFree(x), /GraphBuilder\.memFree: buffer 'x' is not graph memory \(declare it with memAlloc\)/);
  assert.throws(() => b.memAlloc('x', 8), /GraphBuilder\.memAlloc: a buffer named 'x' already exists/);
  assert.throws(() => b.memAlloc('y', 0), /GraphBuilder\.memAlloc: sizeBytes/);
  const { graph, bindings } = b.build();
  assert.equal(graph.nodeCount(), 5, 'refusals added no node');
  assert.deepEqual(graph.predecessors(k1), [0]);
  assert.deepEqual(graph.predecessors(k2), [k1]);
  assert.deepEqual(graph.predecessors(k3), [k1]);
  assert.deepEqual(graph.predecessors(free), [k1, k2, k3], 'after the last writer and every reader since');
  assert.deepEqual(graph.node(free), { id: free, kind: 'memFree', name: 'free tmp', stream: null, cost: 1, alloc: 0 });
  assert.deepEqual(graph.node(NodeId(0)), { id: 0, kind: 'memAlloc', name: 'alloc tmp', stream: null, cost: 1, sizeBytes: 1024, device: 0 });
  assert.deepEqual(bindings.get(free), { kind: 'memFree', buffer: tmp });
  ExecGraph.instantiate(graph); // the free follows its allocation
});

test('events, child graphs and programmatic dep edges', () => {
  const inner = new GraphBuilder();
  const buf = inner.buffer('shared', 64);
  inner.kernel('step', { grid: 1, block: 32, args: [buf] });
  const built = inner.build();
  const b = new GraphBuilder();
  const shared = b.buffer('shared', 64);
  const rec = b.eventRecord(3, { name: 'ready' });
  const sub = b.childGraph(built, { reads: [shared], writes: [shared], name: 'body' });
  const bare = b.childGraph(built.graph, { reads: [shared] });
  const wait = b.eventWait(3);
  const k1 = b.kernel('a', { grid: 1, block: 32 });
  const k2 = b.kernel('b', { grid: 1, block: 32 });
  b.dep(rec, sub).dep(sub, wait).dep(k1, k2, { kind: 'programmatic' });
  assert.throws(() => b.dep(rec, k1, { kind: 'programmatic' }), /GraphBuilder\.dep: edge 0 → 4: a programmatic edge joins two kernel nodes/);
  assert.throws(() => b.childGraph({ graph: 1 } as never), /GraphBuilder\.childGraph: child must be a ComputeGraph or what GraphBuilder\.build\(\) returned/);
  assert.throws(() => b.eventWait(-1), /GraphBuilder\.eventWait: event/);
  const { graph, bindings } = b.build();
  assert.equal(graph.nodeCount(), 6);
  assert.deepEqual(graph.edgeData(k1, k2), { kind: 'programmatic', port: 'trigger' });
  assert.deepEqual(graph.predecessors(bare), [sub], 'the bare child reads what the first child wrote');
  assert.equal((graph.node(rec) as { event: number }).event, 3);
  const binding = bindings.get(sub);
  assert.ok(binding?.kind === 'childGraph' && binding.bindings !== null && binding.bindings.size === 1);
  assert.deepEqual(bindings.get(bare), { kind: 'childGraph', bindings: null });
});

test('dep gives an inferred plain edge its data; chain and fanIn accept an edge already there of any kind', () => {
  const b = new GraphBuilder();
  const x = b.buffer('x', 64);
  const k1 = b.kernel('produce', { grid: 1, block: 32, args: [x] });
  const k2 = b.kernel('consume', { grid: 1, block: 32, args: [x] });
  const k3 = b.kernel('after', { grid: 1, block: 32 });
  b.dep(k1, k2, { kind: 'programmatic' }); // the buffer inferred k1 → k2; it becomes programmatic
  b.chain([k1, k2, k3]).fanIn([k1, k2], k3);
  assert.throws(() => b.dep(k1, k2, { port: 'launchOrder' }), /GraphBuilder\.dep: edge 0 → 1 already exists as a programmatic edge; it cannot also be plain, launchOrder/);
  const built = b.build();
  assert.deepEqual(built.graph.edgeData(k1, k2), { kind: 'programmatic', port: 'trigger' });
  assert.equal(built.graph.edgeCount(), 3);
  const c = new GraphBuilder();
  assert.throws(() => c.childGraph({ graph: built.graph, bindings: new Map([[0, 'garbage']]) } as never), /GraphBuilder\.childGraph: child must be a ComputeGraph or what GraphBuilder\.build\(\) returned/);
  const mem = new GraphBuilder();
  mem.memAlloc('t', 8);
  const withMemory = mem.build();
  assert.throws(
    () => c.childGraph(withMemory),
    (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'child' && /^GraphBuilder\.childGraph: child holds a 'memAlloc' node \(node 0\)/.test(e.message),
  );
  c.childGraph(built); // the real build() result is taken
});
