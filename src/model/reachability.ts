/**
 * The reachability index behind `ComputeGraph.isReachable`: O(1) per query after one linear pass
 * when the graph has a cover by few chains (every capture of up to 32 streams), and reachability
 * labels with a pruned search otherwise (reach-labels.ts).
 *
 * Why this algorithm: a capture's streams are a chain cover of its DAG — consecutive ops on one
 * stream are joined by an edge — and there are few of them (k, typically ≤ 16). Number the nodes
 * of each chain 0, 1, 2, …; if a node reaches position p of a chain it reaches every later
 * position too (the chain is a path). So for each node v it suffices to store, for each chain c,
 * the earliest position of c that v reaches: `reach[v][c]`. Then
 *
 *     a reaches b  ⇔  reach[a][chain(b)] ≤ pos(b)
 *
 * and `reach` is computed in one pass in reverse topological order: reach[v] is the element-wise
 * minimum over v's successors, with v's own position on its own chain. Cost O((n + m)·k) time and
 * 4·k bytes a node (32 for the benchmark's 8 streams), against O(n + m) per query for a search.
 *
 * Chains: a node extends the chain of the previous node of its stream when an edge joins them (the
 * capture case); a node without a stream extends the chain of a stream-less predecessor that
 * still ends a chain; otherwise it starts a new chain. Any cover by paths is correct; fewer chains
 * only make the index smaller. A graph built by hand can need many chains (k ≥ its widest
 * antichain), and both the time and the memory grow with k: with k > 32 chains the chain index is
 * built only while (n + m)·k ≤ 2^24 (a small graph: the build stays under about 50 ms and 64 MiB).
 * Past that, a graph whose chains are mostly passed along (a capture of many streams) keeps rows
 * only at its chain exits (chain-exits.ts: still O(1)) while (exits + their edges)·k ≤ 2^24;
 * any other graph gets `ReachLabels`, whose size does not depend on the width.
 */
import type { GraphStore } from './graph-store.js';
import { nodesByOrd } from './schedule.js';
import { ReachLabels } from './reach-labels.js';
import { ChainExitIndex, countExits } from './chain-exits.js';

const UNREACHED = 0xffff_ffff;
const MAX_ENTRIES = 1 << 24;
const ALWAYS_OK_CHAINS = 32;

/** Which structure answers a graph's queries (see the file comment). */
export type ReachabilityKind = 'chains' | 'exits' | 'labels';

let entryLimit = MAX_ENTRIES;
let forced: ReachabilityKind | null = null;

/**
 * Test hook: the most chain-index work ((n + m)·k, or for the exit rows (exits + their edges)·k)
 * accepted when k > 32, `MAX_ENTRIES` by default. Returns the limit before. @internal
 */
export function setChainIndexLimitForTesting(limit: number): number {
  const before = entryLimit;
  entryLimit = limit;
  return before;
}

/**
 * Test hook: builds every index as `kind` (null: chosen by size, the default), so small graphs
 * test each structure. Returns the setting before. @internal
 */
export function forceReachabilityKindForTesting(kind: ReachabilityKind | null): ReachabilityKind | null {
  const before = forced;
  forced = kind;
  return before;
}

/** Answers `isReachable` for one version of a graph (see the file comment). */
export class ReachabilityIndex {
  /** Number of chains in the cover. */
  readonly chains: number;
  /** The structure that answers queries. */
  readonly kind: ReachabilityKind;
  /** The store's numbering when built (null: ord[i] = i). */
  private readonly ord: Uint32Array | null;
  private readonly chainOf: Uint32Array | null;
  private readonly posOf: Uint32Array | null;
  private readonly reach: Uint32Array | null;
  private readonly exits: ChainExitIndex | null;
  private readonly labels: ReachLabels | null;

