/**
 * The dynamic topological order (dynamic-order.ts over order-list.ts) and the edge set behind
 * `findEdge` (edge-set.ts), against a naive reference: adjacency sets, cycles found by search.
 * Edges come in any order — random, against the order, repeated, closing cycles — one at a time
 * and in batches; after every step the store's order must be a topological order of exactly the
 * reference's edges, and a refused edge must change nothing at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GraphStore } from '../../src/model/graph-store.js';
import { DynamicOrder } from '../../src/model/dynamic-order.js';
import { OrderList } from '../../src/model/order-list.js';
import { KIND_EMPTY } from '../../src/model/node.js';
import { pairEnds } from '../../src/model/edge-pairs.js';

function storeOf(n: number): GraphStore {
  const s = new GraphStore();
  for (let i = 0; i < n; i++) s.appendNode(KIND_EMPTY, -1, 0);
  return s;
}

/** True if `to` is reachable from `from` in the reference (`succ`: successor sets). */
function reaches(succ: Set<number>[], from: number, to: number): boolean {
  const seen = new Set([from]);
  const stack = [from];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x === to) return true;
    for (const y of succ[x]!) if (!seen.has(y)) (seen.add(y), stack.push(y));
  }
  return false;
}

/**
 * Everything a refused edge must leave as it was: the edges, the order, and the list's links and
 * labels if it had one (a refusal may turn id order into a list holding the same order).
 */
function snapshot(s: GraphStore, withList: boolean): string {
  const list = s.order;
  const links = !withList || list === null ? '' : `${list.head} ${list.tail} ${Array.from({ length: s.n }, (_, v) => list.next(v))} ${Array.from({ length: s.n }, (_, v) => list.labelOf(v))}`;
  const ord = s.ord ?? Uint32Array.from({ length: s.n }, (_, i) => i);
  return `${s.m} ${[...pairEnds(s.ins, s.m)]} ${[...pairEnds(s.outs, s.m)]} ${[...ord]} ${links}`;
}

/** The store's order is a permutation, its list is consistent, and every reference edge goes forward in it. */
function checkOrder(s: GraphStore, succ: Set<number>[]): void {
  const n = s.n;
  const list = s.order;
  if (list !== null) {
    let count = 0;
    let last = -1;
    let prev = -1;
    for (let v = list.head; v >= 0; v = list.next(v)) {
      assert.equal(list.prev(v), prev, `list: prev of ${v}`);
      assert.ok(list.labelOf(v) > last, `list: labels grow at ${v}`);
      last = list.labelOf(v);
      prev = v;
      count++;
      assert.ok(count <= n, 'list: no loop');
    }
    assert.equal(list.tail, prev);
    assert.equal(count, n, 'list: every node once');
  }
  const ord = s.ord ?? Uint32Array.from({ length: n }, (_, i) => i);
  assert.deepEqual([...ord].sort((a, b) => a - b), [...Array(n).keys()], 'ord is a permutation');
  let m = 0;
  for (let u = 0; u < n; u++) {
    for (const v of succ[u]!) {
      assert.ok(ord[u]! < ord[v]!, `edge ${u} → ${v} goes forward`);
      assert.ok(s.hasEdge(u, v), `edge ${u} → ${v} found`);
      m++;
    }
  }
  assert.equal(s.m, m, 'edge count');
}

const edgeSeq = (n: number, maxLength: number) => fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength, size: 'max' });

