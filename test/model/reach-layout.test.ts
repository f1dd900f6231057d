/**
 * The layout the reachability search reads (src/model/reach-layout.ts), record by record, against
 * the graph it was built from: each position's forward record must list exactly its successors on
 * other chains, ascending, and its backward record exactly its predecessors on other chains —
 * whether they sit in the record (one edge, stored twice, or two) or in a list after the records
 * (three or more) — with the exit and entry flags set exactly where there are such edges, and the
 * chain words of the two records equal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildLayout, edgeEnd, edgeStart, ENTRY, EXIT, NONE_POS, REC } from '../../src/model/reach-layout.js';
import { GraphStore } from '../../src/model/graph-store.js';
import { DynamicOrder } from '../../src/model/dynamic-order.js';
import { KIND_EMPTY } from '../../src/model/node.js';

/** A store of `n` stream-less nodes with `edges` (acyclic). */
function store(n: number, edges: readonly [number, number][]): GraphStore {
  const s = new GraphStore();
  for (let v = 0; v < n; v++) s.appendNode(KIND_EMPTY, -1, 0);
  const r = new DynamicOrder().addEdges(
    s,
    edges.map((e) => e[0]),
    edges.map((e) => e[1]),
  );
  assert.ok(r.ok, 'the generated edges are acyclic');
  return s;
}

/** Random DAGs whose nodes have from none to many edges each way (ranks shuffled, pairs drawn from lower to higher rank). */
const dags = fc
  .integer({ min: 1, max: 30 })
  .chain((n) => fc.tuple(fc.constant(n), fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 5 * n })))
  .map(([n, rank, pairs]) => {
    const seen = new Set<number>();
    const edges: [number, number][] = [];
    for (const [x, y] of pairs) {
      if (x === y) continue;
      const u = rank[Math.min(x, y)]!;
      const v = rank[Math.max(x, y)]!;
      if (!seen.has(u * n + v)) (seen.add(u * n + v), edges.push([u, v]));
    }
    return { n, edges };
  });

/** The edges a record lists, in the order stored (a lone edge appears twice). */
function listed(rec: Int32Array, p: number): number[] {
  const r = REC * p;
  const list: number[] = [];
  for (let i = edgeStart(rec, r); i < edgeEnd(rec, r); i++) list.push(rec[i]!);
  return list;
}

test('every record lists exactly its node’s edges to other chains, in order, and flags them', () => {
  fc.assert(
    fc.property(dags, ({ n, edges }) => {
      const s = store(n, edges);
      const { layout } = buildLayout(s);
      const pos = (v: number): number => (layout.pos === null ? v : layout.pos[v]!);
      const chain = (p: number): number => layout.frec[REC * p + 1]! & NONE_POS;
      const succ = Array.from({ length: n }, () => [] as number[]);
      const pred = Array.from({ length: n }, () => [] as number[]);
      for (const [u, v] of edges) {
        const pu = pos(u);
        const pv = pos(v);
        if (chain(pu) === chain(pv)) continue;
        succ[pu]!.push(pv);
        pred[pv]!.push(pu);
      }
      for (let p = 0; p < n; p++) {
        assert.equal(layout.brec[REC * p + 1], layout.frec[REC * p + 1], `position ${p}: one chain word both ways`);
        for (const [rec, want, flag, way] of [
          [layout.frec, succ[p]!.sort((a, b) => a - b), EXIT, 'forward'],
          [layout.brec, pred[p]!.sort((a, b) => a - b), ENTRY, 'backward'],
        ] as const) {
          const has = (rec[REC * p]! & flag) !== 0;
          assert.equal(has, want.length > 0, `position ${p}: ${way} flag`);
          if (!has) continue;
          const got = listed(rec, p);
          // A lone edge is stored twice; otherwise the list is the edges themselves.
          assert.deepEqual(want.length === 1 ? got.slice(1) : got, want, `position ${p}: ${way} edges`);
          if (want.length === 1) assert.equal(got.length, 2, `position ${p}: a lone ${way} edge fills the record`);
        }
      }
    }),
    { numRuns: 500 },
  );
});
