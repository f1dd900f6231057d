/**
 * `graph.addKernelNodes`, against the stand-in driver (fixtures/stand-in-driver.c logs each kernel
 * node's grid and first argument, keeps the edges, and can fail the k-th node added): the entries
 * reach the driver in order with their own launches and dependencies, on the addon and on koffi;
 * every refusal names the entry and adds nothing; a driver failure part way takes back the nodes
 * already added. On the device: test/gpu/explicit-graph.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CudaError, CudaNode, Device, DeviceBuffer, DisposedError, Graph, InvalidArgumentError, Module, arg } from '../../../src/index.js';
import type { KernelNodeEntry } from '../../../src/index.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';
import { nativeAddon, setNativeAddonForTesting } from '../../../src/driver/hot.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused as check } from '../../support/refused.js';

const lib = loadStandIn('kernel-batch');
const skip = lib === null && 'gcc is absent';
const added = lib?.counter('nodes_added');
const destroyed = lib?.counter('nodes_destroyed');

/** The grid x and first argument the driver got for the nodes added since count `from`. */
function logSince(from: number): Array<[grid: number, arg0: number]> {
  const grids = lib!.u64s('kernel_grid_log', 4096);
  const args = lib!.u64s('kernel_arg0_log', 4096);
  const out: Array<[number, number]> = [];
  for (let i = from; i < added!(); i++) out.push([Number(grids[i]), Number(args[i])]);
  return out;
}

/** Runs `body` on the addon (where it loads) and on koffi. */
function onBothBindings(body: (binding: string) => void): void {
  const hot = nativeAddon();
  if (hot !== null) body('addon');
  const before = setNativeAddonForTesting(null);
  try {
    body('koffi');
  } finally {
    setNativeAddonForTesting(before);
  }
}

/** `body` throws `cls` with a message starting `Graph.addKernelNodes: ` and matching `pattern`, and adds no node. */
function refused(body: () => unknown, cls: new (...a: never[]) => Error, pattern: RegExp): void {
  const before = added!();
  check(body, cls, 'Graph.addKernelNodes', pattern);
  assert.equal(added!(), before, 'a refused call adds no node');
}

test('addKernelNodes adds the entries in order, each with its launch and its dependencies', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const k2 = m.function('scale');
  const x = DeviceBuffer.alloc(d, 1024);
  onBothBindings((binding) => {
    using g = Graph.create(d);
    const a = g.addKernelNode(k, { grid: 9, block: 32, args: [arg.i32(900)] });
    const shared = { grid: 3, block: 32, args: [arg.i32(30)] };
    const from = added!();
    const entries: KernelNodeEntry[] = [
      { kernel: k, config: { grid: 1, block: 32, args: [arg.i32(10)] }, after: [a] },
      { kernel: k, config: shared, after: [0] },
      // One config object for two kernels: each pair is its own launch.
      { kernel: k2, config: shared, after: [0, 1] },
      { kernel: k, config: { grid: 2, block: 32, args: [arg.i32(20), x] } },
      { kernel: k, config: shared, after: [a, 2, 3] },
    ];
    const nodes = g.addKernelNodes(entries);
    assert.equal(nodes.length, 5, binding);
    assert.deepEqual(logSince(from), [[1, 10], [3, 30], [3, 30], [2, 20], [3, 30]], `${binding}: each node got its entry's launch`);
    for (const n of nodes) {
      assert.ok(n instanceof CudaNode);
      assert.equal(n.graph, g);
      assert.equal(n.type, 'kernel');
    }
    const deps = (n: CudaNode): CudaNode[] => n.dependencies();
    assert.deepEqual(deps(nodes[0]!), [a]);
    assert.deepEqual(deps(nodes[1]!), [nodes[0]]);
    assert.deepEqual(new Set(deps(nodes[2]!)), new Set([nodes[0], nodes[1]]));
    assert.deepEqual(deps(nodes[3]!), []);
    assert.deepEqual(new Set(deps(nodes[4]!)), new Set([a, nodes[2], nodes[3]]), `${binding}: dependencies on graph nodes and on entries`);
    assert.deepEqual(g.addKernelNodes([]), []);
    // A long chain goes through in one call; its nodes can be used at once.
    const chain = g.addKernelNodes(Array.from({ length: 200 }, (_, i) => ({ kernel: k, config: shared, after: i === 0 ? [nodes[4]!] : [i - 1] })));
    assert.deepEqual(deps(chain[199]!), [chain[198]]);
    g.addKernelNode(k, shared, [chain[199]!]);
  });
  // The graph holds the buffers its nodes use: the program's dispose waits for the graph.
  {
    const y = DeviceBuffer.alloc(d, 64);
    const g = Graph.create(d);
    g.addKernelNodes([{ kernel: k, config: { grid: 1, block: 1, args: [y] } }]);
    y.dispose();
    assert.equal(y[LIFETIME].freed, false, 'the graph holds the buffer');
    g.dispose();
    assert.equal(y[LIFETIME].freed, true, 'disposing the graph lets it go');
  }
  x.dispose();
});

