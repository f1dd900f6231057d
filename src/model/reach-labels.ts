/**
 * Reachability labels for any DAG: what `ComputeGraph.isReachable` uses when a chain index would
 * be too large or too slow to build (many chains: wide hand-built graphs, captures of many streams).
 *
 * Why this algorithm. Exact answers at microseconds on million-node graphs of any shape need (1)
 * O(1) tests that settle most queries, both ways, and (2) a search for the rest that touches few
 * nodes. The tests read one row a node (by node id, so a query reads two rows before anything
 * else):
 *
 * - **Level** (longest path from a source): a → b needs level(a) < level(b). Settles the pairs in
 *   one layer of a layered graph, which a topological position alone cannot.
 * - **One chain**: with a chain cover (a capture's streams), two nodes on one chain are settled by
 *   their levels (they grow along a chain).
 * - **Chain hubs** ("3-hop" style, Jin et al., SIGMOD 2009): K long paths through the graph, and
 *   for each node v and chain c the earliest position of c that v reaches (`out`) and the latest
 *   position of c that reaches v (`in`). A chain is a hub that covers all time, not a point:
 *   `out(a, c) ≤ in(b, c)` proves a → b (a enters c no later than b leaves it), and since a → b
 *   implies `out(a, c) ≤ out(b, c)` and `in(a, c) ≤ in(b, c)`, either inequality failing proves
 *   a ↛ b. On graphs where work mixes (captures, graphs with locality) the positive test settles
 *   the pairs further apart than the mixing distance; the negative tests settle nodes whose
 *   reach is small or lies apart from b's. Each entry is 16 bits: positions on chains longer than
 *   65,520 are rounded (out up, in down), which keeps every test sound and only weakens it. Built
 *   only on graphs of MIN_HUB_LEVELS levels or more.
 * - **Search** for what the tests leave: two sweeps toward each other over chains and levels
 *   (reach-search.ts, over the layout of reach-layout.ts).
 *
 * Chains are picked greedily: the longest path among the nodes not yet on a chain, K times (one
 * longest-path pass over the DAG each). Long chains spread over the whole topological order, so
 * every pair has a chance of a hub between them.
 *
 * Cost: build O((n + m)·K) time; memory 8 + 4·K bytes a node for the rows (K = 8: 40), plus the
 * layout (reach-layout.ts: 32 bytes a node, and 8 an edge between chains at the nodes with
 * three or more such edges a direction); a search allocates
 * nothing after the first (a byte a node and 8 bytes a chain, and queues that grow to the largest
 * search so far). Measured figures: docs/model.md, "Reachability".
 */
import type { GraphStore } from './graph-store.js';
import { buildLayout, REC, type ChainCover, type ReachLayout } from './reach-layout.js';
import { ChainSweep } from './reach-search.js';

/** Chains used when the caller does not say (8: 32 bytes a node), on graphs of MIN_HUB_LEVELS levels or more. */
export const DEFAULT_LABEL_CHAINS = 8;
/**
 * Fewest levels (longest path + 1) for which the default builds chain hubs. A hub is a path, so on
 * a graph with few levels it is short and every pair is close: measured on 1M-node graphs of 2 to
 * 24 levels (layered, uniform random), the hub tests settled under 2 % of the queries the level and
 * chain tests left, while they cost a third of the build and 32 bytes a node; on captures (1,332
 * levels) and graphs with locality (74,000) they settle most of them.
 */
export const MIN_HUB_LEVELS = 64;
/** Largest stored chain position; larger positions are rounded so that they fit (0xffff is "none"). */
const MAX_STORED = 0xfff0;
const NONE_OUT = 0xffff;

/** How to build the labels; the defaults suit every graph, the options let tests reach every branch. */
export interface LabelOptions {
  /** Number of chain hubs (≥ 0; default DEFAULT_LABEL_CHAINS, or 0 below MIN_HUB_LEVELS levels). */
  readonly chains?: number;
  /** Largest chain position stored unrounded (default 65,520); small values test the rounding. */
  readonly maxStored?: number;
  /**
   * A cover of the graph by chains, indexed by node id (chain, position on it; reachability.ts
   * makes one): settles the pairs on one chain — a capture's ops on one stream — before any
   * search.
   */
  readonly cover?: ChainCover;
}

/** Answers reachability for one version of a graph (see the file comment). */
export class ReachLabels {
  /** The search's state, made by the first search. */
  private sweep: ChainSweep | null = null;

  private constructor(
    private readonly g: ReachLayout,
    /** Chain hubs built (fewer than asked when the graph has fewer nodes). */
    readonly chains: number,
    /** Per node id, 2 + K words: level, chain word (as in the layout's records), then the K `out` and K `in` entries, 16 bits each. */
    private readonly rows: Uint32Array,
    /** `rows` as 16-bit words. */
    private readonly rows16: Uint16Array,
  ) {}

