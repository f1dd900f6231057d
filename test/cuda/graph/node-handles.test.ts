/**
 * The node objects of explicit construction, against the stand-in driver (fixtures/stand-in-driver.c,
 * whose next node handle a test can set): `addKernelNode` and `addKernelNodes` hand back each
 * node's handle whole at any size (kept as a number below 2^53, written to and read from the
 * driver as two 32-bit halves, a BigInt above), on the addon and on koffi; the nodes of one call
 * and of many are the objects the graph hands out later; removal marks one node, a destroyed
 * graph all; a configuration, kernel and the graph's holds stay right when calls alternate
 * between graphs and kernels; a driver failure adds nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CudaError, CudaNode, Device, DeviceBuffer, DisposedError, Graph, Module, arg } from '../../../src/index.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';
import { nativeAddon, setNativeAddonForTesting } from '../../../src/driver/hot.js';
import { loadStandIn } from '../../support/stand-in-driver.js';

const lib = loadStandIn('node-handles');
const skip = lib === null && 'gcc is absent';
const nextNode = lib?.u64s('next_node');
const added = lib?.counter('nodes_added');

/** Runs `body` on the addon (where it loads) and on koffi. */
function onBothBindings(body: (binding: string) => void): void {
  if (nativeAddon() !== null) body('addon');
  const before = setNativeAddonForTesting(null);
  try {
    body('koffi');
  } finally {
    setNativeAddonForTesting(before);
  }
}

/** The stand-in hands out `start + 0x10`, `start + 0x20`, … from here on. */
function handlesFrom(start: bigint): (i: number) => bigint {
  nextNode![0] = start;
  return (i) => start + 0x10n * BigInt(i + 1);
}

test('node handles of any size come back whole from addKernelNode and addKernelNodes, and link the right nodes', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  const cfg = { grid: 1, block: 32, args: [x, arg.i32(1)] };
  // Below 2^32 (one word), a typical 47-bit address (both words), and past 2^53 (kept as a BigInt).
  for (const start of [0xc0000n, 0x7f12_3456_7000n, 0x20_0000_0000_0000n]) {
    onBothBindings((binding) => {
      const at = `${binding}, handles from 0x${start.toString(16)}`;
      using g = Graph.create(d);
      const expected = handlesFrom(start);
      const a = g.addKernelNode(k, cfg);
      const b = g.addKernelNode(k, cfg, [a]);
      const c = g.addKernelNode(k, cfg, [a, b]);
      const batch = g.addKernelNodes([
        { kernel: k, config: cfg, after: [c] },
        { kernel: k, config: cfg, after: [0] },
      ]);
      const e = g.addKernelNode(k, cfg, [batch[1]!]);
      const nodes = [a, b, c, ...batch, e];
      assert.deepEqual(
        nodes.map((n) => n.handle),
        nodes.map((_, i) => expected(i)),
        `${at}: each node has the handle the driver gave`,
      );
      assert.deepEqual(b.dependencies(), [a], at);
      assert.deepEqual(new Set(c.dependencies()), new Set([a, b]), at);
      assert.deepEqual(batch[0]!.dependencies(), [c], at);
      assert.deepEqual(batch[1]!.dependencies(), [batch[0]], at);
      assert.deepEqual(e.dependencies(), [batch[1]], `${at}: a batch node's handle is a good dependency`);
      // The objects the graph hands out later are the ones the calls returned.
      assert.deepEqual(new Set(a.dependents()), new Set([b, c]), at);
      assert.equal(e.dependencies()[0], batch[1], at);
    });
  }
  handlesFrom(0xc0000n);
});

