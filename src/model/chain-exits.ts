/**
 * The chain index stored only at chain exits: O(1) reachability for captures of many streams.
 *
 * Why: the chain index (reachability.ts) keeps, for every node and every chain, the earliest
 * position of the chain the node reaches — 4·k bytes a node, 256 for a 64-stream capture. But
 * most nodes of a capture have one successor, the next node of their own stream, and such a node
 * reaches exactly what that successor reaches, plus itself. Call a node whose successors are
 * anything else (a join into another stream, or none at all) an *exit*; from any node v, walking
 * its chain forward leads to the first exit `x = exit(v)`, and every node of another chain that v
 * reaches, x reaches too. So rows are stored for exits only, and
 *
 *     a reaches b  ⇔  pos(a) ≤ pos(b)                    when chain(a) = chain(b)
 *                  ⇔  row(exit(a))[chain(b)] ≤ pos(b)    otherwise
 *
 * A capture where 5 % of ops join another stream has about 5 % exits: a 64-stream capture costs
 * 12 bytes a node (chain, position, exit row) plus 4·64 bytes an exit, about 25 bytes a node.
 * Built in one pass in reverse topological order, O(n + (exits + their edges)·k).
 */
import type { GraphStore } from './graph-store.js';

const UNREACHED = 0xffff_ffff;

/** Exits and the edges leaving them, counted before building (to decide whether to build). */
export interface ExitCount {
  exits: number;
  exitEdges: number;
}

/**
 * True if `v`'s successors are exactly the next node of its chain. A lone successor on v's own
 * chain is that node: consecutive chain nodes are joined by an edge, so v (not the chain's last)
 * has that edge, and a lone edge is it.
 */
function passesOn(store: GraphStore, v: number, chainOf: Uint32Array): boolean {
  const e = store.firstOut[v]!;
  return e !== 0 && store.nextOut(e) === 0 && chainOf[store.edgeTo(e)] === chainOf[v];
}

/** Counts the exits of the chain cover `chainOf` and the edges leaving them. */
export function countExits(store: GraphStore, chainOf: Uint32Array): ExitCount {
  let exits = 0;
  let exitEdges = 0;
  for (let v = 0; v < store.n; v++) {
    if (passesOn(store, v, chainOf)) continue;
    exits++;
    for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) exitEdges++;
  }
  return { exits, exitEdges };
}

/** Answers `isReachable` from rows at chain exits (see the file comment). */
export class ChainExitIndex {
  private readonly k: number;
  private readonly chainOf: Uint32Array;
  private readonly posOf: Uint32Array;
  /** The row (index into `rows` / k) of `exit(v)`, per node. */
  private readonly rowOf: Uint32Array;
  private readonly rows: Uint32Array;

  private constructor(k: number, chainOf: Uint32Array, posOf: Uint32Array, rowOf: Uint32Array, rows: Uint32Array) {
    this.k = k;
    this.chainOf = chainOf;
    this.posOf = posOf;
    this.rowOf = rowOf;
    this.rows = rows;
  }

  /**
   * Builds the index for `store` from its chain cover (`k` chains; `byOrd`: node ids in
   * topological order) with `exits` exits, as `countExits` counted.
   */
  static build(store: GraphStore, byOrd: Uint32Array, k: number, chainOf: Uint32Array, posOf: Uint32Array, exits: number): ChainExitIndex {
    const n = store.n;
    const rowOf = new Uint32Array(n);
    const rows = new Uint32Array(exits * k).fill(UNREACHED);
    let next = 0;
    // Reverse topological order: a node's successors, and so their exits' rows, come first.
    for (let i = n - 1; i >= 0; i--) {
      const v = byOrd[i]!;
      if (passesOn(store, v, chainOf)) {
        rowOf[v] = rowOf[store.edgeTo(store.firstOut[v]!)]!;
        continue;
      }
      const row = next++ * k;
      rowOf[v] = row / k;
      for (let e = store.firstOut[v]!; e !== 0; e = store.nextOut(e)) {
        const w = store.edgeTo(e);
        const src = rowOf[w]! * k;
        for (let c = 0; c < k; c++) {
          const r = rows[src + c]!;
          if (r < rows[row + c]!) rows[row + c] = r;
        }
        // w itself: its exit row starts at or after w on w's chain.
        const cw = chainOf[w]!;
        if (posOf[w]! < rows[row + cw]!) rows[row + cw] = posOf[w]!;
      }
      rows[row + chainOf[v]!] = posOf[v]!;
    }
    return new ChainExitIndex(k, chainOf, posOf, rowOf, rows);
  }

  /** True if a path a → b exists, for a ≠ b with ord(a) < ord(b). */
  reachable(a: number, b: number): boolean {
    const cb = this.chainOf[b]!;
    if (this.chainOf[a] === cb) return this.posOf[a]! <= this.posOf[b]!;
    return this.rows[this.rowOf[a]! * this.k + cb]! <= this.posOf[b]!;
  }
}
