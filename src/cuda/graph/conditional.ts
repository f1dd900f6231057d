/**
 * Conditional nodes: control flow on the GPU (CUDA 12.4+). A `ConditionalHandle` is a condition
 * value a kernel sets on the device (`cudaGraphSetConditional(handle, value)`); an IF, WHILE or
 * SWITCH node reads it and runs one of its body graphs, or runs its body again, with no host in the
 * loop. The bodies are graphs the driver makes with the node and owns: cudagraph hands them out
 * as `Graph` objects that live as long as the node (filled by `add…Node` calls or by
 * `body.captureInto(stream, fn)`). CUDA's rules are refused here, before the driver sees them:
 * what a body may contain, one node per handle, and what a graph with conditional nodes may not do.
 */
import { InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { describe, requireBoolean, requireInt, requireOptions } from '../../util/validate.js';
import { CudaError } from '../../errors/cuda-error.js';
import { conditional as cd, graph as gr, init } from '../../driver/result/index.js';
import { CU_GRAPH_COND_ASSIGN_DEFAULT, CU_GRAPH_COND_TYPE, CU_GRAPH_NODE_TYPE } from '../../driver/layouts.js';
import { INTERNAL, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { arg, type KernelArgValue } from '../kernel/arg.js';
import { CudaNode, dependencyHandles } from './cuda-node.js';
import type { GraphNodeType } from './node-info.js';
import { rememberConditional } from './conditional-records.js';
import type { Graph } from './graph.js';

/**
 * The declaration that lets a kernel set a condition, for CUDA C++ compiled with NVRTC
 * (`Module.compile`): prepend it to the source. It is the CUDA runtime's device function, which
 * the driver resolves when the module loads (no device runtime to link).
 * @example
 * const m = Module.compile(d, CONDITIONAL_DEVICE_API + `extern "C" __global__ void step(unsigned long long h, …) {
 *   … cudaGraphSetConditional(h, again ? 1 : 0); }`);
 */
export const CONDITIONAL_DEVICE_API =
  '#ifndef CUDAGRAPH_CONDITIONAL_DEVICE_API\n' +
  '#define CUDAGRAPH_CONDITIONAL_DEVICE_API\n' +
  'extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);\n' +
  '#endif\n';

export type { ConditionalKind } from './conditional-records.js';
import type { ConditionalKind } from './conditional-records.js';

/** The node kinds a conditional body may contain (CUDA's rule; recursively, in its child graphs and conditionals). */
export const BODY_NODE_KINDS: readonly GraphNodeType[] = Object.freeze(['kernel', 'empty', 'graph', 'memset', 'memcpy', 'conditional'] as const);

/** The text of CUDA's rule for bodies, for refusals. */
export const BODY_RULE = 'a conditional body may contain only kernel, empty, child graph, memset, memcpy and conditional nodes, all on one device (CUDA rule)';

/** The text of CUDA's rule for graphs that contain conditional nodes, for refusals. */
export const CONDITIONAL_GRAPH_RULE = 'a graph with conditional nodes cannot be cloned or be a child graph, and has at most one instantiation at a time (CUDA rule)';

/**
 * A conditional node's condition (`CUgraphConditionalHandle`), made by `graph.conditionalHandle()`
 * for one conditional node of that graph or of a body inside it. A kernel sets it with
 * `cudaGraphSetConditional(handle, value)`: pass `handle.arg()` (a 64-bit argument).
 */
export class ConditionalHandle {
  /** The graph it was made for (the node that uses it is in this graph or in a body inside it). */
  readonly graph: Graph;
  /** The handle's value, as kernels receive it. */
  readonly value: bigint;
  /** The value the condition takes at the start of every launch (when `assignDefault`). */
  readonly defaultValue: number;
  /**
   * Whether `defaultValue` is assigned at the start of every launch (`CU_GRAPH_COND_ASSIGN_DEFAULT`,
   * the default); without it a launch starts with an undefined condition, which a kernel run before
   * the node must set.
   */
  readonly assignDefault: boolean;
  #node: CudaNode | null = null;

  /** @internal Made by `graph.conditionalHandle()`. */
  constructor(key: typeof INTERNAL, graph: Graph, value: bigint, defaultValue: number, assignDefault: boolean) {
    if (key !== INTERNAL) throw privateConstructorError('ConditionalHandle', 'graph.conditionalHandle()');
    this.graph = graph;
    this.value = value;
    this.defaultValue = defaultValue;
    this.assignDefault = assignDefault;
  }

  /** @internal True for a ConditionalHandle this class made. */
  static is(value: unknown): value is ConditionalHandle {
    return typeof value === 'object' && value !== null && #node in value;
  }

  /** The kernel argument that passes this handle (`unsigned long long` in CUDA C++). */
  arg(): KernelArgValue {
    return arg.u64(this.value);
  }

  /** The conditional node that uses the handle, or null before one does. */
  get node(): CudaNode | null {
    return this.#node;
  }

  /** @internal The node now using the handle (a handle serves one node). */
  bind(node: CudaNode): void {
    this.#node = node;
  }

  toString(): string {
    return `ConditionalHandle(0x${this.value.toString(16)}${this.#node !== null ? `, ${this.#node.type}` : ''})`;
  }
}

/** `graph.conditionalHandle(options)` (`op` names the call the program made: `Stream.conditionalHandle` makes one too). */
export function makeHandle(graph: Graph, options: unknown, op = 'Graph.conditionalHandle'): ConditionalHandle {
  graph[LIFETIME].assertAlive(op);
  requireConditionalSupport(op, 'while');
  const o = requireOptions<{ default: number; assignDefault: boolean }>(op, options, ['default', 'assignDefault']);
  const dflt = o.default === undefined ? 0 : requireInt(op, 'default', o.default, 0, 0xffffffff);
  // Without CU_GRAPH_COND_ASSIGN_DEFAULT a launch starts with an undefined condition, which only a
  // kernel run before the node makes defined: assigning the default is the safe default.
  const assign = o.assignDefault === undefined ? true : requireBoolean(op, 'assignDefault', o.assignDefault);
  makeCurrent(op, graph.device.context);
  const value = cd.conditionalHandleCreate(op, graph.handle, graph.device.context, dflt, assign ? CU_GRAPH_COND_ASSIGN_DEFAULT : 0);
  const h = new ConditionalHandle(INTERNAL, graph, value, dflt, assign);
  graph.noteHandle(h);
  return h;
}

/** A conditional node and its bodies (`bodies[0]` runs when the condition holds; SWITCH: `bodies[v]` when it is v). */
export interface ConditionalNode {
  readonly node: CudaNode;
  readonly kind: ConditionalKind;
  readonly bodies: readonly Graph[];
}

/**
 * Adds a conditional node of `kind` with `size` bodies after `deps` (`cuGraphAddNode_v2`). The
 * handle must be one of this graph's, or of a graph this one is a body of, and unused.
 */
export function addConditional(op: string, graph: Graph, kind: ConditionalKind, handle: unknown, size: number, deps: unknown): ConditionalNode {
  graph[LIFETIME].assertAlive(op);
  const d = dependencyHandles(op, deps, graph);
  if (!ConditionalHandle.is(handle)) {
    throw new InvalidArgumentError(op, 'handle', `handle must be a ConditionalHandle (graph.conditionalHandle()), got ${describe(handle)}`);
  }
  // A handle whose node was removed may serve a new node (CUDA's handles cannot be destroyed, and an
  // unused one fails the instantiation).
  if (handle.node !== null && !handle.node.removed) {
    throw new InvalidArgumentError(op, 'handle', `${handle} already serves ${handle.node}; a handle belongs to one conditional node (CUDA rule): make another with graph.conditionalHandle()`);
  }
  if (!graph.withinGraph(handle.graph)) {
    throw new InvalidArgumentError(op, 'handle', 'the handle was made for another graph; make it with the graph that holds the node (or one this graph is a body of)');
  }
  handle.graph[LIFETIME].assertAlive(op);
  requireConditionalSupport(op, kind === 'if' && size === 2 ? 'if/else' : kind);
  makeCurrent(op, graph.device.context);
  const type = kind === 'if' ? CU_GRAPH_COND_TYPE.IF : kind === 'while' ? CU_GRAPH_COND_TYPE.WHILE : CU_GRAPH_COND_TYPE.SWITCH;
  const made = cd.addConditionalNode(op, graph.handle, d, handle.value, type, size, graph.device.context);
  const node = graph.attach(made.node, 'conditional', []);
  const bodies = graph.adoptBodies(node, made.bodies);
  rememberConditional(made.node, kind, made.bodies);
  handle.bind(node);
  return { node, kind, bodies };
}

/** The number of bodies of an IF node: 1, or 2 with `{ else: true }`. */
export function ifBodies(op: string, options: unknown): number {
  const o = requireOptions<{ else: boolean }>(op, options, ['else']);
  return o.else !== undefined && requireBoolean(op, 'else', o.else) ? 2 : 1;
}

/** The number of bodies of a SWITCH node: an integer ≥ 1. */
export function switchBodies(op: string, cases: unknown): number {
  return requireInt(op, 'cases', cases, 1, 0xffff);
}

/**
 * The driver release each form first supports: IF and WHILE came with CUDA 12.3 (and
 * `cuGraphAddNode_v2`, which adds them), IF/ELSE and SWITCH with 12.8.
 */
const SINCE: Readonly<Record<'if' | 'while' | 'if/else' | 'switch', number>> = { if: 12030, while: 12030, 'if/else': 12080, switch: 12080 };

/** @throws CudaError 801 when this driver predates conditional nodes of `form`. */
function requireConditionalSupport(op: string, form: keyof typeof SINCE): void {
  const v = init.driverVersion(op);
  if (v < SINCE[form]) {
    const need = SINCE[form];
    throw new CudaError({
      code: 801,
      operation: op,
      detail: `${form === 'while' || form === 'if' ? 'conditional nodes need' : `a ${form.toUpperCase()} node needs`} a CUDA ${Math.floor(need / 1000)}.${(need % 1000) / 10} driver; this one reports CUDA ${Math.floor(v / 1000)}.${(v % 1000) / 10}`,
    });
  }
}

/** Refuses, in a conditional body, a child graph whose nodes (at any depth) CUDA does not allow there. */
export function refuseChildInBody(op: string, graph: Graph, child: Graph): void {
  if (graph.bodyOf === null) return;
  const bad = (g: bigint): string | null => {
    for (const h of gr.graphNodes(op, g)) {
      const t = CU_GRAPH_NODE_TYPE[gr.graphNodeType(op, h)] ?? 'unknown';
      if (!BODY_NODE_KINDS.includes(t)) return t;
      if (t === 'graph') {
        const inner = bad(gr.childGraphNodeGraph(op, h));
        if (inner !== null) return inner;
      }
    }
    return null;
  };
  const found = bad(child.handle);
  if (found !== null) throw new InvalidArgumentError(op, 'child', `the graph is a body of ${graph.bodyOf}, and ${BODY_RULE}: the child graph has a ${found} node`);
}

/** Refuses, in a conditional body, a node kind CUDA does not allow there. */
export function refuseInBody(op: string, graph: Graph, kind: GraphNodeType): void {
  if (graph.bodyOf !== null && !BODY_NODE_KINDS.includes(kind)) {
    throw new InvalidArgumentError(op, 'graph', `the graph is a body of ${graph.bodyOf}, and ${BODY_RULE}: a ${kind} node is not allowed`);
  }
}

/** Refuses what a graph with conditional nodes may not do (`what` names it). */
export function refuseConditionalGraph(op: string, name: string, graph: Graph, what: string): void {
  if (graph.hasConditionalNodes(op)) throw new InvalidArgumentError(op, name, `${what}: the graph has conditional nodes, and ${CONDITIONAL_GRAPH_RULE}`);
}
