/**
 * Checks a node spec (from 'addNode', or a node of a JSON document) and writes it into a store.
 * One checker serves both, so a JSON file accepts exactly what `addNode` accepts.
 */
import { InvalidArgumentError } from '../errors/base.js';
import {
  describe,
  requireInt,
  requireName,
  requireNonNegativeFinite,
  requireOneOf,
  requireSize,
  requireU32,
} from '../util/validate.js';
import { nameText } from './bounded-text.js';
import { encodeMemcpyDir } from './memcpy-dir.js';
import {
  BLOCK_THREADS_MAX,
  BLOCK_XY_MAX,
  BLOCK_Z_MAX,
  GRID_X_MAX,
  GRID_YZ_MAX,
  KIND_CHILD,
  KIND_CONDITIONAL,
  KIND_EMPTY,
  KIND_EVENT_RECORD,
  KIND_EVENT_WAIT,
  KIND_HOST,
  KIND_KERNEL,
  KIND_MEM_ALLOC,
  KIND_MEM_FREE,
  KIND_MEMCPY,
  KIND_MEMSET,
  MAX_CHILD_NODES,
  MAX_GRAPH_DEPTH,
  NODE_KINDS,
  type NodeKind,
} from './node.js';
import { childReaders, type ChildSnapshot } from './child-graphs.js';
import { BODY_RULE, bodyRefusal, checkBodyCount, checkEstimate, CONDITIONAL_TYPES, readHandle } from './conditional.js';
import type { ComputeGraph } from './compute-graph.js';
import type { ConditionalParams, GraphStore } from './graph-store.js';

const COMMON = ['kind', 'name', 'stream', 'cost'];
const KEYS: Record<string, readonly string[]> = {
  kernel: [...COMMON, 'functionName', 'grid', 'block', 'sharedMem'],
  memcpy: [...COMMON, 'dir', 'sizeBytes'],
  memset: [...COMMON, 'sizeBytes', 'value', 'elementSize'],
  hostCallback: [...COMMON, 'label'],
  empty: COMMON,
  eventRecord: [...COMMON, 'event'],
  eventWait: [...COMMON, 'event'],
  childGraph: [...COMMON, 'graph'],
  memAlloc: [...COMMON, 'sizeBytes', 'device'],
  memFree: [...COMMON, 'alloc'],
  conditional: [...COMMON, 'type', 'handle', 'estimate', 'bodies'],
};
const GRID_MAX = [GRID_X_MAX, GRID_YZ_MAX, GRID_YZ_MAX];
const BLOCK_MAX = [BLOCK_XY_MAX, BLOCK_XY_MAX, BLOCK_Z_MAX];
const KEY_SETS = new Map(Object.entries(KEYS).map(([k, v]) => [k, new Set(v)]));

/** Reads a dimension ('n', [x], [x, y] or [x, y, z]) into out[at..at+2], checking each against `max`. */
function readDim(op: string, name: string, value: unknown, max: readonly number[], out: number[], at: number): void {
  if (typeof value === 'number') {
    out[at] = requireInt(op, name, value, 1, max[0]!);
    out[at + 1] = 1;
    out[at + 2] = 1;
    return;
  }
  if (!Array.isArray(value) || value.length < 1 || value.length > 3) {
    throw new InvalidArgumentError(op, name, `${name} must be a positive integer or an array [x], [x, y] or [x, y, z], got ${describe(value)}`);
  }
  for (let i = 0; i < 3; i++) {
    const x: unknown = i < value.length ? value[i] : 1;
    // The element's name is built only when it is refused.
    out[at + i] = typeof x === 'number' && Number.isInteger(x) && x >= 1 && x <= max[i]! ? x : requireInt(op, `${name}[${i}]`, x, 1, max[i]!);
  }
}

/** Checks kernel launch limits shared by `recordKernel` and kernel specs. */
export function checkBlockThreads(op: string, name: string, x: number, y: number, z: number): void {
  if (x * y * z > BLOCK_THREADS_MAX) {
    throw new InvalidArgumentError(
      op,
      name,
      `${name} has ${x}·${y}·${z} = ${x * y * z} threads; CUDA allows at most ${BLOCK_THREADS_MAX} per block`,
    );
  }
}

