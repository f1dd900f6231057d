/**
 * `lowerGraph`'s refusals against the stand-in driver (fixtures/stand-in-driver.c with two
 * devices: kernel nodes kept, other node kinds missing): what the bindings give is checked
 * before the driver sees it, and every refusal names `lowerGraph` (disposed modules, buffers,
 * pinned buffers and host functions included); a disposed `LoweredGraph` refuses what would hand
 * out its freed handles. The lowered graphs running on the device: test/gpu/node-kinds.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, DisposedError, GraphBuilder, HostFunction, InvalidArgumentError, Module, PinnedHostBuffer, lowerGraph } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('lower', ['STAND_IN_DEVICES=2']);
const skip = lib === null && 'gcc is absent';
const nodesAdded = lib?.counter('nodes_added');

/** A graph of one kernel node reading buffer 'x'. */
function oneKernel() {
  const b = new GraphBuilder();
  b.kernel('add2', { grid: 1, block: 32, args: [b.buffer('x', 1024)] });
  return b.build();
}

test('lowerGraph refuses disposed modules, buffers, pinned buffers and host functions, naming itself', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const x = DeviceBuffer.alloc(d, 1024);
  const { graph, bindings } = oneKernel();
  using ok = lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x } });
  assert.equal(ok.graph.nodeCount, 1);
  const before = nodesAdded!();

  const gone = Module.load(d, '// stand-in: any text\n');
  gone.dispose();
  refused(() => lowerGraph(graph, { modules: [gone], nodes: bindings, buffers: { x } }), DisposedError, 'lowerGraph', /Module 0x[0-9a-f]+ \(ptx\) has been disposed/);

  const copy = new GraphBuilder();
  copy.memcpy({ src: copy.buffer('a', 64), dst: copy.buffer('b', 64) });
  const c = copy.build();
  const a = DeviceBuffer.alloc(d, 64);
  a.dispose();
  refused(() => lowerGraph(c.graph, { modules: m, nodes: c.bindings, buffers: { a, b: x } }), DisposedError, 'lowerGraph', /DeviceBuffer 0x[0-9a-f]+ \(64 bytes\) has been disposed/);

  const up = new GraphBuilder();
  up.memcpy({ src: up.hostBuffer('h', 64), dst: up.buffer('b', 64) });
  const u = up.build();
  const h = PinnedHostBuffer.alloc(d, 64);
  h.dispose();
  refused(() => lowerGraph(u.graph, { modules: m, nodes: u.bindings, buffers: { b: x }, hostBuffers: { h } }), DisposedError, 'lowerGraph', /PinnedHostBuffer \(64 bytes\) has been disposed/);

  const host = new GraphBuilder();
  host.host('tick');
  const hb = host.build();
  const hf = HostFunction.create(() => {});
  hf.dispose();
  refused(() => lowerGraph(hb.graph, { modules: m, nodes: hb.bindings, callbacks: { tick: hf } }), DisposedError, 'lowerGraph', /HostFunction 'host#\d+' has been disposed/);
  assert.equal(nodesAdded!(), before, 'no node reached the driver');
});

test('lowerGraph checks the shape of its bindings and the modules\' device', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const x = DeviceBuffer.alloc(d, 1024);
  const { graph, bindings } = oneKernel();
  const before = nodesAdded!();
  // A plain object where the builder gives a Map.
  refused(() => lowerGraph(graph, { modules: m, nodes: Object.fromEntries(bindings) as never, buffers: { x } }), InvalidArgumentError, 'lowerGraph', /nodes must be a Map/);
  refused(() => lowerGraph(graph, { modules: m, nodes: 5 as never, buffers: { x } }), InvalidArgumentError, 'lowerGraph', /nodes must be a Map/);
  for (const field of ['buffers', 'hostBuffers', 'callbacks', 'events'] as const) {
    refused(() => lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x }, [field]: 5 } as never), InvalidArgumentError, 'lowerGraph', new RegExp(`${field} must be an object`));
  }
  refused(() => lowerGraph(graph, { modules: [, m] as never, nodes: bindings, buffers: { x } }), InvalidArgumentError, 'lowerGraph', /modules\[0\] must be a Module, got undefined/);
  // Kernels of a module loaded on another device than the graph's.
  refused(() => lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x }, device: Device.get(1) }), InvalidArgumentError, 'lowerGraph', /node 0 \(kernel .add2.\): kernel .add2. is in modules\[0\], loaded on Device\(0: .*the graph is built on Device\(1: /);
  assert.equal(nodesAdded!(), before, 'no node reached the driver');
});

test('a disposed LoweredGraph refuses to read its graph or hand out node handles; dispose is idempotent', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const x = DeviceBuffer.alloc(d, 1024);
  const { graph, bindings } = oneKernel();
  const lowered = lowerGraph(graph, { modules: m, nodes: bindings, buffers: { x } });
  assert.equal(typeof lowered.nodeHandle(0 as never), 'bigint');
  lowered.dispose();
  lowered.dispose();
  assert.equal(lowered.disposed, true);
  assert.equal(lowered.source, graph);
  refused(() => lowered.modelIds(), DisposedError, 'LoweredGraph.modelIds');
  refused(() => lowered.nodeHandle(0 as never), DisposedError, 'LoweredGraph.nodeHandle');
});
