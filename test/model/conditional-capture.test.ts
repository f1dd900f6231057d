/**
 * Conditional nodes recorded by `StreamCapture` (`conditionalHandle`, `recordWhile`, `recordIf`,
 * `recordSwitch`): bodies recorded by callbacks into captures of their own, the node wired after the
 * stream's frontier, handles shared with the bodies' captures and serving one node each, and all or
 * nothing when a body throws or is refused; a property against a small reference of the frontier.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CaptureEvent,
  ComputeGraph,
  ExecGraph,
  GraphError,
  InvalidArgumentError,
  NodeId,
  StreamCapture,
  StreamId,
  type BodyRecorder,
  type ConditionalNodeRecord,
  type GraphNode,
} from '../../src/index.js';
import { refused } from '../support/refused.js';

const [S0, S1] = [StreamId(0), StreamId(1)];

const asConditional = (n: GraphNode): ConditionalNodeRecord => {
  assert.equal(n.kind, 'conditional');
  return n as ConditionalNodeRecord;
};

/** A body of `n` kernels on its stream, in a chain. */
const kernels =
  (n: number, name = 'k'): BodyRecorder =>
  (c, s) => {
    for (let i = 0; i < n; i++) c.recordKernel(s, `${name}${i}`, 1, 32, 0);
  };

test('recordWhile, recordIf and recordSwitch add one node after the stream’s frontier, with the bodies recorded', () => {
  for (const semantics of ['per-stream', 'cuda'] as const) {
    const cap = new StreamCapture({ semantics });
    cap.beginCapture(S0);
    if (semantics === 'per-stream') cap.beginCapture(S1);
    const init = cap.recordKernel(S0, 'init', 1, 32, 0);
    // A fork: the side stream's kernel is parked on S0, so the loop depends on it too.
    cap.recordEvent(S0, CaptureEvent(0));
    cap.waitEvent(S1, CaptureEvent(0));
    const side = cap.recordKernel(S1, 'side', 1, 32, 0);
    cap.recordEvent(S1, CaptureEvent(1));
    cap.waitEvent(S0, CaptureEvent(1));
    const h = cap.conditionalHandle({ default: 1 });
    assert.deepEqual(h, { id: 0, default: 1, assignDefault: true });
    const loop = cap.recordWhile(S0, h, kernels(2, 'step'), { name: 'solve', estimate: 12 });
    const branch = cap.recordIf(S0, cap.conditionalHandle({ assignDefault: false }), kernels(1, 'then'), kernels(3, 'else'));
    const lone = cap.recordIf(S0, cap.conditionalHandle(), kernels(1));
    const pick = cap.recordSwitch(S0, cap.conditionalHandle(), [kernels(1), () => {}, kernels(2)]);
    const after = cap.recordKernel(S0, 'after', 1, 32, 0);
    assert.equal(cap.nodeCount(), 7, 'the bodies’ nodes are not nodes of the capture');
    const g = cap.endCapture(S0);
    assert.deepEqual(g.predecessors(loop), [init, side].sort((a, b) => a - b), 'the frontier: the head and the parked waits');
    assert.deepEqual(g.predecessors(branch), [loop], 'the conditional became the head');
    assert.deepEqual(g.predecessors(lone), [branch]);
    assert.deepEqual(g.predecessors(after), [pick]);
    const l = asConditional(g.node(loop));
    assert.deepEqual([l.name, l.type, l.estimate, l.cost, l.stream, l.handle.id], ['solve', 'while', 12, 24, 0, 0]);
    assert.deepEqual(l.bodies[0]!.nodes().map((n) => [n.name, n.stream]), [['step0', 0], ['step1', 0]], 'a body is recorded on the stream given to it');
    assert.deepEqual(l.bodies[0]!.edges(), [[0, 1]]);
    const b = asConditional(g.node(branch));
    assert.deepEqual([b.bodies.length, b.bodies[1]!.nodeCount(), b.handle], [2, 3, { id: 1, default: 0, assignDefault: false }]);
    assert.equal(asConditional(g.node(lone)).bodies.length, 1, 'no else without `otherwise`');
    const p = asConditional(g.node(pick));
    assert.deepEqual(p.bodies.map((x) => x.nodeCount()), [1, 0, 2]);
    assert.equal(p.cost, 2);
    assert.equal(g.hasConditionalNodes(), true);
    ExecGraph.instantiate(g);
    assert.equal(JSON.stringify(ComputeGraph.fromJSON(JSON.stringify(g))), JSON.stringify(g));
  }
});

