/**
 * The reachability search keeps its compiled code from one graph shape to the next (reach-search.ts,
 * reach-layout.ts): in a child process run with V8's deoptimization trace, the search is optimised
 * on a capture of many streams, then queried on a random DAG and on a layered graph (random pairs,
 * then pairs found by walking). None of the search's functions may be thrown away on the later
 * graphs. Before the heads became int32 words and each node's room was made in one place, they
 * were: at a chain word or link of 2^31 or more met in a new place ("lost precision"), at the
 * first comparison with b's chain on a graph with plain chains, and at a growth of the next
 * level's array in a place that had not grown before ("insufficient type feedback"). Each cost a
 * new graph's first queries a recompile, run meanwhile in slower code (on a million-node layered
 * graph its first 1,500 reachable pairs at 13–19 µs instead of 5).
 *
 * A control — a function optimised on small integers, then given 2^31 — must be thrown away in the
 * same trace, so that the test fails, rather than passes, if V8 stops printing what it looks for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tracedChild } from './traced-child.js';

const src = new URL('../../src/', import.meta.url).href;

/** The search's functions (names as V8 prints them). */
const SEARCH = ['forwardLevel', 'backwardLevel', 'reachable', 'search', 'chainOnF', 'chainOnB', 'touchHeads', 'levelUp', 'levelDown', 'take', 'pushFar', 'reserve'];

const CHILD = `
const { ComputeGraph, StreamCapture, StreamId, CaptureEvent } = await import(${JSON.stringify(src + 'index.js')});
const { forceReachabilityKindForTesting } = await import(${JSON.stringify(src + 'model/reachability.js')});
const { ChainSweep } = await import(${JSON.stringify(src + 'model/reach-search.js')});
const { mulberry32 } = await import(${JSON.stringify(src + 'util/random.js')});
const r = mulberry32(11);
const hot = [ChainSweep.prototype.forwardLevel, ChainSweep.prototype.backwardLevel];
const optimised = () => hot.every((f) => (%GetOptimizationStatus(f) & 16) !== 0);
forceReachabilityKindForTesting('labels');
// A capture of 64 streams with joins: the search is optimised on it.
const cap = new StreamCapture();
const streams = Array.from({ length: 64 }, (_, i) => StreamId(i));
for (const s of streams) cap.beginCapture(s);
for (let i = 0; i < 20000; i++) {
  const s = streams[Math.floor(r() * 64)];
  if (r() < 0.05) {
    const t = streams[Math.floor(r() * 64)];
    if (t !== s) {
      cap.recordEvent(t, CaptureEvent(i & 1023));
      cap.waitEvent(s, CaptureEvent(i & 1023));
    }
  }
  cap.recordKernel(s, 'k', 1, 32, 0);
}
for (const s of streams.slice(1)) {
  cap.recordEvent(s, CaptureEvent(5000));
  cap.waitEvent(streams[0], CaptureEvent(5000));
}
const capture = cap.endCapture(streams[0]);
const ask = (g, as, bs) => { for (let i = 0; i < as.length; i++) g.isReachable(as[i], bs[i]); };
const randomPairs = (n, k) => [Array.from({ length: k }, () => Math.floor(r() * n)), Array.from({ length: k }, () => Math.floor(r() * n))];
let rounds = 0;
while (!optimised() && rounds < 100) {
  ask(capture, ...randomPairs(capture.nodeCount(), 5000));
  rounds++;
  await new Promise((resolve) => setTimeout(resolve, 5)); // lets finished compile jobs install
}
function control(x) { return (x & 0x7fffffff) + 1; }
%PrepareFunctionForOptimization(control);
control(1);
control(2);
%OptimizeFunctionOnNextCall(control);
control(3);
console.log('--- optimised ' + (optimised() && (%GetOptimizationStatus(control) & 16) !== 0) + ' after ' + rounds + ' rounds');
control(new Uint32Array([2 ** 31 + 5])[0]);
// A random DAG: plain chains.
const n = 20000;
const dag = new ComputeGraph();
for (let i = 0; i < n; i++) dag.addNode({ kind: 'empty' });
const edges = [];
for (let k = 0; k < 3 * n; k++) {
  const a = Math.floor(r() * n), b = Math.floor(r() * n);
  if (a !== b) edges.push([Math.min(a, b), Math.max(a, b)]);
}
dag.addEdges(edges);
ask(dag, ...randomPairs(n, 20000));
// Ten layers of 2,000, three edges a node into the next layer; random pairs, then walked ones.
const W = 2000, L = 10;
const layered = new ComputeGraph();
for (let i = 0; i < W * L; i++) layered.addNode({ kind: 'empty' });
const succ = Array.from({ length: W * L }, () => []);
const ledges = [];
for (let l = 0; l + 1 < L; l++) for (let i = 0; i < W; i++) {
  const picked = new Set();
  while (picked.size < 3) picked.add(Math.floor(r() * W));
  for (const j of picked) { ledges.push([l * W + i, (l + 1) * W + j]); succ[l * W + i].push((l + 1) * W + j); }
}
layered.addEdges(ledges);
ask(layered, ...randomPairs(W * L, 20000));
const as = [], bs = [];
while (as.length < 20000) {
  const a = Math.floor(r() * W * (L - 1));
  let v = a;
  for (let s = 0, steps = 1 + Math.floor(r() * 9); s < steps && succ[v].length > 0; s++) v = succ[v][Math.floor(r() * succ[v].length)];
  if (v !== a) (as.push(a), bs.push(v));
}
ask(layered, as, bs);
forceReachabilityKindForTesting(null);
console.log('--- done');
`;

test('the reachability search keeps its compiled code from a capture to a random DAG and a layered graph (no deoptimization)', { timeout: 120_000 }, () => {
  const out = tracedChild(CHILD, ['--allow-natives-syntax'], '--- optimised ', '--- done');
  assert.match(out, /^--- optimised true/, 'the search and the control were optimised on the capture');
  const thrown = [...out.matchAll(/bailout \(kind: deopt-[a-z]+, reason: ([^)]*)\): begin\. deoptimizing [^<]*<JSFunction ([^ >]+)/g)].map((m) => `${m[2]} (${m[1]})`);
  assert.ok(thrown.some((t) => t.startsWith('control ')), `the control was thrown away: the trace still says what the test looks for (${thrown.join(', ')})`);
  assert.deepEqual(
    thrown.filter((t) => SEARCH.includes(t.split(' ')[0]!)),
    [],
    'search functions deoptimized on the later graphs',
  );
});
