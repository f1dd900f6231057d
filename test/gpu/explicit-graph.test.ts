/**
 * Graphs built node by node on the device (`graph.add…Node`): every kind, with results checked
 * against the same arithmetic on the host; read back with their parameters; edited (edges added
 * and removed, cycles refused, clone); each exec setter done on the driver and checked against
 * `ExecGraph`'s prediction; graph memory (relaunch rule, `freeAllocations`, the device's
 * attributes); and capture meeting explicit nodes (`capture.insert`, `graph.captureInto`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CudaError,
  CudaNode,
  Device,
  DeviceBuffer,
  DisposedError,
  ExecGraph,
  Graph,
  GraphError,
  InvalidArgumentError,
  Module,
  PinnedHostBuffer,
  StreamGraphCapture,
  arg,
  type ComputeGraph,
  type NodeId,
} from '../../src/index.js';
import { gpuSuite } from './gpu.js';
import { refused } from '../support/refused.js';

const N = 1024;
const GRID = N / 256;

const SOURCE = `
extern "C" __global__ void pdl_step(unsigned int *p, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 2u + 1u;
  asm volatile("griddepcontrol.launch_dependents;");
}
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
extern "C" __global__ void mul_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= v;
}
extern "C" __global__ void twice_plus_one(unsigned int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 2u + 1u;
}
`;


gpuSuite('graphs built node by node', () => {
  const d = Device.get(0);
  const m = Module.compile(d, SOURCE);
  const add = m.function('add_u32');
  const mul = m.function('mul_u32');
  const tpo = m.function('twice_plus_one');
  const s = d.createStream();
  const cfg = (p: DeviceBuffer | bigint, v: number) => ({ grid: GRID, block: 256, args: [arg.ptr(p), arg.u32(v), arg.i32(N)] });

  test('every kind: built explicitly, launched twice, the results match the host arithmetic', async () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const y = DeviceBuffer.alloc(d, 4 * N);
    const grid2d = DeviceBuffer.alloc(d, 64 * 8); // 8 rows of 64 bytes
    const host = PinnedHostBuffer.alloc(d, 4 * N);
    const host2d = PinnedHostBuffer.alloc(d, 32 * 8);
    const ev = d.createEvent();
    let hostCalls = 0;
    using child = Graph.create(d);
    child.addKernelNode(tpo, { grid: GRID, block: 256, args: [x, arg.i32(N)] });
    using g = Graph.create(d);
    const fill = g.addMemsetNode({ dst: x, value: 3, elementSize: 4, count: N });
    const k = g.addKernelNode(add, cfg(x, 5), [fill]); // x = 8
    const sub = g.addChildGraphNode(child, [k]); // x = 17
    const rec = g.addEventRecordNode(ev, [sub]);
    const wait = g.addEventWaitNode(ev, [rec]);
    const cp = g.addMemcpyNode({ dst: y, src: x, byteLength: 4 * N }, [wait]);
    const down = g.addMemcpyNode({ dst: host, src: y, byteLength: 4 * N }, [cp]);
    const h = g.addHostNode(() => void hostCalls++, [down], { label: 'count' });
    // 2-D: fill 8 rows of 16 u16s (32 bytes of each 64-byte row) with 0x0102, copy them to a packed host array.
    const fill2d = g.addMemsetNode({ dst: grid2d, value: 0x0102, elementSize: 2, count: 16, rows: 8, pitch: 64 });
    const cp2d = g.addMemcpyNode({ dst: { memory: host2d, pitch: 32 }, src: { memory: grid2d, pitch: 64 }, width: 32, height: 8 }, [fill2d]);
    const join = g.addEmptyNode([h, cp2d]);
    assert.equal(g.nodeCount, 11);
    assert.deepEqual(
      g.nodeRefs().map((n) => n.type),
      g.nodes().map((n) => n.type),
    );
    assert.deepEqual(join.dependencies(), [h, cp2d]);
    assert.deepEqual(k.dependents(), [sub]);
    using exec = g.instantiate(undefined, s);
    for (let launch = 1; launch <= 2; launch++) {
      host.asUint32().fill(0);
      exec.launch();
      await s.synchronizeAsync();
      assert.ok(host.asUint32().every((v) => v === 17), `launch ${launch}: (3 + 5) * 2 + 1`);
      assert.equal(hostCalls, launch);
      assert.ok(new Uint16Array(host2d.asUint32().buffer, host2d.asUint32().byteOffset, 16 * 8).every((v) => v === 0x0102));
    }
    // Typed read-back of every kind's parameters.
    assert.deepEqual(k.info().kernel, { name: 'add_u32', grid: [GRID, 1, 1], block: [256, 1, 1], sharedMem: 0 });
    assert.equal(cp.info().memcpy!.direction, 'DeviceToDevice');
    assert.equal(down.info().memcpy!.direction, 'DeviceToHost');
    assert.deepEqual(
      { w: fill2d.info().memset!.width, h: fill2d.info().memset!.height, e: fill2d.info().memset!.elementSize },
      { w: 16, h: 8, e: 2 },
    );
    assert.equal(h.info().host!.label, 'count');
    assert.equal(rec.info().event!.handle, ev.handle);
    assert.equal(sub.info().child!.nodes[0]!.kernel!.name, 'twice_plus_one');
    const model = g.toComputeGraph();
    assert.deepEqual(
      model.nodes().map((n) => n.kind).sort(),
      ['childGraph', 'empty', 'eventRecord', 'eventWait', 'hostCallback', 'kernel', 'memcpy', 'memcpy', 'memcpy', 'memset', 'memset'],
    );
    // The graph owns what its nodes use: the user's references can go.
    x.dispose();
    exec.launch();
    await s.synchronizeAsync();
    assert.ok(host.asUint32().every((v) => v === 17), 'x is kept alive by the graph');
  });

  test('edges: added with data, removed, cycles and foreign nodes refused; clone keeps the graph', () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    using g = Graph.create(d);
    const a = g.addKernelNode(add, cfg(x, 1));
    const b = g.addKernelNode(add, cfg(x, 1));
    const c = g.addEmptyNode();
    g.addDependencies([[a, b, { kind: 'programmatic' }], [b, c]]);
    const name = (n: CudaNode): string => (n === a ? 'a' : n === b ? 'b' : n === c ? 'c' : '?');
    const edges = g.edgeRefs().map((e) => [name(e.from), name(e.to), e.kind, e.port]);
    assert.deepEqual(
      [...edges].sort(),
      [
        ['a', 'b', 'programmatic', 'trigger'],
        ['b', 'c', 'plain', 'completion'],
      ],
      JSON.stringify(edges),
    );
    refused(() => g.addDependencies([[c, a]]), InvalidArgumentError, 'Graph.addDependencies', /would make a dependency cycle/);
    refused(() => g.addDependencies([[a, b]]), InvalidArgumentError, 'Graph.addDependencies', /exists already/);
    refused(() => g.addDependencies([[c, a, { kind: 'programmatic' }]]), InvalidArgumentError, 'Graph.addDependencies', /only kernel nodes have ports/);
    refused(() => g.addDependencies([[a, c], [c, a]]), InvalidArgumentError, 'Graph.addDependencies', /cycle/);
    assert.equal(g.edgeRefs().length, 2, 'a refused call adds no edge');
    using other = Graph.create(d);
    const foreign = other.addEmptyNode();
    refused(() => g.addEmptyNode([foreign]), InvalidArgumentError, 'Graph.addEmptyNode', /of another graph/);
    refused(() => g.addEmptyNode([a, a]), InvalidArgumentError, 'Graph.addEmptyNode', /repeats a node/);
    refused(() => g.removeDependencies([[a, c]]), InvalidArgumentError, 'Graph.removeDependencies', /is not an edge/);
    refused(() => g.removeDependencies([[a, b]]), InvalidArgumentError, 'Graph.removeDependencies', /with that edge data/);
    g.removeDependencies([[a, b, { kind: 'programmatic' }]]);
    assert.equal(g.edgeRefs().length, 1);
    using copy = g.clone();
    assert.equal(copy.nodeCount, 3);
    const b2 = copy.clonedNode(b);
    assert.equal(b2.graph, copy);
    assert.equal(b2.info().kernel!.name, 'add_u32');
    g.removeNode(c);
    assert.equal(c.removed, true);
    refused(() => c.handle, DisposedError, 'CudaNode.handle', /removed/);
    assert.equal(g.nodeCount, 2);
    assert.equal(copy.nodeCount, 3, 'the clone is unchanged');
    x.dispose();
  });

  test('bad input is refused before the driver, changing nothing', () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const host = PinnedHostBuffer.alloc(d, 64);
    using g = Graph.create(d);
    refused(() => g.addKernelNode(add, { grid: GRID, block: 256, args: [x, arg.u32(1)] }), InvalidArgumentError, 'Graph.addKernelNode', /takes 3 parameter/);
    refused(() => g.addKernelNode('add' as never, cfg(x, 1)), InvalidArgumentError, 'Graph.addKernelNode', /kernel must be a Kernel/);
    refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: 65 }), InvalidArgumentError, 'Graph.addMemcpyNode', /holds 64 bytes/);
    refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: 0 }), InvalidArgumentError, 'Graph.addMemcpyNode', /byteLength/);
    refused(() => g.addMemcpyNode({ dst: host, src: x, byteLength: NaN }), InvalidArgumentError, 'Graph.addMemcpyNode', /byteLength/);
    refused(
      () => g.addMemcpyNode({ dst: { memory: x, pitch: 8 }, src: { memory: x, pitch: 16 }, width: 16, height: 2 }),
      InvalidArgumentError,
      'Graph.addMemcpyNode',
      /pitch \(8\) must be at least the copy's width/,
    );
    refused(() => g.addMemsetNode({ dst: x, value: 256, count: 4 }), InvalidArgumentError, 'Graph.addMemsetNode', /value/);
    refused(() => g.addMemsetNode({ dst: x, value: 1, elementSize: 3 as never, count: 4 }), InvalidArgumentError, 'Graph.addMemsetNode', /elementSize must be 1, 2 or 4/);
    refused(() => g.addMemsetNode({ dst: x, value: 1, elementSize: 4, count: 4, offset: 2 }), InvalidArgumentError, 'Graph.addMemsetNode', /multiple of elementSize/);
    refused(() => g.addMemsetNode({ dst: x, value: 1, count: 4, rows: 2 }), InvalidArgumentError, 'Graph.addMemsetNode', /pitch is required/);
    refused(() => g.addMemsetNode({ dst: host as never, value: 1, count: 4 }), InvalidArgumentError, 'Graph.addMemsetNode', /host memory/);
    refused(() => g.addHostNode(42 as never), InvalidArgumentError, 'Graph.addHostNode', /fn must be a function/);
    refused(() => g.addChildGraphNode(g), InvalidArgumentError, 'Graph.addChildGraphNode', /its own child/);
    refused(() => g.addMemFreeNode(g.addEmptyNode()), InvalidArgumentError, 'Graph.addMemFreeNode', /must be an allocation node/);
    assert.equal(g.nodeCount, 1, 'only the empty node made for the last check was added');
    const dead = DeviceBuffer.alloc(d, 16);
    dead.dispose();
    refused(() => g.addMemsetNode({ dst: dead, value: 1, count: 4 }), DisposedError, 'Graph.addMemsetNode', /DeviceBuffer/);
    g.dispose();
    refused(() => g.addEmptyNode(), DisposedError, 'Graph.addEmptyNode', /Graph/);
    x.dispose();
    host.dispose();
  });

  test('a configuration reused for many nodes is checked again whenever it changed, and its buffers each time', () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    using g = Graph.create(d);
    const config = { grid: GRID as number | number[], block: 256, args: [x, arg.u32(1), arg.i32(N)] as unknown[] };
    g.addKernelNode(add, config as never);
    config.args.pop();
    refused(() => g.addKernelNode(add, config as never), InvalidArgumentError, 'Graph.addKernelNode', /takes 3 parameter/);
    config.args.push(arg.i64(1)); // the driver reports sizes: an 8-byte value for the 4-byte count is refused
    refused(() => g.addKernelNode(add, config as never), InvalidArgumentError, 'Graph.addKernelNode', /args\[2\] is i64 \(8 bytes\)/);
    config.args[2] = arg.i32(N);
    config.grid = [2];
    assert.deepEqual(g.addKernelNode(add, config as never).info().kernel!.grid, [2, 1, 1]);
    (config.grid as number[])[0] = 0;
    refused(() => g.addKernelNode(add, config as never), InvalidArgumentError, 'Graph.addKernelNode', /grid\[0\]/);
    config.grid = GRID;
    const node = g.addKernelNode(add, config as never);
    assert.equal(node.type, 'kernel');
    // A buffer disposed after the configuration was checked is refused by the memo's path too.
    const y = DeviceBuffer.alloc(d, 4 * N);
    const other = { grid: GRID, block: 256, args: [y, arg.u32(1), arg.i32(N)] };
    g.addKernelNode(add, other);
    y.dispose(); // the graph holds its memory for the node already added; the program let it go
    refused(() => g.addKernelNode(add, other), DisposedError, 'Graph.addKernelNode', /DeviceBuffer/);
    x.dispose();
    assert.equal(g.nodeCount, 4);
  });

  test('exec setters: each kind updated in place, checked against ExecGraph; refusals name the node and the rule', async () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const y = DeviceBuffer.alloc(d, 4 * N);
    const host = PinnedHostBuffer.alloc(d, 4 * N);
    const ev1 = d.createEvent();
    const ev2 = d.createEvent();
    const seen: string[] = [];
    using child = Graph.create(d);
    child.addKernelNode(add, cfg(x, 100));
    using g = Graph.create(d);
    const fill = g.addMemsetNode({ dst: x, value: 1, elementSize: 4, count: N });
    const k = g.addKernelNode(add, cfg(x, 2), [fill]);
    const sub = g.addChildGraphNode(child, [k]);
    const rec = g.addEventRecordNode(ev1, [sub]);
    const down = g.addMemcpyNode({ dst: host, src: x, byteLength: 4 * N }, [rec]);
    const h = g.addHostNode(() => void seen.push('first'), [down]);
    using exec = g.instantiate(undefined, s);
    const run = async (): Promise<number> => {
      exec.launch();
      await s.synchronizeAsync();
      return host.asUint32()[N - 1]!;
    };
    assert.equal(await run(), 1 + 2 + 100);
    // The model's prediction for each update, on the graph read back from the driver.
    const model: ComputeGraph = g.toComputeGraph();
    const at = (node: CudaNode): NodeId => node.index as NodeId;
    const predict = (id: NodeId, update: Parameters<ExecGraph['updateNode']>[1]): boolean => {
      try {
        ExecGraph.instantiate(model).updateNode(id, update);
        return true;
      } catch (e) {
        assert.ok(e instanceof GraphError, String(e));
        return false;
      }
    };
    // Kernel: another function of the same module, and new arguments.
    assert.equal(predict(at(k), { kind: 'kernel', functionName: 'mul_u32' }), true);
    exec.setKernelNodeParams(k, { kernel: mul, ...cfg(x, 3) });
    assert.equal(await run(), 1 * 3 + 100);
    exec.setKernelArgs('mul_u32', [x, arg.u32(5), arg.i32(N)]);
    assert.equal(await run(), 1 * 5 + 100);
    exec.setKernelNodeParams(k.index, cfg(x, 7)); // the node's own function (mul) kept
    assert.equal(await run(), 1 * 7 + 100);
    // Memset: a new value.
    assert.equal(predict(at(fill), { kind: 'memset', value: 2 }), true);
    exec.setMemsetNodeParams(fill, { dst: x, value: 2, elementSize: 4, count: N });
    assert.equal(await run(), 2 * 7 + 100);
    // Child graph: same topology, new parameters.
    using child2 = Graph.create(d);
    child2.addKernelNode(add, cfg(x, 1000));
    exec.setChildGraphNodeParams(sub, child2);
    assert.equal(await run(), 2 * 7 + 1000);
    using wrongChild = Graph.create(d);
    wrongChild.addEmptyNode([wrongChild.addKernelNode(add, cfg(x, 1))]);
    const childUpdate = predict(at(sub), { kind: 'childGraph', graph: wrongChild.toComputeGraph() });
    assert.equal(childUpdate, false, 'the model refuses another topology');
    refused(() => exec.setChildGraphNodeParams(sub, wrongChild), InvalidArgumentError, 'GraphExec.setChildGraphNodeParams', /node #\d+ \(graph\) runs a graph of 1 nodes and 0 edges; the new child has 2 nodes and 1 edges .*same topology/);
    // Event: another event is recorded.
    assert.equal(predict(at(rec), { kind: 'eventRecord', event: 1 }), true);
    exec.setEventRecordNodeEvent(rec, ev2);
    assert.equal(rec.info().event!.handle, ev1.handle, 'the template is unchanged');
    await run();
    assert.equal(ev2.query(), true);
    // Memcpy: copy from another buffer (the same size: the model accepts it too).
    assert.equal(predict(at(down), { kind: 'memcpy', sizeBytes: 4 * N }), true);
    y.memsetAsync(s, 0);
    exec.setMemcpyNodeParams(down, { dst: host, src: y, byteLength: 4 * N });
    assert.equal(await run(), 0);
    refused(() => exec.setMemcpyNodeParams(down, { dst: y, src: x, byteLength: 4 * N }), InvalidArgumentError, 'GraphExec.setMemcpyNodeParams', /copies device → host memory; the update copies device → device/);
    // Host: another function.
    assert.equal(predict(at(h), { kind: 'hostCallback', label: 'second' }), true);
    exec.setHostNodeParams(h, () => void seen.push('second'));
    await run();
    assert.equal(seen[seen.length - 1], 'second');
    assert.ok(seen.slice(0, -1).every((v) => v === 'first'), 'every launch before the update called the first function');
    // Refusals: a node of another kind, a node of another graph, a disposed exec.
    refused(() => exec.setKernelNodeParams(fill, cfg(x, 1)), InvalidArgumentError, 'GraphExec.setKernelNodeParams', /node #\d+ is a 'memset' node, not a kernel node/);
    using other = Graph.create(d);
    const foreign = other.addKernelNode(add, cfg(x, 1));
    refused(() => exec.setKernelNodeParams(foreign, cfg(x, 1)), InvalidArgumentError, 'GraphExec.setKernelNodeParams', /of another graph/);
    refused(() => exec.setKernelArgs('nope', [x, arg.u32(1), arg.i32(N)]), InvalidArgumentError, 'GraphExec.setKernelArgs', /no kernel node runs 'nope'/);
    exec.dispose();
    refused(() => exec.setKernelArgs('mul_u32', [x, arg.u32(1), arg.i32(N)]), DisposedError, 'GraphExec.setKernelArgs', /GraphExec/);
  });

  test('2-D updates: CUDA refuses them, and cudagraph says so first', () => {
    const x = DeviceBuffer.alloc(d, 64 * 8);
    using g = Graph.create(d);
    const f = g.addMemsetNode({ dst: x, value: 1, count: 16, rows: 8, pitch: 64 });
    const c = g.addMemcpyNode({ dst: { memory: x, pitch: 64, offset: 32 }, src: { memory: x, pitch: 64 }, width: 32, height: 8 }, [f]);
    using exec = g.instantiate();
    refused(() => exec.setMemsetNodeParams(f, { dst: x, value: 2, count: 16, rows: 4, pitch: 64 }), InvalidArgumentError, 'GraphExec.setMemsetNodeParams', /2-D fill .* refuses any change/);
    exec.setMemsetNodeParams(f, { dst: x, value: 2, count: 16, rows: 8, pitch: 64 });
    refused(() => exec.setMemcpyNodeParams(c, { dst: x, src: x, byteLength: 32 }), InvalidArgumentError, 'GraphExec.setMemcpyNodeParams', /is a 2-D copy; CUDA updates 1-D copies only/);
    x.dispose();
  });

  test('graph memory: allocation and free nodes, the relaunch rule, freeAllocations, the device attributes', async () => {
    const out = PinnedHostBuffer.alloc(d, 4 * N);
    {
      using g = Graph.create(d);
      const a = g.addMemAllocNode({ byteLength: 4 * N });
      assert.ok(a.allocation !== null && a.allocation.byteLength === 4 * N && a.allocation.address !== 0n);
      const f = g.addMemsetNode({ dst: a, value: 4, elementSize: 4, count: N }, [a]);
      const k = g.addKernelNode(add, cfg(a.allocation!.address, 1), [f]);
      const c = g.addMemcpyNode({ dst: out, src: a, byteLength: 4 * N }, [k]);
      g.addMemFreeNode(a, [c]);
      refused(() => g.addMemFreeNode(a), InvalidArgumentError, 'Graph.addMemFreeNode', /already freed in this graph/);
      refused(() => g.clone(), InvalidArgumentError, 'Graph.clone', /allocation or free nodes/);
      refused(() => g.removeNode(k), InvalidArgumentError, 'Graph.removeNode', /allocation or free nodes/);
      using exec = g.instantiate(undefined, s);
      refused(() => g.instantiate(), InvalidArgumentError, 'Graph.instantiate', /already instantiated/);
      assert.deepEqual(exec.unfreedAllocations, []);
      for (let i = 0; i < 3; i++) exec.launch();
      await s.synchronizeAsync();
      assert.ok(out.asUint32().every((v) => v === 5));
      const mem = d.graphMemory();
      assert.ok(mem.reserved >= 4 * N && mem.reservedHigh >= mem.reserved, JSON.stringify(mem));
    }
    // An allocation nothing frees: the second launch waits for freeAllocations.
    using g = Graph.create(d);
    const a = g.addMemAllocNode({ byteLength: 4 * N });
    const f = g.addMemsetNode({ dst: a, value: 9, elementSize: 4, count: N }, [a]);
    g.addMemcpyNode({ dst: out, src: a, byteLength: 4 * N }, [f]);
    {
      using exec = g.instantiate(undefined, s);
      assert.deepEqual(exec.unfreedAllocations, [a.allocation!.address]);
      refused(() => exec.freeAllocations(), GraphError, 'GraphExec.freeAllocations', /nothing to free/);
      exec.launch();
      refused(() => exec.launch(), GraphError, 'GraphExec.launch', /still allocated/);
      assert.equal(exec.launchCount, 1, 'the refused launch was not made');
      exec.freeAllocations();
      exec.launch();
      exec.freeAllocations();
      await s.synchronizeAsync();
      assert.ok(out.asUint32().every((v) => v === 9));
      assert.ok(d.graphMemory().used >= 0);
    }
    {
      using exec = g.instantiate({ autoFreeOnLaunch: true }, s);
      assert.deepEqual(exec.unfreedAllocations, []);
      exec.launch();
      exec.launch();
      await s.synchronizeAsync();
    }
    d.trimGraphMemory();
    d.graphMemory({ resetHigh: true });
  });

  test('capture meets explicit nodes: insert splices a node between captured kernels; captureInto fills a graph', async () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const host = new Uint32Array(N);
    // x = 1; x = x*2+1 (captured) → x += 10 (explicit, inserted) → x *= 3 (captured): ((1*2+1)+10)*3 = 39.
    x.memsetAsync(s, 0);
    add.launch(s, cfg(x, 1));
    s.synchronize();
    let inserted: CudaNode[] = [];
    {
      using cap = StreamGraphCapture.begin(s);
      tpo.launch(s, { grid: GRID, block: 256, args: [x, arg.i32(N)] });
      const before = cap.dependencies();
      assert.equal(before.length, 1);
      assert.equal(before[0]!.type, 'kernel');
      inserted = cap.insert((graph, deps) => graph.addKernelNode(add, cfg(x, 10), deps));
      assert.deepEqual(cap.dependencies(), inserted);
      mul.launch(s, cfg(x, 3));
      const graph = cap.endGraph();
      assert.equal(graph, inserted[0]!.graph, 'endGraph returns the graph the nodes were added to');
      using exec = graph.instantiate(undefined, s);
      graph.dispose();
      exec.launch();
      s.synchronize();
    }
    x.copyToHost(host);
    assert.ok(host.every((v) => v === 39), `got ${host[0]}`);
    // captureInto: an explicit fill, then captured work after it.
    using g = Graph.create(d);
    const fill = g.addMemsetNode({ dst: x, value: 2, elementSize: 4, count: N });
    const added = g.captureInto(s, (st) => {
      add.launch(st, cfg(x, 5));
      mul.launch(st, cfg(x, 2));
    }, { dependencies: [fill] });
    assert.equal(added.length, 2);
    assert.deepEqual(added[0]!.dependencies(), [fill]);
    using exec = g.instantiate(undefined, s);
    exec.launch();
    s.synchronize();
    x.copyToHost(host);
    assert.ok(host.every((v) => v === 14), `(2 + 5) * 2, got ${host[0]}`);
    // A body that throws: the capture ends, the user's error propagates unchanged, the graph stays usable.
    const mine = new Error('mine');
    assert.throws(() => g.captureInto(s, () => { throw mine; }), (e: unknown) => e === mine);
    assert.equal(s.query(), true);
    g.addEmptyNode();
    x.dispose();
  });

  test('addKernelNodes: a batch builds the graph node-by-node calls build, results equal; attributes and refusals', async () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const y = DeviceBuffer.alloc(d, 4 * N);
    const host = new Uint32Array(N);
    const run = async (g: Graph): Promise<[number, number]> => {
      x.memsetAsync(s, 0);
      y.memsetAsync(s, 0);
      using e = g.instantiate(undefined, s);
      e.launch();
      await s.synchronizeAsync();
      x.copyToHost(host);
      const a = host[7]!;
      y.copyToHost(host);
      return [a, host[7]!];
    };
    // x: 0 → +3 → ×5 → 2x+1, repeated 40 times in a chain; y: +1 after each step of x (a fan of edges).
    const steps = Array.from({ length: 120 }, (_, i) => (i % 3 === 0 ? { kernel: add, config: cfg(x, 3) } : i % 3 === 1 ? { kernel: mul, config: cfg(x, 5) } : { kernel: tpo, config: { grid: GRID, block: 256, args: [x, arg.i32(N)] } }));
    const plusOne = cfg(y, 1);
    using batched = Graph.create(d);
    const nodes = batched.addKernelNodes([
      ...steps.map((e, i) => ({ ...e, after: i === 0 ? [] : [i - 1] })),
      ...steps.map((_, i) => ({ kernel: add, config: plusOne, after: i === 0 ? [i] : [i, 120 + i - 1] })),
    ]);
    assert.equal(nodes.length, 240);
    assert.equal(batched.nodeRefs().length, 240);
    assert.equal(batched.edgeRefs().length, 119 + 1 + 2 * 119);
    using single = Graph.create(d);
    let prev: ReturnType<Graph['addKernelNode']> | null = null;
    const xs = steps.map((e) => (prev = single.addKernelNode(e.kernel, e.config, prev === null ? [] : [prev])));
    let py: ReturnType<Graph['addKernelNode']> | null = null;
    xs.forEach((n) => (py = single.addKernelNode(add, plusOne, py === null ? [n] : [n, py])));
    let want = 0;
    for (let i = 0; i < 40; i++) want = (((want + 3) * 5) * 2 + 1) >>> 0;
    assert.deepEqual(await run(batched), [want, 120], 'the batch-built graph computes the host arithmetic');
    assert.deepEqual(await run(single), [want, 120], 'and so does the one built node by node');
    const shape = (g: Graph): [number, number, number] => {
      const c = g.toComputeGraph();
      return [c.nodeCount(), c.edgeCount(), c.levels().length];
    };
    assert.deepEqual(shape(batched), shape(single), 'the two graphs have the same shape');
    // Entries with launch attributes get them as node attributes (instantiated with node priorities).
    using withAttributes = Graph.create(d);
    withAttributes.addKernelNodes([
      { kernel: tpo, config: { grid: GRID, block: 256, args: [x, arg.i32(N)], attributes: { cluster: [2], priority: 0 } } },
      { kernel: add, config: cfg(x, 1), after: [0] },
    ]);
    withAttributes.instantiate({ useNodePriority: true }, s).dispose();
    refused(
      () => withAttributes.addKernelNodes([{ kernel: tpo, config: { grid: GRID, block: 256, args: [x, arg.i32(N)], attributes: { cluster: [3] } } }]),
      InvalidArgumentError,
      'Graph.addKernelNodes',
      /nodes\[0\]\.config: .*multiple of the cluster/,
    );
    refused(() => withAttributes.addKernelNodes([{ kernel: add, config: cfg(x, 1), after: [nodes[0]!] }]), InvalidArgumentError, 'Graph.addKernelNodes', /of another graph/);
    assert.equal(withAttributes.nodeRefs().length, 2, 'refused batches added nothing');
    // Node tools ids: CUDA 13.1's calls; a CUDA 13.0 driver lacks them and says so.
    if (Device.driverVersion() >= 13010) {
      assert.equal(typeof nodes[0]!.toolsId(), 'bigint');
      assert.ok(Number.isInteger(nodes[0]!.localId()));
    } else {
      for (const f of [() => nodes[0]!.toolsId(), () => nodes[0]!.localId()]) {
        assert.throws(f, (e: unknown) => e instanceof CudaError && e.code === 801 && /predates the call/.test((e as Error).message));
      }
    }
    x.dispose();
    y.dispose();
  });

  test('launch attributes: eager and captured (programmatic edges), on graph nodes; refusals', () => {
    const x = DeviceBuffer.alloc(d, 4 * N);
    const host = new Uint32Array(N);
    const step = m.function('pdl_step');
    const pdl = { grid: GRID, block: 256, args: [x, arg.i32(N)], attributes: { programmaticStreamSerialization: true } };
    // Eager: a chain of 5 PDL launches computes what 5 plain ones do: 0 → 1 → 3 → 7 → 15 → 31.
    x.memsetAsync(s, 0);
    for (let i = 0; i < 5; i++) step.launch(s, i === 0 ? { ...pdl, attributes: { cluster: [2], priority: d.streamPriorityRange().greatest } } : pdl);
    s.synchronize();
    x.copyToHost(host);
    assert.ok(host.every((v) => v === 31), `eager PDL chain: ${host[0]}`);
    // Captured: the driver records programmatic edges between the kernels.
    const cap = StreamGraphCapture.begin(s);
    for (let i = 0; i < 4; i++) step.launch(s, pdl);
    const g = cap.endGraph();
    const kinds = g.edgeRefs().map((e) => `${e.kind}/${e.port}`);
    assert.equal(kinds.length, 3);
    assert.ok(kinds.every((k) => k === 'programmatic/trigger'), JSON.stringify(kinds));
    assert.ok(g.toComputeGraph().edgeRecords().every((e) => e.kind === 'programmatic'));
    x.memsetAsync(s, 0);
    using exec = g.instantiate(undefined, s);
    g.dispose();
    exec.launch();
    s.synchronize();
    x.copyToHost(host);
    assert.ok(host.every((v) => v === 15), `graphed PDL chain: ${host[0]}`);
    // A kernel node with a cluster shape and a priority, instantiated with useNodePriority.
    using g2 = Graph.create(d);
    g2.addKernelNode(step, { grid: GRID, block: 256, args: [x, arg.i32(N)], attributes: { cluster: [2], priority: 0 } });
    using e2 = g2.instantiate({ useNodePriority: true }, s);
    e2.launch();
    s.synchronize();
    refused(() => g2.addKernelNode(step, pdl), InvalidArgumentError, 'Graph.addKernelNode', /programmatic launch attributes are for stream launches/);
    refused(() => step.launch(s, { ...pdl, attributes: { cluster: [3] } }), InvalidArgumentError, 'Kernel.launch', /must be a multiple of the cluster/);
    refused(() => step.prepare(pdl), InvalidArgumentError, 'Kernel.prepare', /takes no launch attributes/);
    refused(() => step.launch(s, { ...pdl, attributes: { priority: 1.5 } }), InvalidArgumentError, 'Kernel.launch', /attributes\.priority/);
    refused(() => step.launch(s, { ...pdl, attributes: { nope: 1 } as never }), InvalidArgumentError, 'Kernel.launch', /unknown field of attributes 'nope'/);
    x.dispose();
  });
});