test('bodies nest, fork and join inside, and share the capture’s handles (one id space, one node per handle)', () => {
  const cap = new StreamCapture({ semantics: 'cuda' });
  cap.beginCapture(S0);
  const outer = cap.conditionalHandle();
  const made: number[] = [];
  let bodyCapture: StreamCapture | null = null;
  const loop = cap.recordWhile(S0, outer, (c, s) => {
    bodyCapture = c;
    assert.notEqual(c, cap, 'a body records into a capture of its own');
    assert.equal(c.status(s), 'Active');
    assert.equal(c.semantics, 'cuda', 'with the outer capture’s semantics');
    // Reading the outer capture is allowed while a body records.
    assert.equal(cap.nodeCount(), 0);
    c.recordKernel(s, 'fork', 1, 32, 0);
    c.recordEvent(s, CaptureEvent(0));
    c.waitEvent(S1, CaptureEvent(0));
    c.recordKernel(S1, 'beside', 1, 32, 0);
    c.recordEvent(S1, CaptureEvent(1));
    c.waitEvent(s, CaptureEvent(1));
    const inner = c.conditionalHandle();
    made.push(inner.id);
    // A handle of the outer capture serves a node in a body too (CUDA: "in this graph or one of its children").
    const fromOuter = cap.conditionalHandle();
    made.push(fromOuter.id);
    c.recordIf(s, inner, (c2, s2) => c2.recordSwitch(s2, fromOuter, [kernels(1, 'deep')]));
  });
  assert.deepEqual(made, [1, 2], 'ids count across the capture and its bodies');
  refused(() => bodyCapture!.recordKernel(S0, 'late', 1, 1, 0), GraphError, 'StreamCapture.recordKernel', /capture session has ended/);
  const g = cap.endCapture(S0);
  const body = asConditional(g.node(loop)).bodies[0]!;
  assert.deepEqual(body.nodes().map((n) => n.kind), ['kernel', 'kernel', 'conditional']);
  assert.deepEqual(body.predecessors(NodeId(2)), [0, 1], 'the body’s own fork joins before its if');
  const deep = asConditional(asConditional(body.node(NodeId(2))).bodies[0]!.node(NodeId(0)));
  assert.deepEqual([deep.type, deep.handle.id, deep.bodies[0]!.node(NodeId(0)).name], ['switch', 2, 'deep0']);
  // A handle serves one node: in the capture, in a body, or from a body for the outer node.
  const c2 = new StreamCapture();
  c2.beginCapture(S0);
  const h = c2.conditionalHandle();
  const OPW = 'StreamCapture.recordWhile';
  refused(() => c2.recordWhile(S0, h, (c, s) => c.recordIf(s, h, kernels(1))), InvalidArgumentError, 'StreamCapture.recordIf', /handle 0 already serves a conditional node; a conditional handle serves one conditional node \(CUDA rule\)/);
  c2.recordWhile(S0, h, kernels(1));
  refused(() => c2.recordWhile(S0, h, kernels(1)), InvalidArgumentError, OPW, /handle 0 already serves a conditional node/);
  refused(() => c2.recordWhile(S0, new StreamCapture().conditionalHandle(), kernels(1)), InvalidArgumentError, OPW, /handle must be a handle made by this capture's conditionalHandle\(\)/);
  refused(() => c2.recordWhile(S0, { id: 1, default: 0, assignDefault: true }, kernels(1)), InvalidArgumentError, OPW, /got an object \(Object\)/);
  refused(() => c2.recordWhile(S0, 0 as never, kernels(1)), InvalidArgumentError, OPW, /handle must be a handle made by this capture's conditionalHandle\(\) \(or its bodies' captures\), got 0/);
  assert.equal(c2.nodeCount(), 1);
});

