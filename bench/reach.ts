/**
 * The reachability rows of `bench:model`: graphs whose shape a chain index of ≤ 32 chains does not
 * cover (bench/reach-graphs.ts), each measured by bench/reach-rows.ts. Run alone with
 * `node dist/bench/reach.js [--queries N] [--sampled N]` (defaults: `REACH_QUERIES`, `REACH_SAMPLED`).
 */
import { fileURLToPath } from 'node:url';
import { captureGraph, layeredDag, randomDag } from './reach-graphs.js';
import { measureReach, reachTable, type ReachRow } from './reach-rows.js';
import { intFlag } from './args.js';
import type { ComputeGraph } from '../src/index.js';

/** The graphs, built one at a time (so only one is alive). */
const GRAPHS: readonly [string, () => ComputeGraph][] = [
  ['capture, 64 streams, 5 % joins', () => captureGraph(1_000_000, 64, 64)],
  ['capture, 1,024 streams, 5 % joins', () => captureGraph(1_000_000, 1024, 65)],
  ['random DAG, uniform edges', () => randomDag(1_000_000, 3_000_000, 0, 1)],
  ['random DAG, edges ~64 ranks forward', () => randomDag(1_000_000, 3_000_000, 64, 2)],
  ['10 layers × 100,000, 3 edges a node', () => layeredDag(10, 100_000, 0, 3, 3)],
  ['2 layers × 500,000, 2 edges a node', () => layeredDag(2, 500_000, 0, 4, 2)],
  ['2 layers × 1,000, complete', () => layeredDag(2, 1000, 1, 5)],
  ['2 layers × 1,000, 10 % density', () => layeredDag(2, 1000, 0.1, 6)],
];

/** Queries per set, and naive searches per set, that `bench:model` runs (a couple of minutes on 2 cores). */
export const REACH_QUERIES = 20_000;
export const REACH_SAMPLED = 50;

/** Measures every graph with `queries` queries per set and `sampled` naive searches per set. */
export function reachRows(queries: number, sampled: number): ReachRow[] {
  return GRAPHS.map(([name, make], i) => measureReach(name, make(), queries, sampled, 100 + i));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const queries = intFlag('bench:reach', process.argv, '--queries', REACH_QUERIES);
  const sampled = intFlag('bench:reach', process.argv, '--sampled', REACH_SAMPLED);
  console.log(reachTable(reachRows(queries, sampled)));
}
