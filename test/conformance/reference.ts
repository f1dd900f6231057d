/**
 * The reference: CUDA stream capture's rules written the obvious way (sets and a DFS), apart from
 * the model, as the suite's expectation for both recorders. Where the rules were measured on a
 * device rather than read in the CUDA documentation, docs/conformance.md says so.
 *
 * - Each capturing stream has a dependency set; a new node depends on all of it, then the set is
 *   just that node.
 * - `record(s, e)` on a capturing stream: `e` captures a copy of `s`'s set (possibly empty),
 *   replacing what it held; on a stream outside the capture `e` becomes external.
 * - `wait(s, e)` on a capturing stream: `s`'s set grows by `e`'s; an event never recorded is
 *   complete (nothing happens); an external event crosses the capture boundary: refused
 *   (`isolation`), and the capture is invalidated. On a stream outside the capture, a captured
 *   event makes `s` join the capture with `e`'s set; any other wait is ordinary work.
 * - End on stream 0: every node of every other capturing stream's set must reach stream 0's set
 *   (else `unjoined`).
 */
import type { Outcome } from './outcome.js';
import type { Script } from './script.js';

/** What the reference says: node signatures in creation order, and each node's predecessors. */
export interface ReferenceGraph {
  readonly signatures: readonly string[];
  readonly preds: readonly ReadonlySet<number>[];
}

/** The reference's outcome; a graph is described by signatures (see compare.ts) and edges. */
export type ReferenceOutcome =
  | { readonly kind: 'graph'; readonly graph: ReferenceGraph }
  | Exclude<Outcome, { kind: 'graph' }>;

/** The node signature of a script op that makes a node (the same strings `signature()` gives graph nodes). */
export function opSignature(o: Script['ops'][number]): string | null {
  switch (o.op) {
    case 'kernel':
      return `kernel ${o.name} <<<[${o.blocks},1,1],[${o.threads},1,1],${o.smem}>>>`;
    case 'memcpy':
      return `memcpy ${o.dir} ${o.size}`;
    case 'memset':
      return `memset ${o.size} = ${o.value}`;
    case 'host':
      return `host ${o.label}`;
    default:
      return null;
  }
}

type Ev = { readonly external: true } | { readonly external: false; readonly set: ReadonlySet<number> };

/** Runs `script` under the reference rules. */
export function referenceOutcome(script: Script): ReferenceOutcome {
  const sets = new Map<number, Set<number>>([[0, new Set()]]);
  const events = new Map<number, Ev>();
  for (const e of script.before ?? []) events.set(e, { external: true });
  const signatures: string[] = [];
  const preds: Set<number>[] = [];
  for (let i = 0; i < script.ops.length; i++) {
    const o = script.ops[i]!;
    const sig = opSignature(o);
    if (sig !== null) {
      const set = sets.get(o.s);
      // Work on a stream outside the capture would run at once, not be captured: a script bug.
      if (set === undefined) throw new Error(`${script.name}: op ${i} works on stream ${o.s}, which has not joined the capture`);
      preds.push(new Set(set));
      set.clear();
      set.add(signatures.length);
      signatures.push(sig);
      continue;
    }
    if (o.op === 'record') {
      const set = sets.get(o.s);
      events.set(o.e, set === undefined ? { external: true } : { external: false, set: new Set(set) });
      continue;
    }
    if (o.op === 'wait') {
      const set = sets.get(o.s);
      const ev = events.get(o.e);
      if (set === undefined) {
        if (ev !== undefined && !ev.external) sets.set(o.s, new Set(ev.set));
        continue;
      }
      if (ev === undefined) continue;
      if (ev.external) return { kind: 'error', at: i, error: 'isolation', endError: 'invalidated' };
      for (const v of ev.set) set.add(v);
    }
  }
  // End on stream 0: the ancestors (inclusive) of its set must hold every other stream's set.
  const joined = new Set<number>(sets.get(0)!);
  const stack = [...joined];
  while (stack.length > 0) for (const p of preds[stack.pop()!]!) if (!joined.has(p)) (joined.add(p), stack.push(p));
  for (const [s, set] of sets) {
    if (s !== 0 && [...set].some((v) => !joined.has(v))) return { kind: 'error', at: 'end', error: 'unjoined' };
  }
  return { kind: 'graph', graph: { signatures, preds } };
}