test('all or nothing: a throwing or refused body adds nothing, frees its handle and forgets the handles made inside', () => {
  const cap = new StreamCapture();
  cap.beginCapture(S0);
  cap.beginCapture(S1);
  const head = cap.recordKernel(S0, 'head', 1, 32, 0);
  cap.recordKernel(S1, 'other', 1, 32, 0);
  cap.recordEvent(S1, CaptureEvent(3));
  cap.waitEvent(S0, CaptureEvent(3));
  const h = cap.conditionalHandle();
  const before = cap.nodeCount();
  const mine = new Error('mine');
  let leaked: unknown = null;
  assert.throws(
    () =>
      cap.recordWhile(S0, h, (c, s) => {
        c.recordKernel(s, 'half', 1, 32, 0);
        leaked = c.conditionalHandle();
        c.recordIf(s, leaked as never, kernels(1));
        throw mine;
      }),
    (e: unknown) => e === mine,
    'the body’s own exception propagates unchanged',
  );
  // Refused at the end of the body (a host callback is no body node), and in the middle (a nested refusal).
  refused(() => cap.recordIf(S0, h, kernels(1), (c, s) => void c.recordHostCallback(s, 'log')), InvalidArgumentError, 'StreamCapture.recordIf', /^StreamCapture\.recordIf: otherwise holds a 'hostCallback' node \(node 0\); a conditional body may hold only/);
  refused(() => cap.recordSwitch(S0, h, [kernels(1), (c, s) => void c.recordExternalEvent(s, CaptureEvent(1))]), InvalidArgumentError, 'StreamCapture.recordSwitch', /cases\[1\] holds a 'eventRecord' node/);
  refused(() => cap.recordWhile(S0, h, (c, s) => void c.recordKernel(s, 'k', 0, 1, 0)), InvalidArgumentError, 'StreamCapture.recordKernel', /numBlocks must be/);
  assert.equal(cap.nodeCount(), before, 'nothing was added');
  // The refusal says why a handle this capture made is no longer valid (it said the capture had not made it).
  refused(() => cap.recordWhile(S0, leaked as never, kernels(1)), InvalidArgumentError, 'StreamCapture.recordWhile', /handle was made while a conditional recording of this capture ran, and that recording failed: the handles made during it were given back with it \(id 1 may have been issued again\)/);
  // The handle is free again, the next handle id is the one the failed body took, and the frontier is as it was.
  const again = cap.conditionalHandle();
  assert.equal(again.id, 1);
  // One taken from the outer capture inside the failed body is given back too, and says so.
  let outer: unknown = null;
  assert.throws(() => cap.recordWhile(S0, h, () => {
    outer = cap.conditionalHandle();
    throw mine;
  }), (e: unknown) => e === mine);
  refused(() => cap.recordIf(S0, outer as never, kernels(1)), InvalidArgumentError, 'StreamCapture.recordIf', /handle was made while a conditional recording of this capture ran, and that recording failed/);
  refused(() => cap.recordIf(S0, { ...again }, kernels(1)), InvalidArgumentError, 'StreamCapture.recordIf', /handle must be a handle made by this capture/);
  const loop = cap.recordWhile(S0, h, kernels(1));
  const g = cap.endCapture(S0);
  assert.deepEqual(g.predecessors(loop), [head, 1], 'the parked wait is still there for the node that was added');
  assert.equal(g.nodeCount(), 3);
});

