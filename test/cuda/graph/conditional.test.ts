/**
 * Conditional nodes against the stand-in driver (fixtures/stand-in-driver.c makes up handles and
 * body graphs as the driver does): the explicit API's bookkeeping (bodies, their owner, what ends
 * them), and CUDA's rules refused before the driver, each naming the call and changing nothing
 * (the stand-in counts the conditional nodes added). On the device: test/gpu/conditional.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BODY_NODE_KINDS, ConditionalHandle, Device, DeviceBuffer, DisposedError, Graph, InvalidArgumentError, KernelArgValue, Module, arg } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused as check } from '../../support/refused.js';

const lib = loadStandIn('conditional');
const skip = lib === null && 'gcc is absent';
const conditionals = lib?.counter('conditional_nodes');
const kernels = lib?.counter('nodes_added');

/** `body` throws `cls` with a message starting `op: ` and matching `pattern`, and adds no node (of the kinds the stand-in adds). */
function refused(body: () => unknown, cls: new (...a: never[]) => Error, op: string, pattern: RegExp): void {
  const before = conditionals!() + kernels!();
  check(body, cls, op, pattern);
  assert.equal(conditionals!() + kernels!(), before, `${op}: a refused call adds no node`);
}

test('conditional handles and nodes: bodies owned by their node, ended with it; kinds and counts', { skip }, () => {
  const d = Device.get(0);
  const g = Graph.create(d);
  const h = g.conditionalHandle();
  assert.ok(h instanceof ConditionalHandle);
  assert.deepEqual([h.defaultValue, h.assignDefault, h.node], [0, true, null]);
  assert.ok(h.arg() instanceof KernelArgValue);
  assert.equal(h.arg().value, h.value);
  assert.deepEqual([g.conditionalHandle({ default: 7, assignDefault: false }).assignDefault], [false]);
  const loop = g.addWhileNode(h);
  assert.equal(h.node, loop.node);
  assert.deepEqual([loop.kind, loop.node.type, loop.bodies.length], ['while', 'conditional', 1]);
  const body = loop.bodies[0]!;
  assert.equal(body.bodyOf, loop.node);
  assert.equal(g.bodyOf, null);
  assert.deepEqual(loop.node.bodies(), [body]);
  const branch = g.addIfNode(g.conditionalHandle(), { else: true }, [loop.node]);
  assert.equal(branch.bodies.length, 2);
  assert.deepEqual(branch.node.dependencies(), [loop.node]);
  assert.equal(g.addIfNode(g.conditionalHandle()).bodies.length, 1);
  assert.equal(g.addSwitchNode(g.conditionalHandle(), 5).bodies.length, 5);
  // Nested: a body's conditional node may use a handle of the graph around it, or of the body.
  const inner = body.addWhileNode(g.conditionalHandle());
  assert.equal(inner.bodies[0]!.bodyOf!.graph, body);
  body.addIfNode(body.conditionalHandle());
  // A body's dispose does nothing; removing the node ends its bodies; disposing the graph ends the rest.
  body.dispose();
  assert.equal(body.disposed, false);
  g.removeNode(branch.node);
  assert.deepEqual(branch.bodies.map((b) => b.disposed), [true, true]);
  assert.throws(() => branch.bodies[0]!.addEmptyNode(), DisposedError);
  assert.equal(body.disposed, false);
  const m = Module.load(d, '// stand-in: any text\n');
  const x = DeviceBuffer.alloc(d, 64);
  body.addKernelNode(m.function('add2'), { grid: 1, block: 1, args: [x, h.arg()] });
  x.dispose();
  g.dispose();
  assert.equal(body.disposed, true, 'the graph took its bodies with it');
  assert.equal(inner.bodies[0]!.disposed, true, 'and theirs');
  assert.equal(x.disposed, true);
});

