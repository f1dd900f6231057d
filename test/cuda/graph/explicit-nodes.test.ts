/**
 * Graphs built node by node, against the stand-in driver (fixtures/stand-in-driver.c: kernel
 * nodes and edges, no GPU): every refusal names the call, is typed, and adds nothing to the graph
 * (the stand-in counts the nodes added); edges that would close a cycle are refused; a kernel-node
 * configuration reused for many nodes is checked again as soon as it changes; an exec's per-node
 * setters refuse bad input with no driver call (the stand-in counts the updates). The same calls on
 * the device: test/gpu/explicit-graph.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CudaNode, Device, DeviceBuffer, DisposedError, Graph, InvalidArgumentError, Module, PinnedHostBuffer, arg } from '../../../src/index.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused as check } from '../../support/refused.js';

/** The stand-in driver's counts of nodes added and of exec updates, or null without gcc. */
function standIn(): { added: () => number; updates: () => number } | null {
  const lib = loadStandIn('explicit');
  return lib === null ? null : { added: lib.counter('nodes_added'), updates: lib.counter('exec_updates') };
}

const driver = standIn();
const nodesAdded = driver === null ? null : driver.added;
const skip = driver === null && 'gcc is absent';

/** `body` throws `cls` with a message starting `op: ` and matching `pattern`, and adds no node. */
function refused(body: () => unknown, cls: new (...a: never[]) => Error, op: string, pattern: RegExp): void {
  const before = nodesAdded!();
  check(body, cls, op, pattern);
  assert.equal(nodesAdded!(), before, `${op}: a refused call adds no node`);
}

