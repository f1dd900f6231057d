/**
 * `setKernelArg`: one argument of an exec's kernel node replaced, the others kept, against the
 * stand-in driver built with kernel parameters (fixtures/stand-in-driver.c, STAND_IN_KERNEL_ARGS:
 * every kernel takes a pointer, an int and a float; the captured node returns the arguments it was
 * launched with; each exec update writes down the arguments it was given). On the device:
 * test/gpu/graph-cache.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, DisposedError, Graph, InvalidArgumentError, Module, StreamGraphCapture, arg, captureGraph } from '../../../src/index.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused as check } from '../../support/refused.js';

const lib = loadStandIn('kernel-arg-patch', ['STAND_IN_KERNEL_ARGS']);
const skip = lib === null && 'gcc is absent';
const updates = lib?.counter('exec_updates');
const argLog = lib?.u64s('exec_arg_log', 64 * 8);
const paramCount = lib?.u64s('param_count');
lib?.u64s('param_sizes', 3).set([8n, 4n, 4n]);
if (paramCount !== undefined) paramCount[0] = 3n;

/** The three arguments the last exec update gave (the float as its bits). */
function lastArgs(): [bigint, number, number] {
  const i = updates!() - 1;
  const f = new DataView(new ArrayBuffer(4));
  f.setUint32(0, Number(argLog![i * 8 + 2]!), true);
  return [argLog![i * 8]!, Number(BigInt.asIntN(32, argLog![i * 8 + 1]!)), f.getFloat32(0, true)];
}

/** `body` throws `cls` naming `op`, and updates no node. */
function refused(body: () => unknown, cls: new (...a: never[]) => Error, op: string, pattern: RegExp): void {
  const before = updates!();
  check(body, cls, op, pattern);
  assert.equal(updates!(), before, `${op}: a refused call updates nothing`);
}

/** A kernel `step(y, 5, 2.0)` captured into a graph, and what it was made with. */
function captured() {
  const d = Device.get(0);
  const s = d.createStream();
  const k = Module.load(d, '// stand-in\n').function('step');
  const y = DeviceBuffer.alloc(d, 64);
  const graph = captureGraph(s, (st) => k.launch(st, { grid: 1, block: 32, args: [y, arg.i32(5), arg.f32(2)] }));
  return { d, s, k, y, graph };
}

test('setKernelArg replaces one argument and keeps the others, also after setKernelArgs; a buffer value is held', { skip }, () => {
  const { d, s, k, y, graph } = captured();
  assert.equal(graph.setKernelArg('step', 1, arg.i32(9)), 1, 'the nodes running step: one');
  assert.deepEqual(lastArgs(), [y.ptr, 9, 2], 'the pointer and the float as captured, the int replaced');
  graph.setKernelArg(0, 2, arg.f32(0.5));
  assert.deepEqual(lastArgs(), [y.ptr, 9, 0.5], 'the earlier replacement is kept');
  const z = DeviceBuffer.alloc(d, 64);
  graph.setKernelArgs(0, [z, arg.i32(1), arg.f32(3)]);
  const zp = z.ptr;
  z.dispose(); // the graph holds it
  graph.setKernelArg('step', 1, arg.i32(-4));
  assert.deepEqual(lastArgs(), [zp, -4, 3], 'what setKernelArgs gave is kept, its buffer too after its owner let go');
  const w = DeviceBuffer.alloc(d, 64);
  graph.setKernelArg('step', 0, w);
  assert.deepEqual(lastArgs(), [w.ptr, -4, 3]);
  w.dispose();
  assert.equal(w[LIFETIME].freed, false, 'the graph holds a buffer it was given');
  graph.dispose();
  assert.equal(w[LIFETIME].freed, true, 'and lets go of it with the graph');

  // The same on a GraphExec, from a capture ended by hand.
  const cap = StreamGraphCapture.begin(s, 'threadLocal');
  k.launch(s, { grid: 1, block: 32, args: [y, arg.i32(5), arg.f32(2)] });
  using exec = cap.end();
  assert.equal(exec.setKernelArg('step', 1, arg.i32(11)), 1);
  assert.deepEqual(lastArgs(), [y.ptr, 11, 2]);
});

test('setKernelArg refuses, with no update: unknown kernels and nodes, indices past the parameters, values of another size or type, disposed buffers', { skip }, () => {
  const { d, s, y, graph } = captured();
  using _graph = graph;
  const op = 'CapturedGraph.setKernelArg';
  refused(() => graph.setKernelArg('other', 1, arg.i32(1)), InvalidArgumentError, op, /no kernel node runs 'other' \(kernels in the graph: step\)/);
  refused(() => graph.setKernelArg(1, 1, arg.i32(1)), InvalidArgumentError, op, /node must be an integer in 0\.\.0/);
  refused(() => graph.setKernelArg('step', 3, arg.i32(1)), InvalidArgumentError, op, /runs 'step', which takes 3 arguments; there is no argument 3/);
  refused(() => graph.setKernelArg('step', -1, arg.i32(1)), InvalidArgumentError, op, /index must be an integer/);
  refused(() => graph.setKernelArg('step', 1, arg.f64(1)), InvalidArgumentError, op, /argument 1 of 'step' \(node #0 \(kernel\)\) is 4 bytes; the value is 8/);
  refused(() => graph.setKernelArg('step', 1, 7 as never), InvalidArgumentError, op, /plain numbers are refused/);
  const gone = DeviceBuffer.alloc(d, 64);
  gone.dispose();
  refused(() => graph.setKernelArg('step', 0, gone), DisposedError, op, /has been disposed/);

  // A driver that cannot say a kernel's parameters (before CUDA 12.4): the exec does not know the others.
  paramCount![0] = 0n;
  const k2 = Module.load(d, '// stand-in\n').function('step');
  using blind = captureGraph(s, (st) => k2.launch(st, { grid: 1, block: 32, args: [y, arg.i32(5), arg.f32(2)] }));
  refused(() => blind.setKernelArg(0, 1, arg.i32(1)), InvalidArgumentError, op, /whose arguments this exec does not know .*give them all with setKernelArgs/);
  paramCount![0] = 3n;
});

test('a node named by its CudaNode keeps what setKernelNodeParams gave it for the setters after', { skip }, () => {
  const d = Device.get(0);
  const k = Module.load(d, '// stand-in\n').function('step');
  const y = DeviceBuffer.alloc(d, 64);
  const z = DeviceBuffer.alloc(d, 64);
  const g = Graph.create(d);
  const node = g.addKernelNode(k, { grid: 1, block: 32, args: [y, arg.i32(5), arg.f32(2)] });
  const exec = g.instantiate();
  // Every argument first (the stand-in reads back only a captured node's), then one of them.
  exec.setKernelArgs(node, [y, arg.i32(5), arg.f32(2)]);
  exec.setKernelArg(node, 1, arg.i32(6));
  assert.deepEqual(lastArgs(), [y.ptr, 6, 2]);
  exec.setKernelNodeParams(node, { grid: 2, block: 64, args: [z, arg.i32(7), arg.f32(1.5)] });
  exec.setKernelArg(node, 1, arg.i32(8));
  assert.deepEqual(lastArgs(), [z.ptr, 8, 1.5], 'the arguments setKernelNodeParams gave, one replaced');
  exec.setKernelArgs(node, [y, arg.i32(9), arg.f32(0.25)]);
  exec.setKernelArg(node, 2, arg.f32(4));
  assert.deepEqual(lastArgs(), [y.ptr, 9, 4]);
  exec.dispose();
  g.dispose();
  y.dispose();
  z.dispose();
});
