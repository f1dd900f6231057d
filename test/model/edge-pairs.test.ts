/**
 * The store's edge pairs (edge-pairs.ts): whatever edges are appended, popped, copied, cut to fit
 * or grown, walking the pairs' lists must give exactly a reference's edges, each end read from the
 * right half of the right pair, and `pairEnds` the edges' ends in edge order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GraphStore } from '../../src/model/graph-store.js';
import { pairEnds } from '../../src/model/edge-pairs.js';
import { KIND_EMPTY } from '../../src/model/node.js';

/** Every edge the store's lists hold, as "u>v#e", from the out-lists and from the in-lists, sorted. */
function walked(s: GraphStore): [string[], string[]] {
  const out: string[] = [];
  const inn: string[] = [];
  for (let u = 0; u < s.n; u++) for (let e = s.firstOut[u]!; e !== 0; e = s.outs[2 * e + 1]!) out.push(`${u}>${s.outs[2 * e]}#${e}`);
  for (let v = 0; v < s.n; v++) for (let e = s.firstIn[v]!; e !== 0; e = s.ins[2 * e + 1]!) inn.push(`${s.ins[2 * e]}>${v}#${e}`);
  return [out.sort(), inn.sort()];
}

test('edge pairs: the lists walk to exactly the appended edges through growth, pops, clones and cuts', () => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 40 }), fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat(9)), { maxLength: 300 }), (n, ops) => {
      let s = new GraphStore();
      for (let i = 0; i < n; i++) s.appendNode(KIND_EMPTY, -1, 0);
      const ref: [number, number][] = [];
      for (const [a, b, op] of ops) {
        const u = Math.min(a % n, b % n);
        const v = Math.max(a % n, b % n);
        if (op === 0 && ref.length > 0) {
          s.popEdge();
          ref.pop();
        } else if (op === 1) s = s.clone();
        else if (op === 2) s.shrinkToFit();
        else if (u !== v && !s.hasEdge(u, v)) {
          s.appendEdge(u, v);
          ref.push([u, v]);
        }
      }
      assert.equal(s.m, ref.length);
      const expected = ref.map(([u, v], i) => `${u}>${v}#${i + 1}`).sort();
      const [out, inn] = walked(s);
      assert.deepEqual(out, expected);
      assert.deepEqual(inn, expected);
      assert.deepEqual([...pairEnds(s.ins, s.m)], ref.map(([u]) => u));
      assert.deepEqual([...pairEnds(s.outs, s.m)], ref.map(([, v]) => v));
      for (let e = 1; e <= s.m; e++) {
        assert.equal(s.edgeFrom(e), ref[e - 1]![0]);
        assert.equal(s.edgeTo(e), ref[e - 1]![1]);
        assert.equal(s.findEdge(ref[e - 1]![0], ref[e - 1]![1]), e);
      }
    }),
    { numRuns: 200 },
  );
});