test('addKernelNodes refuses bad entries before the driver, naming the entry', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  const cfg = { grid: 1, block: 256, args: [x, arg.i32(256)] };
  using g = Graph.create(d);
  const a = g.addKernelNode(k, cfg);
  const ok = { kernel: k, config: cfg };
  refused(() => g.addKernelNodes(ok as never), InvalidArgumentError, /nodes must be an array/);
  refused(() => g.addKernelNodes([ok, 7 as never]), InvalidArgumentError, /nodes\[1\] must be an object/);
  refused(() => g.addKernelNodes([ok, null as never]), InvalidArgumentError, /nodes\[1\] must be an object/);
  refused(() => g.addKernelNodes([{ ...ok, dependencies: [a] } as never]), InvalidArgumentError, /unknown field of nodes\[0\] 'dependencies' \(known: kernel, config, after\)/);
  refused(() => g.addKernelNodes([ok, { kernel: {} as never, config: cfg }]), InvalidArgumentError, /nodes\[1\]\.kernel must be a Kernel/);
  refused(() => g.addKernelNodes([ok, { kernel: k, config: 3 as never }]), InvalidArgumentError, /nodes\[1\]\.config must be a launch configuration/);
  refused(() => g.addKernelNodes([ok, { kernel: k, config: { ...cfg, grid: NaN } }]), InvalidArgumentError, /nodes\[1\]\.config: grid/);
  refused(() => g.addKernelNodes([ok, { kernel: k, config: { ...cfg, args: [x, 5 as never] } }]), InvalidArgumentError, /nodes\[1\]\.config: .*plain numbers are refused/);
  refused(() => g.addKernelNodes([{ ...ok, after: a as never }]), InvalidArgumentError, /nodes\[0\]\.after must be an array/);
  refused(() => g.addKernelNodes([{ ...ok, after: [0] }]), InvalidArgumentError, /nodes\[0\]\.after\[0\] must be the index of an earlier entry/);
  refused(() => g.addKernelNodes([ok, { ...ok, after: [1] }]), InvalidArgumentError, /nodes\[1\]\.after\[0\] must be the index of an earlier entry \(an integer in 0\.\.0\)/);
  refused(() => g.addKernelNodes([ok, { ...ok, after: [2] }]), InvalidArgumentError, /nodes\[1\]\.after\[0\]/);
  for (const bad of [-1, 0.5, NaN, Infinity]) refused(() => g.addKernelNodes([ok, { ...ok, after: [bad] }]), InvalidArgumentError, /nodes\[1\]\.after\[0\] must be the index/);
  refused(() => g.addKernelNodes([ok, { ...ok, after: [0, 0] }]), InvalidArgumentError, /nodes\[1\]\.after\[1\] repeats a dependency/);
  refused(() => g.addKernelNodes([{ ...ok, after: [a, a] }]), InvalidArgumentError, /nodes\[0\]\.after\[1\] repeats a dependency/);
  const many = Array.from({ length: 20 }, (_, i) => i);
  refused(() => g.addKernelNodes([...many.map(() => ok), { ...ok, after: [...many, 3] }]), InvalidArgumentError, /nodes\[20\]\.after\[20\] repeats a dependency/);
  refused(() => g.addKernelNodes([{ ...ok, after: ['0' as never] }]), InvalidArgumentError, /nodes\[0\]\.after\[0\] must be a CudaNode/);
  refused(() => g.addKernelNodes([{ ...ok, after: [Object.create(CudaNode.prototype) as CudaNode] }]), InvalidArgumentError, /nodes\[0\]\.after\[0\] must be a CudaNode/);
  {
    using other = Graph.create(d);
    const foreign = other.addKernelNode(k, cfg);
    refused(() => g.addKernelNodes([ok, { ...ok, after: [0, foreign] }]), InvalidArgumentError, /nodes\[1\]\.after\[1\] is CudaNode\(kernel\) of another graph/);
  }
  const gone = g.addKernelNode(k, cfg);
  g.removeNode(gone);
  refused(() => g.addKernelNodes([{ ...ok, after: [gone] }]), DisposedError, /removed/);
  {
    const m2 = Module.load(d, '// stand-in\n');
    const k2 = m2.function('add2');
    m2.dispose();
    refused(() => g.addKernelNodes([ok, { kernel: k2, config: cfg }]), DisposedError, /Module/);
  }
  const y = DeviceBuffer.alloc(d, 16);
  const withY = { grid: 1, block: 1, args: [y] };
  y.dispose();
  refused(() => g.addKernelNodes([ok, { kernel: k, config: withY }]), DisposedError, /DeviceBuffer/);
  // A refused call leaves the graph as it was: a good call afterwards adds exactly its nodes.
  const before = added!();
  g.addKernelNodes([ok, { ...ok, after: [0, a] }]);
  assert.equal(added!() - before, 2);
  g.dispose();
  refused(() => g.addKernelNodes([ok]), DisposedError, /Graph/);
  x.dispose();
});

