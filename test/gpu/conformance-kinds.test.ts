/**
 * Conformance for the node kinds beyond kernels, copies, fills and host calls: workloads captured
 * on the device that produce external event record and wait nodes, graph memory (`allocAsync` /
 * `freeAsync` under capture), a child graph
 * spliced into a capture (`capture.insert`), and programmatic dependent launch (launches with
 * `programmaticStreamSerialization`), each read back with `Graph.toComputeGraph()` and compared
 * with the same workload recorded by the model (`StreamCapture({ semantics: 'cuda' })`): the same
 * nodes, the same reachability, and the same edge data.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { CaptureEvent, DeviceBuffer, Graph, InvalidArgumentError, StreamCapture, StreamGraphCapture, StreamId, type ComputeGraph } from '../../src/index.js';
import { gpuSuite } from './gpu.js';
import { GpuResources } from '../conformance/gpu-recorder.js';
import { asReference, compareGraphs, signature } from '../conformance/compare.js';

/** The edges of `g` as `signature → signature: kind/port`, sorted (node signatures are unique in these workloads). */
function edgeData(g: ComputeGraph): string[] {
  const sig = g.nodes().map(signature);
  return g
    .edgeRecords()
    .map((e) => `${sig[e.from]} → ${sig[e.to]}: ${e.kind}/${e.port}`)
    .sort();
}