test('removing a node marks that node alone; destroying the graph marks every node; a removed node still says its kind', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const cfg = { grid: 1, block: 32, args: [arg.i32(1)] };
  const g = Graph.create(d);
  const a = g.addKernelNode(k, cfg);
  const b = g.addKernelNode(k, cfg);
  const [c, e] = g.addKernelNodes([{ kernel: k, config: cfg }, { kernel: k, config: cfg }]) as [CudaNode, CudaNode];
  g.removeNode(b);
  g.removeNode(c);
  for (const n of [b, c]) {
    assert.equal(n.removed, true);
    assert.equal(n.type, 'kernel');
    assert.equal(n.allocation, null);
    assert.equal(String(n), 'CudaNode(kernel, removed)');
    assert.throws(() => n.handle, DisposedError);
    assert.equal(n.index, -1, 'a removed node is at no position');
  }
  for (const n of [a, e]) {
    assert.equal(n.removed, false, 'the other nodes of the kind are not removed');
    assert.equal(String(n), 'CudaNode(kernel)');
    assert.equal(typeof n.handle, 'bigint');
  }
  // A new node after the removals is live too.
  const f = g.addKernelNode(k, cfg, [a]);
  assert.equal(f.removed, false);
  g.dispose();
  for (const n of [a, b, c, e, f]) {
    assert.equal(n.removed, true);
    assert.equal(n.type, 'kernel');
    assert.equal(n.index, -1, 'getters answer after the graph is disposed');
  }
  assert.equal(g.nodeCount, 0, 'a disposed graph has no nodes (its getters do not throw)');
  assert.equal(g.disposed, true);
});

test('one configuration alternated between kernels and graphs: each graph holds what its nodes use, once', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const m2 = Module.load(d, '// stand-in: another module\n');
  const k = m.function('add2');
  const k2 = m2.function('scale');
  const x = DeviceBuffer.alloc(d, 1024);
  const cfg = { grid: 1, block: 32, args: [x, arg.i32(1)] };
  const g1 = Graph.create(d);
  const g2 = Graph.create(d);
  // One kernel and configuration in both graphs: one checked launch, whose holds each graph takes.
  let p1 = g1.addKernelNode(k, cfg);
  let p2 = g2.addKernelNode(k, cfg);
  assert.equal(x[LIFETIME].holders, 2, 'the buffer: held by each graph');
  p2 = g2.addKernelNode(k2, cfg, [p2]);
  for (let i = 0; i < 4; i++) {
    p1 = g1.addKernelNode(i % 2 === 0 ? k2 : k, cfg, [p1]);
    p2 = g2.addKernelNode(k, cfg, [p2]);
  }
  g1.addKernelNodes([{ kernel: k, config: cfg, after: [p1] }]);
  assert.equal(x[LIFETIME].holders, 2, 'the buffer: held once by each graph');
  assert.equal(m[LIFETIME].holders, 2, 'the first module: by each graph');
  assert.equal(m2[LIFETIME].holders, 2, 'the second module: by each graph');
  x.dispose();
  m.dispose();
  m2.dispose();
  assert.equal(x[LIFETIME].holders, 2, 'what the graphs hold stays until they go');
  g1.dispose();
  assert.equal(x[LIFETIME].holders, 1);
  assert.equal(m2[LIFETIME].holders, 1);
  g2.dispose();
  assert.equal(x[LIFETIME].holders, 0);
});

test('a driver failure in addKernelNode adds nothing and throws; the next call adds its node', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const cfg = { grid: 1, block: 32, args: [arg.i32(1)] };
  const failAt = lib!.u64s('fail_kernel_node_at');
  onBothBindings((binding) => {
    using g = Graph.create(d);
    const a = g.addKernelNode(k, cfg);
    const before = added!();
    const edges = g.edgeRefs().length;
    for (const deps of [[a], []]) {
      failAt[0] = 1n;
      assert.throws(
        () => g.addKernelNode(k, cfg, deps),
        (e: unknown) => e instanceof CudaError && e.operation === 'Graph.addKernelNode' && e.driverCall === 'cuGraphAddKernelNode_v2',
        binding,
      );
      failAt[0] = 0n;
    }
    assert.equal(added!(), before, `${binding}: nothing added`);
    assert.equal(g.edgeRefs().length, edges, binding);
    const b = g.addKernelNode(k, cfg, [a]);
    assert.deepEqual(b.dependencies(), [a], `${binding}: the next call adds its node after its dependency`);
  });
});