test('consecutive batches, and a batch started from inside another, each get their own launches and dependencies', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const cfg = (v: number) => ({ grid: v, block: 32, args: [arg.i32(v)] });
  onBothBindings((binding) => {
    using g = Graph.create(d);
    const a = g.addKernelNode(k, cfg(1));
    // A long batch, then a short one with more dependencies a node, then a long one again: the
    // arrays one batch leaves behind must not leak into the next.
    const long = g.addKernelNodes(Array.from({ length: 300 }, (_, i) => ({ kernel: k, config: cfg(2), after: i === 0 ? [a] : [i - 1] })));
    let from = added!();
    const short = g.addKernelNodes([
      { kernel: k, config: cfg(3), after: [long[299]!, a, long[5]!] },
      { kernel: k, config: cfg(4) },
    ]);
    assert.deepEqual(logSince(from), [[3, 3], [4, 4]], binding);
    assert.deepEqual(new Set(short[0]!.dependencies()), new Set([long[299], a, long[5]]), binding);
    assert.deepEqual(short[1]!.dependencies(), [], `${binding}: no dependency left over from the batch before`);
    from = added!();
    const again = g.addKernelNodes(Array.from({ length: 250 }, (_, i) => ({ kernel: k, config: cfg(5 + (i % 2)), after: i === 0 ? [] : [i - 1] })));
    assert.deepEqual(logSince(from).slice(0, 3), [[5, 5], [6, 6], [5, 5]], binding);
    assert.deepEqual(again[0]!.dependencies(), [], binding);
    assert.deepEqual(again[249]!.dependencies(), [again[248]], binding);
    // An entry's getter adds a batch of its own while the outer one is being read.
    let inner: CudaNode[] = [];
    const sneaky = {
      config: cfg(7),
      after: [0],
      get kernel() {
        if (inner.length === 0) inner = g.addKernelNodes([{ kernel: k, config: cfg(8), after: [a] }, { kernel: k, config: cfg(9), after: [0] }]);
        return k;
      },
    };
    from = added!();
    const outer = g.addKernelNodes([{ kernel: k, config: cfg(10), after: [a] }, sneaky as never, { kernel: k, config: cfg(11), after: [1] }]);
    assert.deepEqual(logSince(from), [[8, 8], [9, 9], [10, 10], [7, 7], [11, 11]], `${binding}: the inner batch first, then the outer one intact`);
    assert.deepEqual(inner[1]!.dependencies(), [inner[0]], binding);
    assert.deepEqual(outer[1]!.dependencies(), [outer[0]], binding);
    assert.deepEqual(outer[2]!.dependencies(), [outer[1]], binding);
    assert.deepEqual(outer[0]!.dependencies(), [a], binding);
  });
});