// Scratch space for a checked spec, so checking allocates nothing per node (fromJSON reads millions).
const scratch = { params: [0, 0, 0, 0, 0, 0], dir: [0, 0] };

/** Where a spec comes from: a call (`addNode` and the calls built on it) or a graph document at some depth. */
export interface SpecSource {
  /** The kinds this source may hold (a version 1 document knows fewer). */
  readonly kinds: readonly NodeKind[];
  /** A key allowed besides the spec's own (`id` in documents), or null. */
  readonly extraKey: string | null;
  /** The document's depth (1: the outer document) when reading one, or null for a call, whose child graph is a `ComputeGraph`. */
  readonly documentDepth: number | null;
}

/** Specs given to a call. */
export const FROM_CALL: SpecSource = { kinds: NODE_KINDS, extraKey: null, documentDepth: null };

/**
 * Checks `spec` completely, then appends it to `store` and returns the new id. On a refusal it
 * throws `InvalidArgumentError` (op 'op', parameter 'field') before touching the store; a nested
 * document's refusal is the `GraphError` its reader throws.
 */
export function appendNodeSpec(store: GraphStore, op: string, prefix: string, spec: unknown, source: SpecSource = FROM_CALL): number {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    const whole = prefix.endsWith('.') ? prefix.slice(0, -1) : prefix;
    throw new InvalidArgumentError(op, whole, `${whole} must be an object, got ${describe(spec)}`);
  }
  try {
    return appendChecked(store, op, prefix, spec as Record<string, unknown>, source);
  } catch (e) {
    // Field names are prefixed only on failure: building `nodes[i].grid` strings for every field
    // of every node would dominate the cost of reading a large document.
    if (e instanceof InvalidArgumentError) {
      throw new InvalidArgumentError(op, prefix + e.parameter, prefix + e.message.slice(op.length + 2));
    }
    throw e;
  }
}