test('refusals name the call and change nothing: streams, callbacks, options, cases, the outer capture from a body, promises', async () => {
  const cap = new StreamCapture();
  cap.beginCapture(S0);
  const h = cap.conditionalHandle();
  const W = 'StreamCapture.recordWhile';
  const e1 = refused(() => cap.recordWhile(S1, h, kernels(1)), GraphError, W, /stream 1 is not capturing/);
  assert.equal((e1 as GraphError).code, 'CAPTURE_NOT_ACTIVE');
  refused(() => cap.recordWhile(-1 as never, h, kernels(1)), InvalidArgumentError, W, /stream must be an integer/);
  refused(() => cap.recordWhile(S0, h, 'body' as never), InvalidArgumentError, W, /body must be a function \(capture, stream\) => void, got "body"/);
  refused(() => cap.recordIf(S0, h, kernels(1), null as never), InvalidArgumentError, 'StreamCapture.recordIf', /otherwise must be a function/);
  refused(() => cap.recordWhile(S0, h, kernels(1), { estimate: NaN }), InvalidArgumentError, W, /estimate must be a finite number ≥ 0, got NaN/);
  refused(() => cap.recordIf(S0, h, kernels(1), undefined, { estimate: 3 }), InvalidArgumentError, 'StreamCapture.recordIf', /estimate of an 'if' node is the chance/);
  refused(() => cap.recordWhile(S0, h, kernels(1), { name: '' }), InvalidArgumentError, W, /name must be a non-empty string/);
  refused(() => cap.recordWhile(S0, h, kernels(1), { trips: 3 } as never), InvalidArgumentError, W, /unknown option 'trips' \(known: name, estimate\)/);
  const SW = 'StreamCapture.recordSwitch';
  refused(() => cap.recordSwitch(S0, h, kernels(1) as never), InvalidArgumentError, SW, /cases must be an array of body callbacks, got a function/);
  refused(() => cap.recordSwitch(S0, h, []), InvalidArgumentError, SW, /cases must hold 1\.\.65535 bodies \(one per case\) for a 'switch' node, got 0/);
  refused(() => cap.recordSwitch(S0, h, [kernels(1), 5 as never]), InvalidArgumentError, SW, /cases\[1\] must be a function/);
  const C = 'StreamCapture.conditionalHandle';
  refused(() => cap.conditionalHandle({ default: -1 }), InvalidArgumentError, C, /default must be an integer in 0\.\.4294967295, got -1/);
  refused(() => cap.conditionalHandle({ default: 2 ** 32 }), InvalidArgumentError, C, /default must be an integer/);
  refused(() => cap.conditionalHandle({ assignDefault: 'yes' } as never), InvalidArgumentError, C, /assignDefault must be a boolean/);
  refused(() => cap.conditionalHandle({ flags: 1 } as never), InvalidArgumentError, C, /unknown option 'flags'/);
  // The outer capture holds still while a body records: the body's work goes through the capture it is given.
  const busy = refused(() => cap.recordWhile(S0, h, () => void cap.recordKernel(S0, 'k', 1, 1, 0)), GraphError, 'StreamCapture.recordKernel', /the capture cannot change while StreamCapture\.recordWhile records a body; record the body through the capture its callback is given/);
  assert.equal((busy as GraphError).code, 'GRAPH_BUSY');
  for (const touch of [(): void => cap.recordEvent(S0, CaptureEvent(0)), (): void => cap.beginCapture(S1), (): void => void cap.endCapture(S0), (): void => cap.invalidate(S0)]) {
    assert.throws(() => cap.recordWhile(S0, h, touch), (e: unknown) => e instanceof GraphError && e.code === 'GRAPH_BUSY');
  }
  const later: Promise<void>[] = [];
  refused(
    () =>
      cap.recordWhile(S0, h, async (c, s) => {
        const p = Promise.resolve();
        later.push(p);
        await p;
        c.recordKernel(s, 'too late', 1, 1, 0); // throws: the body's capture has ended
      }),
    InvalidArgumentError,
    W,
    /body returned a promise; a body must record synchronously/,
  );
  refused(() => cap.recordWhile(S0, h, (c, s) => void c.endCapture(s)), GraphError, W, /body ended its own capture; the body's capture ends when the callback returns/);
  await Promise.all(later);
  await new Promise((resolve) => setImmediate(resolve)); // an unhandled rejection would have failed the run by now
  assert.equal(cap.nodeCount(), 0);
  assert.equal(cap.status(S0), 'Active', 'the refused touches changed nothing');
  // Under CUDA semantics a body must join its forks back, as a capture must.
  const cuda = new StreamCapture({ semantics: 'cuda' });
  cuda.beginCapture(S0);
  const unjoined = refused(
    () =>
      cuda.recordIf(S0, cuda.conditionalHandle(), kernels(1), (c, s) => {
        c.recordEvent(s, CaptureEvent(0));
        c.waitEvent(S1, CaptureEvent(0));
        c.recordKernel(S1, 'astray', 1, 1, 0);
      }),
    GraphError,
    'StreamCapture.recordIf',
    /^StreamCapture\.recordIf: otherwise: stream 1 has work not joined back into stream 0/,
  );
  assert.equal((unjoined as GraphError).code, 'CAPTURE_UNJOINED');
  assert.equal(cuda.nodeCount(), 0);
  // After the session ends.
  cuda.endCapture(S0);
  refused(() => cuda.conditionalHandle(), GraphError, C, /capture session has ended/);
  refused(() => cuda.recordWhile(S0, h, kernels(1)), GraphError, W, /capture session has ended/);
});

// ── a property against a reference ──────────────────────────────────────────────────────────

type Op =
  | { op: 'kernel'; s: number }
  | { op: 'record'; s: number; e: number }
  | { op: 'wait'; s: number; e: number }
  | { op: 'cond'; s: number; type: 'if' | 'while' | 'switch'; bodies: number[]; fail: boolean };

/** The per-stream rules the obvious way, with a conditional node as one more node. */
class Reference {
  kinds: string[] = [];
  bodies: (number[] | null)[] = [];
  preds: Set<number>[] = [];
  head = new Map<number, number>();
  parked = new Map<number, number[]>();
  events = new Map<number, number>();

  add(s: number, kind: string, bodies: number[] | null): void {
    const id = this.kinds.length;
    const ps = new Set(this.parked.get(s) ?? []);
    if (this.head.has(s)) ps.add(this.head.get(s)!);
    this.kinds.push(kind);
    this.bodies.push(bodies);
    this.preds.push(ps);
    this.parked.set(s, []);
    this.head.set(s, id);
  }

  apply(o: Op): void {
    if (o.op === 'kernel') this.add(o.s, 'kernel', null);
    else if (o.op === 'record') {
      if (this.head.has(o.s)) this.events.set(o.e, this.head.get(o.s)!);
    } else if (o.op === 'wait') {
      const src = this.events.get(o.e);
      const list = this.parked.get(o.s) ?? [];
      if (src !== undefined && !list.includes(src)) this.parked.set(o.s, [...list, src]);
    } else if (!o.fail) this.add(o.s, 'conditional', o.bodies);
  }
}

const bodyCount = { if: [1, 2], while: [1, 1], switch: [1, 4] } as const;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('kernel' as const), s: fc.nat(1) }),
  fc.record({ op: fc.constant('record' as const), s: fc.nat(1), e: fc.nat(2) }),
  fc.record({ op: fc.constant('wait' as const), s: fc.nat(1), e: fc.nat(2) }),
  fc
    .record({ s: fc.nat(1), type: fc.constantFrom('if' as const, 'while' as const, 'switch' as const), sizes: fc.array(fc.nat(3), { minLength: 4, maxLength: 4 }), fail: fc.boolean() })
    .map(({ s, type, sizes, fail }) => ({ op: 'cond' as const, s, type, bodies: sizes.slice(0, Math.max(bodyCount[type][0], sizes[0]! % (bodyCount[type][1] + 1))), fail })),
);

