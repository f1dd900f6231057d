/**
 * Conditional nodes in the model (CUDA 12.4+: `cuGraphConditionalHandleCreate` and a node of type
 * `CU_GRAPH_NODE_TYPE_CONDITIONAL`): control flow decided on the GPU. A node of `type`
 *
 * - `'if'` runs `bodies[0]` when its condition is non-zero, and `bodies[1]` (the else body, when
 *   there is one) when it is zero;
 * - `'while'` runs `bodies[0]` again and again while its condition is non-zero (checked first, so
 *   zero times is possible);
 * - `'switch'` runs `bodies[v]` when its condition is `v`, and no body when `v ≥ bodies.length`.
 *
 * The condition is a conditional handle: a value kernels set on the device. The model cannot know
 * that value, so it keeps the handle as metadata (`id`, `default`, `assignDefault`) and asks the
 * user how often the bodies run (`estimate`) for the schedule figures.
 *
 * CUDA's rules, as cuda.h states them (`CUDA_CONDITIONAL_NODE_PARAMS`, `CU_GRAPH_NODE_TYPE_CONDITIONAL`):
 * a body holds only kernel, empty, child graph, memset, memcpy and conditional nodes, also inside its
 * child graphs; a handle serves one conditional node; a graph holding conditional nodes cannot be a
 * child graph, cannot be cloned by the driver, and may be instantiated once at a time. The model
 * refuses the first two where they are made (the node spec checker, node-spec.ts) and the third for
 * child graphs; `ComputeGraph.hasConditionalNodes()` tells the driver layer about the other two
 * (the model's `clone()` is a copy of the model, not `cuGraphClone`, so it stays allowed).
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireBoolean, requireU32 } from '../util/validate.js';
import { nameText } from './bounded-text.js';
import { KIND_CHILD, KIND_CONDITIONAL, KIND_EMPTY, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, NODE_KINDS } from './node.js';
import type { ComputeGraph } from './compute-graph.js';
import type { NodeId } from './ids.js';

/**
 * What a conditional node does with its bodies: `'if'` (then, and an optional else), `'while'`
 * (one body, repeated), `'switch'` (one body per case). Named apart from the driver layer's
 * `ConditionalKind`, which is the same three strings for a node of a real graph.
 */
export type ConditionalType = 'if' | 'while' | 'switch';

/** Every conditional type, in the order of CUDA's `CUgraphConditionalNodeType` (IF 0, WHILE 1, SWITCH 2). */
export const CONDITIONAL_TYPES: readonly ConditionalType[] = ['if', 'while', 'switch'];

/** The most bodies a switch node may have here (the driver layer's bound too: CUDA sets none, memory does). */
export const MAX_SWITCH_CASES = 0xffff;

/**
 * A conditional node's condition, as the model keeps it: an id, unique among the conditional
 * nodes of one graph (a handle serves one node), the value it takes at the start of every launch,
 * and whether it takes it (`CU_GRAPH_COND_ASSIGN_DEFAULT`). `StreamCapture.conditionalHandle()`
 * returns one; a node record carries one. Named apart from the driver layer's `ConditionalHandle`,
 * the handle of a real graph.
 */
export interface ConditionalHandleRecord {
  /** 0..2^32−1, unique among the conditional nodes of the graph (or capture) that made it. */
  readonly id: number;
  /** The condition's value at the start of a launch, when `assignDefault`: 0..2^32−1. */
  readonly default: number;
  /**
   * Whether every launch starts with the condition at `default`. Without it the condition keeps
   * whatever a kernel last set, and a launch starts undefined until one sets it.
   */
  readonly assignDefault: boolean;
}

/**
 * The handle a conditional node spec may give. `id` defaults to one more than the graph's largest
 * handle id so far (0 for the first); `default` to 0; `assignDefault` to true, as the driver layer
 * does (without it the first launch would read an undefined condition).
 */
export interface ConditionalHandleSpec {
  readonly id?: number;
  readonly default?: number;
  readonly assignDefault?: boolean;
}

/** The storage codes of the kinds a conditional body may hold (CUDA's rule). */
const BODY_KIND_CODES: ReadonlySet<number> = new Set([KIND_KERNEL, KIND_EMPTY, KIND_CHILD, KIND_MEMSET, KIND_MEMCPY, KIND_CONDITIONAL]);

/** CUDA's rule for bodies, as refusals quote it. */
export const BODY_RULE =
  'a conditional body may hold only kernel, empty, childGraph, memset, memcpy and conditional nodes, also inside its child graphs (CUDA rule)';

/** How many bodies a node of `type` takes, in words, for refusals. */
const BODY_COUNTS: Readonly<Record<ConditionalType, string>> = {
  if: '1 or 2 bodies (then, and an optional else)',
  while: 'exactly 1 body',
  switch: `1..${MAX_SWITCH_CASES} bodies (one per case)`,
};

/**
 * Checks the body count of a node of `type`: `n` bodies given as `name`.
 * @throws InvalidArgumentError naming `op` and `name`.
 */
export function checkBodyCount(op: string, name: string, type: ConditionalType, n: number): void {
  const ok = type === 'if' ? n === 1 || n === 2 : type === 'while' ? n === 1 : n >= 1 && n <= MAX_SWITCH_CASES;
  if (!ok) throw new InvalidArgumentError(op, name, `${name} must hold ${BODY_COUNTS[type]} for ${aNode(type)}, got ${n}`);
}