gpuSuite('conformance: the other node kinds, device against model', () => {
  const res = new GpuResources();
  const d = res.device;
  after(() => res.dispose());
  const s0 = StreamId(0);
  const kernel = (_name: string, programmatic = false) => ({
    grid: 1,
    block: 32,
    args: [res.counter],
    ...(programmatic ? { attributes: { programmaticStreamSerialization: true } } : {}),
  });

  const compare = (label: string, device: ComputeGraph, model: ComputeGraph): void => {
    assert.deepEqual(compareGraphs(asReference(device), asReference(model)), [], `${label}: nodes and reachability`);
    assert.deepEqual(edgeData(device), edgeData(model), `${label}: edge data`);
  };

  test('graph memory: allocAsync and freeAsync under capture become allocation and free nodes', () => {
    const s = d.createStream();
    const cap = StreamGraphCapture.begin(s);
    res.module.function('k_a').launch(s, kernel('k_a'));
    const tmp = DeviceBuffer.allocAsync(s, 4096);
    res.module.function('k_b').launch(s, { grid: 1, block: 32, args: [tmp] });
    tmp.freeAsync(s);
    res.module.function('k_c').launch(s, kernel('k_c'));
    using g = cap.endGraph();
    const m = new StreamCapture({ semantics: 'cuda' });
    m.beginCapture(s0);
    m.recordKernel(s0, 'k_a', 1, 32, 0);
    const alloc = m.recordMemAlloc(s0, 4096, d.ordinal);
    m.recordKernel(s0, 'k_b', 1, 32, 0);
    m.recordMemFree(s0, alloc);
    m.recordKernel(s0, 'k_c', 1, 32, 0);
    compare('graph memory', g.toComputeGraph(), m.endCapture(s0));
    using exec = g.instantiate(undefined, s);
    exec.launch();
    exec.launch();
    s.synchronize();
    s.dispose();
  });

  test('conditional nodes captured with captureWhile / captureIf (nested) are the model\'s recordWhile / recordIf', () => {
    const s = d.createStream();
    const cap = StreamGraphCapture.begin(s);
    res.module.function('k_a').launch(s, kernel('k_a'));
    const loop = s.conditionalHandle();
    s.captureWhile(loop, (body) => {
      res.module.function('k_b').launch(body, kernel('k_b'));
      const branch = body.conditionalHandle();
      body.captureIf(
        branch,
        (t) => res.module.function('k_c').launch(t, kernel('k_c')),
        (e) => res.module.function('k_d').launch(e, kernel('k_d')),
      );
    });
    res.b.memsetAsync(s, 7, { count: 64 });
    using g = cap.endGraph();
    const m = new StreamCapture({ semantics: 'cuda' });
    m.beginCapture(s0);
    m.recordKernel(s0, 'k_a', 1, 32, 0);
    m.recordWhile(s0, m.conditionalHandle(), (body, bs) => {
      body.recordKernel(bs, 'k_b', 1, 32, 0);
      body.recordIf(bs, body.conditionalHandle(), (t, ts) => void t.recordKernel(ts, 'k_c', 1, 32, 0), (e, es) => void e.recordKernel(es, 'k_d', 1, 32, 0));
    });
    m.recordMemset(s0, 'memset', 64, 7);
    const device = g.toComputeGraph();
    const model = m.endCapture(s0);
    assert.deepEqual(device.nodes().map(signature), model.nodes().map(signature), 'the same nodes, bodies included');
    compare('conditional', device, model);
    // It runs: the loop's default of 0 skips the body.
    using exec = g.instantiate(undefined, s);
    exec.launch();
    s.synchronize();
    s.dispose();
  });

  test('a child graph spliced into a capture (capture.insert) is the model\'s recordChildGraph', () => {
    const s = d.createStream();
    using child = Graph.create(d);
    const c1 = child.addKernelNode(res.module.function('k_c'), kernel('k_c'));
    child.addKernelNode(res.module.function('k_d'), kernel('k_d'), [c1]);
    const cap = StreamGraphCapture.begin(s);
    res.module.function('k_a').launch(s, kernel('k_a'));
    cap.insert((g, deps) => g.addChildGraphNode(child, deps));
    res.module.function('k_b').launch(s, kernel('k_b'));
    using g = cap.endGraph();
    const inner = new StreamCapture({ semantics: 'cuda' });
    inner.beginCapture(s0);
    inner.recordKernel(s0, 'k_c', 1, 32, 0);
    inner.recordKernel(s0, 'k_d', 1, 32, 0);
    const m = new StreamCapture({ semantics: 'cuda' });
    m.beginCapture(s0);
    m.recordKernel(s0, 'k_a', 1, 32, 0);
    m.recordChildGraph(s0, inner.endCapture(s0));
    m.recordKernel(s0, 'k_b', 1, 32, 0);
    compare('child graph', g.toComputeGraph(), m.endCapture(s0));
    s.dispose();
  });

  test('external events under capture: event record and wait nodes, as the model\'s recordExternalEvent / waitExternalEvent', () => {
    const s = d.createStream();
    const done = d.createEvent();
    const ready = d.createEvent();
    const cap = StreamGraphCapture.begin(s);
    res.module.function('k_a').launch(s, kernel('k_a'));
    done.record(s, { external: true });
    res.module.function('k_b').launch(s, kernel('k_b'));
    s.wait(ready, { external: true });
    res.module.function('k_c').launch(s, kernel('k_c'));
    using g = cap.endGraph();
    const m = new StreamCapture({ semantics: 'cuda' });
    m.beginCapture(s0);
    m.recordKernel(s0, 'k_a', 1, 32, 0);
    m.recordExternalEvent(s0, CaptureEvent(0));
    m.recordKernel(s0, 'k_b', 1, 32, 0);
    m.waitExternalEvent(s0, CaptureEvent(1));
    m.recordKernel(s0, 'k_c', 1, 32, 0);
    compare('external events', g.toComputeGraph(), m.endCapture(s0));
    const info = g.readBack().nodes;
    assert.deepEqual(info.filter((n) => n.event).map((n) => [n.type, n.event!.handle]).sort(), [['eventRecord', done.handle], ['waitEvent', ready.handle]].sort());
    // The graph holds the events; launched after ready is recorded elsewhere, it records done.
    const side = d.createStream();
    ready.record(side);
    using exec = g.instantiate(undefined, s);
    exec.launch();
    s.synchronize();
    assert.equal(done.query(), true);
    // Outside a capture CUDA refuses the external flags: cudagraph says so first.
    assert.throws(() => done.record(s, { external: true }), (e: unknown) => e instanceof InvalidArgumentError && /^Event\.record: external records are for a capturing stream/.test((e as Error).message));
    assert.throws(() => s.wait(ready, { external: true }), (e: unknown) => e instanceof InvalidArgumentError && /^Stream\.wait: external waits are for a capturing stream/.test((e as Error).message));
    side.dispose();
    s.dispose();
  });

  test('programmatic dependent launch under capture: programmatic edges between kernels, plain after a fill', () => {
    const s = d.createStream();
    const cap = StreamGraphCapture.begin(s);
    res.module.function('k_a').launch(s, kernel('k_a'));
    res.module.function('k_b').launch(s, kernel('k_b', true));
    res.b.memsetAsync(s, 7, { count: 64 });
    res.module.function('k_c').launch(s, kernel('k_c', true));
    res.module.function('k_d').launch(s, kernel('k_d', true));
    using g = cap.endGraph();
    const m = new StreamCapture({ semantics: 'cuda' });
    m.beginCapture(s0);
    m.recordKernel(s0, 'k_a', 1, 32, 0);
    m.recordKernel(s0, 'k_b', 1, 32, 0, { programmatic: true });
    m.recordMemset(s0, 'memset', 64, 7);
    m.recordKernel(s0, 'k_c', 1, 32, 0, { programmatic: true });
    m.recordKernel(s0, 'k_d', 1, 32, 0, { programmatic: true });
    compare('programmatic dependent launch', g.toComputeGraph(), m.endCapture(s0));
    s.dispose();
  });
});
