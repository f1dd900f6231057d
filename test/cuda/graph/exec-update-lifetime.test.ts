/**
 * Against the stand-in driver: `GraphExec.update` after the exec's template was disposed (the exec
 * holds it) updates and holds the new graph, all or nothing; the read-back calls name themselves in
 * their errors; a kernel configuration object reused with a misspelt key is refused again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceBuffer, Device, DisposedError, Graph, InvalidArgumentError, Module, arg } from '../../../src/index.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';
import { loadStandIn } from '../../support/stand-in-driver.js';

const lib = loadStandIn('exec-update', ['STAND_IN_KERNEL_ARGS', 'STAND_IN_EXEC_UPDATE']);
const skip = lib === null ? 'gcc is absent' : false;

function setUp() {
  const d = Device.get(0);
  const k = Module.load(d, '// stand-in: any text\n').function('add2');
  const x = DeviceBuffer.alloc(d, 1024);
  return { d, k, x, cfg: { grid: 1, block: 256, args: [x, arg.i32(256)] } };
}

test('GraphExec.update from a graph with JS host functions after the template was disposed: updated, and the new graph held', { skip }, () => {
  const { d, k, x, cfg } = setUp();
  const g = Graph.create(d);
  g.addKernelNode(k, cfg);
  const exec = g.instantiate();
  g.dispose(); // the exec holds its template
  const g2 = Graph.create(d);
  g2.addKernelNode(k, cfg);
  g2.setJsHostFunctionIds([1]); // as a graph with a JS host node (the stand-in has no host nodes)
  const updates = lib!.counter('exec_graph_updates');
  const before = updates();
  exec.update(g2);
  assert.equal(updates() - before, 1);
  assert.equal(exec.graph, g2);
  g2.dispose();
  assert.equal(g2[LIFETIME].holders > 0, true, 'the exec still holds the graph it runs the parameters of');
  exec.dispose();
  x.dispose();
});

test('Graph.nodes, Graph.edges and Graph.toComputeGraph name themselves in their errors', { skip }, () => {
  const { d, x } = setUp();
  const g = Graph.create(d);
  g.dispose();
  for (const [name, call] of [['nodes', () => g.nodes()], ['edges', () => g.edges()], ['toComputeGraph', () => g.toComputeGraph()], ['readBack', () => g.readBack()]] as const) {
    assert.throws(call, (e: unknown) => e instanceof DisposedError && e.message.startsWith(`Graph.${name}: `), name);
  }
  x.dispose();
});

test('a kernel configuration reused after a key of it was deleted and a misspelt one added is refused, as a fresh object is', { skip }, () => {
  const { d, k, x } = setUp();
  const g = Graph.create(d);
  const cfg: Record<string, unknown> = { grid: 1, block: 256, args: [x, arg.i32(256)], sharedMem: undefined };
  g.addKernelNode(k, cfg as never);
  delete cfg['sharedMem'];
  cfg['bogus'] = 1;
  const before = g.nodeCount;
  assert.throws(() => g.addKernelNode(k, cfg as never), (e: unknown) => e instanceof InvalidArgumentError && /^Graph\.addKernelNode: unknown option 'bogus'/.test((e as Error).message));
  assert.throws(() => g.addKernelNodes([{ kernel: k, config: cfg as never }]), (e: unknown) => e instanceof InvalidArgumentError && /^Graph\.addKernelNodes: .*'bogus'/.test((e as Error).message));
  assert.equal(g.nodeCount, before, 'nothing added');
  g.dispose();
  x.dispose();
});

test('once nodes are added to the template after instantiation, the exec\'s setters refuse to name nodes, the driver untouched', { skip }, () => {
  const { d, k, x, cfg } = setUp();
  const g = Graph.create(d);
  const first = g.addKernelNode(k, cfg);
  const exec = g.instantiate();
  exec.setKernelArgs(first, [x, arg.i32(128)]); // the exec's own node, before any change
  const late = g.addKernelNode(k, cfg, [first]);
  const launches = lib!.counter('exec_updates');
  const before = launches();
  const refused = (e: unknown) => e instanceof InvalidArgumentError && /^GraphExec\.(setKernelArgs|setNodeEnabled): nodes were added to or removed from the graph since this exec was instantiated/.test((e as Error).message);
  assert.throws(() => exec.setKernelArgs(late, [x, arg.i32(64)]), refused, 'a node the exec does not have');
  assert.throws(() => exec.setKernelArgs(first, [x, arg.i32(64)]), refused, 'a node the exec has, named through the changed graph');
  assert.throws(() => exec.setKernelArgs(0, [x, arg.i32(64)]), refused, 'by index');
  assert.throws(() => exec.setKernelArgs('add2', [x, arg.i32(64)]), refused, 'by name');
  assert.throws(() => exec.setNodeEnabled(late, false), refused, 'enabling');
  assert.equal(launches(), before, 'no driver call');
  exec.dispose();
  g.dispose();
  x.dispose();
});

test('a node a setter named before is checked again on every call: its kind, and its removal from the template', { skip }, () => {
  const { d, k, x, cfg } = setUp();
  const g = Graph.create(d);
  const kern = g.addKernelNode(k, cfg);
  const other = g.addKernelNode(k, cfg, [kern]);
  const exec = g.instantiate();
  const updates = lib!.counter('exec_updates');
  const before = updates();
  exec.setKernelArgs(kern, [x, arg.i32(64)]);
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => exec.setMemsetNodeParams(kern, { dst: x, value: 0, elementSize: 4, count: 16 }),
      (e: unknown) => e instanceof InvalidArgumentError && /^GraphExec\.setMemsetNodeParams: node #\S+ is a 'kernel' node, not a memset node/.test((e as Error).message),
      `call ${i}`,
    );
  }
  exec.setKernelArgs(kern, [x, arg.i32(32)]);
  exec.setNodeEnabled(other, false);
  assert.equal(updates() - before, 3, 'the kernel updated twice, the other node switched once');
  g.removeNode(other);
  const refused = (e: unknown) => e instanceof InvalidArgumentError && /nodes were added to or removed from the graph since this exec was instantiated/.test((e as Error).message);
  assert.throws(() => exec.setKernelArgs(kern, [x, arg.i32(16)]), refused, 'the kernel, named before the removal');
  assert.throws(() => exec.setNodeEnabled(other, true), refused, 'the removed node');
  assert.equal(updates() - before, 3, 'no driver call after the removal');
  exec.dispose();
  g.dispose();
  x.dispose();
});

test('after GraphExec.update, the setters read what the exec runs now, also for a node they resolved before', { skip }, () => {
  const { d, k, x, cfg } = setUp();
  const g = Graph.create(d);
  const node = g.addKernelNode(k, cfg);
  const exec = g.instantiate();
  exec.setKernelArgs(node, [x, arg.i32(64)]); // the node resolved, its arguments known from this call
  exec.setKernelArg(node, 1, arg.i32(32));
  const g2 = Graph.create(d);
  g2.addKernelNode(k, cfg);
  exec.update(g2);
  // The exec runs g2's parameters now. The stand-in reads back no arguments of a node added
  // explicitly, so the exec knows none of them: replacing one is refused, not made over the old ones.
  assert.throws(
    () => exec.setKernelArg(node, 1, arg.i32(16)),
    (e: unknown) => e instanceof InvalidArgumentError && /^GraphExec\.setKernelArg: .*whose arguments this exec does not know/.test((e as Error).message),
  );
  exec.setKernelArgs(node, [x, arg.i32(8)]);
  exec.setKernelArg(node, 1, arg.i32(4));
  exec.dispose();
  g.dispose();
  g2.dispose();
  x.dispose();
});