test('explicit graph construction refuses bad input before the driver, naming the call', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  const host = PinnedHostBuffer.alloc(d, 64);
  const cfg = { grid: 1, block: 256, args: [x, arg.i32(256)] };
  using g = Graph.create(d);
  const a = g.addKernelNode(k, cfg);
  assert.equal(a.type, 'kernel');
  assert.equal(a.graph, g);
  const b = g.addKernelNode(k, cfg, [a]);
  assert.equal(nodesAdded!() >= 2, true);

  refused(() => g.addKernelNode(k, { ...cfg, grid: NaN }), InvalidArgumentError, 'Graph.addKernelNode', /grid/);
  refused(() => g.addKernelNode(k, { ...cfg, block: [32, 0] }), InvalidArgumentError, 'Graph.addKernelNode', /block\[1\]/);
  refused(() => g.addKernelNode(k, { ...cfg, args: [x, 256 as never] }), InvalidArgumentError, 'Graph.addKernelNode', /plain numbers are refused/);
  refused(() => g.addKernelNode(k, { ...cfg, extra: 1 } as never), InvalidArgumentError, 'Graph.addKernelNode', /unknown option 'extra'/);
  refused(() => g.addKernelNode({ name: 'add2', module: {} } as never, cfg), InvalidArgumentError, 'Graph.addKernelNode', /kernel must be a Kernel/);
  refused(() => g.addKernelNode(k, { ...cfg, attributes: { programmaticStreamSerialization: true } }), InvalidArgumentError, 'Graph.addKernelNode', /give the kernel node a programmatic edge/);
  refused(() => g.addKernelNode(k, cfg, [a, a]), InvalidArgumentError, 'Graph.addKernelNode', /repeats a node/);
  refused(() => g.addKernelNode(k, cfg, a as never), InvalidArgumentError, 'Graph.addKernelNode', /dependencies must be an array/);
  const forged = Object.create(CudaNode.prototype) as CudaNode;
  refused(() => g.addKernelNode(k, cfg, [forged]), InvalidArgumentError, 'Graph.addKernelNode', /must be a CudaNode/);
  {
    using other = Graph.create(d);
    const foreign = other.addKernelNode(k, cfg);
    refused(() => g.addKernelNode(k, cfg, [foreign]), InvalidArgumentError, 'Graph.addKernelNode', /of another graph/);
  }

  refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: 65 }), InvalidArgumentError, 'Graph.addMemcpyNode', /holds 64 bytes; the copy needs 65/);
  refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: -1 }), InvalidArgumentError, 'Graph.addMemcpyNode', /byteLength/);
  refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: 8, srcOffset: 1.5 }), InvalidArgumentError, 'Graph.addMemcpyNode', /srcOffset/);
  refused(() => g.addMemcpyNode({ dst: host, src: 'x' as never, byteLength: 8 }), InvalidArgumentError, 'Graph.addMemcpyNode', /src must be a DeviceBuffer, a PinnedHostBuffer or an allocation node/);
  refused(() => g.addMemcpyNode({ dst: host, src: b, byteLength: 8 }), InvalidArgumentError, 'Graph.addMemcpyNode', /only an allocation node/);
  refused(
    () => g.addMemcpyNode({ dst: { memory: x, pitch: 64 }, src: { memory: x, pitch: 64 }, width: 32, height: 8, depth: 2, extra: 1 } as never),
    InvalidArgumentError,
    'Graph.addMemcpyNode',
    /unknown field of params 'extra'/,
  );
  refused(
    () => g.addMemcpyNode({ dst: { memory: x, pitch: 64 }, src: { memory: x, pitch: 64 }, width: 32, height: 8, depth: 3 }),
    InvalidArgumentError,
    'Graph.addMemcpyNode',
    /src reaches byte 1504, past the end of its 1024-byte memory/,
  );
  refused(() => g.addMemsetNode({ dst: x, value: 70000, elementSize: 2, count: 4 }), InvalidArgumentError, 'Graph.addMemsetNode', /value/);
  refused(() => g.addMemsetNode({ dst: x, value: 1, elementSize: 4, count: 300 }), InvalidArgumentError, 'Graph.addMemsetNode', /holds 1024 bytes; the fill reaches byte 1200/);
  refused(() => g.addMemsetNode({ dst: x, value: 1, count: 8, rows: 2, pitch: 4 }), InvalidArgumentError, 'Graph.addMemsetNode', /pitch/);
  refused(() => g.addMemAllocNode({ byteLength: 0 }), InvalidArgumentError, 'Graph.addMemAllocNode', /byteLength/);
  refused(() => g.addMemFreeNode(a), InvalidArgumentError, 'Graph.addMemFreeNode', /must be an allocation node/);
  refused(() => g.addEventRecordNode({} as never), InvalidArgumentError, 'Graph.addEventRecordNode', /event/);
  refused(() => g.addChildGraphNode(g), InvalidArgumentError, 'Graph.addChildGraphNode', /its own child/);
  refused(() => g.addHostNode('f' as never), InvalidArgumentError, 'Graph.addHostNode', /fn must be a function or a HostFunction/);
  refused(() => g.debugDot({ flags: ['nope' as never] }), InvalidArgumentError, 'Graph.debugDot', /flags\[0\]/);
  x.dispose();
  host.dispose();
});

