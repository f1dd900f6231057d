/**
 * Comparing two recordings of one workload: the same nodes (kind, kernel name, launch shape, copy
 * direction and size, fill size and value, host label) and the same reachability relation. CUDA
 * may add or drop redundant edges, so edges are compared through their transitive closure; node
 * ids may differ (the driver lists nodes in its own order), so nodes are matched by signature.
 */
import type { ComputeGraph, GraphNode } from '../../src/index.js';
import type { ReferenceGraph, ReferenceOutcome } from './reference.js';
import { describeOutcome, type Outcome } from './outcome.js';

/** The byte a fill of `elementSize`-byte elements writes, or null when its bytes differ. */
function fillByte(value: number, elementSize: number): number | null {
  const b = value & 0xff;
  for (let i = 1; i < elementSize; i++) if (((value >>> (8 * i)) & 0xff) !== b) return null;
  return b;
}

/** A node's signature: everything the suite compares about it, as one string. */
export function signature(n: GraphNode): string {
  switch (n.kind) {
    case 'kernel':
      return `kernel ${n.functionName} <<<[${n.grid.join(',')}],[${n.block.join(',')}],${n.sharedMem}>>>`;
    case 'memcpy':
      return `memcpy ${typeof n.dir === 'string' ? n.dir : n.dir.kind} ${n.sizeBytes}`;
    case 'memset': {
      // A fill is compared by what it writes: 4-byte elements of 0x07070707 write the bytes of a 1-byte fill of 7.
      const b = fillByte(n.value, n.elementSize);
      return b !== null ? `memset ${n.sizeBytes} = ${b}` : `memset ${n.sizeBytes} = ${n.value}/${n.elementSize}`;
    }
    case 'hostCallback':
      return `host ${n.label}`;
    case 'empty':
      return `empty ${n.name}`;
    case 'eventRecord':
      return `eventRecord ${n.event}`;
    case 'eventWait':
      return `eventWait ${n.event}`;
    case 'childGraph':
      // A child is compared by its own nodes, in order (ids inside it are the child's creation order).
      return `child [${n.graph.nodes().map(signature).join('; ')}]`;
    case 'memAlloc':
      return `memAlloc ${n.sizeBytes} on ${n.device}`;
    case 'memFree':
      return `memFree ${n.alloc === null ? 'outside' : 'inside'}`;
    case 'conditional':
      // Compared by its type and each body's nodes, in order (as a child graph). CUDA 13.0 cannot read
      // a conditional node's parameters back; cudagraph's read-back knows the nodes it added.
      return `conditional ${n.type} [${n.bodies.map((b) => b.nodes().map(signature).join('; ')).join(' | ')}]`;
  }
}

/** A graph as signatures and predecessor sets (the form the reference produces). */
export function asReference(g: ComputeGraph): ReferenceGraph {
  return {
    signatures: g.nodes().map(signature),
    preds: g.nodes().map((n) => new Set<number>(g.predecessors(n.id))),
  };
}

/** descendants[i]: the nodes i reaches (itself included), by DFS. */
function descendants(g: ReferenceGraph): Set<number>[] {
  const n = g.signatures.length;
  const succ: number[][] = Array.from({ length: n }, () => []);
  g.preds.forEach((ps, v) => ps.forEach((p) => succ[p]!.push(v)));
  return succ.map((_, a) => {
    const seen = new Set([a]);
    const stack = [a];
    while (stack.length > 0) for (const y of succ[stack.pop()!]!) if (!seen.has(y)) (seen.add(y), stack.push(y));
    return seen;
  });
}

/**
 * The differences between two graphs (empty when they agree): signatures missing or extra, and
 * pairs whose reachability differs (at most `limit` of each are listed).
 */
export function compareGraphs(actual: ReferenceGraph, expected: ReferenceGraph, limit = 8): string[] {
  const out: string[] = [];
  const count = (sigs: readonly string[]): Map<string, number> => {
    const m = new Map<string, number>();
    for (const s of sigs) m.set(s, (m.get(s) ?? 0) + 1);
    return m;
  };
  const a = count(actual.signatures);
  const e = count(expected.signatures);
  const missing = [...e].filter(([s, k]) => (a.get(s) ?? 0) < k).map(([s]) => s);
  const extra = [...a].filter(([s, k]) => (e.get(s) ?? 0) < k).map(([s]) => s);
  if (missing.length > 0) out.push(`missing nodes: ${missing.slice(0, limit).join('; ')}${missing.length > limit ? ` (+${missing.length - limit})` : ''}`);
  if (extra.length > 0) out.push(`unexpected nodes: ${extra.slice(0, limit).join('; ')}${extra.length > limit ? ` (+${extra.length - limit})` : ''}`);
  if (out.length > 0) return out;
  const dup = [...e].find(([, k]) => k > 1);
  if (dup !== undefined) return [`signature '${dup[0]}' is not unique: the comparison needs unique node signatures`];
  const index = new Map(actual.signatures.map((s, i) => [s, i]));
  const map = expected.signatures.map((s) => index.get(s)!);
  const da = descendants(actual);
  const de = descendants(expected);
  const wrong: string[] = [];
  for (let i = 0; i < expected.signatures.length; i++) {
    for (let j = 0; j < expected.signatures.length; j++) {
      if (i === j) continue;
      const want = de[i]!.has(j);
      if (da[map[i]!]!.has(map[j]!) !== want) {
        wrong.push(`${expected.signatures[i]} ${want ? 'should reach' : 'should not reach'} ${expected.signatures[j]}`);
      }
    }
  }
  if (wrong.length > 0) out.push(`${wrong.length} reachability difference(s): ${wrong.slice(0, limit).join(' | ')}`);
  return out;
}

/** The differences between two outcomes (graphs compared as above). */
export function compareOutcomes(actual: Outcome | ReferenceOutcome, expected: ReferenceOutcome | Outcome): string[] {
  const graphOf = (o: Outcome | ReferenceOutcome): ReferenceGraph | null => {
    if (o.kind !== 'graph') return null;
    return 'signatures' in o.graph ? o.graph : asReference(o.graph);
  };
  const ga = graphOf(actual);
  const ge = graphOf(expected);
  if (ga !== null && ge !== null) return compareGraphs(ga, ge);
  const text = (o: Outcome | ReferenceOutcome): string =>
    o.kind === 'graph' ? `graph(${graphOf(o)!.signatures.length} nodes)` : describeOutcome(o as Outcome);
  return text(actual) === text(expected) ? [] : [`outcome ${text(actual)}, expected ${text(expected)}`];
}
