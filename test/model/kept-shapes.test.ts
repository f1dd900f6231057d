/**
 * The model keeps its compiled code when a program drops every graph (kept-shapes.ts): in a child
 * process run with V8's deoptimization trace, graphs are built edge by edge against their order
 * and queried with every kind of reachability index, and captures recorded, until the hot
 * functions are optimised; then every graph and capture is dropped and the collector runs twice.
 * No model function may be thrown away for "weak objects" (the hidden classes of the dropped
 * objects dying): without the kept graph and indexes a dozen or more are, without the kept
 * capture the recording calls.
 *
 * The child polls V8's optimisation status (`--allow-natives-syntax`) so that the check is never
 * made before the code it guards exists, and a control — a function of its own, optimised over
 * objects of a class of its own that it then drops — must be thrown away in the same collection,
 * so that the test fails, rather than passes, if V8 stops printing what it looks for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tracedChild } from './traced-child.js';

const src = new URL('../../src/', import.meta.url).href;

/**
 * Model functions the collection must not throw away (names as V8 prints them; distinctive ones,
 * so that Node's own functions, which may die with the module loader's objects, do not match).
 */
const KEPT = [
  'forwardLevel',
  'backwardLevel',
  'insertRunAfter',
  'addEdge',
  'search',
  'chainOnF',
  'chainOnB',
  'pushFar',
  'heapTop',
  'relabel',
  'unlink',
  'refuse',
  'orderList',
  'appendEdge',
  'appendNode',
  'appendChecked',
  'findEdge',
  'readAhead',
  'nodesByOrd',
  'isReachable',
  'reachable',
  '#addOne',
  '#checkEdgeData',
  '#fresh',
  'recordKernel',
  'recordMemcpy',
  'recordMemset',
  'recordEvent',
  'waitEvent',
  '#wire',
  '#active',
];

const CHILD = `
const { ComputeGraph, StreamCapture, StreamId, CaptureEvent, MemcpyDir } = await import(${JSON.stringify(src + 'index.js')});
const { forceReachabilityKindForTesting } = await import(${JSON.stringify(src + 'model/reachability.js')});
const { ChainSweep } = await import(${JSON.stringify(src + 'model/reach-search.js')});
const { OrderList } = await import(${JSON.stringify(src + 'model/order-list.js')});
const { DynamicOrder } = await import(${JSON.stringify(src + 'model/dynamic-order.js')});
const { mulberry32 } = await import(${JSON.stringify(src + 'util/random.js')});
// The functions whose loss shows a missing kept instance first, each optimised before the drop.
const hot = [
  ChainSweep.prototype.forwardLevel,
  OrderList.prototype.insertRunAfter,
  DynamicOrder.prototype.addEdge,
  ComputeGraph.prototype.isReachable,
  ComputeGraph.prototype.addEdge,
  ...['recordKernel', 'recordMemcpy', 'recordEvent', 'waitEvent'].map((k) => StreamCapture.prototype[k]),
];
const optimised = () => hot.every((f) => (%GetOptimizationStatus(f) & 16) !== 0);
// The control: optimised code over objects of a class nothing else uses, which die at the drop.
class Probe {
  constructor(i) { this.a = i; this.b = 2 * i; }
}
function probeSum(ps) {
  let s = 0;
  for (let i = 0; i < ps.length; i++) s += ps[i].a + ps[i].b;
  return s;
}
let probes = Array.from({ length: 100 }, (_, i) => new Probe(i));
%PrepareFunctionForOptimization(probeSum);
probeSum(probes);
probeSum(probes);
%OptimizeFunctionOnNextCall(probeSum);
probeSum(probes);
function work(seed) {
  const r = mulberry32(seed);
  const n = 4000;
  for (const kind of ['labels', 'exits', 'chains']) {
    const g = new ComputeGraph();
    for (let i = 0; i < n; i++) g.addNode({ kind: 'empty', name: 'v' });
    // Random directions: about half the edges go against the order (searches, moves); some close cycles.
    for (let k = 0; k < 3 * n; k++) {
      try { g.addEdge(Math.floor(r() * n), Math.floor(r() * n)); } catch {}
    }
    forceReachabilityKindForTesting(kind);
    for (let q = 0; q < 20000; q++) g.isReachable(Math.floor(r() * n), Math.floor(r() * n));
    forceReachabilityKindForTesting(null);
  }
  // A capture of four streams with joins, then its graph's queries.
  const cap = new StreamCapture();
  const streams = [0, 1, 2, 3].map(StreamId);
  for (const s of streams) cap.beginCapture(s);
  for (let i = 0; i < 20000; i++) {
    const s = streams[i & 3];
    if (i % 20 === 0) {
      cap.recordEvent(streams[(i + 1) & 3], CaptureEvent(i & 255));
      cap.waitEvent(s, CaptureEvent(i & 255));
    }
    if (i % 3 === 0) cap.recordKernel(s, 'k', 128, 256, 0);
    else if (i % 3 === 1) cap.recordMemcpy(s, 'm', MemcpyDir.DeviceToDevice, 4096);
    else cap.recordMemset(s, 'z', 4096, 0);
  }
  const g = cap.endCapture(streams[0]);
  for (let q = 0; q < 20000; q++) g.isReachable(Math.floor(r() * g.nodeCount()), Math.floor(r() * g.nodeCount()));
}
let rounds = 0;
while (!optimised() && rounds < 200) {
  work(++rounds);
  await new Promise((resolve) => setTimeout(resolve, 5)); // lets finished compile jobs install
}
console.log('--- optimised ' + (optimised() && (%GetOptimizationStatus(probeSum) & 16) !== 0) + ' after ' + rounds + ' rounds');
probes = null;
gc();
gc();
console.log('--- collected');
`;

test('dropping every graph and capture keeps the compiled search, order list, edge and recording code (no "weak objects" deoptimization)', { timeout: 120_000 }, () => {
  const out = tracedChild(CHILD, ['--allow-natives-syntax', '--expose-gc'], '--- optimised ', '--- collected');
  assert.match(out, /^--- optimised true/, 'the hot functions and the control were optimised before the drop');
  const thrown = [...out.matchAll(/SharedFunctionInfo ([^>]+)>.*reason: weak objects/g)].map((m) => m[1]!.trim());
  assert.ok(thrown.includes('probeSum'), 'the control was thrown away: the trace still says what the test looks for');
  assert.deepEqual(
    thrown.filter((name) => KEPT.includes(name)),
    [],
    'model functions deoptimized when the graphs died',
  );
});
