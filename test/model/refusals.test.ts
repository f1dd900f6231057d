/**
 * Every refusal of the model names the public call the user made and changes nothing; object
 * arguments are checked by brand, so a forged graph or a look-alike is refused with a typed error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ComputeGraph,
  ExecGraph,
  GraphBuilder,
  GraphError,
  InvalidArgumentError,
  MultiDeviceCapture,
  MultiDeviceGraph,
  NodeId,
  type NodeSpec,
} from '../../src/index.js';
import { refused } from '../support/refused.js';


/** A builder with three empty nodes a, b, c and the edge c → a. */
function abc(): { b: GraphBuilder; a: NodeId; m: NodeId; c: NodeId } {
  const b = new GraphBuilder({ inferEdges: false });
  const a = b.empty('a');
  const m = b.empty('m');
  const c = b.empty('c');
  b.dep(c, a);
  return { b, a, m, c };
}

test('GraphBuilder.chain, fanIn, fanOut are all or nothing and name themselves', () => {
  const cases: [string, (b: GraphBuilder, a: NodeId, m: NodeId, c: NodeId) => unknown, typeof GraphError | typeof InvalidArgumentError, RegExp][] = [
    // The last edge closes the cycle c → a → m → c: none of the earlier ones may stay.
    ['GraphBuilder.chain', (b, a, m, c) => b.chain([a, m, c]), GraphError, /nodes\[1\], nodes\[2\]: 1 → 2 closes a cycle \(1 → 2 → 0 → 1\); no edge was added/],
    ['GraphBuilder.chain', (b, a, m) => b.chain([a, m, NodeId(9)]), GraphError, /node 9 not found \(nodes\[2\];/],
    ['GraphBuilder.chain', (b, a, m) => b.chain([a, m, -1 as never]), InvalidArgumentError, /nodes\[2\] must be an integer/],
    ['GraphBuilder.fanIn', (b, a, m, c) => b.fanIn([m, a], c), GraphError, /preds\[1\], join: 0 → 2 closes a cycle/],
    ['GraphBuilder.fanIn', (b, a, m) => b.fanIn([a, m], NodeId(7)), GraphError, /node 7 not found \(join;/],
    ['GraphBuilder.fanIn', (b, a) => b.fanIn([a], 'x' as never), InvalidArgumentError, /join must be an integer/],
    ['GraphBuilder.fanOut', (b, a, m, c) => b.fanOut(a, [m, c]), GraphError, /fork, succs\[1\]: 0 → 2 closes a cycle/],
    ['GraphBuilder.fanOut', (b, a, m) => b.fanOut(a, [m, NodeId(5)]), GraphError, /succs\[1\]/],
    ['GraphBuilder.fanOut', (b, a) => b.fanOut(NodeId(8), [a]), GraphError, /\(fork;/],
    ['GraphBuilder.dep', (b, a, m, c) => b.dep(a, c), GraphError, /edge 0 → 2 would close a cycle \(2 already reaches 0\)/],
    ['GraphBuilder.dep', (b, a) => b.dep(a, NodeId(3)), GraphError, /\(to;/],
  ];
  for (const [op, call, type, pattern] of cases) {
    const { b, a, m, c } = abc();
    refused(() => call(b, a, m, c), type, op, pattern);
    const { graph } = b.build();
    assert.deepEqual(graph.edges(), [[2, 0]], `${op}: the refused call added no edge (${pattern})`);
  }
  // The same calls that close no cycle add every edge.
  const { b, a, m, c } = abc();
  b.chain([m, c]).fanIn([m], c).fanOut(m, [c]).chain([]).chain([m]);
  assert.deepEqual(b.build().graph.edges(), [[1, 2], [2, 0]]);
  assert.ok(a === 0);
});

test('GraphBuilder refusals of a node name the builder method, never ComputeGraph.addNode', () => {
  const b = new GraphBuilder();
  const x = b.buffer('x', 64);
  refused(() => b.empty('e', { cost: -1 }), InvalidArgumentError, 'GraphBuilder.empty', /cost must be a finite number ≥ 0/);
  refused(() => b.kernel('k', { grid: 1, block: 1, cost: Number.NaN }), InvalidArgumentError, 'GraphBuilder.kernel', /cost/);
  refused(() => b.kernel('', { grid: 1, block: 1 }), InvalidArgumentError, 'GraphBuilder.kernel', /functionName must be a non-empty string/);
  refused(() => b.memset(x, 0, { name: 5 as never }), InvalidArgumentError, 'GraphBuilder.memset', /name must be a non-empty string/);
  refused(() => b.host('h', undefined, { stream: -1 as never }), InvalidArgumentError, 'GraphBuilder.host', /stream must be an integer/);
  // A scalar argument must come from a builder: a look-alike would reach the GPU unchecked.
  const forged = { kind: 'scalar', type: 'f32', value: 'not a number' };
  refused(() => b.kernel('k', { grid: 1, block: 1, args: [forged as never] }), InvalidArgumentError, 'GraphBuilder.kernel', /args\[0\] must be a scalar made by a builder/);
  b.kernel('k', { grid: 1, block: 1, args: [x, b.f32(2), new GraphBuilder().i32(3)] });
  assert.ok(Object.isFrozen(b.f64(1)), 'scalars cannot be changed after their check');
  assert.equal(b.build().graph.nodeCount(), 1);
});

test('ExecGraph: unknown update fields are refused and not counted; refusals name ExecGraph.updateNode', () => {
  const g = new ComputeGraph();
  const k = g.addNode({ kind: 'kernel', functionName: 'k', grid: 2, block: 32 });
  const m = g.addNode({ kind: 'memset', sizeBytes: 64, value: 0 });
  const e = ExecGraph.instantiate(g);
  const before = [e.node(k), e.node(m)];
  refused(() => e.updateNode(k, { kind: 'kernel', gird: [4, 1, 1] } as never), InvalidArgumentError, 'ExecGraph.updateNode', /update\.gird is not a field of a 'kernel' update \(known: kind, functionName, grid, block, sharedMem\)/);
  refused(() => e.updateNode(m, { kind: 'memset', value: 1, size: 8 } as never), InvalidArgumentError, 'ExecGraph.updateNode', /update\.size is not a field/);
  refused(() => e.updateNode(k, { kind: 'kernel', grid: [0, 1, 1] }), InvalidArgumentError, 'ExecGraph.updateNode', /^ExecGraph\.updateNode: update\.grid\[0\] must be an integer in 1\.\./);
  refused(() => e.updateNode(k, { kind: 'kernel', block: [1024, 2, 1] }), InvalidArgumentError, 'ExecGraph.updateNode', /update\.block has 1024·2·1 = 2048 threads/);
  refused(() => e.updateNode(k, { kind: 'kernel', functionName: null } as never), InvalidArgumentError, 'ExecGraph.updateNode', /update\.functionName/);
  refused(() => e.updateNode(m, { kind: 'memset', value: 256 }), InvalidArgumentError, 'ExecGraph.updateNode', /update\.value must be an integer in 0\.\.255/);
  refused(() => e.updateNode(m, { kind: 'memset' } as never), InvalidArgumentError, 'ExecGraph.updateNode', /update changes nothing: give at least one of value/);
  refused(() => e.updateNode(k, { kind: 'bogus' } as never), InvalidArgumentError, 'ExecGraph.updateNode', /update\.kind must be one of/);
  refused(() => e.updateNode(k, [] as never), InvalidArgumentError, 'ExecGraph.updateNode', /update must be an object/);
  refused(() => e.updateNode(k, { kind: 'memset', value: 1 }), GraphError, 'ExecGraph.updateNode', /node 0 is a 'kernel' node but the update targets 'memset'/);
  assert.equal(e.updateCount, 0, 'no refused update is counted');
  assert.deepEqual([e.node(k), e.node(m)], before, 'nor changes the executable');
  e.updateNode(k, { kind: 'kernel', grid: [4, 1, 1] });
  assert.equal(e.updateCount, 1);
  assert.deepEqual((e.node(k) as { grid?: unknown }).grid, [4, 1, 1]);
});

test('forged objects are refused by a brand check, naming the call: new ExecGraph(), Object.create(ComputeGraph.prototype), look-alikes', () => {
  const forged = Object.create(ComputeGraph.prototype) as ComputeGraph;
  const lookAlike = { nodeCount: () => 1, nodes: () => [], edges: () => [], topologicalOrder: () => [] } as unknown as ComputeGraph;
  const g = new ComputeGraph();
  g.addNode({ kind: 'empty' });
  const exec = ExecGraph.instantiate(g);
  for (const bad of [forged, lookAlike, null, undefined, 3]) {
    refused(() => ExecGraph.instantiate(bad as never), InvalidArgumentError, 'ExecGraph.instantiate', /graph must be a ComputeGraph/);
    refused(() => exec.diff(bad as never), InvalidArgumentError, 'ExecGraph.diff', /graph must be a ComputeGraph/);
    refused(() => exec.update(bad as never), InvalidArgumentError, 'ExecGraph.update', /graph must be a ComputeGraph/);
  }
  const Ctor = ExecGraph as unknown as new (...args: unknown[]) => unknown;
  refused(() => new Ctor(), InvalidArgumentError, 'new ExecGraph', /made by ExecGraph\.instantiate\(graph\)/);
  refused(() => new Ctor(Symbol('ExecGraph.instantiate'), g, 'cuda'), InvalidArgumentError, 'new ExecGraph');
  const Mdg = MultiDeviceGraph as unknown as new (...args: unknown[]) => unknown;
  refused(() => new Mdg(g, 2, 0, []), InvalidArgumentError, 'new MultiDeviceGraph', /made by MultiDeviceCapture\.endCapture\(\)/);
  assert.equal(exec.updateCount, 0);
});

test('MultiDeviceCapture and MultiDeviceGraph refusals name their own calls, not the inner StreamCapture', () => {
  const cap = new MultiDeviceCapture(2);
  refused(() => cap.recordKernel(0, 'k', 1, 32, 0), GraphError, 'MultiDeviceCapture.recordKernel', /stream 0 is not capturing/);
  refused(() => cap.endCapture(), GraphError, 'MultiDeviceCapture.endCapture', /not begun/);
  cap.beginCapture();
  refused(() => cap.recordKernel(0, 'k', 0, 32, 0), InvalidArgumentError, 'MultiDeviceCapture.recordKernel', /numBlocks must be/);
  refused(() => cap.recordMemcpy(1, 'c', 'Sideways' as never, 8), InvalidArgumentError, 'MultiDeviceCapture.recordMemcpy', /dir must be/);
  refused(() => cap.recordMemset(1, '', 8, 0), InvalidArgumentError, 'MultiDeviceCapture.recordMemset', /name must be/);
  refused(() => cap.recordHostCallback(1, ''), InvalidArgumentError, 'MultiDeviceCapture.recordHostCallback', /label must be/);
  refused(() => cap.recordKernel(2, 'k', 1, 32, 0), InvalidArgumentError, 'MultiDeviceCapture.recordKernel', /rank must be/);
  assert.equal(cap.nodeCount(), 0, 'nothing was recorded');
  cap.recordKernel(0, 'k', 1, 32, 0);
  const step = cap.endCapture();
  refused(() => cap.nodeCount(), GraphError, 'MultiDeviceCapture.nodeCount', /ended/);
  // Its own words after the end, not the inner StreamCapture's ("start a new StreamCapture").
  for (const [op, call] of [
    ['MultiDeviceCapture.nodeCount', () => cap.nodeCount()],
    ['MultiDeviceCapture.recordKernel', () => cap.recordKernel(0, 'k', 1, 32, 0)],
    ['MultiDeviceCapture.recordMemcpy', () => cap.recordMemcpy(0, 'c', 'HostToDevice', 8)],
    ['MultiDeviceCapture.recordMemset', () => cap.recordMemset(1, 'm', 8, 0)],
    ['MultiDeviceCapture.recordHostCallback', () => cap.recordHostCallback(1, 'h')],
  ] as const) {
    const e = refused(call, GraphError, op, /: this capture has ended \(endCapture returned its graph\)$/);
    assert.equal((e as GraphError).code, 'CAPTURE_SESSION_ENDED');
  }
  refused(() => cap.endCapture(), GraphError, 'MultiDeviceCapture.endCapture', /ended/);
  refused(() => step.rankOf(NodeId(5)), GraphError, 'MultiDeviceGraph.rankOf', /node 5 not found/);
  refused(() => step.collectiveOf(NodeId(5)), GraphError, 'MultiDeviceGraph.collectiveOf', /node 5 not found/);
});

// ── property: a refused call leaves the graph exactly as it was ────────────────────────────────

/** A call on a hand-built graph: valid or not (bad specs, unknown ids, self-loops, cycles). */
type Op =
  | { op: 'addNode'; spec: NodeSpec }
  | { op: 'addEdge'; from: number; to: number }
  | { op: 'addEdges'; pairs: [number, number][] }
  | { op: 'chain'; ids: number[] };

/** Bodies for conditional specs: one a body may be, one it may not (a host callback). */
const kernelBody = new ComputeGraph();
kernelBody.addNode({ kind: 'kernel', functionName: 'b', grid: 1, block: 32 });
const hostBody = new ComputeGraph();
hostBody.addNode({ kind: 'hostCallback', label: 'h' });

const spec = fc.oneof(
  fc.record({ kind: fc.constant('kernel' as const), functionName: fc.constantFrom('k', ''), grid: fc.integer({ min: 0, max: 3 }), block: fc.constantFrom(1, 32, 2048) }),
  fc.record({ kind: fc.constant('memset' as const), sizeBytes: fc.integer({ min: 0, max: 8 }), value: fc.integer({ min: 0, max: 300 }) }),
  fc.record({ kind: fc.constant('empty' as const), cost: fc.constantFrom(1, 2, -1, Number.NaN) }),
  // Valid or not: body counts, bodies, handle ids used twice, estimates.
  fc.record({
    kind: fc.constant('conditional' as const),
    type: fc.constantFrom('if' as const, 'while' as const, 'switch' as const),
    bodies: fc.array(fc.constantFrom(kernelBody, kernelBody, hostBody), { maxLength: 3 }),
    handle: fc.record({ id: fc.integer({ min: 0, max: 2 }) }),
    estimate: fc.constantFrom(0, 0.5, 1, 3, -1),
  }),
);
const id = fc.integer({ min: 0, max: 9 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('addNode' as const), spec: spec as fc.Arbitrary<NodeSpec> }),
  fc.record({ op: fc.constant('addEdge' as const), from: id, to: id }),
  fc.record({ op: fc.constant('addEdges' as const), pairs: fc.array(fc.tuple(id, id), { maxLength: 4 }) }),
  fc.record({ op: fc.constant('chain' as const), ids: fc.array(id, { maxLength: 4 }) }),
);

/** `o` as a builder call: nodes by kind, `addEdge` as `dep`, `addEdges` as `fanOut` from the first pair's source, `chain` as itself. */
function builderCall(b: GraphBuilder, o: Op): void {
  if (o.op === 'addNode') {
    const s = o.spec as NodeSpec & Record<string, number | string>;
    if (s.kind === 'kernel') b.kernel(s.functionName as string, { grid: s.grid as number, block: s.block as number });
    else if (s.kind === 'empty') b.empty(undefined, { cost: s.cost as number });
    else if (o.spec.kind === 'conditional') b.conditional(o.spec.type, o.spec.bodies, { handle: o.spec.handle!, estimate: o.spec.estimate! });
    else b.empty(undefined, { cost: (s.value as number) > 255 ? -1 : 1 });
  } else if (o.op === 'addEdge') b.dep(NodeId(o.from), NodeId(o.to));
  else if (o.op === 'addEdges') b.fanOut(NodeId(o.pairs[0]?.[0] ?? 0), o.pairs.map(([, v]) => NodeId(v)));
  else b.chain(o.ids.map(NodeId));
}

test('property: a refused call on ComputeGraph or GraphBuilder leaves toJSON() unchanged (all or nothing)', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
      // The graph by hand: every refused call leaves the document as it was.
      const g = new ComputeGraph();
      const kept: Op[] = [];
      for (const o of ops) {
        const before = JSON.stringify(g);
        try {
          if (o.op === 'addNode') g.addNode(o.spec);
          else if (o.op === 'addEdge') g.addEdge(NodeId(o.from), NodeId(o.to));
          else if (o.op === 'addEdges') g.addEdges(o.pairs.map(([u, v]) => [NodeId(u), NodeId(v)] as const));
          else {
            const pairs = o.ids.slice(1).map((v, i) => [NodeId(o.ids[i]!), NodeId(v)] as const);
            g.addEdges(pairs);
          }
          kept.push(o);
        } catch (e) {
          assert.ok(e instanceof InvalidArgumentError || e instanceof GraphError, String(e));
          assert.equal(JSON.stringify(g), before, `${o.op} was refused but changed the graph`);
        }
      }
      // The same program through a builder, then again without the calls it refused: as a refused
      // call changes nothing, both give the same graph.
      const build = (program: Op[]): { json: string; refused: boolean[] } => {
        const b = new GraphBuilder({ inferEdges: false });
        const refusedAt = program.map((o) => {
          try {
            builderCall(b, o);
            return false;
          } catch (e) {
            assert.ok(e instanceof InvalidArgumentError || e instanceof GraphError, String(e));
            assert.ok(/^GraphBuilder\.\w+: /.test(e.message), `names the builder method: ${e.message}`);
            return true;
          }
        });
        return { json: JSON.stringify(b.build().graph), refused: refusedAt };
      };
      const all = build(ops);
      const accepted = build(ops.filter((_, i) => !all.refused[i]));
      assert.ok(accepted.refused.every((r) => !r), 'the accepted calls are accepted again');
      assert.equal(all.json, accepted.json, 'the refused builder calls changed the graph');
      assert.ok(kept.length <= ops.length);
    }),
    { numRuns: 150 },
  );
});