function appendChecked(store: GraphStore, op: string, prefix: string, s: Record<string, unknown>, source: SpecSource): number {
  const kindName = requireOneOf(op, 'kind', s.kind, source.kinds);
  const known = KEY_SETS.get(kindName)!;
  for (const key in s) {
    if (!known.has(key) && key !== source.extraKey) {
      throw new InvalidArgumentError(op, key, `${nameText(key)} is not a field of '${kindName}' nodes (known: ${KEYS[kindName]!.join(', ')})`);
    }
  }
  const stream = s.stream === undefined || s.stream === null ? null : requireU32(op, 'stream', s.stream);
  const p = scratch.params;
  let kind: number;
  let text: string | null = null;
  let size = 0;
  let dir = 0;
  let value = 0;
  let elementSize = 1;
  let sharedMem = 0;
  let alloc = -1;
  let child: ChildSnapshot | null = null;
  let cond: ConditionalRead | null = null;
  let defaultName: string = kindName;
  switch (kindName) {
    case 'kernel': {
      kind = KIND_KERNEL;
      text = requireName(op, 'functionName', s.functionName);
      defaultName = text;
      readDim(op, 'grid', s.grid, GRID_MAX, p, 0);
      readDim(op, 'block', s.block, BLOCK_MAX, p, 3);
      checkBlockThreads(op, 'block', p[3]!, p[4]!, p[5]!);
      sharedMem = s.sharedMem === undefined ? 0 : requireU32(op, 'sharedMem', s.sharedMem);
      break;
    }
    case 'memcpy': {
      kind = KIND_MEMCPY;
      dir = encodeMemcpyDir(op, 'dir', s.dir, scratch.dir);
      size = requireSize(op, 'sizeBytes', s.sizeBytes);
      break;
    }
    case 'memset': {
      kind = KIND_MEMSET;
      elementSize = s.elementSize === undefined ? 1 : requireOneOfNumber(op, 'elementSize', s.elementSize, [1, 2, 4]);
      size = requireSize(op, 'sizeBytes', s.sizeBytes);
      if (size % elementSize !== 0) {
        throw new InvalidArgumentError(op, 'sizeBytes', `sizeBytes (${size}) must be a multiple of elementSize (${elementSize})`);
      }
      value = requireInt(op, 'value', s.value, 0, 2 ** (8 * elementSize) - 1);
      break;
    }
    case 'hostCallback': {
      kind = KIND_HOST;
      text = requireName(op, 'label', s.label);
      defaultName = text;
      break;
    }
    case 'eventRecord':
    case 'eventWait': {
      kind = kindName === 'eventRecord' ? KIND_EVENT_RECORD : KIND_EVENT_WAIT;
      value = requireU32(op, 'event', s.event);
      break;
    }
    case 'childGraph': {
      kind = KIND_CHILD;
      child = readChild(store, op, prefix, s.graph, source);
      break;
    }
    case 'memAlloc': {
      kind = KIND_MEM_ALLOC;
      size = requireSize(op, 'sizeBytes', s.sizeBytes);
      if (size === 0) throw new InvalidArgumentError(op, 'sizeBytes', 'sizeBytes must be at least 1 (CUDA allocates no empty graph memory), got 0');
      value = s.device === undefined ? 0 : requireU32(op, 'device', s.device);
      break;
    }
    case 'memFree': {
      kind = KIND_MEM_FREE;
      alloc = s.alloc === undefined || s.alloc === null ? -1 : checkAlloc(store, op, s.alloc);
      break;
    }
    case 'conditional': {
      kind = KIND_CONDITIONAL;
      cond = readConditional(store, op, prefix, s, source);
      break;
    }
    default:
      kind = KIND_EMPTY;
  }
  const name = s.name === undefined ? defaultName : requireName(op, 'name', s.name);
  const cost = s.cost === undefined ? (child?.cost ?? cond?.cost ?? 1) : requireNonNegativeFinite(op, 'cost', s.cost);

  // Everything is checked: from here on nothing throws.
  const id = store.appendNode(kind, stream === null ? -1 : store.streamSlot(stream), store.intern(name));
  switch (kind) {
    case KIND_KERNEL:
      store.setKernel(id, store.intern(text!), p.slice(0, 3), p.slice(3, 6), sharedMem);
      break;
    case KIND_MEMCPY:
      store.setMemcpy(id, dir, size, scratch.dir[0]!, scratch.dir[1]!);
      break;
    case KIND_MEMSET:
      store.setMemset(id, size, value, elementSize);
      break;
    case KIND_HOST:
      store.setHost(id, store.intern(text!));
      break;
    case KIND_EVENT_RECORD:
    case KIND_EVENT_WAIT:
      store.setEvent(id, value);
      break;
    case KIND_CHILD:
      store.setChild(id, child!.graph, child!.depth, child!.expanded);
      break;
    case KIND_MEM_ALLOC:
      store.setMemAlloc(id, size, value);
      break;
    case KIND_MEM_FREE:
      store.setMemFree(id, alloc);
      break;
    case KIND_CONDITIONAL:
      store.setConditional(id, cond!.params, cond!.depth, cond!.expanded);
      break;
  }
  store.setCost(id, cost);
  return id;
}

/** A child graph: copied from a `ComputeGraph` (a call) or read from a nested document, within CUDA's rules. */
function readChild(store: GraphStore, op: string, prefix: string, value: unknown, source: SpecSource): ChildSnapshot {
  const child = readGraph(store, op, prefix, value, source, 'graph', 0);
  if (child.memoryNode !== null) {
    throw new InvalidArgumentError(
      op,
      'graph',
      `graph holds a '${child.memoryNode.kind}' node (node ${child.memoryNode.id}); CUDA does not clone a graph holding allocation or free nodes into a child graph node`,
    );
  }
  if (child.conditionalNode !== null) {
    throw new InvalidArgumentError(
      op,
      'graph',
      `graph holds a 'conditional' node (node ${child.conditionalNode}); CUDA does not allow a graph holding conditional nodes as a child graph (a conditional body may hold one instead)`,
    );
  }
  return child;
}

/**
 * A graph a node holds (a child graph, or a body given as `field`), copied or read, within the
 * depth and size bounds; `pending` counts the nodes the same node's earlier bodies hold.
 */
