/**
 * Property-based tests: random multi-stream programs run against `StreamCapture` and against a
 * small reference written here the obvious way (adjacency sets, closure by DFS). Every call must
 * succeed or fail the same way in both; refused calls must leave the model's state unchanged; the
 * graphs must agree on nodes, edges and reachability; the order must be topological; JSON must
 * round-trip.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  StreamCapture,
  ComputeGraph,
  GraphError,
  InvalidArgumentError,
  NodeId,
  type GraphNode,
  type StreamId,
  type CaptureEvent,
  type MemcpyDir,
} from '../../src/index.js';

// ── the reference ───────────────────────────────────────────────────────────────────────────

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };
/** A node record without its id (distributed over the kinds). */
type Expected = GraphNode extends unknown ? (GraphNode extends infer T ? (T extends GraphNode ? Omit<T, 'id'> : never) : never) : never;

/** Naive closure: the set of nodes reachable from each node (itself included), by DFS. */
function closure(preds: Set<number>[]): Set<number>[] {
  const n = preds.length;
  const succ: number[][] = Array.from({ length: n }, () => []);
  preds.forEach((ps, v) => ps.forEach((p) => succ[p]!.push(v)));
  return succ.map((_, a) => {
    const seen = new Set([a]);
    const stack = [a];
    while (stack.length) for (const y of succ[stack.pop()!]!) if (!seen.has(y)) (seen.add(y), stack.push(y));
    return seen;
  });
}

/** Kahn with a FIFO queue, seeded by ascending id, successors in ascending id. */
function referenceOrder(preds: Set<number>[]): number[] {
  const n = preds.length;
  const indeg = preds.map((p) => p.size);
  const succ: number[][] = Array.from({ length: n }, () => []);
  for (let v = 0; v < n; v++) for (const p of [...preds[v]!].sort((a, b) => a - b)) succ[p]!.push(v);
  succ.forEach((s) => s.sort((a, b) => a - b));
  const queue = indeg.flatMap((d, v) => (d === 0 ? [v] : []));
  for (let i = 0; i < queue.length; i++) for (const x of succ[queue[i]!]!) if (--indeg[x]! === 0) queue.push(x);
  return queue;
}

class ReferenceCapture {
  status = new Map<number, 'Active' | 'Invalidated'>();
  poisoned = false;
  ended = false;
  nodes: Expected[] = [];
  preds: Set<number>[] = [];
  head = new Map<number, number>();
  parked = new Map<number, number[]>();
  events = new Map<number, number>();

  private fail(code: string): Outcome {
    return { ok: false, error: code };
  }

  /** The status check every record/event/wait/invalidate makes. */
  private active(s: number): string | null {
    const st = this.status.get(s);
    if (st === 'Active') return null;
    return st === 'Invalidated' ? 'CAPTURE_STREAM_INVALIDATED' : 'CAPTURE_NOT_ACTIVE';
  }

  private add(s: number, node: Expected): number {
    const id = this.nodes.length;
    this.nodes.push(node);
    const ps = new Set(this.parked.get(s) ?? []);
    if (this.head.has(s)) ps.add(this.head.get(s)!);
    this.preds.push(ps);
    this.parked.set(s, []);
    this.head.set(s, id);
    return id;
  }

  unjoined(origin: number): number[] {
    const frontier = [...(this.parked.get(origin) ?? [])];
    if (this.head.has(origin)) frontier.push(this.head.get(origin)!);
    const reach = closure(this.preds);
    return [...this.head.entries()]
      .filter(([s, h]) => s !== origin && !frontier.some((f) => reach[h]!.has(f)))
      .map(([s]) => s)
      .sort((a, b) => a - b);
  }

