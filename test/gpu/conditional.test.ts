/**
 * Conditional nodes on the device: IF, IF/ELSE, WHILE and SWITCH, built explicitly and by capture
 * (`stream.captureWhile` / `captureIf` / `captureSwitch` inside a live capture), nested, each run
 * and checked against the host arithmetic; the conditions set by NVRTC-compiled kernels through
 * `CONDITIONAL_DEVICE_API`; and CUDA's rules, refused before the driver.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONDITIONAL_DEVICE_API,
  CudaError,
  Device,
  DeviceBuffer,
  Graph,
  HostFunction,
  InvalidArgumentError,
  Module,
  StreamGraphCapture,
  arg,
  captureGraph,
  type Stream,
} from '../../src/index.js';
import { gpuSuite } from './gpu.js';
import { refused } from '../support/refused.js';

const SOURCE =
  CONDITIONAL_DEVICE_API +
  `
extern "C" __global__ void count_while(unsigned int *c, unsigned int limit, unsigned long long h) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { unsigned int v = ++c[0]; cudaGraphSetConditional(h, v < limit ? 1u : 0u); }
}
extern "C" __global__ void set_from(unsigned long long h, const unsigned int *flag) {
  if (threadIdx.x == 0 && blockIdx.x == 0) cudaGraphSetConditional(h, flag[0]);
}
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
// A nested loop starts again: its counter zeroed and its condition set. (A handle's default is
// assigned when the whole graph is launched, not each time its node is reached.)
extern "C" __global__ void restart(unsigned int *p, unsigned long long h) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { p[0] = 0; cudaGraphSetConditional(h, 1u); }
}
`;


gpuSuite('conditional nodes', () => {
  const d = Device.get(0);
  const m = Module.compile(d, SOURCE);
  const countWhile = m.function('count_while');
  const setFrom = m.function('set_from');
  const add = m.function('add_u32');
  const restart = m.function('restart');
  const s = d.createStream();
  const one = { grid: 1, block: 32 };
  const read = (b: DeviceBuffer, n = 1): Uint32Array => {
    const out = new Uint32Array(n);
    b.copyToHost(out);
    return out;
  };

  test('WHILE, built explicitly: the body runs until its kernel clears the condition, again on every launch', () => {
    const c = DeviceBuffer.alloc(d, 4);
    using g = Graph.create(d);
    const reset = g.addMemsetNode({ dst: c, value: 0, elementSize: 4, count: 1 });
    const h = g.conditionalHandle({ default: 1 });
    assert.equal(h.assignDefault, true);
    const loop = g.addWhileNode(h, [reset]);
    assert.equal(loop.kind, 'while');
    assert.equal(loop.node.type, 'conditional');
    assert.equal(loop.bodies.length, 1);
    assert.deepEqual(loop.node.bodies(), loop.bodies);
    assert.equal(loop.bodies[0]!.bodyOf, loop.node);
    assert.equal(h.node, loop.node);
    loop.bodies[0]!.addKernelNode(countWhile, { ...one, args: [c, arg.u32(37), h.arg()] });
    // Read back as the model's conditional node, its body included (the kind and bodies cudagraph knows).
    const model = g.toComputeGraph();
    const cond = model.nodes().find((n) => n.kind === 'conditional');
    assert.ok(cond !== undefined && cond.kind === 'conditional' && cond.type === 'while', JSON.stringify(model.toJSON()));
    assert.deepEqual(cond.bodies[0]!.nodes().map((n) => (n.kind === 'kernel' ? n.functionName : n.kind)), ['count_while']);
    assert.deepEqual(model.predecessors(cond.id).map((id) => model.node(id).kind), ['memset']);
    using e = g.instantiate(undefined, s);
    for (let i = 0; i < 3; i++) {
      e.launch();
      s.synchronize();
      assert.equal(read(c)[0], 37, `launch ${i}: 37 rounds`);
    }
    // With a default of 0 the body never runs.
    using g0 = Graph.create(d);
    const r0 = g0.addMemsetNode({ dst: c, value: 5, elementSize: 4, count: 1 });
    const h0 = g0.conditionalHandle();
    g0.addWhileNode(h0, [r0]).bodies[0]!.addKernelNode(countWhile, { ...one, args: [c, arg.u32(37), h0.arg()] });
    using e0 = g0.instantiate(undefined, s);
    e0.launch();
    s.synchronize();
    assert.equal(read(c)[0], 5);
    c.dispose();
  });

  test('IF/ELSE and SWITCH, built explicitly: the condition a kernel sets from device memory picks the body', () => {
    const x = DeviceBuffer.alloc(d, 4);
    const flag = DeviceBuffer.alloc(d, 4);
    using g = Graph.create(d);
    const h = g.conditionalHandle({ assignDefault: false });
    const set = g.addKernelNode(setFrom, { ...one, args: [h.arg(), flag] });
    const branch = g.addIfNode(h, { else: true }, [set]);
    assert.equal(branch.bodies.length, 2);
    branch.bodies[0]!.addKernelNode(add, { ...one, args: [x, arg.u32(1), arg.i32(1)] });
    branch.bodies[1]!.addKernelNode(add, { ...one, args: [x, arg.u32(100), arg.i32(1)] });
    using e = g.instantiate(undefined, s);
    x.copyFromHost(new Uint32Array([0]));
    for (const f of [1, 0, 7, 0]) {
      flag.copyFromHost(new Uint32Array([f]));
      e.launch();
      s.synchronize();
    }
    assert.equal(read(x)[0], 1 + 100 + 1 + 100, 'then, else, then, else');

    // IF without an else: the body runs only when the condition is non-zero.
    using gi = Graph.create(d);
    const hi = gi.conditionalHandle({ assignDefault: false });
    const seti = gi.addKernelNode(setFrom, { ...one, args: [hi.arg(), flag] });
    const only = gi.addIfNode(hi, undefined, [seti]);
    assert.equal(only.bodies.length, 1);
    only.bodies[0]!.addKernelNode(add, { ...one, args: [x, arg.u32(5), arg.i32(1)] });
    using ei = gi.instantiate(undefined, s);
    x.copyFromHost(new Uint32Array([0]));
    for (const f of [1, 0, 0, 3]) {
      flag.copyFromHost(new Uint32Array([f]));
      ei.launch();
      s.synchronize();
    }
    assert.equal(read(x)[0], 10, 'the body ran for the two non-zero conditions only');

    using sw = Graph.create(d);
    const hs = sw.conditionalHandle({ assignDefault: false });
    const set2 = sw.addKernelNode(setFrom, { ...one, args: [hs.arg(), flag] });
    const cases = sw.addSwitchNode(hs, 3, [set2]);
    assert.equal(cases.bodies.length, 3);
    cases.bodies.forEach((b, i) => b.addKernelNode(add, { ...one, args: [x, arg.u32(10 ** i), arg.i32(1)] }));
    using es = sw.instantiate(undefined, s);
    x.copyFromHost(new Uint32Array([0]));
    for (const f of [0, 1, 2, 2, 5]) {
      flag.copyFromHost(new Uint32Array([f]));
      es.launch();
      s.synchronize();
    }
    assert.equal(read(x)[0], 1 + 10 + 100 + 100, 'cases 0, 1, 2, 2, and none for 5');
    x.dispose();
    flag.dispose();
  });

  test('captured: captureWhile inside captureGraph, nested loops, captureIf and captureSwitch on the capturing stream', () => {
    const c = DeviceBuffer.alloc(d, 16);
    const after = DeviceBuffer.alloc(d, 4);
    const flag = DeviceBuffer.alloc(d, 4);
    // Outer loop 3 rounds; inner loop 4 rounds each: c[0] counts inner rounds (12), c[1] outer (3).
    const graph = captureGraph(s, (st: Stream) => {
      c.memsetAsync(st, 0);
      after.memsetAsync(st, 0);
      const outer = st.conditionalHandle({ default: 1 });
      const inner = st.conditionalHandle({ default: 1 });
      st.captureWhile(outer, (body) => {
        const c2 = arg.ptr(c.ptr + 8n);
        restart.launch(body, { ...one, args: [c2, inner.arg()] });
        body.captureWhile(inner, (b2) => {
          add.launch(b2, { ...one, args: [c, arg.u32(1), arg.i32(1)] });
          countWhile.launch(b2, { ...one, args: [c2, arg.u32(4), inner.arg()] });
        });
        countWhile.launch(body, { ...one, args: [arg.ptr(c.ptr + 4n), arg.u32(3), outer.arg()] });
      });
      add.launch(st, { ...one, args: [after, arg.u32(9), arg.i32(1)] });
    });
    graph.launch();
    s.synchronize();
    const got = read(c, 3);
    assert.deepEqual([got[0], got[1]], [12, 3], 'inner rounds 12, outer rounds 3');
    assert.equal(read(after)[0], 9, 'work captured after the loop ran after it');
    graph.dispose();

    const x = DeviceBuffer.alloc(d, 4);
    const cap = StreamGraphCapture.begin(s);
    const hi = s.conditionalHandle({ assignDefault: false });
    setFrom.launch(s, { ...one, args: [hi.arg(), flag] });
    const node = s.captureIf(
      hi,
      (b) => add.launch(b, { ...one, args: [x, arg.u32(1), arg.i32(1)] }),
      (b) => add.launch(b, { ...one, args: [x, arg.u32(100), arg.i32(1)] }),
    );
    assert.equal(node.bodies.length, 2);
    // And an IF without an else, on a condition of its own set from the same flag: +7 when it is non-zero.
    const hi2 = s.conditionalHandle({ assignDefault: false });
    setFrom.launch(s, { ...one, args: [hi2.arg(), flag] });
    s.captureIf(hi2, (b) => add.launch(b, { ...one, args: [x, arg.u32(7), arg.i32(1)] }));
    const hsw = s.conditionalHandle({ assignDefault: false });
    setFrom.launch(s, { ...one, args: [hsw.arg(), flag] });
    s.captureSwitch(hsw, [0, 1, 2].map((i) => (b: Stream) => add.launch(b, { ...one, args: [x, arg.u32(1000 * 10 ** i), arg.i32(1)] })));
    using e = cap.end();
    x.copyFromHost(new Uint32Array([0]));
    for (const f of [1, 0, 2]) {
      flag.copyFromHost(new Uint32Array([f]));
      e.launch();
      s.synchronize();
    }
    // flag 1: then (+1), if (+7) and case 1 (+10000); 0: else (+100) and case 0 (+1000); 2: then (+1), if (+7) and case 2 (+100000).
    assert.equal(read(x)[0], 1 + 7 + 10000 + 100 + 1000 + 1 + 7 + 100000);
    for (const b of [c, after, flag, x]) b.dispose();
  });

  test('CUDA rules refused first: body kinds, one node per handle, foreign handles, no clone, no child, one instantiation', () => {
    using g = Graph.create(d);
    const h = g.conditionalHandle({ default: 1 });
    const loop = g.addWhileNode(h);
    const body = loop.bodies[0]!;
    refused(() => body.addHostNode(() => {}), InvalidArgumentError, 'Graph.addHostNode', /is a body of .*a hostCallback node is not allowed/);
    const ev = d.createEvent();
    refused(() => body.addEventRecordNode(ev), InvalidArgumentError, 'Graph.addEventRecordNode', /conditional body may contain only/);
    ev.dispose();
    refused(() => body.addMemAllocNode({ byteLength: 64 }), InvalidArgumentError, 'Graph.addMemAllocNode', /conditional body may contain only/);
    refused(() => g.addWhileNode(h), InvalidArgumentError, 'Graph.addWhileNode', /already serves CudaNode\(conditional\)/);
    {
      using other = Graph.create(d);
      const foreign = other.conditionalHandle();
      refused(() => g.addIfNode(foreign), InvalidArgumentError, 'Graph.addIfNode', /made for another graph/);
    }
    {
      using spare = Graph.create(d);
      refused(() => g.addSwitchNode(spare.conditionalHandle(), 0), InvalidArgumentError, 'Graph.addSwitchNode', /cases/);
      // A handle no node uses: CUDA would refuse the instantiation; cudagraph says so first.
      refused(() => spare.instantiate(), InvalidArgumentError, 'Graph.instantiate', /serves no conditional node/);
    }
    refused(() => g.addIfNode({ value: 1n } as never), InvalidArgumentError, 'Graph.addIfNode', /handle must be a ConditionalHandle/);
    refused(() => g.clone(), InvalidArgumentError, 'Graph.clone', /conditional nodes, and a graph with conditional nodes cannot be cloned/);
    {
      using parent = Graph.create(d);
      refused(() => parent.addChildGraphNode(g), InvalidArgumentError, 'Graph.addChildGraphNode', /conditional nodes/);
    }
    refused(() => body.instantiate(), InvalidArgumentError, 'Graph.instantiate', /is a body of/);
    // The body's counter kernel so the graph instantiates (a body may be empty too).
    const c = DeviceBuffer.alloc(d, 4);
    body.addKernelNode(countWhile, { ...one, args: [c, arg.u32(2), h.arg()] });
    const e = g.instantiate(undefined, s);
    refused(() => g.instantiate(undefined, s), InvalidArgumentError, 'Graph.instantiate', /already instantiated.*conditional nodes/);
    e.dispose();
    g.instantiate(undefined, s).dispose();
    // A capture into a body that records a host function is refused whole.
    const before = body.nodeRefs().length;
    const side = d.createStream();
    const hf = HostFunction.create(() => {});
    refused(() => body.captureInto(side, (st) => hf.launch(st)), InvalidArgumentError, 'Graph.captureInto', /recorded a hostCallback node/);
    assert.equal(body.nodeRefs().length, before, 'nothing the refused capture recorded was kept');
    side.dispose();
    hf.dispose();
    // body.dispose() does nothing: the body ends with its graph.
    body.dispose();
    assert.equal(body.disposed, false);
    c.dispose();
  });

  test('a refused capture into a body takes back the conditional nodes it recorded too; a removed node\'s handle serves again', () => {
    const c = DeviceBuffer.alloc(d, 4);
    using g = Graph.create(d);
    const h = g.conditionalHandle({ default: 1 });
    const loop = g.addWhileNode(h);
    const body = loop.bodies[0]!;
    const side = d.createStream();
    const hf = HostFunction.create(() => {});
    let nested: Graph | null = null;
    refused(
      () =>
        body.captureInto(side, (st) => {
          nested = st.captureIf(st.conditionalHandle(), (t) => add.launch(t, { ...one, args: [c, arg.u32(1), arg.i32(1)] })).bodies[0]!;
          hf.launch(st);
        }),
      InvalidArgumentError,
      'Graph.captureInto',
      /recorded a hostCallback node \(nothing it recorded was kept\)/,
    );
    assert.equal(body.nodeRefs().length, 0, 'the body is as it was');
    assert.equal(nested!.disposed, true, 'the nested IF node went, and its body with it');
    // The handle the refused capture made for the body serves nothing now, and never will: CUDA
    // counts it with the outermost graph and would refuse the instantiation; so does cudagraph,
    // first, and it refuses to remove the node whose body that handle was made for.
    refused(() => g.instantiate(undefined, s), InvalidArgumentError, 'Graph.instantiate', /serves no conditional node/);
    refused(() => g.removeNode(loop.node), InvalidArgumentError, 'Graph.removeNode', /made for a body of CudaNode\(conditional\): removing it would leave that handle unused for ever/);
    // A removed node's own handle serves a new node, and the graph runs (measured: CUDA accepts it).
    using g2 = Graph.create(d);
    const h2 = g2.conditionalHandle({ default: 1 });
    g2.removeNode(g2.addWhileNode(h2).node);
    refused(() => g2.instantiate(undefined, s), InvalidArgumentError, 'Graph.instantiate', /serves no conditional node/);
    const again = g2.addWhileNode(h2);
    again.bodies[0]!.addKernelNode(countWhile, { ...one, args: [c, arg.u32(5), h2.arg()] });
    c.copyFromHost(new Uint32Array([0]));
    using e = g2.instantiate(undefined, s);
    e.launch();
    s.synchronize();
    assert.equal(read(c)[0], 5);
    // A handle made through the stream names the stream's call in its refusals.
    const cap = StreamGraphCapture.begin(s);
    refused(() => s.conditionalHandle({ default: -1 }), InvalidArgumentError, 'Stream.conditionalHandle', /default/);
    cap.endGraph().dispose();
    side.dispose();
    hf.dispose();
    c.dispose();
  });

  test('captured bodies: not capturing, a body that throws fails the outer capture with its error as the cause', () => {
    refused(() => s.captureWhile(null as never, () => {}), InvalidArgumentError, 'Stream.captureWhile', /not capturing/);
    refused(() => s.conditionalHandle(), InvalidArgumentError, 'Stream.conditionalHandle', /not capturing/);
    const mine = new Error('mine');
    const cap = StreamGraphCapture.begin(s);
    const h = s.conditionalHandle({ default: 1 });
    assert.throws(
      () =>
        s.captureWhile(h, () => {
          throw mine;
        }),
      (e: unknown) => e === mine,
      'the body\'s own error propagates unchanged',
    );
    assert.throws(
      () => cap.endGraph(),
      (e: unknown) => e instanceof CudaError && e.code === 901 && e.cause === mine && /Stream\.captureWhile/.test((e as Error).message),
    );
    assert.equal(cap.isActive(), false, 'the capture ended');
    // The stream captures again afterwards.
    const again = StreamGraphCapture.begin(s);
    again.endGraph().dispose();
  });
});
