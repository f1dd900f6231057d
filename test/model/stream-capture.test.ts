import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  StreamCapture,
  StreamId,
  CaptureEvent,
  CaptureStatus,
  MemcpyDir,
  GraphError,
  InvalidArgumentError,
  type NodeId,
} from '../../src/index.js';

const S0 = StreamId(0);
const S1 = StreamId(1);
const S2 = StreamId(2);
const E0 = CaptureEvent(0);
const E1 = CaptureEvent(1);

/** Asserts `f` throws a GraphError with this kind and code, whose message starts with `prefix`. */
function throwsGraph(f: () => unknown, kind: string, code: string, prefix: string, includes?: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof GraphError, `expected GraphError, got ${String(e)}`);
    assert.equal(e.kind, kind);
    assert.equal(e.code, code);
    assert.ok(e.message.startsWith(prefix), `message "${e.message}" should start with "${prefix}"`);
    if (includes) assert.match(e.message, includes);
    return true;
  });
}

function capturing(...streams: StreamId[]): StreamCapture {
  const cap = new StreamCapture();
  for (const s of streams) cap.beginCapture(s);
  return cap;
}

test('a fresh stream is None and the session is not capturing', () => {
  const cap = new StreamCapture();
  assert.equal(cap.status(S0), CaptureStatus.None);
  assert.equal(cap.status(StreamId(0xffff_ffff)), 'None');
  assert.equal(cap.isCapturing(), false);
  assert.equal(cap.nodeCount(), 0);
});

test('beginCapture makes a stream Active and the session capturing; a second begin throws Internal', () => {
  const cap = new StreamCapture();
  cap.beginCapture(S0);
  assert.equal(cap.status(S0), 'Active');
  assert.equal(cap.status(S1), 'None');
  assert.equal(cap.isCapturing(), true);
  throwsGraph(() => cap.beginCapture(S0), 'Internal', 'CAPTURE_ALREADY_ACTIVE', 'StreamCapture.beginCapture: ', /stream 0 is already capturing/);
  assert.equal(cap.status(S0), 'Active');
});

test('every record, event, wait and invalidate on a stream never begun throws Internal naming the stream', () => {
  const cap = capturing(S0);
  const calls: [string, () => unknown][] = [
    ['recordKernel', () => cap.recordKernel(S1, 'k', 1, 32, 0)],
    ['recordMemcpy', () => cap.recordMemcpy(S1, 'c', MemcpyDir.HostToDevice, 4)],
    ['recordMemset', () => cap.recordMemset(S1, 'm', 4, 0)],
    ['recordHostCallback', () => cap.recordHostCallback(S1, 'h')],
    ['recordEvent', () => cap.recordEvent(S1, E0)],
    ['waitEvent', () => cap.waitEvent(S1, E0)],
    ['invalidate', () => cap.invalidate(S1)],
  ];
  for (const [name, call] of calls) {
    throwsGraph(call, 'Internal', 'CAPTURE_NOT_ACTIVE', `StreamCapture.${name}: `, /stream 1 is not capturing/);
  }
  assert.equal(cap.nodeCount(), 0);
  assert.equal(cap.status(S1), 'None');
});

