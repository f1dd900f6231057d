/**
 * The model keeps its compiled code when a program drops every graph (kept-shapes.ts): in a child
 * process run with V8's deoptimization trace, graphs are built edge by edge against their order
 * and queried with every kind of reachability index until the hot functions are optimised; then
 * every graph is dropped and the collector runs twice. No hot function of the model may be thrown
 * away for "weak objects" (the hidden classes of the dropped objects dying). Without the kept
 * instances about forty functions are, the search and the order list among them.
 * The child polls V8's optimisation status (`--allow-natives-syntax`) so that the check is never
 * made before the code it guards exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const src = new URL('../../src/', import.meta.url).href;

/** Functions on the hot paths of addEdge and isReachable; each must be optimised before the drop. */
const HOT = ['forwardLevel', 'backwardLevel', 'insertRunAfter', 'addEdge'];
/**
 * Model functions the collection must not throw away (names as V8 prints them; distinctive ones,
 * so that Node's own functions, which may die with the module loader's objects, do not match).
 */
const KEPT = [
  ...HOT,
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
];

const CHILD = `
const { ComputeGraph } = await import(${JSON.stringify(src + 'index.js')});
const { forceReachabilityKindForTesting } = await import(${JSON.stringify(src + 'model/reachability.js')});
const { ChainSweep } = await import(${JSON.stringify(src + 'model/reach-search.js')});
const { OrderList } = await import(${JSON.stringify(src + 'model/order-list.js')});
const { DynamicOrder } = await import(${JSON.stringify(src + 'model/dynamic-order.js')});
const { mulberry32 } = await import(${JSON.stringify(src + 'util/random.js')});
const hot = [ChainSweep.prototype.forwardLevel, ChainSweep.prototype.backwardLevel, OrderList.prototype.insertRunAfter, DynamicOrder.prototype.addEdge];
const optimised = () => hot.every((f) => (%GetOptimizationStatus(f) & 16) !== 0);
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
}
let rounds = 0;
while (!optimised() && rounds < 200) {
  work(++rounds);
  await new Promise((resolve) => setTimeout(resolve, 5)); // lets finished compile jobs install
}
console.log('--- optimised ' + optimised() + ' after ' + rounds + ' rounds');
gc();
gc();
console.log('--- collected');
`;

test('dropping every graph keeps the compiled search, order list and edge code (no "weak objects" deoptimization)', { timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--trace-deopt', '--input-type=module', '-e', CHILD], {
    encoding: 'utf8',
    timeout: 110_000,
    maxBuffer: 64 << 20,
  });
  assert.equal(r.status, 0, r.stderr);
  const out = r.stdout;
  const drop = out.indexOf('--- optimised ');
  const done = out.indexOf('--- collected');
  assert.ok(drop >= 0 && done > drop, 'the child reached the drop and the collection');
  assert.match(out.slice(drop, done), /^--- optimised true/, `the hot functions (${HOT.join(', ')}) were optimised before the drop`);
  const thrown = [...out.slice(drop, done).matchAll(/SharedFunctionInfo ([^>]+)>.*reason: weak objects/g)].map((m) => m[1]!.trim());
  assert.deepEqual(
    thrown.filter((name) => KEPT.includes(name)),
    [],
    'model functions deoptimized when the graphs died',
  );
});