  run(cmd: Cmd): Outcome {
    if (this.ended) return this.fail('CAPTURE_SESSION_ENDED');
    const s = cmd.s;
    const validStream = Number.isInteger(s) && s >= 0 && s <= 0xffff_ffff;
    if (!validStream) return this.fail('INVALID');
    switch (cmd.op) {
      case 'begin':
        if (this.status.get(s) === 'Active') return this.fail('CAPTURE_ALREADY_ACTIVE');
        this.status.set(s, 'Active');
        return { ok: true, value: undefined };
      case 'status':
        return { ok: true, value: this.status.get(s) ?? 'None' };
      case 'unjoined':
        if (!this.status.has(s)) return this.fail('CAPTURE_NOT_ACTIVE');
        return { ok: true, value: this.unjoined(s) };
      case 'end': {
        if (!this.status.has(s)) return this.fail('CAPTURE_NOT_ACTIVE');
        if (this.poisoned) return this.fail('CAPTURE_INVALIDATED');
        if (cmd.requireJoined && this.unjoined(s).length > 0) return this.fail('CAPTURE_UNJOINED');
        this.ended = true;
        return { ok: true, value: undefined };
      }
    }
    const why = this.active(s);
    if (why !== null) return this.fail(why);
    switch (cmd.op) {
      case 'kernel':
        if (cmd.bad) return this.fail('INVALID');
        return { ok: true, value: this.add(s, { kind: 'kernel', name: cmd.name, stream: s as StreamId, cost: 1, functionName: cmd.name, grid: [cmd.blocks, 1, 1], block: [cmd.threads, 1, 1], sharedMem: cmd.smem }) };
      case 'memcpy':
        if (cmd.bad) return this.fail('INVALID');
        return { ok: true, value: this.add(s, { kind: 'memcpy', name: cmd.name, stream: s as StreamId, cost: 1, dir: cmd.dir, sizeBytes: cmd.size }) };
      case 'memset':
        if (cmd.bad) return this.fail('INVALID');
        return { ok: true, value: this.add(s, { kind: 'memset', name: cmd.name, stream: s as StreamId, cost: 1, sizeBytes: cmd.size, value: cmd.value, elementSize: 1 }) };
      case 'host':
        if (cmd.bad) return this.fail('INVALID');
        return { ok: true, value: this.add(s, { kind: 'hostCallback', name: cmd.label, stream: s as StreamId, cost: 1, label: cmd.label }) };
      case 'record':
        if (cmd.bad) return this.fail('INVALID');
        if (this.head.has(s)) this.events.set(cmd.e, this.head.get(s)!);
        return { ok: true, value: undefined };
      case 'wait': {
        if (cmd.bad) return this.fail('INVALID');
        const src = this.events.get(cmd.e);
        if (src !== undefined) {
          const p = this.parked.get(s) ?? [];
          if (!p.includes(src)) p.push(src);
          this.parked.set(s, p);
        }
        return { ok: true, value: undefined };
      }
      case 'invalidate':
        this.status.set(s, 'Invalidated');
        this.poisoned = true;
        return { ok: true, value: undefined };
    }
  }
}

// ── programs ────────────────────────────────────────────────────────────────────────────────

type Cmd =
  | { op: 'begin' | 'status' | 'unjoined' | 'invalidate'; s: number }
  | { op: 'end'; s: number; requireJoined: boolean }
  | { op: 'kernel'; s: number; name: string; blocks: number; threads: number; smem: number; bad: boolean }
  | { op: 'memcpy'; s: number; name: string; dir: MemcpyDir; size: number; bad: boolean }
  | { op: 'memset'; s: number; name: string; size: number; value: number; bad: boolean }
  | { op: 'host'; s: number; label: string; bad: boolean }
  | { op: 'record' | 'wait'; s: number; e: number; bad: boolean };

const stream = fc.oneof({ weight: 30, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, NaN, 2 ** 32) });
const name = fc.constantFrom('gemm', 'relu', 'softmax', 'copy', 'x');
const badFlag = fc.integer({ min: 0, max: 99 }).map((x) => x < 8);
const dir = fc.oneof(
  fc.constantFrom<MemcpyDir>('HostToDevice', 'DeviceToHost', 'DeviceToDevice'),
  // fast-check builds records without a prototype; a user passes plain objects.
  fc.record({ kind: fc.constant('PeerToPeer' as const), srcDevice: fc.nat(3), dstDevice: fc.nat(3) }).map((d) => ({ ...d })),
);
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 30, arbitrary: fc.record({ op: fc.constant('begin' as const), s: stream }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constantFrom('status' as const, 'unjoined' as const), s: stream }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('invalidate' as const), s: stream }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('end' as const), s: stream, requireJoined: fc.boolean() }) },
  { weight: 80, arbitrary: fc.record({ op: fc.constant('kernel' as const), s: stream, name, blocks: fc.integer({ min: 1, max: 4096 }), threads: fc.integer({ min: 1, max: 1024 }), smem: fc.nat(49152), bad: badFlag }) },
  { weight: 20, arbitrary: fc.record({ op: fc.constant('memcpy' as const), s: stream, name, dir, size: fc.nat(2 ** 40), bad: badFlag }) },
  { weight: 20, arbitrary: fc.record({ op: fc.constant('memset' as const), s: stream, name, size: fc.nat(1 << 20), value: fc.nat(255), bad: badFlag }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constant('host' as const), s: stream, label: name, bad: badFlag }) },
  { weight: 40, arbitrary: fc.record({ op: fc.constantFrom('record' as const, 'wait' as const), s: stream, e: fc.nat(4), bad: badFlag }) },
);