test('edges: a cycle, a repeated edge and edge data CUDA does not allow are refused, all or nothing', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  const cfg = { grid: 1, block: 256, args: [x, arg.i32(256)] };
  using g = Graph.create(d);
  const a = g.addKernelNode(k, cfg);
  const b = g.addKernelNode(k, cfg, [a]);
  const c = g.addKernelNode(k, cfg);
  assert.deepEqual(b.dependencies(), [a]);
  refused(() => g.addDependencies([[b, a]]), InvalidArgumentError, 'Graph.addDependencies', /would make a dependency cycle/);
  refused(() => g.addDependencies([[a, b]]), InvalidArgumentError, 'Graph.addDependencies', /exists already/);
  refused(() => g.addDependencies([[b, c], [c, b]]), InvalidArgumentError, 'Graph.addDependencies', /cycle/);
  refused(() => g.addDependencies([[c, c]]), InvalidArgumentError, 'Graph.addDependencies', /to itself/);
  refused(() => g.addDependencies([[b, c, { port: 'trigger' }]]), InvalidArgumentError, 'Graph.addDependencies', /'trigger' is only for programmatic edges/);
  refused(() => g.addDependencies([[b, c, { kind: 'programmatic', port: 'completion' }]]), InvalidArgumentError, 'Graph.addDependencies', /must be 'trigger' or 'launchOrder'/);
  refused(() => g.addDependencies([[b]] as never), InvalidArgumentError, 'Graph.addDependencies', /edges\[0\] must be \[from, to\]/);
  // Holes are refused as the undefined they read as (they reached the driver as null handles).
  refused(() => g.addDependencies([[b, c], , [a, c]] as never), InvalidArgumentError, 'Graph.addDependencies', /edges\[1\] must be \[from, to\].*got undefined/);
  refused(() => g.addDependencies(new Array(1)), InvalidArgumentError, 'Graph.addDependencies', /edges\[0\] must be/);
  refused(() => g.removeDependencies(new Array(1)), InvalidArgumentError, 'Graph.removeDependencies', /edges\[0\] must be/);
  refused(() => g.addKernelNode(k, cfg, [a, , b] as never), InvalidArgumentError, 'Graph.addKernelNode', /dependencies\[1\] must be a CudaNode .*got undefined/);
  refused(() => g.addEmptyNode(new Array(2)), InvalidArgumentError, 'Graph.addEmptyNode', /dependencies\[0\] must be a CudaNode/);
  refused(() => g.addKernelNode(k, { ...cfg, args: [x, , arg.i32(1)] } as never), InvalidArgumentError, 'Graph.addKernelNode', /args\[1\] must be/);
  assert.equal(g.edgeRefs().length, 1, 'no refused call added an edge');
  g.addDependencies([[b, c, { kind: 'programmatic' }]]);
  assert.deepEqual(c.dependencies(), [b]);
  refused(() => g.removeDependencies([[a, b], [a, b]]), InvalidArgumentError, 'Graph.removeDependencies', /edges\[1\] repeats an edge already listed/);
  // Edges go in one driver call per kind of edge data; when a later call fails, the earlier ones are taken back.
  const e1 = g.addKernelNode(k, cfg);
  const e2 = g.addKernelNode(k, cfg);
  const edgesBefore = g.edgeRefs().length;
  process.env['STAND_IN_FAIL_EDGE_DATA'] = '1';
  try {
    assert.throws(() => g.addDependencies([[c, e1], [e1, e2, { kind: 'programmatic' }]]), (e: unknown) => e instanceof Error && /cuGraphAddDependencies_v2/.test((e as Error).message));
  } finally {
    delete process.env['STAND_IN_FAIL_EDGE_DATA'];
  }
  assert.equal(g.edgeRefs().length, edgesBefore, 'the plain edge added by the first call was removed again');
  x.dispose();
});

test('a kernel-node configuration reused for many nodes is checked again whenever it changes', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  using g = Graph.create(d);
  const config = { grid: [1] as number[], block: 256, args: [x, arg.i32(256)] as unknown[] };
  for (let i = 0; i < 3; i++) g.addKernelNode(k, config as never);
  config.args[1] = 256;
  refused(() => g.addKernelNode(k, config as never), InvalidArgumentError, 'Graph.addKernelNode', /args\[1\].*plain numbers are refused/);
  config.args[1] = arg.i32(1);
  config.grid[0] = 0;
  refused(() => g.addKernelNode(k, config as never), InvalidArgumentError, 'Graph.addKernelNode', /grid\[0\]/);
  config.grid[0] = 2;
  g.addKernelNode(k, config as never);
  (config as Record<string, unknown>)['extra'] = true;
  refused(() => g.addKernelNode(k, config as never), InvalidArgumentError, 'Graph.addKernelNode', /unknown option 'extra'/);
  delete (config as Record<string, unknown>)['extra'];
  g.addKernelNode(k, config as never);
  x.dispose();
  refused(() => g.addKernelNode(k, config as never), DisposedError, 'Graph.addKernelNode', /DeviceBuffer/);
  g.dispose();
  refused(() => g.addEmptyNode(), DisposedError, 'Graph.addEmptyNode', /Graph/);
});