test('three kernels on one stream form a chain a → b → c', () => {
  const cap = capturing(S0);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  const b = cap.recordKernel(S0, 'b', 1, 32, 0);
  const c = cap.recordKernel(S0, 'c', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual([a, b, c], [0, 1, 2]);
  assert.equal(g.edgeCount(), 2);
  assert.deepEqual(g.edges(), [
    [a, b],
    [b, c],
  ]);
  assert.ok(g.isReachable(a, c));
  assert.ok(!g.isReachable(c, a));
  assert.ok(g.isReachable(b, b));
});

test("the seed's fork/join example: upload reaches the side kernel, which reaches the download", () => {
  const cap = capturing(S0, S1);
  const up = cap.recordMemcpy(S0, 'upload', MemcpyDir.HostToDevice, 4096);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  const k = cap.recordKernel(S1, 'relu', 4, 256, 0);
  cap.recordEvent(S1, E1);
  cap.waitEvent(S0, E1);
  const dn = cap.recordMemcpy(S0, 'download', MemcpyDir.DeviceToHost, 4096);
  assert.equal(cap.status(S0), 'Active');
  const g = cap.endCapture(S0);
  assert.ok(g.isReachable(up, k));
  assert.ok(g.isReachable(k, dn));
  assert.ok(!g.isReachable(k, up));
  assert.deepEqual(g.edges(), [
    [up, k],
    [up, dn],
    [k, dn],
  ]);
  assert.deepEqual(g.streams(), [S0, S1]);
});

test('node records keep what was recorded: kind, name, stream and parameters', () => {
  const cap = capturing(S0, StreamId(7));
  cap.recordKernel(S0, 'gemm', 64, 128, 4096);
  cap.recordMemcpy(StreamId(7), 'halo', MemcpyDir.PeerToPeer(0, 1), 2 ** 40);
  cap.recordMemset(S0, 'zero', 1024, 255);
  cap.recordHostCallback(S0, 'log step');
  const g = cap.endCapture(S0);
  assert.deepEqual(g.nodes(), [
    { id: 0, kind: 'kernel', name: 'gemm', stream: 0, cost: 1, functionName: 'gemm', grid: [64, 1, 1], block: [128, 1, 1], sharedMem: 4096 },
    { id: 1, kind: 'memcpy', name: 'halo', stream: 7, cost: 1, dir: { kind: 'PeerToPeer', srcDevice: 0, dstDevice: 1 }, sizeBytes: 2 ** 40 },
    { id: 2, kind: 'memset', name: 'zero', stream: 0, cost: 1, sizeBytes: 1024, value: 255, elementSize: 1 },
    { id: 3, kind: 'hostCallback', name: 'log step', stream: 0, cost: 1, label: 'log step' },
  ]);
});

test('nodeCount counts nodes on all streams; events and waits add none', () => {
  const cap = capturing(S0, S1);
  cap.recordKernel(S0, 'k', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  assert.equal(cap.nodeCount(), 1);
  cap.recordMemset(S1, 'm', 16, 0);
  assert.equal(cap.nodeCount(), 2);
});

test('waiting on an event never recorded does nothing', () => {
  const cap = capturing(S0, S1);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.waitEvent(S1, CaptureEvent(42));
  cap.recordKernel(S1, 'b', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.equal(g.edgeCount(), 0);
});

test('a wait issued before the waiting stream has any op attaches to its first later op', () => {
  const cap = capturing(S0, S1);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  cap.recordKernel(S0, 'a2', 1, 32, 0); // more work on S0 does not matter
  const b = cap.recordKernel(S1, 'b', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.predecessors(b), [a]);
});

test('a wait gates only later ops: ops already issued on the waiting stream are not re-ordered', () => {
  const cap = capturing(S0, S1);
  const early = cap.recordKernel(S1, 'early', 1, 32, 0);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  const late = cap.recordKernel(S1, 'late', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.ok(!g.isReachable(a, early));
  assert.ok(g.isReachable(a, late));
  assert.deepEqual(g.predecessors(late), [early, a]);
});

test('a parked wait is consumed by the next op: later ops depend on it only through the stream order', () => {
  const cap = capturing(S0, S1);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  const b = cap.recordKernel(S1, 'b', 1, 32, 0);
  const c = cap.recordKernel(S1, 'c', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.predecessors(b), [a]);
  assert.deepEqual(g.predecessors(c), [b]);
});

test('recordEvent on a stream with no ops is a no-op and keeps an earlier meaning of the event', () => {
  const cap = capturing(S0, S1, S2);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.recordEvent(S1, E0); // S1 has no ops: E0 still stands for a
  cap.waitEvent(S2, E0);
  const c = cap.recordKernel(S2, 'c', 1, 32, 0);
  cap.recordEvent(S1, E1); // never meaningful: waiting on it does nothing
  cap.waitEvent(S2, E1);
  const d = cap.recordKernel(S2, 'd', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.predecessors(c), [a]);
  assert.deepEqual(g.predecessors(d), [c]);
});

test('recording an event again moves it to the newer head', () => {
  const cap = capturing(S0, S1);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  const b = cap.recordKernel(S0, 'b', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  const c = cap.recordKernel(S1, 'c', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.predecessors(c), [b]);
});

test('an event keeps the node it stood for when the stream moves on; a join waits for exactly that node', () => {
  const cap = capturing(S0, S1);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  const b = cap.recordKernel(S0, 'b', 1, 32, 0);
  cap.waitEvent(S1, E0);
  const c = cap.recordKernel(S1, 'c', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.ok(g.isReachable(a, c));
  assert.ok(!g.isReachable(b, c));
});

test('waiting twice on one event, or on the stream’s own head, adds no duplicate edge', () => {
  const cap = capturing(S0, S1);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  cap.waitEvent(S1, E0);
  cap.waitEvent(S0, E0); // S0 waits on its own head
  const b = cap.recordKernel(S1, 'b', 1, 32, 0);
  const c = cap.recordKernel(S0, 'c', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.edges(), [
    [a, b],
    [a, c],
  ]);
});

test('a join of many streams takes time linear in the waits, under both semantics, and still drops repeated waits', () => {
  // One stream waits on the event of each of k streams, each twice, then records the join.
  const join = (semantics: 'per-stream' | 'cuda', k: number): number => {
    const cap = new StreamCapture({ semantics });
    cap.beginCapture(S0);
    cap.recordKernel(S0, 'root', 1, 32, 0);
    cap.recordEvent(S0, E0);
    for (let s = 1; s <= k; s++) {
      if (semantics === 'per-stream') cap.beginCapture(StreamId(s));
      cap.waitEvent(StreamId(s), E0);
      cap.recordKernel(StreamId(s), 'leaf', 1, 32, 0);
      cap.recordEvent(StreamId(s), CaptureEvent(s));
    }
    const t0 = performance.now();
    for (let r = 0; r < 2; r++) for (let s = 1; s <= k; s++) cap.waitEvent(S0, CaptureEvent(s));
    const ms = performance.now() - t0;
    const j = cap.recordKernel(S0, 'join', 1, 32, 0);
    const g = cap.endCapture(S0);
    assert.equal(g.predecessors(j).length, k + 1, 'one edge from each leaf and the root');
    assert.equal(g.edgeCount(), 2 * k + 1);
    return ms;
  };
  for (const semantics of ['per-stream', 'cuda'] as const) {
    join(semantics, 2000);
    const small = Math.min(join(semantics, 5000), join(semantics, 5000));
    const large = Math.min(join(semantics, 40_000), join(semantics, 40_000));
    // Linear: about 8×. Searching the parked list for each wait is quadratic: 64× (seconds).
    assert.ok(large < 24 * Math.max(small, 2), `${semantics}: 5,000 streams in ${small.toFixed(1)} ms, 40,000 in ${large.toFixed(1)} ms`);
  }
});

test('a three-way join: one op waits for three streams', () => {
  const cap = capturing(S0, S1, S2, StreamId(3));
  const heads: NodeId[] = [];
  for (const [i, s] of [S1, S2, StreamId(3)].entries()) {
    heads.push(cap.recordKernel(s, `part${i}`, 1, 32, 0));
    cap.recordEvent(s, CaptureEvent(10 + i));
    cap.waitEvent(S0, CaptureEvent(10 + i));
  }
  const join = cap.recordKernel(S0, 'join', 1, 32, 0);
  const g = cap.endCapture(S0, { requireJoined: true });
  assert.deepEqual(g.predecessors(join), heads);
  assert.deepEqual(g.sinks(), [join]);
});

test('invalidate: status Invalidated, later records on it fail, endCapture fails with ValidationFailed', () => {
  const cap = capturing(S0);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.invalidate(S0);
  assert.equal(cap.status(S0), 'Invalidated');
  assert.equal(cap.isCapturing(), false);
  throwsGraph(() => cap.recordKernel(S0, 'b', 1, 32, 0), 'Internal', 'CAPTURE_STREAM_INVALIDATED', 'StreamCapture.recordKernel: ', /stream 0 .*invalidated/);
  throwsGraph(() => cap.recordEvent(S0, E0), 'Internal', 'CAPTURE_STREAM_INVALIDATED', 'StreamCapture.recordEvent: ');
  throwsGraph(() => cap.invalidate(S0), 'Internal', 'CAPTURE_STREAM_INVALIDATED', 'StreamCapture.invalidate: ');
  throwsGraph(() => cap.endCapture(S0), 'ValidationFailed', 'CAPTURE_INVALIDATED', 'StreamCapture.endCapture: ', /stream 0 was invalidated/);
  assert.equal(cap.nodeCount(), 1);
});

test('invalidating one stream poisons the session: another stream stays Active but cannot end', () => {
  const cap = capturing(S0, S1);
  cap.recordKernel(S1, 'a', 1, 32, 0);
  cap.invalidate(S0);
  assert.equal(cap.status(S1), 'Active');
  assert.equal(cap.isCapturing(), true);
  cap.recordKernel(S1, 'b', 1, 32, 0); // recording still works on an Active stream
  throwsGraph(() => cap.endCapture(S1), 'ValidationFailed', 'CAPTURE_INVALIDATED', 'StreamCapture.endCapture: ', /invalidated on stream 0/);
  // Beginning the invalidated stream again does not cure the session.
  cap.beginCapture(S0);
  assert.equal(cap.status(S0), 'Active');
  throwsGraph(() => cap.endCapture(S0), 'ValidationFailed', 'CAPTURE_INVALIDATED', 'StreamCapture.endCapture: ');
});

test('endCapture on a stream never begun throws Internal and ends nothing', () => {
  const cap = capturing(S0);
  throwsGraph(() => cap.endCapture(S1), 'Internal', 'CAPTURE_NOT_ACTIVE', 'StreamCapture.endCapture: ', /stream 1 is not capturing/);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  assert.equal(cap.endCapture(S0).nodeCount(), 1);
});

test('endCapture returns one graph with every stream’s nodes and consumes the session', () => {
  const cap = capturing(S0, S1, S2);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordKernel(S1, 'b', 1, 32, 0);
  cap.recordKernel(S2, 'c', 1, 32, 0);
  const g = cap.endCapture(S1);
  assert.equal(g.nodeCount(), 3);
  assert.deepEqual(g.streams(), [S0, S1, S2]);
  const after: [string, () => unknown][] = [
    ['status', () => cap.status(S0)],
    ['isCapturing', () => cap.isCapturing()],
    ['nodeCount', () => cap.nodeCount()],
    ['beginCapture', () => cap.beginCapture(StreamId(9))],
    ['recordKernel', () => cap.recordKernel(S0, 'k', 1, 32, 0)],
    ['recordMemcpy', () => cap.recordMemcpy(S0, 'c', 'HostToDevice', 1)],
    ['recordMemset', () => cap.recordMemset(S0, 'm', 1, 0)],
    ['recordHostCallback', () => cap.recordHostCallback(S0, 'h')],
    ['recordEvent', () => cap.recordEvent(S0, E0)],
    ['waitEvent', () => cap.waitEvent(S0, E0)],
    ['invalidate', () => cap.invalidate(S0)],
    ['unjoinedStreams', () => cap.unjoinedStreams(S0)],
    ['endCapture', () => cap.endCapture(S0)],
  ];
  for (const [name, call] of after) throwsGraph(call, 'Internal', 'CAPTURE_SESSION_ENDED', `StreamCapture.${name}: `);
  // The graph is independent of the dead session.
  assert.equal(g.nodeCount(), 3);
});

test('requireJoined: names every stream whose work is not joined back, and a failed end can be retried', () => {
  const cap = capturing(S0, S1, S2);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  cap.waitEvent(S1, E0);
  cap.waitEvent(S2, E0);
  cap.recordKernel(S1, 'b', 1, 32, 0);
  cap.recordKernel(S2, 'c', 1, 32, 0);
  assert.deepEqual(cap.unjoinedStreams(S0), [S1, S2]);
  throwsGraph(
    () => cap.endCapture(S0, { requireJoined: true }),
    'ValidationFailed',
    'CAPTURE_UNJOINED',
    'StreamCapture.endCapture: ',
    /stream 1, stream 2 have work not joined back into stream 0.*CUDA_ERROR_STREAM_CAPTURE_UNJOINED/,
  );
  // Join S1 with a wait and no op after it: a parked wait counts as joined (CUDA merges it into
  // the origin stream's dependencies).
  cap.recordEvent(S1, E1);
  cap.waitEvent(S0, E1);
  assert.deepEqual(cap.unjoinedStreams(S0), [S2]);
  throwsGraph(() => cap.endCapture(S0, { requireJoined: true }), 'ValidationFailed', 'CAPTURE_UNJOINED', 'StreamCapture.endCapture: ', /stream 2 has work/);
  // Join S2 through a node: S2 → S0's next op.
  cap.recordEvent(S2, CaptureEvent(2));
  cap.waitEvent(S0, CaptureEvent(2));
  cap.recordKernel(S0, 'join', 1, 32, 0);
  assert.deepEqual(cap.unjoinedStreams(S0), []);
  const g = cap.endCapture(S0, { requireJoined: true });
  assert.equal(g.nodeCount(), 4);
});

test('requireJoined: work joined into another stream that is itself joined counts; the default ignores unjoined work', () => {
  const cap = capturing(S0, S1, S2);
  cap.recordKernel(S2, 'c', 1, 32, 0);
  cap.recordEvent(S2, E0);
  cap.waitEvent(S1, E0);
  cap.recordKernel(S1, 'b', 1, 32, 0);
  cap.recordEvent(S1, E1);
  cap.waitEvent(S0, E1);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  assert.deepEqual(cap.unjoinedStreams(S0), []);
  assert.deepEqual(cap.unjoinedStreams(S1), [S0]);
  // The seed's default: no check.
  assert.equal(cap.endCapture(S1).nodeCount(), 3);
});

test('bad arguments throw InvalidArgumentError naming the method and parameter, and change nothing', () => {
  const cap = capturing(S0, S1);
  const a = cap.recordKernel(S0, 'a', 1, 32, 0);
  cap.recordEvent(S0, E0);
  const bad: [string, string, () => unknown][] = [
    ['recordKernel', 'stream', () => cap.recordKernel(-1 as StreamId, 'k', 1, 32, 0)],
    ['recordKernel', 'stream', () => cap.recordKernel('0' as unknown as StreamId, 'k', 1, 32, 0)],
    ['recordKernel', 'functionName', () => cap.recordKernel(S1, '', 1, 32, 0)],
    ['recordKernel', 'functionName', () => cap.recordKernel(S1, 7 as unknown as string, 1, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', 0, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', 1.5, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', NaN, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', Infinity, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', 2 ** 31, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', 4n as unknown as number, 32, 0)],
    ['recordKernel', 'stream', () => cap.recordKernel(1n as unknown as StreamId, 'k', 1, 32, 0)],
    ['recordKernel', 'numBlocks', () => cap.recordKernel(S1, 'k', { valueOf: () => 4 } as unknown as number, 32, 0)],
    ['recordKernel', 'threadsPerBlock', () => cap.recordKernel(S1, 'k', 1, 1025, 0)],
    ['recordKernel', 'threadsPerBlock', () => cap.recordKernel(S1, 'k', 1, -32, 0)],
    ['recordKernel', 'sharedMem', () => cap.recordKernel(S1, 'k', 1, 32, -1)],
    ['recordKernel', 'sharedMem', () => cap.recordKernel(S1, 'k', 1, 32, 2 ** 32)],
    ['recordMemcpy', 'name', () => cap.recordMemcpy(S1, '', 'HostToDevice', 4)],
    ['recordMemcpy', 'dir', () => cap.recordMemcpy(S1, 'c', 'HostToHost' as MemcpyDir, 4)],
    ['recordMemcpy', 'dir', () => cap.recordMemcpy(S1, 'c', { kind: 'PeerToPeer', srcDevice: -1, dstDevice: 0 } as MemcpyDir, 4)],
    ['recordMemcpy', 'sizeBytes', () => cap.recordMemcpy(S1, 'c', 'HostToDevice', -4)],
    ['recordMemcpy', 'sizeBytes', () => cap.recordMemcpy(S1, 'c', 'HostToDevice', 2 ** 53)],
    ['recordMemset', 'sizeBytes', () => cap.recordMemset(S1, 'm', 0.5, 0)],
    ['recordMemset', 'value', () => cap.recordMemset(S1, 'm', 4, 256)],
    ['recordMemset', 'value', () => cap.recordMemset(S1, 'm', 4, -1)],
    ['recordHostCallback', 'label', () => cap.recordHostCallback(S1, '')],
    ['recordEvent', 'event', () => cap.recordEvent(S1, -1 as CaptureEvent)],
    ['waitEvent', 'event', () => cap.waitEvent(S1, 0.5 as CaptureEvent)],
    ['waitEvent', 'event', () => cap.waitEvent(S1, 0n as unknown as CaptureEvent)],
    ['recordMemset', 'value', () => cap.recordMemset(S1, 'm', 4, 1n as unknown as number)],
    ['beginCapture', 'stream', () => cap.beginCapture(2 ** 32 as StreamId)],
    ['status', 'stream', () => cap.status(NaN as StreamId)],
    ['endCapture', 'stream', () => cap.endCapture(-0.5 as StreamId)],
    ['endCapture', 'options', () => cap.endCapture(S0, { requireJoined: 'yes' as unknown as boolean })],
    ['endCapture', 'options', () => cap.endCapture(S0, { strict: true } as never)],
  ];
  for (const [method, parameter, call] of bad) {
    assert.throws(
      call,
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`StreamCapture.${method}: `) && (e.parameter.startsWith(parameter) || parameter === 'options'),
      `${method} (${parameter})`,
    );
  }
  assert.equal(cap.nodeCount(), 1);
  assert.equal(cap.status(S0), 'Active');
  assert.equal(cap.status(S1), 'Active');
  // S1's next op carries no wait from the refused calls, and E0 still stands for a.
  cap.waitEvent(S1, E0);
  const b = cap.recordKernel(S1, 'b', 1, 32, 0);
  const g = cap.endCapture(S0);
  assert.deepEqual(g.edges(), [[a, b]]);
});

test('MemcpyDir: the three directions are strings; PeerToPeer names both devices and checks them', () => {
  assert.equal(MemcpyDir.HostToDevice, 'HostToDevice');
  assert.equal(MemcpyDir.DeviceToHost, 'DeviceToHost');
  assert.equal(MemcpyDir.DeviceToDevice, 'DeviceToDevice');
  assert.deepEqual(MemcpyDir.PeerToPeer(0, 3), { kind: 'PeerToPeer', srcDevice: 0, dstDevice: 3 });
  assert.throws(() => MemcpyDir.PeerToPeer(-1, 0), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('MemcpyDir.PeerToPeer: srcDevice'));
  assert.throws(() => MemcpyDir.PeerToPeer(0, 1.5), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('MemcpyDir.PeerToPeer: dstDevice'));
});

test('toString summarises the session', () => {
  const cap = capturing(S0, S1);
  cap.recordKernel(S0, 'a', 1, 32, 0);
  assert.equal(String(cap), 'StreamCapture(1 nodes, 2 capturing)');
  cap.invalidate(S1);
  assert.equal(String(cap), 'StreamCapture(1 nodes, 1 capturing, invalidated)');
});