/** Runs `cmd` on the model; a `bad` command passes one refused argument. */
function runModel(cap: StreamCapture, c: Cmd): Outcome {
  const s = c.s as StreamId;
  try {
    switch (c.op) {
      case 'begin':
        return { ok: true, value: cap.beginCapture(s) };
      case 'status':
        return { ok: true, value: cap.status(s) };
      case 'unjoined':
        return { ok: true, value: cap.unjoinedStreams(s) };
      case 'invalidate':
        return { ok: true, value: cap.invalidate(s) };
      case 'end':
        return { ok: true, value: cap.endCapture(s, { requireJoined: c.requireJoined }) };
      case 'kernel':
        return { ok: true, value: cap.recordKernel(s, c.name, c.bad ? 0 : c.blocks, c.threads, c.smem) };
      case 'memcpy':
        return { ok: true, value: cap.recordMemcpy(s, c.name, c.bad ? ('Up' as MemcpyDir) : c.dir, c.size) };
      case 'memset':
        return { ok: true, value: cap.recordMemset(s, c.name, c.size, c.bad ? 256 : c.value) };
      case 'host':
        return { ok: true, value: cap.recordHostCallback(s, c.bad ? '' : c.label) };
      case 'record':
        return { ok: true, value: cap.recordEvent(s, (c.bad ? -1 : c.e) as CaptureEvent) };
      case 'wait':
        return { ok: true, value: cap.waitEvent(s, (c.bad ? 0.5 : c.e) as CaptureEvent) };
    }
  } catch (e) {
    if (e instanceof InvalidArgumentError) return { ok: false, error: 'INVALID' };
    if (e instanceof GraphError) return { ok: false, error: e.code };
    throw e;
  }
}

/** What a caller can observe of a live session without changing it. */
function observe(cap: StreamCapture): unknown {
  try {
    return { n: cap.nodeCount(), capturing: cap.isCapturing(), status: [0, 1, 2, 3].map((s) => cap.status(s as StreamId)) };
  } catch (e) {
    return e instanceof GraphError ? e.code : e;
  }
}

/** Everything the graph says agrees with the reference. */
function checkGraph(g: ComputeGraph, ref: { nodes: Expected[]; preds: Set<number>[] }): void {
  const n = ref.nodes.length;
  assert.equal(g.nodeCount(), n);
  assert.deepEqual(g.nodes(), ref.nodes.map((node, id) => ({ id, ...node })));
  const refEdges = ref.preds.flatMap((ps, v) => [...ps].map((p) => [p, v] as [number, number])).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  assert.deepEqual(g.edges(), refEdges);
  assert.equal(g.edgeCount(), refEdges.length);
  const reach = closure(ref.preds);
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++) assert.equal(g.isReachable(NodeId(a), NodeId(b)), reach[a]!.has(b), `isReachable(${a}, ${b})`);
  }
  if (n === 0) return;
  const order = g.topologicalOrder();
  assert.deepEqual([...order].sort((a, b) => a - b), [...Array(n).keys()]);
  const pos = new Map(order.map((v, i) => [v as number, i]));
  for (const [u, v] of refEdges) assert.ok(pos.get(u)! < pos.get(v)!, `order puts ${u} before ${v}`);
  assert.deepEqual(order, referenceOrder(ref.preds));
  // Levels: a node's level is one more than its deepest predecessor's.
  const levels = g.levels();
  const level = new Map(levels.flatMap((l, i) => l.map((v) => [v as number, i])));
  for (let v = 0; v < n; v++) {
    const want = ref.preds[v]!.size === 0 ? 0 : Math.max(...[...ref.preds[v]!].map((p) => level.get(p)! + 1));
    assert.equal(level.get(v), want);
  }
  // Critical path with unit costs: a source-to-sink path with one node per level.
  const cp = g.criticalPath();
  assert.equal(cp.cost, levels.length);
  assert.equal(cp.nodes.length, levels.length);
  for (let i = 1; i < cp.nodes.length; i++) assert.ok(g.hasEdge(cp.nodes[i - 1]!, cp.nodes[i]!));
  assert.equal(g.widestLevel().width, Math.max(...levels.map((l) => l.length)));
  // JSON round trip.
  const back = ComputeGraph.fromJSON(JSON.parse(JSON.stringify(g)));
  assert.deepEqual(back.toJSON(), g.toJSON());
  assert.deepEqual(back.topologicalOrder(), order);
}

