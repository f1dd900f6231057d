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
 * every pair has a chance of a hub between them. K is 8, or 16 where a sample of 2,048 random
 * pairs shows the first 8 leave 5 % of them or more to the search (a capture of 1,024 streams:
 * 11 %; a graph with locality: 0.2 %): more hubs are worth their build time and memory only where
 * they settle what the search would otherwise take.
 *
 * Cost: build O((n + m)·K) time; memory 8 + 4·K bytes a node for the rows (K = 8: 40; 16: 72), plus the
 * layout (reach-layout.ts: 24 bytes a node, 8 an edge between chains); a search allocates
 * nothing after the first (a byte a node and 8 bytes a chain, and queues that grow to the largest
 * search so far). Measured figures: docs/model.md, "Reachability".
 */
import type { GraphStore } from './graph-store.js';
import { buildLayout, HEAD, type ChainCover, type ReachLayout } from './reach-layout.js';
import { ChainSweep } from './reach-search.js';
import { mulberry32 } from '../util/random.js';

/** Chains used when the caller does not say (8: 32 bytes a node), on graphs of MIN_HUB_LEVELS levels or more. */
export const DEFAULT_LABEL_CHAINS = 8;
/**
 * Chains used instead when a sample of pairs shows the first DEFAULT_LABEL_CHAINS leave UPGRADE_AT
 * of them or more to the search (16: 64 bytes a node). Measured on the 1M-node capture of
 * 1,024 streams: 12 % of random pairs searched with 8 hubs, a quarter fewer with 16, and the
 * query mean down by a quarter; graphs that 8 hubs settle (locality: under 1 % left) keep 8.
 */
export const MORE_LABEL_CHAINS = 16;
/** Share of the sampled pairs left to the search from which MORE_LABEL_CHAINS are built. */
export const UPGRADE_AT = 0.05;
/** Pairs sampled to choose the number of hubs (random positions; a fixed seed, so builds are repeatable). */
const SAMPLE_PAIRS = 2048;
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
  /**
   * Number of chain hubs (≥ 0). Default: none below MIN_HUB_LEVELS levels, else
   * DEFAULT_LABEL_CHAINS, or MORE_LABEL_CHAINS when a sample of pairs shows they pay (UPGRADE_AT).
   */
  readonly chains?: number;
  /** Share of sampled pairs left open from which more hubs are built (default UPGRADE_AT; 0: always, Infinity: never, for tests). */
  readonly upgradeAt?: number;
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
    /** Per node id, 2 + K words: level, chain word (as in the heads), then the K `out` and K `in` entries, 16 bits each. */
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
    const maxStored = options.maxStored ?? MAX_STORED;
    const chainOf = new Int32Array(n).fill(-1);
    const chainPos = new Uint32Array(n);
    const adaptive = options.chains === undefined && levels >= MIN_HUB_LEVELS;
    const asked = Math.min(options.chains ?? (adaptive ? DEFAULT_LABEL_CHAINS : 0), n);
    const quantum = new Uint32Array(adaptive ? Math.max(asked, Math.min(MORE_LABEL_CHAINS, n)) : asked);
    const rows = hubRows(level, g.fhead, asked);
    let k = pickChains(n, start, adj, 0, asked, maxStored, chainOf, chainPos, quantum);
    hubPasses(new Uint16Array(rows.buffer), 2 * (2 + asked), 4, 4 + asked, 0, k, start, adj, chainOf, chainPos, quantum);
    let extra: Uint16Array | null = null;
    if (adaptive && k === asked && quantum.length > k && openShare(rows, asked, n) >= (options.upgradeAt ?? UPGRADE_AT)) {
      // More hubs: the greedy picks go on where they stopped, and only the new hubs' entries are
      // computed, into rows of their own (rows as wide as 16 hubs from the start slowed the first
      // hubs' passes on graphs that keep 8; widening them after cost a copy and 72 MB more).
      const more = quantum.length;
      k = pickChains(n, start, adj, asked, more, maxStored, chainOf, chainPos, quantum);
      const w = k - asked;
      extra = new Uint16Array(n * 2 * w);
      for (let p = 0; p < n; p++) for (let i = 2 * w * p, end = i + w; i < end; i++) extra[i] = NONE_OUT;
      // Hub c's out entry at 2w·p + c − asked, its in entry w further on.
      hubPasses(extra, 2 * w, -asked, w - asked, asked, k, start, adj, chainOf, chainPos, quantum);
    }
    // Hubs the graph had no nodes for keep their slots ("none" entries: they settle nothing).
    if (extra === null) k = asked;
    // The rows by node id, so that a query reads them before (and mostly instead of) mapping its
    // ids to positions.
    const byId = extra === null && g.pos === null ? rows : byIdRows(rows, asked, extra, k, g.pos);
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
    const t = hubTest(this.rows16, this.chains, this.chains, 2 * ra + 4, 2 * rb + 4);
    if (t !== UNKNOWN) return t === YES;
    const pos = this.g.pos;
    return (this.sweep ??= new ChainSweep(this.g)).reachable(pos === null ? a : pos[a]!, pos === null ? b : pos[b]!, rows[ra]!, rows[rb]!);
  }
}