  /** Builds the labels for `store` as it is now (the caller rebuilds after any change). */
  static build(store: GraphStore, options: LabelOptions = {}): ReachLabels {
    const { layout: g, all, level } = buildLayout(store, options.cover);
    const n = store.n;
    const { start, adj } = all;
    const levels = g.levelStart.length - 1;
    const k = Math.min(options.chains ?? (levels >= MIN_HUB_LEVELS ? DEFAULT_LABEL_CHAINS : 0), n);
    const maxStored = options.maxStored ?? MAX_STORED;
    const chainOf = new Int32Array(n).fill(-1);
    const chainPos = new Uint32Array(n);
    const quantum = pickChains(n, start, adj, k, maxStored, chainOf, chainPos);

    // One row a node holds all a query reads before it searches (one cache line or two); built by
    // position (the hubs' passes run in topological order), then stored by node id.
    const stride = 2 + k;
    const rows = new Uint32Array(n * stride);
    const rows16 = new Uint16Array(rows.buffer);
    for (let p = 0; p < n; p++) {
      rows[p * stride] = level[p]!;
      rows[p * stride + 1] = g.frec[REC * p + 1]!;
      // A loop, not fill(): a builtin call a node cost more than the rest of the loop.
      for (let i = 2 * p * stride + 4, end = i + k; i < end; i++) rows16[i] = NONE_OUT;
    }
    // out (at 2·stride·p + 4 + c): the minimum over successors, in reverse topological order; in
    // (k further on): pushed forward to successors, in topological order. Rounding commutes with
    // min and max, so both are computed on the stored (rounded) values.
    for (let p = n - 1; p >= 0; p--) {
      const row = 2 * p * stride + 4;
      for (let i = start[p]!; i < start[p + 1]!; i++) {
        const srow = 2 * adj[i]! * stride + 4;
        for (let c = 0; c < k; c++) {
          const r = rows16[srow + c]!;
          if (r < rows16[row + c]!) rows16[row + c] = r;
        }
      }
      const c = chainOf[p]!;
      if (c >= 0) rows16[row + c] = Math.ceil(chainPos[p]! / quantum[c]!);
    }
    for (let p = 0; p < n; p++) {
      const row = 2 * p * stride + 4 + k;
      const c = chainOf[p]!;
      if (c >= 0) rows16[row + c] = Math.floor(chainPos[p]! / quantum[c]!) + 1;
      for (let i = start[p]!; i < start[p + 1]!; i++) {
        const srow = 2 * adj[i]! * stride + 4 + k;
        for (let c = 0; c < k; c++) {
          const r = rows16[row + c]!;
          if (r > rows16[srow + c]!) rows16[srow + c] = r;
        }
      }
    }
    // The rows by node id, so that a query reads them before (and mostly instead of) mapping its
    // ids to positions.
    const pos = g.pos;
    if (pos === null) return new ReachLabels(g, k, rows, rows16);
    // Read in position order and written in id order: random writes, which nothing waits on,
    // cost less than random reads (measured: 60 against 170 ms at 1M nodes); and word by word, as
    // a subarray a node (a million views) cost more than the copy.
    const idAt = new Uint32Array(n);
    for (let v = 0; v < n; v++) idAt[pos[v]!] = v;
    const byId = new Uint32Array(n * stride);
    for (let p = 0; p < n; p++) {
      const x = p * stride;
      const y = idAt[p]! * stride;
      for (let i = 0; i < stride; i++) byId[y + i] = rows[x + i]!;
    }
    return new ReachLabels(g, k, byId, new Uint16Array(byId.buffer));
  }

  /** True if there is a path a → b (a === b included). Ids must exist. */
  reachable(a: number, b: number): boolean {
    if (a === b) return true;
    const rows = this.rows;
    const stride = 2 + this.chains;
    const ra = a * stride;
    const rb = b * stride;
    if (rows[ra]! >= rows[rb]!) return false;
    // One chain: positions on it grow with the topological position.
    if (rows[ra + 1] === rows[rb + 1]) return true;
    const t = this.test(2 * ra + 4, 2 * rb + 4);
    if (t !== UNKNOWN) return t === YES;
    const pos = this.g.pos;
    return (this.sweep ??= new ChainSweep(this.g)).reachable(pos === null ? a : pos[a]!, pos === null ? b : pos[b]!, rows[ra]!, rows[rb]!);
  }

  /** The O(K) tests on the rows at 16-bit offsets x and b (see the file comment): YES, NO or UNKNOWN. */
  private test(x: number, b: number): number {
    const k = this.chains;
    const r = this.rows16;
    for (let c = 0; c < k; c++) {
      const ox = r[x + c]!;
      const ib = r[b + k + c]!;
      if (ox < ib) return YES;
      if (r[b + c]! < ox || r[x + k + c]! > ib) return NO;
    }
    return UNKNOWN;
  }
}

const NO = 0;
const YES = 1;
const UNKNOWN = 2;

/**
 * Picks up to `k` chains greedily — each the longest path over nodes not yet on a chain — writing
 * each chain node's chain and position into `chainOf`/`chainPos`. Returns each chain's rounding
 * step (1 for chains of at most `maxStored` + 1 nodes).
 */
function pickChains(n: number, start: Uint32Array, adj: Uint32Array, k: number, maxStored: number, chainOf: Int32Array, chainPos: Uint32Array): Uint32Array {
  const quantum = new Uint32Array(k).fill(1);
  const len = new Uint32Array(n);
  const next = new Int32Array(n);
  for (let c = 0; c < k; c++) {
    let best = -1;
    for (let p = n - 1; p >= 0; p--) {
      if (chainOf[p]! >= 0) {
        len[p] = 0;
        continue;
      }
      let l = 0;
      let nx = -1;
      for (let i = start[p]!; i < start[p + 1]!; i++) {
        const x = adj[i]!;
        if (len[x]! > l) {
          l = len[x]!;
          nx = x;
        }
      }
      len[p] = l + 1;
      next[p] = nx;
      if (best < 0 || len[p]! > len[best]!) best = p;
    }
    if (best < 0) break;
    const last = len[best]! - 1;
    quantum[c] = last <= maxStored ? 1 : Math.ceil(last / maxStored);
    for (let p = best, i = 0; p >= 0; p = next[p]!, i++) {
      chainOf[p] = c;
      chainPos[p] = i;
    }
  }
  return quantum;
}