test('random multi-stream programs: StreamCapture agrees with the reference at every step', () => {
  // Most programs begin a few streams first, so that they record something worth checking.
  const begins = fc.subarray([0, 1, 2, 3]).map((ss) => ss.map((s): Cmd => ({ op: 'begin', s })));
  fc.assert(
    fc.property(fc.tuple(begins, fc.array(cmd, { minLength: 1, maxLength: 150, size: 'max' })), ([head, tail]) => {
      const program = [...head, ...tail];
      const cap = new StreamCapture();
      const ref = new ReferenceCapture();
      let graph: ComputeGraph | null = null;
      for (const c of program) {
        const before = observe(cap);
        const want = ref.run(c);
        const got = runModel(cap, c);
        if (!want.ok) {
          assert.deepEqual(got, want, `${JSON.stringify(c)}`);
          assert.deepEqual(observe(cap), before, `refused ${JSON.stringify(c)} changed the session`);
          continue;
        }
        assert.ok(got.ok, `${JSON.stringify(c)} threw ${JSON.stringify(got)}`);
        if (c.op === 'end') graph = got.value as ComputeGraph;
        else assert.deepEqual(got.value, want.value, JSON.stringify(c));
      }
      // End the session if the program did not, on each begun stream in turn (requiring joins
      // first, so that both outcomes of the check are exercised).
      for (const s of [...ref.status.keys()]) {
        for (const requireJoined of [true, false]) {
          if (graph !== null) break;
          const c: Cmd = { op: 'end', s, requireJoined };
          const want = ref.run(c);
          const got = runModel(cap, c);
          assert.deepEqual(got.ok ? 'ok' : got, want.ok ? 'ok' : want, JSON.stringify(c));
          if (got.ok) graph = got.value as ComputeGraph;
        }
      }
      if (graph !== null) checkGraph(graph, ref);
    }),
    { numRuns: 300 },
  );
});

// ── hand-built graphs ───────────────────────────────────────────────────────────────────────

test('random hand-built graphs: addEdge refuses exactly the cycles; reachability and order agree with the reference', () => {
  const edgeList = fc.array(fc.tuple(fc.nat(29), fc.nat(29)), { maxLength: 120, size: 'max' });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 30 }), edgeList, fc.nat(), (n, pairs, split) => {
      const g = new ComputeGraph();
      const ref = { nodes: [] as Expected[], preds: [] as Set<number>[] };
      for (let i = 0; i < n; i++) {
        g.addNode({ kind: 'empty', name: `v${i}`, stream: (i % 3) as StreamId });
        ref.nodes.push({ kind: 'empty', name: `v${i}`, stream: (i % 3) as StreamId, cost: 1 });
        ref.preds.push(new Set());
      }
      // A prefix of the pairs goes in as one addEdges batch: all or nothing.
      const batch = pairs.slice(0, split % (pairs.length + 1)).map(([u0, v0]) => [u0 % n, v0 % n] as [number, number]);
      const trial = ref.preds.map((p) => new Set(p));
      for (const [u, v] of batch) trial[v]!.add(u);
      // A cycle: a self-loop, or an edge p → a where a already reaches p.
      const reachTrial = closure(trial);
      const batchCycles = batch.some(([u, v]) => u === v) || trial.some((ps, a) => [...ps].some((p) => reachTrial[a]!.has(p)));
      if (batchCycles) {
        assert.throws(() => g.addEdges(batch.map(([u, v]) => [NodeId(u), NodeId(v)] as const)), (e: unknown) => e instanceof GraphError && e.kind === 'CycleDetected');
      } else {
        const fresh = new Set(batch.filter(([u, v]) => !ref.preds[v]!.has(u)).map(([u, v]) => `${u}>${v}`));
        assert.equal(g.addEdges(batch.map(([u, v]) => [NodeId(u), NodeId(v)] as const)), fresh.size);
        ref.preds = trial;
      }
      for (const [u0, v0] of pairs.slice(batch.length)) {
        const u = u0 % n;
        const v = v0 % n;
        const cyclic = u === v || closure(ref.preds)[v]!.has(u);
        const dup = ref.preds[v]!.has(u);
        if (cyclic) {
          assert.throws(() => g.addEdge(NodeId(u), NodeId(v)), (e: unknown) => e instanceof GraphError && e.kind === 'CycleDetected');
        } else {
          assert.equal(g.addEdge(NodeId(u), NodeId(v)), !dup);
          ref.preds[v]!.add(u);
        }
        // Interleave queries with changes, so stale indexes would show.
        const a = (u * 7) % n;
        const b = (v * 11) % n;
        assert.equal(g.isReachable(NodeId(a), NodeId(b)), closure(ref.preds)[a]!.has(b));
      }
      checkGraph(g, ref);
    }),
    { numRuns: 200 },
  );
});