const NO = 0;
const YES = 1;
const UNKNOWN = 2;

/**
 * The hub tests (see the file comment) of the first k hubs on the rows (as 16-bit words) at
 * 16-bit offsets x and b, whose `in` entries lie `span` words after their `out` entries: YES, NO
 * or UNKNOWN.
 */
function hubTest(r: Uint16Array, k: number, span: number, x: number, b: number): number {
  for (let c = 0; c < k; c++) {
    const ox = r[x + c]!;
    const ib = r[b + span + c]!;
    if (ox < ib) return YES;
    if (r[b + c]! < ox || r[x + span + c]! > ib) return NO;
  }
  return UNKNOWN;
}

/**
 * Rows by position for k hubs: level and chain word set, every `out` entry "none" and every `in`
 * entry 0 (nothing reaches the node) until hubPasses fills them.
 */
function hubRows(level: Uint32Array, fhead: Uint32Array, k: number): Uint32Array {
  const n = level.length;
  const stride = 2 + k;
  const rows = new Uint32Array(n * stride);
  const rows16 = new Uint16Array(rows.buffer);
  for (let p = 0; p < n; p++) {
    rows[p * stride] = level[p]!;
    rows[p * stride + 1] = fhead[HEAD * p + 2]!;
    // A loop, not fill(): a builtin call a node cost more than the rest of the function.
    for (let i = 2 * p * stride + 4, end = i + k; i < end; i++) rows16[i] = NONE_OUT;
  }
  return rows;
}

/**
 * Rows by node id (`pos`: id → position; null: the same) of k hubs, from rows by position of `k0`
 * hubs and, when k > k0, the entries of hubs k0 … k − 1 by position (`extra`: their out entries,
 * then their in entries, 2·(k − k0) 16-bit words a position).
 */
function byIdRows(rows: Uint32Array, k0: number, extra: Uint16Array | null, k: number, pos: Uint32Array | null): Uint32Array {
  const n = rows.length / (2 + k0);
  const to = new Uint32Array(n * (2 + k));
  // Read in position order and written in id order: random writes, which nothing waits on, cost
  // less than random reads (measured: 60 against 170 ms at 1M nodes). Plain loops: a subarray a
  // node (a million views) cost more than the copy.
  const idAt = new Uint32Array(n);
  for (let v = 0; v < n; v++) idAt[pos === null ? v : pos[v]!] = v;
  if (extra === null) {
    const stride = 2 + k0;
    for (let p = 0; p < n; p++) {
      const x = p * stride;
      const y = idAt[p]! * stride;
      for (let i = 0; i < stride; i++) to[y + i] = rows[x + i]!;
    }
    return to;
  }
  const w = k - k0;
  if (k0 % 2 === 0 && w % 2 === 0) {
    // Every block starts on a 32-bit word: copied by words, half the stores (measured: the
    // 16-bit copy took 250 ms at 1M nodes).
    const x32 = new Uint32Array(extra.buffer, extra.byteOffset, extra.length / 2);
    const s0 = 2 + k0;
    const s1 = 2 + k;
    const h0 = k0 / 2;
    const hw = w / 2;
    for (let p = 0; p < n; p++) {
      const x = p * s0;
      const y = idAt[p]! * s1;
      const e = p * w;
      to[y] = rows[x]!;
      to[y + 1] = rows[x + 1]!;
      for (let i = 0; i < h0; i++) {
        to[y + 2 + i] = rows[x + 2 + i]!;
        to[y + 2 + k / 2 + i] = rows[x + 2 + h0 + i]!;
      }
      for (let i = 0; i < hw; i++) {
        to[y + 2 + h0 + i] = x32[e + i]!;
        to[y + 2 + k / 2 + h0 + i] = x32[e + hw + i]!;
      }
    }
    return to;
  }
  const a = new Uint16Array(rows.buffer);
  const b = new Uint16Array(to.buffer);
  for (let p = 0; p < n; p++) {
    const x = 2 * p * (2 + k0);
    const y = 2 * idAt[p]! * (2 + k);
    const e = 2 * w * p;
    for (let i = 0; i < 4; i++) b[y + i] = a[x + i]!;
    for (let c = 0; c < k0; c++) {
      b[y + 4 + c] = a[x + 4 + c]!;
      b[y + 4 + k + c] = a[x + 4 + k0 + c]!;
    }
    for (let c = 0; c < w; c++) {
      b[y + 4 + k0 + c] = extra[e + c]!;
      b[y + 4 + k + k0 + c] = extra[e + w + c]!;
    }
  }
  return to;
}