test('addEdge in any order refuses exactly the cycles, keeps a topological order, and a refusal changes nothing', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40 }).chain((n) => fc.tuple(fc.constant(n), edgeSeq(n, 300), fc.boolean())),
      ([n, pairs, reversed]) => {
        const s = storeOf(n);
        const order = new DynamicOrder();
        const succ = Array.from({ length: n }, () => new Set<number>());
        // Half the runs flip each pair to go from the larger id to the smaller: every new edge disagrees with id order.
        for (const [a, b] of pairs) {
          const [u, v] = reversed ? [Math.max(a, b), Math.min(a, b)] : [a, b];
          const expected = u === v || reaches(succ, v, u) ? 'cycle' : succ[u]!.has(v) ? 'duplicate' : 'added';
          const hadList = s.order !== null;
          const before = snapshot(s, hadList);
          assert.equal(order.addEdge(s, u, v), expected, `${u} → ${v}`);
          if (expected === 'added') succ[u]!.add(v);
          else assert.equal(snapshot(s, hadList), before, `refused or repeated ${u} → ${v} changed the store`);
          checkOrder(s, succ);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('single edges and batches interleaved: a batch that closes a cycle adds nothing; the order stays topological', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 30 }).chain((n) => fc.tuple(fc.constant(n), fc.array(fc.tuple(fc.boolean(), edgeSeq(n, 8)), { maxLength: 30 }))),
      ([n, steps]) => {
        const s = storeOf(n);
        const order = new DynamicOrder();
        const succ = Array.from({ length: n }, () => new Set<number>());
        for (const [batch, pairs] of steps) {
          if (batch) {
            const trial = succ.map((x) => new Set(x));
            for (const [u, v] of pairs) trial[u]!.add(v);
            const cyclic = pairs.some(([u, v]) => u === v || reaches(trial, v, u));
            const hadList = s.order !== null;
            const before = snapshot(s, hadList);
            const r = order.addEdges(
              s,
              pairs.map((p) => p[0]),
              pairs.map((p) => p[1]),
            );
            assert.equal(r.ok, !cyclic);
            if (r.ok) for (const [u, v] of pairs) succ[u]!.add(v);
            else assert.equal(snapshot(s, hadList), before, 'a refused batch changed the store');
          } else {
            for (const [u, v] of pairs) {
              const expected = u === v || reaches(succ, v, u) ? 'cycle' : succ[u]!.has(v) ? 'duplicate' : 'added';
              assert.equal(order.addEdge(s, u, v), expected);
              if (expected === 'added') succ[u]!.add(v);
            }
          }
          checkOrder(s, succ);
          // Nodes appended after the order became a list go at its end.
          if (s.n < 40 && pairs.length % 3 === 0) {
            s.appendNode(KIND_EMPTY, -1, 0);
            succ.push(new Set());
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('adding a chain from its end, edge by edge against id order, does work linear in its length', () => {
  // Pearce–Kelly renumbered the whole chain built so far on every edge: quadratic work.
  const n = 20_000;
  const s = storeOf(n);
  const order = new DynamicOrder();
  for (let i = 1; i < n; i++) assert.equal(order.addEdge(s, i, i - 1), 'added');
  assert.ok(order.scanned <= 8 * n, `searches took ${order.scanned} steps for ${n - 1} edges`);
  const ord = s.ord!;
  for (let i = 1; i < n; i++) assert.ok(ord[i]! < ord[i - 1]!);
  assert.equal(order.addEdge(s, 0, n - 1), 'cycle');
});

test('the order list keeps labels growing through thousands of insertions at one place and at the front', () => {
  const n = 6000;
  const list = new OrderList([0, 1], 2, n);
  // Every insertion right after node 0 halves the same gap: relabelling must spread it out again.
  for (let x = 2; x < n / 2; x++) list.insertAfter(x, 0);
  for (let x = n / 2; x < n; x++) list.insertAfter(x, -1);
  const seen: number[] = [];
  let last = 0;
  for (let v = list.head; v >= 0; v = list.next(v)) {
    assert.ok(list.labelOf(v) > last, `label of ${v}`);
    last = list.labelOf(v);
    seen.push(v);
  }
  assert.equal(seen.length, n);
  assert.deepEqual(seen.slice(0, 3), [n - 1, n - 2, n - 3]);
  assert.deepEqual(seen.slice(n / 2, n / 2 + 2), [0, n / 2 - 1]);
  assert.equal(seen[n - 1], 1);
  assert.ok(list.relabelled > 0, 'relabelling ran');
});

test('findEdge answers like the lists before and after it builds the edge set, through growth and removed edges', () => {
  fc.assert(
    fc.property(fc.integer({ min: 20, max: 90 }), fc.nat(), (n, seed) => {
      const s = storeOf(n);
      const order = new DynamicOrder();
      const succ = Array.from({ length: n }, () => new Set<number>());
      let x = seed | 1;
      const next = (k: number): number => {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        return x % k;
      };
      for (let round = 0; round < 6; round++) {
        // Dense edges (forward in id order, so no cycles), then many lookups: walking crosses the threshold.
        for (let i = 0; i < n * 4; i++) {
          const a = next(n);
          const b = next(n);
          if (a === b) continue;
          const [u, v] = [Math.min(a, b), Math.max(a, b)];
          order.addEdge(s, u, v);
          succ[u]!.add(v);
        }
        for (let q = 0; q < 3000; q++) {
          const u = next(n);
          const v = next(n);
          assert.equal(s.hasEdge(u, v), succ[u]!.has(v), `hasEdge(${u}, ${v})`);
        }
        // A refused batch appends then removes edges: the set must not keep them.
        const r = order.addEdges(s, [0, n - 1], [n - 1, 0]);
        assert.equal(r.ok, false);
        assert.equal(s.hasEdge(n - 1, 0), false);
      }
      checkOrder(s, succ);
    }),
    { numRuns: 40 },
  );
  // A complete DAG looked up often enough does build the set.
  const s = storeOf(200);
  const order = new DynamicOrder();
  for (let u = 0; u < 200; u++) for (let v = u + 1; v < 200; v++) order.addEdge(s, u, v);
  for (let u = 0; u < 200; u++) for (let v = 0; v < 200; v++) assert.equal(s.hasEdge(u, v), u < v);
  assert.ok(s.edgeSetBytes() > 0, 'the edge set was built');
});

test('the searches leave out nodes they would never take, and the block still goes after the latest ancestor left out', () => {
  // Id order v=0, b=1, x=2, u=3; edges v → x and b → u; then u → v. The forward search queues x;
  // the backward search meets b, an ancestor of u before x, and leaves it out (the forward search
  // would reach x first and stop there). The block [u, v] must still go after b, or b → u would
  // point backwards.
  const s = storeOf(4);
  const order = new DynamicOrder();
  assert.equal(order.addEdge(s, 0, 2), 'added');
  assert.equal(order.addEdge(s, 1, 3), 'added');
  assert.equal(order.addEdge(s, 3, 0), 'added');
  assert.deepEqual([...s.ord!], [2, 0, 3, 1], 'order b, u, v, x');
  assert.equal(order.queued, 3, 'v, u and x queued; b left out');
  checkOrder(s, [new Set([2]), new Set([3]), new Set(), new Set([0])]);
  // The edge closing a cycle through the node left out is still refused, and changes nothing.
  const before = snapshot(s, true);
  assert.equal(order.addEdge(s, 2, 1), 'cycle');
  assert.equal(snapshot(s, true), before);
});

test('a list labelled at once leaves gaps that take many insertions at one place before a relabelling', () => {
  const n = 1000;
  const list = new OrderList(Array.from({ length: n }, (_, i) => i), n, n);
  // Move nodes 1..30 one by one to just after node 0: each halves the gap after 0.
  for (let x = 1; x <= 30; x++) {
    list.unlink(x);
    list.insertAfter(x, 0);
  }
  assert.equal(list.relabelled, 0, 'no relabelling within 30 halvings');
  const seen: number[] = [];
  for (let v = list.head; v >= 0; v = list.next(v)) seen.push(v);
  assert.deepEqual(seen.slice(0, 4), [0, 30, 29, 28]);
  // A list of over a million nodes is spread over half the labels: appends still find room.
  const big = 2 ** 20 + 5;
  const wide = new OrderList(Array.from({ length: big }, (_, i) => i), big, big + 1000);
  assert.ok(wide.labelOf(big - 1) <= 2 ** 51, 'the last label is in the lower half');
  for (let x = big; x < big + 1000; x++) wide.append(x);
  assert.equal(wide.relabelled, 0, 'appends relabel nothing');
  assert.ok(wide.labelOf(big + 999) > wide.labelOf(big - 1));
});