function readGraph(store: GraphStore, op: string, prefix: string, value: unknown, source: SpecSource, field: string, pending: number): ChildSnapshot {
  const depth = source.documentDepth;
  if (depth !== null && depth >= MAX_GRAPH_DEPTH) {
    throw new InvalidArgumentError(op, field, `${field} nests child graphs more than ${MAX_GRAPH_DEPTH} deep`);
  }
  const graph = depth === null ? childReaders().copy(op, field, value) : childReaders().read(op, `${prefix}${field}.`, value, depth + 1);
  if (graph.depth >= MAX_GRAPH_DEPTH) {
    throw new InvalidArgumentError(op, field, `${field} nests child graphs ${graph.depth} deep; a child may nest at most ${MAX_GRAPH_DEPTH - 1} deep`);
  }
  if (store.childNodes + pending + graph.expanded > MAX_CHILD_NODES) {
    throw new InvalidArgumentError(
      op,
      field,
      `${field} holds ${graph.expanded} node(s) with its own child graphs; with the ${store.childNodes + pending} the graph's child graphs hold already, that is more than ${MAX_CHILD_NODES}`,
    );
  }
  return graph;
}

/** A conditional spec, checked: its parameters, how deep its bodies nest, how many nodes they hold, and its default cost. */
interface ConditionalRead {
  readonly params: ConditionalParams;
  readonly depth: number;
  readonly expanded: number;
  readonly cost: number;
}

/** Checks a conditional spec's own fields and bodies (CUDA's rules, conditional.ts). */
function readConditional(store: GraphStore, op: string, prefix: string, s: Record<string, unknown>, source: SpecSource): ConditionalRead {
  const type = requireOneOf(op, 'type', s.type, CONDITIONAL_TYPES);
  if (!Array.isArray(s.bodies)) throw new InvalidArgumentError(op, 'bodies', `bodies must be an array of graphs, got ${describe(s.bodies)}`);
  const list = s.bodies as readonly unknown[];
  checkBodyCount(op, 'bodies', type, list.length);
  const handle = readHandle(op, 'handle', s.handle, store.nextHandle, (h) => store.handleNodes.get(h) ?? null);
  const estimate = s.estimate === undefined ? 1 : checkEstimate(op, 'estimate', type, s.estimate);
  const bodies: ComputeGraph[] = [];
  let depth = 1;
  let expanded = 0;
  let longest = 0;
  for (let i = 0; i < list.length; i++) {
    const field = `bodies[${i}]`;
    const body = readGraph(store, op, prefix, list[i], source, field, expanded);
    const refusal = bodyRefusal(body.graph);
    if (refusal !== null) throw new InvalidArgumentError(op, field, `${field} holds a '${refusal.kind}' node (${refusal.where}); ${BODY_RULE}`);
    bodies.push(body.graph);
    depth = Math.max(depth, body.depth);
    expanded += body.expanded;
    longest = Math.max(longest, body.cost);
  }
  // The bodies' costs are finite; a large estimate can still overflow, which the schedules then report.
  const cost = Math.min(estimate * longest, Number.MAX_VALUE);
  return { params: { type, handle, estimate, bodies: Object.freeze(bodies) }, depth, expanded, cost };
}

/** The allocation node a free node names: a `memAlloc` node of this graph that no free node frees yet. */
function checkAlloc(store: GraphStore, op: string, value: unknown): number {
  const a = requireU32(op, 'alloc', value);
  if (a >= store.n) throw new InvalidArgumentError(op, 'alloc', `alloc names node ${a}, but the graph has ${store.n} node(s)`);
  if (store.kind[a] !== KIND_MEM_ALLOC) {
    throw new InvalidArgumentError(op, 'alloc', `alloc must name a 'memAlloc' node, but node ${a} is a '${NODE_KINDS[store.kind[a]!]}' node`);
  }
  const other = store.freedBy.get(a);
  if (other !== undefined) {
    throw new InvalidArgumentError(op, 'alloc', `node ${a}'s allocation is already freed by node ${other}; CUDA refuses to free an allocation twice in one graph`);
  }
  return a;
}

function requireOneOfNumber<T extends number>(op: string, name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'number' || !(allowed as readonly number[]).includes(value)) {
    throw new InvalidArgumentError(op, name, `${name} must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  }
  return value as T;
}
