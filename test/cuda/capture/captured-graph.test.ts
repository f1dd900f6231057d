/**
 * Captured graphs and device scalars against the stand-in driver (fixtures/stand-in-driver.c with
 * events and copies: captures, launches and copies that do nothing): what a disposed graph still
 * answers, and the refusals of `DeviceScalar.set` under its own name, before any copy is made.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceScalar, DisposedError, InvalidArgumentError, captureGraph } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('captured-graph', ['STAND_IN_POOLS', 'STAND_IN_COPIES']);
const skip = lib === null && 'gcc is absent';
/** Copies that reached the stand-in's streams. */
const copies = lib?.counter('orders');

test('a disposed CapturedGraph still answers its getters and toString; its methods refuse', { skip }, () => {
  const s = Device.get(0).createStream();
  const graph = captureGraph(s, () => {});
  const template = graph.graph;
  graph.dispose();
  graph.dispose();
  assert.equal(graph.disposed, true);
  assert.equal(graph.graph, template, 'the template, disposed with it');
  assert.equal(graph.graph.disposed, true);
  assert.equal(typeof graph.nodeCount, 'number');
  assert.equal(graph.numReplays, 0);
  assert.match(String(graph), /^CapturedGraph\(/);
  refused(() => graph.launch(), DisposedError, 'CapturedGraph.launch');
  refused(() => graph.kernelNodes(), DisposedError, 'CapturedGraph.kernelNodes');
});

test('DeviceScalar.set refuses a disposed or wrong stream under its own name, copying nothing, keeping the value', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const t = d.createStream();
  const scalar = DeviceScalar.create(s, 'i32', 1);
  scalar.set(2);
  scalar.set(3, t);
  const before = copies!();
  t.dispose();
  refused(() => scalar.set(4, t), DisposedError, 'DeviceScalar.set', /Stream 0x[0-9a-f]+ has been disposed/);
  refused(() => scalar.set(4, null as never), InvalidArgumentError, 'DeviceScalar.set', /stream must be a Stream/);
  s.dispose();
  refused(() => scalar.set(4), DisposedError, 'DeviceScalar.set', /Stream 0x[0-9a-f]+ has been disposed/);
  assert.equal(copies!(), before, 'no copy made');
  assert.equal(scalar.value, 3, 'the value last set');
  scalar.dispose();
  refused(() => scalar.set(5), DisposedError, 'DeviceScalar.set', /DeviceBuffer/);
});