test('exec setters refuse a node of another graph, another kind, a bad index or bad parameters, with no driver call', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  const cfg = { grid: 1, block: 256, args: [x, arg.i32(256)] };
  using g = Graph.create(d);
  const a = g.addKernelNode(k, cfg);
  using exec = g.instantiate();
  const noUpdate = (body: () => unknown, cls: new (...a: never[]) => Error, op: string, pattern: RegExp): void => {
    const before = driver!.updates();
    refused(body, cls, op, pattern);
    assert.equal(driver!.updates(), before, `${op}: a refused call updates nothing`);
  };
  const before = driver!.updates();
  exec.setKernelArgs(a, [x, arg.i32(128)]);
  exec.setNodeEnabled(a, false);
  exec.setKernelNodeParams(a, { grid: 2, block: 128, args: [x, arg.i32(64)] });
  assert.equal(driver!.updates(), before + 3, 'each accepted call is one driver call');
  {
    using other = Graph.create(d);
    const foreign = other.addKernelNode(k, cfg);
    noUpdate(() => exec.setKernelArgs(foreign, cfg.args), InvalidArgumentError, 'GraphExec.setKernelArgs', /of another graph/);
    noUpdate(() => exec.setNodeEnabled(foreign, true), InvalidArgumentError, 'GraphExec.setNodeEnabled', /of another graph/);
  }
  noUpdate(() => exec.setKernelArgs(Object.create(CudaNode.prototype) as CudaNode, cfg.args), InvalidArgumentError, 'GraphExec.setKernelArgs', /node must be a CudaNode or a node index/);
  noUpdate(() => exec.setKernelArgs(7, cfg.args), InvalidArgumentError, 'GraphExec.setKernelArgs', /node/);
  noUpdate(() => exec.setKernelArgs(-1, cfg.args), InvalidArgumentError, 'GraphExec.setKernelArgs', /node/);
  noUpdate(() => exec.setKernelArgs(a, [x, 5 as never]), InvalidArgumentError, 'GraphExec.setKernelArgs', /plain numbers are refused/);
  noUpdate(() => exec.setKernelArgs(a, 'x' as never), InvalidArgumentError, 'GraphExec.setKernelArgs', /args must be an array/);
  noUpdate(() => exec.setNodeEnabled(a, 1 as never), InvalidArgumentError, 'GraphExec.setNodeEnabled', /enabled must be a boolean/);
  noUpdate(() => exec.setKernelNodeParams(a, { ...cfg, grid: 0 }), InvalidArgumentError, 'GraphExec.setKernelNodeParams', /grid/);
  noUpdate(() => exec.setKernelNodeParams(a, { ...cfg, attributes: { priority: 0 } }), InvalidArgumentError, 'GraphExec.setKernelNodeParams', /keeps the attributes it was instantiated with/);
  noUpdate(() => exec.setKernelNodeParams(a, { ...cfg, kernel: 'add2' as never }), InvalidArgumentError, 'GraphExec.setKernelNodeParams', /kernel must be a Kernel/);
  noUpdate(() => exec.setMemcpyNodeParams(a, { dst: x, src: x, byteLength: 4 }), InvalidArgumentError, 'GraphExec.setMemcpyNodeParams', /is a 'kernel' node, not a memcpy node/);
  noUpdate(() => exec.setMemsetNodeParams(a, { dst: x, value: 0, count: 4 }), InvalidArgumentError, 'GraphExec.setMemsetNodeParams', /not a memset node/);
  noUpdate(() => exec.setHostNodeParams(a, () => {}), InvalidArgumentError, 'GraphExec.setHostNodeParams', /not a hostCallback node/);
  noUpdate(() => exec.setEventRecordNodeEvent(a, null as never), InvalidArgumentError, 'GraphExec.setEventRecordNodeEvent', /not a eventRecord node/);
  noUpdate(() => exec.setChildGraphNodeParams(a, g), InvalidArgumentError, 'GraphExec.setChildGraphNodeParams', /not a graph node/);
  refused(() => exec.freeAllocations(), Error, 'GraphExec.freeAllocations', /nothing to free/);
  {
    const gone = Graph.create(d);
    gone.dispose();
    noUpdate(() => exec.update(gone), DisposedError, 'GraphExec.update', /Graph 0x[0-9a-f]+ has been disposed/);
    // A disposed stream cannot become an exec's default stream.
    const s = d.createStream();
    s.dispose();
    refused(() => g.instantiate(undefined, s), DisposedError, 'Graph.instantiate', /Stream 0x[0-9a-f]+ has been disposed/);
    noUpdate(() => exec.update(Object.create(Graph.prototype) as Graph), InvalidArgumentError, 'GraphExec.update', /graph must be a Graph/);
    assert.equal(exec.graph, g, 'a refused update changes nothing');
  }
  // The exec holds its template: disposing the graph does not stop the setters naming its nodes.
  g.dispose();
  exec.setKernelArgs(a, [x, arg.i32(32)]);
  exec.setNodeEnabled(a, true);
  // A buffer passed bare again (its argument value is made once) is still checked alive each call.
  const y = DeviceBuffer.alloc(d, 1024);
  exec.setKernelArgs(a, [y, arg.i32(1)]);
  exec.setKernelArgs(a, [y, arg.i32(2)]);
  y.dispose();
  noUpdate(() => exec.setKernelArgs(a, [y, arg.i32(3)]), DisposedError, 'GraphExec.setKernelArgs', /DeviceBuffer/);
  exec.dispose();
  noUpdate(() => exec.setKernelArgs(a, cfg.args), DisposedError, 'GraphExec.setKernelArgs', /GraphExec/);
  noUpdate(() => exec.setNodeEnabled(a, true), DisposedError, 'GraphExec.setNodeEnabled', /GraphExec/);
  x.dispose();
});