/** `an 'if' node`, `a 'while' node`. */
function aNode(type: ConditionalType): string {
  return `${type === 'if' ? 'an' : 'a'} '${type}' node`;
}

/**
 * Checks a trip estimate for a node of `type`: a finite number ≥ 0; for `'if'` and `'switch'`,
 * whose bodies run at most once, at most 1 (the chance that the body runs).
 * @throws InvalidArgumentError naming `op` and `name`.
 */
export function checkEstimate(op: string, name: string, type: ConditionalType, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(op, name, `${name} must be a finite number ≥ 0, got ${describe(value)}`);
  }
  if (type !== 'while' && value > 1) {
    throw new InvalidArgumentError(op, name, `${name} of ${aNode(type)} is the chance that a body runs (at most once), so at most 1, got ${value}`);
  }
  return value;
}

const HANDLE_KEYS: readonly string[] = ['id', 'default', 'assignDefault'];

/**
 * Reads a handle spec (`value`, given as `name`) into a frozen record. `nextId` is the id a left-out
 * `id` takes; `holder(id)` names the node already using an id, or returns null.
 * @throws InvalidArgumentError naming `op` and the field (`handle.default`).
 */
export function readHandle(op: string, name: string, value: unknown, nextId: number, holder: (id: number) => number | null): ConditionalHandleRecord {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    throw new InvalidArgumentError(op, name, `${name} must be an object { id?, default?, assignDefault? }, got ${describe(value)}`);
  }
  const o = (value ?? {}) as Record<string, unknown>;
  for (const key in o) {
    if (!HANDLE_KEYS.includes(key)) {
      throw new InvalidArgumentError(op, `${name}.${nameText(key)}`, `${name}.${nameText(key)} is not a field of a conditional handle (known: ${HANDLE_KEYS.join(', ')})`);
    }
  }
  const id = o.id === undefined ? nextId : requireU32(op, `${name}.id`, o.id);
  if (id > 0xffff_ffff) {
    // Only reachable when a graph has used the largest id: every later default would overflow.
    throw new InvalidArgumentError(op, `${name}.id`, `${name}.id: the graph has used handle id 4294967295; give an unused id`);
  }
  const user = holder(id);
  if (user !== null) {
    throw new InvalidArgumentError(op, `${name}.id`, `${name}.id ${id} is already the handle of node ${user}; a conditional handle serves one conditional node (CUDA rule)`);
  }
  const dflt = o.default === undefined ? 0 : requireU32(op, `${name}.default`, o.default);
  const assignDefault = o.assignDefault === undefined ? true : requireBoolean(op, `${name}.assignDefault`, o.assignDefault);
  return Object.freeze({ id, default: dflt, assignDefault });
}

/** What keeps a graph from being a conditional body: the first node of a kind a body may not hold. */
export interface BodyRefusal {
  /** The kind of that node. */
  readonly kind: string;
  /** Where it is: `node 2`, or `node 0 of child graph node 3`. */
  readonly where: string;
}

/** Answers for read-only graphs (child graphs and bodies), which never change: each is walked once. */
const refusals = new WeakMap<ComputeGraph, BodyRefusal | null>();

/**
 * The first node of `graph` that CUDA does not allow in a conditional body, looking inside its
 * child graphs too; null when there is none. A conditional node inside it is not entered: its own
 * bodies were checked when it was added.
 */
export function bodyRefusal(graph: ComputeGraph): BodyRefusal | null {
  const known = refusals.get(graph);
  if (known !== undefined) return known;
  let found: BodyRefusal | null = null;
  const n = graph.nodeCount();
  for (let v = 0; v < n && found === null; v++) {
    const node = graph.node(v as NodeId);
    if (node.kind === 'childGraph') {
      const inner = bodyRefusal(node.graph);
      if (inner !== null) found = { kind: inner.kind, where: `${inner.where} of child graph node ${v}` };
    } else if (!BODY_KIND_CODES.has(NODE_KINDS.indexOf(node.kind))) {
      found = { kind: node.kind, where: `node ${v}` };
    }
  }
  if (graph.readOnly) refusals.set(graph, found);
  return found;
}

/** The label of body `index` of a node of `type`, as pictures draw it: `while body`, `if then`, `if else`, `switch case 2`. */
export function bodyLabel(type: ConditionalType, index: number): string {
  if (type === 'while') return 'while body';
  if (type === 'if') return index === 0 ? 'if then' : 'if else';
  return `switch case ${index}`;
}

/** What a conditional node does, in a few words (the second line of its picture's label). */
export function conditionalText(type: ConditionalType, bodies: number, handle: ConditionalHandleRecord, estimate: number): string {
  const what = type === 'if' ? (bodies === 2 ? 'if/else' : 'if') : type === 'switch' ? `switch, ${bodies} case${bodies === 1 ? '' : 's'}` : 'while';
  const dflt = handle.assignDefault ? `, default ${handle.default}` : '';
  const trips = type === 'while' ? `, ~${estimate} trip${estimate === 1 ? '' : 's'}` : estimate === 1 ? '' : `, p ${estimate}`;
  return `${what} on handle ${handle.id}${dflt}${trips}`;
}