// ── clones, child graphs and conditional nodes ──────────────────────────────────────────────

test('random graphs holding child graphs and conditional nodes, cloned or read back: queries agree with the reference; a clone changes alone', () => {
  const child = new ComputeGraph();
  child.addNode({ kind: 'kernel', functionName: 'c', grid: 1, block: 32 });
  const body = new ComputeGraph();
  body.addNode({ kind: 'kernel', functionName: 'b', grid: 1, block: 32 });
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.tuple(fc.nat(19), fc.nat(19)), { maxLength: 50 }),
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 20, maxLength: 20 }),
      fc.constantFrom('as built', 'clone', 'json', 'binary'),
      (n, pairs, costs, how) => {
        const built = new ComputeGraph();
        let handle = 0;
        for (let i = 0; i < n; i++) {
          const cost = costs[i]!;
          if (i % 5 === 1) built.addNode({ kind: 'childGraph', graph: child, cost });
          else if (i % 5 === 3) built.addNode({ kind: 'conditional', type: 'while', bodies: [body], handle: { id: handle++ }, cost });
          else built.addNode({ kind: 'empty', cost, stream: (i % 3) as StreamId });
        }
        const preds: Set<number>[] = Array.from({ length: n }, () => new Set());
        for (const [a, b] of pairs) {
          const u = a % n;
          const v = b % n;
          const cyclic = u === v || closure(preds)[v]!.has(u);
          if (cyclic) assert.throws(() => built.addEdge(NodeId(u), NodeId(v)), (e: unknown) => e instanceof GraphError && e.kind === 'CycleDetected');
          else {
            built.addEdge(NodeId(u), NodeId(v));
            preds[v]!.add(u);
          }
        }
        const g =
          how === 'clone' ? built.clone() : how === 'json' ? ComputeGraph.fromJSON(JSON.stringify(built)) : how === 'binary' ? ComputeGraph.fromBinary(built.toBinary()) : built;
        const reach = closure(preds);
        for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) assert.equal(g.isReachable(NodeId(a), NodeId(b)), reach[a]!.has(b), `isReachable(${a}, ${b})`);
        assert.deepEqual(g.topologicalOrder(), referenceOrder(preds));
        // Longest paths by cost, forward and backward, the obvious way.
        const cost = costs.slice(0, n);
        const into: number[] = [];
        const asap = (v: number): number => (into[v] ??= Math.max(0, ...[...preds[v]!].map((p) => asap(p) + cost[p]!)));
        const succ = Array.from({ length: n }, (_, v) => [...Array(n).keys()].filter((x) => preds[x]!.has(v)));
        const out: number[] = [];
        const tail = (v: number): number => (out[v] ??= cost[v]! + Math.max(0, ...succ[v]!.map(tail)));
        const length = Math.max(...cost.map((c, v) => asap(v) + c));
        assert.equal(g.criticalPath().cost, length);
        const t = g.timing();
        t.nodes.forEach((x, v) => assert.deepEqual([x.asap, x.alap], [asap(v), length - tail(v)], `timing of node ${v}`));
        assert.deepEqual(g.levels().flat().sort((a, b) => a - b), [...Array(n).keys()]);
        // A change to a copy does not reach the graph it came from, nor the other way round.
        if (g !== built) {
          const before = JSON.stringify(built);
          g.addNode({ kind: 'empty' });
          if (n > 1 && !reach[0]!.has(n - 1)) g.addEdge(NodeId(n - 1), NodeId(0));
          assert.equal(JSON.stringify(built), before);
          built.addNode({ kind: 'empty', name: 'later' });
          assert.equal(g.nodeCount(), n + 1);
          assert.equal(g.node(NodeId(n)).name, 'empty');
        }
      },
    ),
    { numRuns: 150 },
  );
});