test('CUDA rules refused before the driver: handles, body kinds, no clone, no child, unused handles, one instantiation', { skip }, () => {
  const d = Device.get(0);
  using g = Graph.create(d);
  for (const [options, pattern] of [
    [{ default: -1 }, /default/],
    [{ default: 1.5 }, /default/],
    [{ default: 2 ** 32 }, /default/],
    [{ assignDefault: 'yes' }, /assignDefault/],
    [{ dflt: 1 }, /unknown option 'dflt'/],
  ] as const) {
    assert.throws(() => g.conditionalHandle(options as never), (e: unknown) => e instanceof InvalidArgumentError && /^Graph\.conditionalHandle: /.test((e as Error).message) && pattern.test((e as Error).message));
  }
  const h = g.conditionalHandle({ default: 1 });
  const loop = g.addWhileNode(h);
  const body = loop.bodies[0]!;
  refused(() => body.addHostNode(() => {}), InvalidArgumentError, 'Graph.addHostNode', /is a body of CudaNode\(conditional\).*a hostCallback node is not allowed/);
  refused(() => body.addEventWaitNode({} as never), InvalidArgumentError, 'Graph.addEventWaitNode', /conditional body may contain only kernel, empty, child graph, memset, memcpy and conditional nodes/);
  refused(() => body.addMemAllocNode({ byteLength: 64 }), InvalidArgumentError, 'Graph.addMemAllocNode', /a memAlloc node is not allowed/);
  refused(() => g.addWhileNode(h), InvalidArgumentError, 'Graph.addWhileNode', /already serves CudaNode\(conditional\); a handle belongs to one conditional node/);
  refused(() => g.addWhileNode({ value: 1n } as never), InvalidArgumentError, 'Graph.addWhileNode', /handle must be a ConditionalHandle/);
  refused(() => g.addWhileNode(Object.create(ConditionalHandle.prototype) as ConditionalHandle), InvalidArgumentError, 'Graph.addWhileNode', /handle must be a ConditionalHandle/);
  using other = Graph.create(d);
  const foreign = other.conditionalHandle();
  refused(() => g.addIfNode(foreign), InvalidArgumentError, 'Graph.addIfNode', /made for another graph/);
  // A body's handle serves nodes in that body (or deeper), not in the graph around it.
  const bodyHandle = body.conditionalHandle();
  refused(() => g.addIfNode(bodyHandle), InvalidArgumentError, 'Graph.addIfNode', /made for another graph/);
  refused(() => g.addIfNode(other.conditionalHandle(), { else: 'yes' } as never), InvalidArgumentError, 'Graph.addIfNode', /else/);
  refused(() => g.addIfNode(other.conditionalHandle(), { otherwise: true } as never), InvalidArgumentError, 'Graph.addIfNode', /unknown option 'otherwise'/);
  for (const cases of [0, 1.5, NaN, 70000, '3']) {
    refused(() => g.addSwitchNode(other.conditionalHandle(), cases as never), InvalidArgumentError, 'Graph.addSwitchNode', /cases/);
  }
  const inBody = body.addIfNode(body.conditionalHandle()).node;
  refused(() => g.addWhileNode(other.conditionalHandle(), [inBody]), InvalidArgumentError, 'Graph.addWhileNode', /of another graph/);
  refused(() => g.clone(), InvalidArgumentError, 'Graph.clone', /a graph with conditional nodes cannot be cloned or be a child graph/);
  {
    using parent = Graph.create(d);
    refused(() => parent.addChildGraphNode(g), InvalidArgumentError, 'Graph.addChildGraphNode', /the child: the graph has conditional nodes/);
  }
  refused(() => body.instantiate(), InvalidArgumentError, 'Graph.instantiate', /is a body of CudaNode\(conditional\): it runs inside that node/);
  // Handles no node uses (the body's, here) would make CUDA refuse the instantiation.
  refused(() => g.instantiate(), InvalidArgumentError, 'Graph.instantiate', /ConditionalHandle\(0x[0-9a-f]+\) was made for this graph but serves no conditional node/);
  body.addIfNode(bodyHandle);
  const e = g.instantiate();
  refused(() => g.instantiate(), InvalidArgumentError, 'Graph.instantiate', /already instantiated .*a graph with conditional nodes/);
  e.dispose();
  g.instantiate().dispose();
  void arg;
});

test('removing a conditional node: its handle may serve a new node; refused while a capture records into its body', { skip }, () => {
  const d = Device.get(0);
  using g = Graph.create(d);
  const h = g.conditionalHandle({ default: 1 });
  const first = g.addWhileNode(h);
  g.removeNode(first.node);
  assert.equal(first.bodies[0]!.disposed, true);
  refused(() => g.instantiate(), InvalidArgumentError, 'Graph.instantiate', /serves no conditional node/);
  const again = g.addWhileNode(h);
  assert.equal(h.node, again.node);
  g.instantiate().dispose();
  // While a capture records into a body (at any depth), the node that owns it stays.
  const inner = again.bodies[0]!.addIfNode(g.conditionalHandle());
  const s = d.createStream();
  inner.bodies[0]!.captureInto(s, () => {
    refused(() => g.removeNode(again.node), InvalidArgumentError, 'Graph.removeNode', /a stream capture is recording into a body of CudaNode\(conditional\)/);
    refused(() => again.bodies[0]!.removeNode(inner.node), InvalidArgumentError, 'Graph.removeNode', /recording into a body/);
  });
  g.removeNode(again.node);
  assert.equal(inner.bodies[0]!.disposed, true, 'nested bodies end with the node');
  s.dispose();
  // A node whose body has a handle of its own stays: removing it would strand that handle.
  const keep = g.addWhileNode(g.conditionalHandle());
  keep.bodies[0]!.addIfNode(keep.bodies[0]!.conditionalHandle());
  refused(() => g.removeNode(keep.node), InvalidArgumentError, 'Graph.removeNode', /made for a body of CudaNode\(conditional\): removing it would leave that handle unused for ever/);
  assert.equal(keep.node.removed, false);
  // What the node hands out cannot be changed from outside.
  assert.throws(() => (again.bodies as Graph[]).pop(), TypeError);
  assert.throws(() => (BODY_NODE_KINDS as string[]).push('hostCallback'), TypeError);
});

test('capture refusals come before the capture is looked at: a missing body, a bad case count', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  refused(() => s.captureWhile(null as never, undefined as never), InvalidArgumentError, 'Stream.captureWhile', /body must be a function/);
  refused(() => s.captureIf(null as never, 3 as never), InvalidArgumentError, 'Stream.captureIf', /then must be a function/);
  refused(() => s.captureIf(null as never, () => {}, 'x' as never), InvalidArgumentError, 'Stream.captureIf', /otherwise must be a function/);
  refused(() => s.captureSwitch(null as never, [() => {}, undefined as never]), InvalidArgumentError, 'Stream.captureSwitch', /cases\[1\] must be a function/);
  refused(() => s.captureSwitch(null as never, []), InvalidArgumentError, 'Stream.captureSwitch', /non-empty array/);
  // A hole is refused as the undefined it reads as, not left an empty case.
  refused(() => s.captureSwitch(null as never, [() => {}, , () => {}] as never), InvalidArgumentError, 'Stream.captureSwitch', /cases\[1\] must be a function/);
  refused(() => s.captureWhile(null as never, () => {}), InvalidArgumentError, 'Stream.captureWhile', /not capturing/);
  s.dispose();
});