test('addKernelNode with one configuration object: each node gets it as it is now, also after an exec update and a change in place', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  onBothBindings((binding) => {
    using g = Graph.create(d);
    const cfg = { grid: [3, 1, 1] as [number, number, number], block: 32, args: [arg.i32(30)] };
    let from = added!();
    const a = g.addKernelNode(k, cfg);
    g.addKernelNode(k, cfg, [a]);
    assert.deepEqual(logSince(from), [[3, 30], [3, 30]], binding);
    // An exec update in between writes other parameters where the driver reads them.
    using exec = g.instantiate();
    exec.setKernelArgs(a, [arg.i32(5)]);
    from = added!();
    g.addKernelNode(k, cfg, [a]);
    assert.deepEqual(logSince(from), [[3, 30]], `${binding}: after an exec update`);
    cfg.grid[0] = 4;
    from = added!();
    g.addKernelNode(k, cfg);
    g.addKernelNode(k, { ...cfg, args: [arg.i32(40)] });
    g.addKernelNode(k, cfg);
    assert.deepEqual(logSince(from), [[4, 30], [4, 40], [4, 30]], `${binding}: a change in place is seen, and another config in between`);
  });
});

test('a driver failure part way through addKernelNodes takes back the nodes already added', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const cfg = { grid: 1, block: 32, args: [arg.i32(1)] };
  const failAt = lib!.u64s('fail_kernel_node_at');
  onBothBindings((binding) => {
    using g = Graph.create(d);
    const a = g.addKernelNode(k, cfg);
    const edges = g.edgeRefs().length;
    const destroysBefore = destroyed!();
    failAt[0] = 4n;
    assert.throws(
      () => g.addKernelNodes(Array.from({ length: 6 }, (_, i) => ({ kernel: k, config: cfg, after: i === 0 ? [a] : [i - 1] }))),
      (e: unknown) =>
        e instanceof CudaError && e.operation === 'Graph.addKernelNodes' && e.driverCall === 'cuGraphAddKernelNode_v2' && /^Graph\.addKernelNodes: /.test((e as Error).message),
      binding,
    );
    failAt[0] = 0n;
    assert.equal(destroyed!() - destroysBefore, 3, `${binding}: the three nodes added before the failure are removed`);
    assert.equal(g.edgeRefs().length, edges, `${binding}: and their edges with them`);
    // The graph works on: a later batch adds its nodes.
    assert.equal(g.addKernelNodes([{ kernel: k, config: cfg, after: [a] }]).length, 1);
  });
});

test('node tools ids: a driver without the CUDA 13.1 calls refuses them as not supported, naming the call', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  using g = Graph.create(d);
  const n = g.addKernelNode(m.function('add2'), { grid: 1, block: 1, args: [] });
  for (const [call, symbol, f] of [
    ['CudaNode.toolsId', 'cuGraphNodeGetToolsId', () => n.toolsId()],
    ['CudaNode.localId', 'cuGraphNodeGetLocalId', () => n.localId()],
  ] as const) {
    assert.throws(f, (e: unknown) => e instanceof CudaError && e.code === 801 && e.operation === call && e.driverCall === symbol && /predates the call/.test((e as Error).message));
  }
  g.removeNode(n);
  assert.throws(() => n.toolsId(), DisposedError);
});

test('each batch gives every entry its own launch, whatever launches the batch before had at the same positions', { skip }, () => {
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const k = m.function('add2');
  const cfg = (grid: number): { grid: number; block: number; args: ReturnType<typeof arg.i32>[] } => ({ grid, block: 32, args: [arg.i32(grid)] });
  const [c1, c2, c3, c4, c5] = [cfg(1), cfg(2), cfg(3), cfg(4), cfg(5)];
  const batch = (g: Graph, configs: readonly object[]): Array<[number, number]> => {
    const from = added!();
    g.addKernelNodes(configs.map((config) => ({ kernel: k, config: config as never })));
    return logSince(from);
  };
  onBothBindings((binding) => {
    using g = Graph.create(d);
    assert.deepEqual(batch(g, [c1, c2, c3, c1]), [[1, 1], [2, 2], [3, 3], [1, 1]], binding);
    // One launch for all: none of the earlier batch's launch numbers may be left in place.
    assert.deepEqual(batch(g, [c4, c4, c4, c4]), [[4, 4], [4, 4], [4, 4], [4, 4]], `${binding}: one configuration`);
    assert.deepEqual(batch(g, [c1, c2, c3, c1]), [[1, 1], [2, 2], [3, 3], [1, 1]], binding);
    // A second launch first seen part way: the entries before it keep the first.
    assert.deepEqual(batch(g, [c4, c4, c5, c4]), [[4, 4], [4, 4], [5, 5], [4, 4]], `${binding}: a second configuration part way`);
  });
});