test('a capture into a graph that fails leaves its nodes in the graph, and the graph holds what they use', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const s = d.createStream();
  using g = Graph.create(d);
  g.addKernelNode(k, { grid: 1, block: 256, args: [DeviceBuffer.alloc(d, 16), arg.i32(4)] });
  const x = DeviceBuffer.alloc(d, 1024);
  const mine = new Error('mine');
  assert.throws(
    () =>
      g.captureInto(s, (st) => {
        k.launch(st, { grid: 1, block: 256, args: [x, arg.i32(256)] });
        throw mine;
      }),
    (e: unknown) => e === mine,
    'the body\'s own error propagates',
  );
  x.dispose();
  assert.equal(x[LIFETIME].freed, false, 'the graph still holds the buffer its captured node uses');
  // A dispose of the graph during a capture into it takes effect when the capture ends; the call
  // then says the graph is gone.
  assert.throws(
    () =>
      g.captureInto(s, (st) => {
        g.dispose();
        assert.equal(g.disposed, false);
        k.launch(st, { grid: 1, block: 256, args: [DeviceBuffer.alloc(d, 16), arg.i32(4)] });
      }),
    (e: unknown) => e instanceof DisposedError && /^Graph\.captureInto: /.test((e as Error).message),
  );
  assert.equal(g.disposed, true);
  assert.equal(x[LIFETIME].freed, true, 'disposing the graph let the buffer go');
  // A forged kernel (a genuine module, a made-up function) is refused.
  using h = Graph.create(d);
  assert.throws(() => h.addKernelNode({ name: 'add2', module: m, handle: 0x1234n } as never, { grid: 1, block: 1, args: [] }), (e: unknown) => e instanceof InvalidArgumentError && /kernel must be a Kernel/.test((e as Error).message));
  // Refusals inside captureInto name the call the program made.
  {
    using other = Graph.create(d);
    const foreign = other.addKernelNode(k, { grid: 1, block: 256, args: [DeviceBuffer.alloc(d, 16), arg.i32(4)] });
    assert.throws(() => h.captureInto(s, () => {}, { dependencies: [foreign] }), (e: unknown) => e instanceof InvalidArgumentError && /^Graph\.captureInto: .*of another graph/.test((e as Error).message));
    assert.throws(() => h.captureInto(s, () => {}, { mode: 'nope' as never }), (e: unknown) => e instanceof InvalidArgumentError && /^Graph\.captureInto: /.test((e as Error).message));
  }
  // An external record outside a capture is refused before an event is made for it.
  assert.throws(() => s.record(undefined, { external: true }), (e: unknown) => e instanceof InvalidArgumentError && /^Stream\.record: external records are for a capturing stream/.test((e as Error).message));
  s.dispose();
});