  private constructor(
    store: GraphStore,
    chains: number,
    kind: ReachabilityKind,
    chainOf: Uint32Array | null,
    posOf: Uint32Array | null,
    reach: Uint32Array | null,
    exits: ChainExitIndex | null,
    labels: ReachLabels | null,
  ) {
    this.ord = store.ord;
    this.chains = chains;
    this.kind = kind;
    this.chainOf = chainOf;
    this.posOf = posOf;
    this.reach = reach;
    this.exits = exits;
    this.labels = labels;
  }

  /**
   * Builds the index for `store` as it is now (the caller rebuilds after any change). `kind`: the
   * structure to build whatever the graph's size (null: chosen by size; the default is the test
   * hook's setting, normally null).
   */
  static build(store: GraphStore, kind: ReachabilityKind | null = forced): ReachabilityIndex {
    const n = store.n;
    const byOrd = nodesByOrd(store);

    const chainOf = new Uint32Array(n);
    const posOf = new Uint32Array(n);
    const chainTail: number[] = [];
    const chainStreamless: boolean[] = [];
    const streamChain: number[] = new Array<number>(store.streamIds.length).fill(-1);
    for (let i = 0; i < n; i++) {
      const v = byOrd[i]!;
      const s = store.slot[v]!;
      let c = -1;
      if (s >= 0) {
        const sc = streamChain[s]!;
        if (sc >= 0 && store.hasEdge(chainTail[sc]!, v)) c = sc;
      } else {
        for (let e = store.firstIn[v]!; e !== 0; e = store.nextIn(e)) {
          const p = store.edgeFrom(e);
          const pc = chainOf[p]!;
          if (chainStreamless[pc] && chainTail[pc] === p) {
            c = pc;
            break;
          }
        }
      }
      if (c < 0) {
        c = chainTail.length;
        chainTail.push(v);
        chainStreamless.push(s < 0);
        if (s >= 0) streamChain[s] = c;
        posOf[v] = 0;
      } else {
        posOf[v] = posOf[chainTail[c]!]! + 1;
        chainTail[c] = v;
      }
      chainOf[v] = c;
    }
    const k = chainTail.length;
    const chainsFit = k <= ALWAYS_OK_CHAINS || (n + store.m) * k <= entryLimit;
    if (kind === 'labels' || (kind === null && !chainsFit)) {
      if (kind === null) {
        const { exits, exitEdges } = countExits(store, chainOf);
        if ((exits + exitEdges) * k <= entryLimit) return new ReachabilityIndex(store, k, 'exits', null, null, null, ChainExitIndex.build(store, byOrd, k, chainOf, posOf, exits), null);
      }
      return new ReachabilityIndex(store, k, 'labels', null, null, null, null, ReachLabels.build(store, { cover: { chainOf, posOf } }));
    }
    if (kind === 'exits') return new ReachabilityIndex(store, k, 'exits', null, null, null, ChainExitIndex.build(store, byOrd, k, chainOf, posOf, countExits(store, chainOf).exits), null);

    const reach = new Uint32Array(n * k).fill(UNREACHED);
    for (let i = n - 1; i >= 0; i--) {
      const v = byOrd[i]!;
      const row = v * k;
      for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) {
        const srow = store.edgeTo(e) * k;
        for (let c = 0; c < k; c++) {
          const r = reach[srow + c]!;
          if (r < reach[row + c]!) reach[row + c] = r;
        }
      }
      reach[row + chainOf[v]!] = posOf[v]!;
    }
    return new ReachabilityIndex(store, k, 'chains', chainOf, posOf, reach, null, null);
  }

  /** True if there is a path a → b (a === b included). Ids must exist. */
  reachable(a: number, b: number): boolean {
    if (a === b) return true;
    // The labels test levels first, which orders the pair as the store's order would (one read less).
    if (this.labels !== null) return this.labels.reachable(a, b);
    const ord = this.ord;
    if (ord === null ? a > b : ord[a]! > ord[b]!) return false;
    if (this.reach !== null) return this.reach[a * this.chains + this.chainOf![b]!]! <= this.posOf![b]!;
    return this.exits !== null ? this.exits.reachable(a, b) : this.labels!.reachable(a, b);
  }
}