test('property: conditionals recorded among kernels, events and waits wire as one node on the frontier; failing ones change nothing', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
      const cap = new StreamCapture();
      cap.beginCapture(S0);
      cap.beginCapture(S1);
      const ref = new Reference();
      const boom = new Error('boom');
      for (const o of ops) {
        const s = StreamId(o.s);
        if (o.op === 'kernel') cap.recordKernel(s, 'k', 1, 32, 0);
        else if (o.op === 'record') cap.recordEvent(s, CaptureEvent(o.e));
        else if (o.op === 'wait') cap.waitEvent(s, CaptureEvent(o.e));
        else {
          const bodies = o.bodies.map(
            (n, i): BodyRecorder =>
              (c, bs) => {
                kernels(n)(c, bs);
                // A failing conditional fails in its last body, after the others have recorded.
                if (o.fail && i === o.bodies.length - 1) throw boom;
              },
          );
          const h = cap.conditionalHandle();
          const record = (): unknown =>
            o.type === 'while' ? cap.recordWhile(s, h, bodies[0]!) : o.type === 'if' ? cap.recordIf(s, h, bodies[0]!, bodies[1]) : cap.recordSwitch(s, h, bodies);
          if (o.fail) assert.throws(record, (e: unknown) => e === boom);
          else record();
        }
        ref.apply(o);
        assert.equal(cap.nodeCount(), ref.kinds.length);
      }
      cap.recordKernel(S0, 'end', 1, 32, 0);
      ref.apply({ op: 'kernel', s: 0 });
      const g = cap.endCapture(S0);
      assert.deepEqual(g.nodes().map((n) => n.kind), ref.kinds);
      g.nodes().forEach((n, v) => {
        assert.deepEqual(g.predecessors(n.id), [...ref.preds[v]!].sort((a, b) => a - b), `node ${v}`);
        if (n.kind === 'conditional') assert.deepEqual(n.bodies.map((b) => b.nodeCount()), ref.bodies[v]);
      });
      assert.equal(JSON.stringify(ComputeGraph.fromJSON(JSON.stringify(g))), JSON.stringify(g));
    }),
    { numRuns: 200 },
  );
});