/**
 * Fills hubs c0 … c1 − 1 in the 16-bit words `r`, `stride` words a position: hub c's out entry of
 * position p at stride·p + outAt + c, its in entry at stride·p + inAt + c. out: the minimum over
 * successors, in reverse topological order; in: pushed forward to successors, in topological
 * order. Rounding commutes with min and max, so both are computed on the stored (rounded) values.
 */
function hubPasses(r: Uint16Array, stride: number, outAt: number, inAt: number, c0: number, c1: number, start: Uint32Array, adj: Uint32Array, chainOf: Int32Array, chainPos: Uint32Array, quantum: Uint32Array): void {
  const n = start.length - 1;
  for (let p = n - 1; p >= 0; p--) {
    const row = stride * p + outAt;
    for (let i = start[p]!; i < start[p + 1]!; i++) {
      const srow = stride * adj[i]! + outAt;
      for (let c = c0; c < c1; c++) {
        const x = r[srow + c]!;
        if (x < r[row + c]!) r[row + c] = x;
      }
    }
    const c = chainOf[p]!;
    if (c >= c0 && c < c1) r[row + c] = Math.ceil(chainPos[p]! / quantum[c]!);
  }
  for (let p = 0; p < n; p++) {
    const row = stride * p + inAt;
    const c = chainOf[p]!;
    if (c >= c0 && c < c1) r[row + c] = Math.floor(chainPos[p]! / quantum[c]!) + 1;
    for (let i = start[p]!; i < start[p + 1]!; i++) {
      const srow = stride * adj[i]! + inAt;
      for (let c = c0; c < c1; c++) {
        const x = r[row + c]!;
        if (x > r[srow + c]!) r[srow + c] = x;
      }
    }
  }
}

/**
 * The share of SAMPLE_PAIRS random pairs of positions that the level, chain and hub tests on rows
 * by position of k hubs leave to the search.
 */
function openShare(rows: Uint32Array, k: number, n: number): number {
  const rows16 = new Uint16Array(rows.buffer);
  const stride = 2 + k;
  const rand = mulberry32(0x5eed);
  let open = 0;
  for (let i = 0; i < SAMPLE_PAIRS; i++) {
    const ra = Math.floor(rand() * n) * stride;
    const rb = Math.floor(rand() * n) * stride;
    if (rows[ra]! < rows[rb]! && rows[ra + 1] !== rows[rb + 1] && hubTest(rows16, k, k, 2 * ra + 4, 2 * rb + 4) === UNKNOWN) open++;
  }
  return open / SAMPLE_PAIRS;
}

/**
 * Picks chains c0 … c1 − 1 greedily — each the longest path over nodes not yet on a chain —
 * writing each chain node's chain and position into `chainOf`/`chainPos` and each chain's rounding
 * step into `quantum` (1 for chains of at most `maxStored` + 1 nodes). Returns c0 + the number of
 * chains picked (fewer when every node is on one).
 */
function pickChains(n: number, start: Uint32Array, adj: Uint32Array, c0: number, c1: number, maxStored: number, chainOf: Int32Array, chainPos: Uint32Array, quantum: Uint32Array): number {
  const len = new Uint32Array(n);
  const next = new Int32Array(n);
  for (let c = c0; c < c1; c++) {
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
    if (best < 0) return c;
    const last = len[best]! - 1;
    quantum[c] = last <= maxStored ? 1 : Math.ceil(last / maxStored);
    for (let p = best, i = 0; p >= 0; p = next[p]!, i++) {
      chainOf[p] = c;
      chainPos[p] = i;
    }
  }
  return c1;
}
