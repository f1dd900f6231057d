/**
 * `ComputeGraph`: a DAG of GPU work, from a `StreamCapture` or built by hand. It is always acyclic,
 * ids are dense (0..nodeCount−1, in creation order), and every method that takes an id refuses
 * an unknown one with `GraphError` kind `NodeNotFound`.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, isU32, requireInt, requireOptions, requireU32 } from '../util/validate.js';
import { GraphErrorCode } from './error-codes.js';
import { nameText } from './bounded-text.js';
import { cycleText } from './cycle-text.js';
import { GraphStore } from './graph-store.js';
import { DynamicOrder } from './dynamic-order.js';
import { ReachabilityIndex } from './reachability.js';
import { keepShapes, KEPT_EDGES } from './kept-shapes.js';
import { groupLevels, kahnOrder, listSchedule, longestPath, nodeLevels, nodesByOrd, nodeTimes, toIdArray } from './schedule.js';
import type { DotOptions } from './dot.js';
import { dotChunks, renderDot, type DotChunkOptions } from './dot-stream.js';
import { documentNode, graphJsonChunks, type JsonChunkOptions } from './graph-json-stream.js';
import { readGraphJson, type GraphSource, type ReadGraphOptions } from './graph-json-read.js';
import { BOM_PROBLEM, decodeJsonText, NOT_UTF8_PROBLEM } from './json-text.js';
import { writeChunks, type ByteTarget, type TextTarget } from './chunk-sink.js';
import { graphBinaryBytes, graphBinaryChunks } from './graph-binary-write.js';
import { readGraphBinary, readGraphBinaryBytes, type BinarySource } from './graph-binary-load.js';
import { appendNodeSpec, FROM_CALL, type SpecSource } from './node-spec.js';
import { GRAPH_JSON_FORMAT, GRAPH_JSON_VERSION, GRAPH_JSON_VERSIONS, type ComputeGraphJson, type GraphJsonEdge, type GraphJsonNode } from './graph-json.js';
import { EDGE_DATA_BY_CODE, edgeDataOf, edgeDataText, endpointProblem, PLAIN_EDGE, readEdgeSpec } from './edge-data.js';
import { registerChildReaders, type ChildSnapshot } from './child-graphs.js';
import { KIND_MEM_ALLOC, KIND_MEM_FREE, NODE_KINDS, NODE_KINDS_V1, type EdgeData, type EdgeSpec, type GraphEdge, type GraphNode, type NodeSpec } from './node.js';
import type { NodeId, StreamId } from './ids.js';

/** The result of `ComputeGraph.criticalPath`. */
export interface CriticalPath {
  /** The path's total cost (the sum of its nodes' costs). */
  readonly cost: number;
  /** The path's nodes, source first. */
  readonly nodes: readonly NodeId[];
}

/** The result of `ComputeGraph.widestLevel`. */
export interface WidestLevel {
  /** The level's index (the first of equally wide levels). */
  readonly level: number;
  /** How many nodes it holds: the most work that can run at once, by levels. */
  readonly width: number;
}

/** One node's times in `ComputeGraph.timing`. */
export interface NodeTiming {
  readonly id: NodeId;
  /** Earliest start: the longest cost path into the node. */
  readonly asap: number;
  /** Latest start that does not lengthen the schedule. */
  readonly alap: number;
  /** `alap − asap`: how long the node may slip. */
  readonly slack: number;
  /** No slack: the node is on a critical path. */
  readonly critical: boolean;
}

/** The result of `ComputeGraph.timing`. */
export interface GraphTiming {
  /** The schedule's length with unlimited streams (the critical path's cost). */
  readonly length: number;
  /** Per node, in id order. */
  readonly nodes: readonly NodeTiming[];
}

/** One node's place in `ComputeGraph.boundedMakespan`'s schedule. */
export interface NodePlacement {
  readonly id: NodeId;
  /** 0..streams−1. */
  readonly stream: number;
  readonly start: number;
  readonly finish: number;
}

/** The result of `ComputeGraph.boundedMakespan`. */
export interface BoundedMakespan {
  readonly streams: number;
  /** The list schedule's length. */
  readonly makespan: number;
  /** No schedule on `streams` streams is shorter: `max(critical path, total cost / streams)`. */
  readonly lowerBound: number;
  /** Graham's bound, which every list schedule meets: `total/streams + (1 − 1/streams)·critical path`. */
  readonly upperBound: number;
  /** The sum of all costs. */
  readonly totalCost: number;
  /** The critical path's cost. */
  readonly criticalPath: number;
  /** Per node, in id order. */
  readonly placement: readonly NodePlacement[];
}

// Derived data, rebuilt when the store's version moves.
interface Cache {
  version: number;
  reach: ReachabilityIndex | undefined;
  byOrd: Uint32Array | undefined;
  level: Uint32Array | undefined;
  order: Uint32Array | undefined;
}

/**
 * An empty cache with every field present from the start: one object shape whatever a graph
 * computes first, so the queries' compiled code sees one shape, and the kept graph keeps it
 * (kept-shapes.ts).
 */
function freshCache(version: number): Cache {
  return { version, reach: undefined, byOrd: undefined, level: undefined, order: undefined };
}

/** Whether the first graph has made the kept graph (kept-shapes.ts). */
let shapesKept = false;

let adopt: (graph: ComputeGraph, store: GraphStore) => void;
let branded: (value: unknown) => value is ComputeGraph;
let nodeAs: (graph: ComputeGraph, op: string, spec: unknown) => NodeId;
let edgesAs: (graph: ComputeGraph, op: string, edges: readonly EdgeArg[]) => number;
let idAs: (graph: ComputeGraph, op: string, name: string, id: unknown) => number;
let edgeAs: (graph: ComputeGraph, op: string, from: unknown, to: unknown, data: unknown) => boolean;
let upgradeAs: (graph: ComputeGraph, op: string, from: unknown, to: unknown, data: unknown) => boolean;
let freeze: (graph: ComputeGraph, what: string) => void;

/**
 * An edge as another public call (e.g. `GraphBuilder.chain`) hands it over: the two ids, unchecked,
 * and how the call names them, so refusals name the call and its own arguments.
 */
export interface EdgeArg {
  readonly from: unknown;
  readonly to: unknown;
  /** The argument `from` came from, e.g. `nodes[2]`. */
  readonly fromName: string;
  /** The argument `to` came from. */
  readonly toName: string;
  /** How a cycle message names the edge, before its ids: `edges[3]`, `nodes[1], nodes[2]:`. */
  readonly name: string;
  /**
   * The edge's data code (edge-data.ts), already checked on its own. Absent: a plain edge, or
   * none at all where the edge exists already with any data (the call only orders the two nodes).
   */
  readonly data?: number;
}

/**
 * A directed acyclic graph of CUDA's node kinds (kernel, memcpy, memset, host callback, empty,
 * event record and wait, child graph, graph memory allocation and free, conditional) joined by plain
 * or programmatic edges. A child graph or a conditional node is one node of the graph: every query
 * (order, levels, reachability, schedules) sees it as one, with its `cost`.
 *
 * @example
 * const g = new ComputeGraph();
 * const up = g.addNode({ kind: 'memcpy', name: 'upload', dir: MemcpyDir.HostToDevice, sizeBytes: 4096 });
 * const k = g.addNode({ kind: 'kernel', functionName: 'relu', grid: 4, block: 256 });
 * g.addEdge(up, k);
 * g.isReachable(up, k); // true
 */
export class ComputeGraph {
  #store: GraphStore;
  #order = new DynamicOrder();
  #cache: Cache = freshCache(-1);
  /** The call whose user callback is running, if any: the graph refuses to change meanwhile (`#writable`). */
  #readingBy: string | null = null;
  /**
   * Why the graph never changes, or null for an editable graph: a child graph node's copy (a
   * record hands it out, so it must not change), or a graph whose owner describes it as it is.
   */
  #readOnly: string | null = null;

  static {
    adopt = (graph, store) => {
      graph.#store = store;
    };
    freeze = (graph, what) => {
      graph.#readOnly ??= what;
    };
    // A brand check: true only for objects this class constructed (not for
    // Object.create(ComputeGraph.prototype) nor a look-alike), unlike `instanceof`.
    branded = (value): value is ComputeGraph => typeof value === 'object' && value !== null && #store in value;
    nodeAs = (graph, op, spec) => {
      graph.#writable(op);
      return appendNodeSpec(graph.#store, op, '', spec, FROM_CALL) as NodeId;
    };
    edgesAs = (graph, op, edges) => graph.#addBatch(op, edges);
    idAs = (graph, op, name, id) => graph.#id(op, name, id);
    edgeAs = (graph, op, from, to, data) => graph.#addOne(op, from, to, 'from', 'to', readEdgeSpec(op, 'data', data), 'data');
    upgradeAs = (graph, op, from, to, data) => {
      graph.#writable(op);
      const code = readEdgeSpec(op, 'data', data);
      const u = graph.#id(op, 'from', from);
      const v = graph.#id(op, 'to', to);
      const s = graph.#store;
      const e = s.findEdge(u, v);
      if (e === 0 || s.edgeCodeOf(e) !== PLAIN_EDGE) return false;
      const problem = code === PLAIN_EDGE ? null : endpointProblem(code, u, NODE_KINDS[s.kind[u]!]!, v, NODE_KINDS[s.kind[v]!]!);
      if (problem !== null) throw new InvalidArgumentError(op, 'data', `edge ${u} → ${v}: ${problem}`);
      s.setEdgeCode(e, code);
      return true;
    };
    registerChildReaders({
      copy: (op, name, value) => {
        const graph = requireGraph(op, name, value);
        // A read-only graph never changes, so it can be shared; any other is copied, as CUDA clones a child.
        return snapshot(graph.#readOnly !== null ? graph : graph.clone());
      },
      read: (op, prefix, value, depth) => snapshot(ComputeGraph.#read(op, prefix, value, depth)),
    });
    const snapshot = (graph: ComputeGraph): ChildSnapshot => {
      graph.#readOnly ??= "a child graph node's copy";
      const s = graph.#store;
      let memoryNode: ChildSnapshot['memoryNode'] = null;
      for (let v = 0; v < s.n && memoryNode === null; v++) {
        if (s.kind[v] === KIND_MEM_ALLOC || s.kind[v] === KIND_MEM_FREE) memoryNode = { id: v, kind: NODE_KINDS[s.kind[v]!]! };
      }
      // The map holds the conditional nodes in the order they were added, so its first is the smallest id.
      const first = s.conditionals.keys().next();
      const conditionalNode = first.done === true ? null : first.value;
      let cost = 0;
      if (s.n > 0) {
        const path = longestPath(s, nodesByOrd(s), s.cost === null ? new Float64Array(s.n).fill(1) : s.cost.subarray(0, s.n));
        cost = Number.isFinite(path.cost) ? path.cost : Number.MAX_VALUE;
      }
      return { graph, depth: s.depth, expanded: s.n + s.childNodes, cost, memoryNode, conditionalNode };
    };
  }

  /** An empty graph, to build by hand with `addNode` / `addEdge`. */
  constructor() {
    this.#store = new GraphStore();
    if (!shapesKept) {
      shapesKept = true;
      try {
        ComputeGraph.#keepShapes();
      } catch {
        // Only an optimisation: it must never make a construction fail (say, with a method of the
        // prototype replaced by a caller's wrapper that throws).
      }
    }
  }

  /**
   * Keeps a small graph, exercised through the public calls, and the structures its queries build,
   * for the life of the process, so that V8 keeps its compiled code for them when a program drops
   * all its graphs (kept-shapes.ts says why).
   */
  static #keepShapes(): void {
    const g = new ComputeGraph();
    for (let i = 0; i < 8; i++) g.addNode({ kind: 'empty', name: 'kept' });
    for (const [u, v] of KEPT_EDGES) g.addEdge(u as NodeId, v as NodeId);
    for (let a = 0; a < 8; a++) for (let b = 0; b < 8; b++) g.isReachable(a as NodeId, b as NodeId);
    keepShapes(g, g.#store);
  }

  /**
   * Reads a graph document (the value `toJSON()` returns, or its JSON text, or that text's UTF-8
   * bytes: `fromJSON(readFileSync(path))` accepts exactly the files `readJSON(path)` accepts).
   * Version 2 documents and the version 1 documents of earlier releases (five node kinds, plain
   * edges) both load. Text is strict: bytes that are not UTF-8, and a leading byte order mark
   * (which JSON text does not hold), are refused rather than read as other text.
   * @throws GraphError kind `ValidationFailed`, code `GRAPH_JSON_INVALID`, naming the first bad field
   *   (e.g. `nodes[3].grid[0]`, `edges[7]`, `nodes[2].graph.nodes[0].kind`); nothing is half-built.
   */
  static fromJSON(json: unknown): ComputeGraph {
    const OP = 'ComputeGraph.fromJSON';
    let doc = json;
    let text = typeof json === 'string' ? json : null;
    if (json instanceof Uint8Array) {
      text = decodeJsonText(json);
      if (text === null) throw jsonInvalid(OP, `not JSON text (${NOT_UTF8_PROBLEM})`);
    }
    if (text !== null) {
      if (text.charCodeAt(0) === 0xfeff) throw jsonInvalid(OP, `not JSON text (${BOM_PROBLEM})`);
      try {
        doc = JSON.parse(text);
      } catch (e) {
        throw jsonInvalid(OP, `not JSON text (${(e as Error).message})`, e);
      }
    }
    return ComputeGraph.#read(OP, '', doc, 1);
  }

  /**
   * Reads the graph document `doc` found at `prefix` (`''` for the outer document, else e.g.
   * `nodes[2].graph.`), `depth` documents deep. Every refusal is a `GRAPH_JSON_INVALID` GraphError
   * naming the field from the outer document.
   */
  static #read(op: string, prefix: string, doc: unknown, depth: number): ComputeGraph {
    const invalid = (message: string, cause?: unknown): GraphError => jsonInvalid(op, message, cause);
    const where = prefix === '' ? 'the document' : prefix.slice(0, -1);
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalid(`${where} must be an object, got ${describe(doc)}`);
    const d = doc as Record<string, unknown>;
    for (const key of Object.keys(d)) {
      if (!['format', 'version', 'nodes', 'edges'].includes(key)) {
        throw invalid(`${prefix === '' ? '' : `${where}: `}unknown field '${nameText(key)}' (known: format, version, nodes, edges)`);
      }
    }
    if (d.format !== GRAPH_JSON_FORMAT) throw invalid(`${prefix}format must be '${GRAPH_JSON_FORMAT}', got ${describe(d.format)}`);
    if (!(GRAPH_JSON_VERSIONS as readonly unknown[]).includes(d.version)) {
      throw invalid(`${prefix}version must be ${GRAPH_JSON_VERSIONS.join(' or ')} (the versions this build reads), got ${describe(d.version)}`);
    }
    if (!Array.isArray(d.nodes)) throw invalid(`${prefix}nodes must be an array, got ${describe(d.nodes)}`);
    if (!Array.isArray(d.edges)) throw invalid(`${prefix}edges must be an array, got ${describe(d.edges)}`);
    const v1 = d.version === 1;
    const source: SpecSource = { kinds: v1 ? NODE_KINDS_V1 : NODE_KINDS, extraKey: 'id', documentDepth: depth };

    const graph = new ComputeGraph();
    const store = graph.#store;
    try {
      const nodes = d.nodes as unknown[];
      for (let i = 0; i < nodes.length; i++) {
        const node = nodes[i];
        if (typeof node === 'object' && node !== null && (node as { id?: unknown }).id !== i) {
          throw invalid(`${prefix}nodes[${i}].id must be ${i} (ids are the node's index), got ${describe((node as { id?: unknown }).id)}`);
        }
        appendNodeSpec(store, op, `${prefix}nodes[${i}].`, node, source);
      }
      const edges = d.edges as unknown[];
      const n = store.n;
      const from: number[] = new Array<number>(edges.length);
      const to: number[] = new Array<number>(edges.length);
      const codes: number[] = [];
      for (let i = 0; i < edges.length; i++) {
        const edge = edges[i];
        const name = `${prefix}edges[${i}]`;
        const triple = !v1 && Array.isArray(edge) && edge.length === 3;
        if (!Array.isArray(edge) || (edge.length !== 2 && !triple)) {
          throw invalid(`${name} must be ${v1 ? 'a pair [from, to]' : 'a pair [from, to] or a triple [from, to, { kind, port }]'}, got ${describe(edge)}`);
        }
        const u = isU32(edge[0]) ? edge[0] : requireU32(op, `${name}[0]`, edge[0]);
        const v = isU32(edge[1]) ? edge[1] : requireU32(op, `${name}[1]`, edge[1]);
        if (u >= n || v >= n) throw invalid(`${name} [${u}, ${v}] names node ${u >= n ? u : v}, but the document has ${n} node(s)`);
        from[i] = u;
        to[i] = v;
        if (triple) {
          const code = readEdgeSpec(op, `${name}[2]`, edge[2]);
          const problem = endpointProblem(code, u, NODE_KINDS[store.kind[u]!]!, v, NODE_KINDS[store.kind[v]!]!);
          if (problem !== null) throw invalid(`${name} [${u}, ${v}]: ${problem}`);
          codes[i] = code;
        }
      }
      // All at once: a document's edges may come in any order (see dynamic-order.ts).
      const r = graph.#order.addEdges(store, from, to);
      if (!r.ok) throw invalid(`${prefix}edges[${r.index}] [${from[r.index]}, ${to[r.index]}] closes a cycle (${cycleText(r.cycle)})`);
      const dup = r.added.indexOf(false);
      if (dup >= 0) throw invalid(`${prefix}edges[${dup}] [${from[dup]}, ${to[dup]}] repeats an earlier edge`);
      // No duplicates, so edge i is edge number i + 1.
      codes.forEach((code, i) => store.setEdgeCode(i + 1, code));
    } catch (e) {
      if (e instanceof InvalidArgumentError) throw invalid(e.message.slice(op.length + 2), e);
      throw e;
    }
    return graph;
  }

  // ── size ──────────────────────────────────────────────────────────────────────────────────

  /** Number of nodes. */
  nodeCount(): number {
    return this.#store.n;
  }

  /** Number of edges (duplicates are never stored). */
  edgeCount(): number {
    return this.#store.m;
  }

  /** The streams that hold at least one node, ascending. */
  streams(): StreamId[] {
    const s = this.#store;
    const out: StreamId[] = [];
    for (let i = 0; i < s.streamIds.length; i++) if (s.slotCount[i]! > 0) out.push(s.streamIds[i]! as StreamId);
    return out.sort((a, b) => a - b);
  }

  /**
   * True for a graph that cannot change: a child graph node's copy (`node.graph`), or a recorded
   * multi-GPU step (`MultiDeviceGraph.graph`). Changing one is refused with GraphError
   * `GRAPH_READ_ONLY`; `clone()` gives an editable copy.
   */
  get readOnly(): boolean {
    return this.#readOnly !== null;
  }

  /**
   * True when the graph holds a conditional node (at its top level: a child graph cannot hold one).
   * CUDA's rules for such a graph are the driver layer's to keep: it cannot be cloned
   * (`cuGraphClone`), nor be a child graph (the model refuses that too), and it may be instantiated
   * once at a time. The model's `clone()` and `ExecGraph.instantiate` are copies of the model and
   * stay allowed.
   */
  hasConditionalNodes(): boolean {
    return this.#store.conditionals.size > 0;
  }

  /** An editable copy of the graph: same nodes, ids, edges, edge data and costs; later changes to either do not reach the other. */
  clone(): ComputeGraph {
    const graph = new ComputeGraph();
    graph.#store = this.#store.clone();
    return graph;
  }

  // ── nodes and edges ───────────────────────────────────────────────────────────────────────

  /**
   * The record of node `id` (a fresh object: changing it does not change the graph).
   * @throws GraphError kind `NodeNotFound` for an unknown id; InvalidArgumentError for a non-id.
   */
  node(id: NodeId): GraphNode {
    return this.#store.readNode(this.#id('ComputeGraph.node', 'id', id));
  }

  /** Every node's record, in id order. */
  nodes(): GraphNode[] {
    const out: GraphNode[] = new Array(this.#store.n);
    for (let v = 0; v < this.#store.n; v++) out[v] = this.#store.readNode(v);
    return out;
  }

  /** Every edge as `[from, to]`, sorted by `from`, then `to`. */
  edges(): [NodeId, NodeId][] {
    const s = this.#store;
    const out: [NodeId, NodeId][] = new Array(s.m);
    const succ: number[] = [];
    let k = 0;
    for (let u = 0; u < s.n; u++) {
      s.successors(u, succ);
      for (let i = 0; i < succ.length; i++) out[k++] = [u as NodeId, succ[i]! as NodeId];
    }
    return out;
  }

  /** Every edge with its data, in the order of `edges()`. O(n + m). */
  edgeRecords(): GraphEdge[] {
    const s = this.#store;
    const out: GraphEdge[] = new Array(s.m);
    let k = 0;
    forEachEdge(s, (u, v, code) => {
      const d = EDGE_DATA_BY_CODE[code]!;
      out[k++] = { from: u as NodeId, to: v as NodeId, kind: d.kind, port: d.port };
    });
    return out;
  }

  /** True if the edge `from → to` exists. @throws GraphError `NodeNotFound` for an unknown id. */
  hasEdge(from: NodeId, to: NodeId): boolean {
    const OP = 'ComputeGraph.hasEdge';
    return this.#store.hasEdge(this.#id(OP, 'from', from), this.#id(OP, 'to', to));
  }

  /** The data of the edge `from → to` (`{ kind, port }`), or null if there is no such edge. @throws GraphError `NodeNotFound`. */
  edgeData(from: NodeId, to: NodeId): EdgeData | null {
    const OP = 'ComputeGraph.edgeData';
    const s = this.#store;
    const e = s.findEdge(this.#id(OP, 'from', from), this.#id(OP, 'to', to));
    return e === 0 ? null : edgeDataOf(s.edgeCodeOf(e));
  }

  /** The direct successors of `id`, ascending. @throws GraphError `NodeNotFound`. */
  successors(id: NodeId): NodeId[] {
    return this.#store.successors(this.#id('ComputeGraph.successors', 'id', id)) as NodeId[];
  }

  /** The direct predecessors of `id`, ascending. @throws GraphError `NodeNotFound`. */
  predecessors(id: NodeId): NodeId[] {
    return this.#store.predecessors(this.#id('ComputeGraph.predecessors', 'id', id)) as NodeId[];
  }

  /** Nodes with no predecessors, ascending. */
  sources(): NodeId[] {
    const s = this.#store;
    const out: NodeId[] = [];
    for (let v = 0; v < s.n; v++) if (s.firstIn[v] === 0) out.push(v as NodeId);
    return out;
  }

  /** Nodes with no successors, ascending. */
  sinks(): NodeId[] {
    const s = this.#store;
    const out: NodeId[] = [];
    for (let v = 0; v < s.n; v++) if (s.firstOut[v] === 0) out.push(v as NodeId);
    return out;
  }

  /**
   * True if a path leads from `from` to `to`; true when `from === to`. O(1) per query after an
   * O((n + m)·k) index build (k: the number of streams) for captures of up to 32 streams, and for
   * wider captures whose ops mostly pass work along their stream; other graphs get reachability
   * labels that settle most queries in O(1) and search for the rest. Rebuilt after the graph
   * changes (see reachability.ts and docs/model.md, "Reachability").
   * @throws GraphError `NodeNotFound` for an unknown id.
   */
  isReachable(from: NodeId, to: NodeId): boolean {
    const OP = 'ComputeGraph.isReachable';
    const a = this.#id(OP, 'from', from);
    const b = this.#id(OP, 'to', to);
    const cache = this.#fresh();
    const index = (cache.reach ??= ReachabilityIndex.build(this.#store));
    return index.reachable(a, b);
  }

  // ── building by hand ──────────────────────────────────────────────────────────────────────

  /**
   * Adds a node and returns its id (the next dense id). Kernel limits are CUDA's; see `NodeSpec`.
   * @throws InvalidArgumentError naming the bad field (`ComputeGraph.addNode: spec.grid[0] …`);
   *   the graph is unchanged.
   * @example
   * g.addNode({ kind: 'kernel', functionName: 'gemm', grid: [8, 8], block: [16, 16], cost: 40 });
   * g.addNode({ kind: 'empty', name: 'join' });
   */
  addNode(spec: NodeSpec): NodeId {
    this.#writable('ComputeGraph.addNode');
    return appendNodeSpec(this.#store, 'ComputeGraph.addNode', 'spec.', spec) as NodeId;
  }

  /**
   * Adds the edge `from → to` (`to` runs after `from`). Returns true if it was added, false if it
   * already existed with the same data (duplicates are ignored). O(1) for an edge from an older
   * node to a newer one; an edge against the current order costs two searches that stop where they
   * meet (see docs/model.md, "Cycle checks"), so edges may come in any order.
   *
   * `data` makes a programmatic edge (programmatic dependent launch: `to` may start before `from`
   * has finished, and waits for it inside the kernel) or picks the port: see `EdgeData` for CUDA's
   * rules. Every query treats an edge of any kind as a dependency.
   * @throws GraphError kind `CycleDetected` (code `GRAPH_CYCLE`) for a self-loop or when `to`
   *   already reaches `from`; GraphError `NodeNotFound` for an unknown id; GraphError
   *   `GRAPH_EDGE_CONFLICT` when the edge exists with other data; InvalidArgumentError for data
   *   against CUDA's rules. The graph is unchanged.
   * @example
   * g.addEdge(producer, consumer, { kind: 'programmatic' }); // both kernels
   */
  addEdge(from: NodeId, to: NodeId, data?: EdgeSpec): boolean {
    const OP = 'ComputeGraph.addEdge';
    return this.#addOne(OP, from, to, 'from', 'to', readEdgeSpec(OP, 'data', data), 'data');
  }

  /**
   * `addEdge` for the public call `op` (`fromName`, `toName`: how it names the ids). One edge goes
   * through the incremental order (dynamic-order.ts), cheaper than a batch's full pass.
   */
  #addOne(op: string, from: unknown, to: unknown, fromName: string, toName: string, code: number, dataName: string): boolean {
    this.#writable(op);
    const u = this.#id(op, fromName, from);
    const v = this.#id(op, toName, to);
    this.#store.readAhead(u, v);
    // The data check looks the edge up anyway: an edge found there is a duplicate with the same data.
    if (this.#checkEdgeData(op, null, dataName, u, v, code) !== 0) return false;
    const r = this.#order.addEdge(this.#store, u, v, true);
    if (r === 'cycle') {
      throw new GraphError(
        'CycleDetected',
        GraphErrorCode.Cycle,
        u === v ? `${op}: a self-loop on node ${u} would be a cycle` : `${op}: edge ${u} → ${v} would close a cycle (${v} already reaches ${u})`,
      );
    }
    if (r === 'added' && code !== PLAIN_EDGE) this.#store.setEdgeCode(this.#store.m, code);
    return r === 'added';
  }

  /**
   * Refuses edge data against the nodes it joins (CUDA's rules, edge-data.ts), or against the data
   * of the edge already there (an edge is one dependency: it cannot be plain and programmatic at once).
   * Returns the number of the edge already there (same data), or 0.
   */
  #checkEdgeData(op: string, label: string | null, dataName: string, u: number, v: number, code: number): number {
    const s = this.#store;
    // In a batch, refusals say which entry: `edges[2]: edge 0 → 1: …`.
    const at = label === null ? '' : `${label.replace(/:$/, '')}: `;
    const problem = code === PLAIN_EDGE ? null : endpointProblem(code, u, NODE_KINDS[s.kind[u]!]!, v, NODE_KINDS[s.kind[v]!]!);
    if (problem !== null) throw new InvalidArgumentError(op, dataName, `${at}edge ${u} → ${v}: ${problem}`);
    // Every edge goes forward in the topological order, so an edge against it is not there: only
    // the others are looked up (the lookup walks two lists, a cache miss a step on a large graph).
    const e = s.before(u, v) ? s.findEdge(u, v) : 0;
    if (e !== 0 && s.edgeCodeOf(e) !== code) {
      throw new GraphError(
        'ValidationFailed',
        GraphErrorCode.EdgeConflict,
        `${op}: ${at}edge ${u} → ${v} already exists as a ${edgeDataText(s.edgeCodeOf(e))} edge; it cannot also be ${edgeDataText(code)}`,
      );
    }
    return e;
  }

  /**
   * Adds many edges at once, in any order: O(k) for k edges that agree with the current order,
   * else O(n + m) for one topological sort, which beats k single `addEdge` calls for a large batch
   * against the order. Duplicates are ignored. Returns how many edges were new. An edge
   * may carry its data as a third element, as `addEdge` takes it.
   * @throws GraphError kind `CycleDetected` (code `GRAPH_CYCLE`) naming an edge of the batch that
   *   closes a cycle, and the cycle; nothing is added. GraphError `NodeNotFound` for an unknown id
   *   (`edges[i]` named); InvalidArgumentError for a non-pair or bad data; GraphError
   *   `GRAPH_EDGE_CONFLICT` as `addEdge`.
   * @example
   * g.addEdges([[a, b], [b, c], [a, c, { kind: 'programmatic' }]]);
   */
  addEdges(edges: Iterable<readonly [NodeId, NodeId] | readonly [NodeId, NodeId, EdgeSpec]>): number {
    const OP = 'ComputeGraph.addEdges';
    if (edges === null || typeof edges !== 'object' || typeof (edges as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw new InvalidArgumentError(OP, 'edges', `edges must be an iterable of [from, to] pairs, got ${describe(edges)}`);
    }
    this.#writable(OP);
    const batch: EdgeArg[] = [];
    // The iterable is the user's code (a generator, say): the graph holds still while it runs.
    this.#readingBy = `${OP} (its edges iterable is running)`;
    try {
      for (const pair of edges as Iterable<unknown>) {
        const i = batch.length;
        if (!Array.isArray(pair) || (pair.length !== 2 && pair.length !== 3)) {
          throw new InvalidArgumentError(OP, `edges[${i}]`, `edges[${i}] must be a pair [from, to] or a triple [from, to, data], got ${describe(pair)}`);
        }
        const data = pair.length === 3 ? readEdgeSpec(OP, `edges[${i}][2]`, pair[2]) : PLAIN_EDGE;
        batch.push({ from: pair[0], to: pair[1], fromName: `edges[${i}][0]`, toName: `edges[${i}][1]`, name: `edges[${i}]`, data });
      }
    } finally {
      this.#readingBy = null;
    }
    return this.#addBatch(OP, batch);
  }

  /**
   * Adds a batch of edges for the public call `op`, all or none: every id is checked first (named
   * as the call names it), then the batch goes in at once or, if it would close a cycle, not at all.
   */
  #addBatch(op: string, edges: readonly EdgeArg[]): number {
    this.#writable(op);
    const from: number[] = new Array<number>(edges.length);
    const to: number[] = new Array<number>(edges.length);
    const codes: number[] = new Array<number>(edges.length);
    const inBatch = new Map<string, number>();
    for (let i = 0; i < edges.length; i++) {
      const edge = edges[i]!;
      from[i] = this.#id(op, edge.fromName, edge.from);
      to[i] = this.#id(op, edge.toName, edge.to);
      codes[i] = edge.data ?? PLAIN_EDGE;
      const existing = this.#store.findEdge(from[i]!, to[i]!);
      // Without data the edge only orders its nodes: one already there, of any kind, does that.
      if (edge.data === undefined && existing !== 0) codes[i] = this.#store.edgeCodeOf(existing);
      this.#checkEdgeData(op, edge.name, `${edge.name}[2]`, from[i]!, to[i]!, codes[i]!);
      // The same edge twice in one batch must agree with itself too.
      const key = `${from[i]}>${to[i]}`;
      const earlier = inBatch.get(key);
      if (earlier !== undefined && codes[earlier] !== codes[i]) {
        throw new GraphError(
          'ValidationFailed',
          GraphErrorCode.EdgeConflict,
          `${op}: ${edge.name} ${from[i]} → ${to[i]} is ${edgeDataText(codes[i]!)}, but ${edges[earlier]!.name} adds it as ${edgeDataText(codes[earlier]!)}; no edge was added`,
        );
      }
      inBatch.set(key, i);
    }
    const before = this.#store.m;
    const r = this.#order.addEdges(this.#store, from, to);
    if (!r.ok) {
      throw new GraphError(
        'CycleDetected',
        GraphErrorCode.Cycle,
        `${op}: ${edges[r.index]!.name} ${from[r.index]} → ${to[r.index]} closes a cycle (${cycleText(r.cycle)}); no edge was added`,
      );
    }
    // The new edges were appended in batch order: the k-th added one is edge number before + k.
    let e = before;
    for (let i = 0; i < edges.length; i++) {
      if (!r.added[i]) continue;
      e++;
      if (codes[i] !== PLAIN_EDGE) this.#store.setEdgeCode(e, codes[i]!);
    }
    return e - before;
  }

  // ── order and schedule ────────────────────────────────────────────────────────────────────

  /**
   * The nodes in a topological order: Kahn's algorithm, FIFO, seeded by ascending id, successors
   * in ascending id. Deterministic: it depends only on the nodes and edges.
   * @throws GraphError kind `EmptyGraph` (code `GRAPH_EMPTY`) when the graph has no nodes.
   */
  topologicalOrder(): NodeId[] {
    const cache = this.#nonEmpty('ComputeGraph.topologicalOrder');
    cache.order ??= kahnOrder(this.#store);
    return toIdArray(cache.order) as NodeId[];
  }

  /**
   * Wavefronts: `levels()[l]` lists (ascending) the nodes whose longest path from a source has `l`
   * edges. Nodes of one level never depend on each other, so each level could run at once.
   * @throws GraphError `EmptyGraph` when the graph has no nodes.
   */
  levels(): NodeId[][] {
    return groupLevels(this.#levels('ComputeGraph.levels')) as NodeId[][];
  }

  /** The level of node `id` (see `levels`). @throws GraphError `NodeNotFound`. */
  levelOf(id: NodeId): number {
    const v = this.#id('ComputeGraph.levelOf', 'id', id);
    return this.#levels('ComputeGraph.levelOf')[v]!;
  }

  /**
   * The widest level: the most nodes that can run at once under level-by-level scheduling.
   * @throws GraphError `EmptyGraph` when the graph has no nodes.
   */
  widestLevel(): WidestLevel {
    const groups = groupLevels(this.#levels('ComputeGraph.widestLevel'));
    let level = 0;
    for (let l = 1; l < groups.length; l++) if (groups[l]!.length > groups[level]!.length) level = l;
    return { level, width: groups[level]!.length };
  }

  /**
   * The longest path by cost: the least time the graph needs with unlimited parallelism. Costs
   * are the nodes' `cost` (default 1, so by default the path with the most nodes), or what
   * `costOf(node)` returns. The path runs from a source to a sink; ties go to smaller ids.
   * @throws GraphError `EmptyGraph` when the graph has no nodes; InvalidArgumentError when
   *   `costOf` returns anything but a finite number ≥ 0; GraphError `GRAPH_COST_OVERFLOW` when the
   *   path's costs add up to more than `Number.MAX_VALUE`. `costOf` sees the graph as it was when
   *   the call began: changing the graph from it is refused (GraphError `GRAPH_BUSY`).
   * @example
   * const { cost, nodes } = g.criticalPath((n) => (n.kind === 'kernel' ? 10 : 1));
   */
  criticalPath(costOf?: (node: GraphNode) => number): CriticalPath {
    const OP = 'ComputeGraph.criticalPath';
    const { byOrd, cost } = this.#scheduleInput(OP, costOf);
    const path = longestPath(this.#store, byOrd, cost);
    finiteSum(OP, path.cost, 'along the critical path');
    return { cost: path.cost, nodes: path.nodes as NodeId[] };
  }

  /**
   * ASAP/ALAP/slack per node with unlimited streams: when each node can start at the earliest,
   * the latest it can start without lengthening the run, and the difference. Nodes with no slack
   * are critical: speeding anything else up does not shorten the graph. Costs as `criticalPath`.
   * With whole-number costs every time is exact; with fractional ones a slack below 10⁻⁹ of the
   * length is taken for round-off and counts as none.
   * @throws GraphError `EmptyGraph`; InvalidArgumentError for a bad `costOf`; GraphError
   *   `GRAPH_COST_OVERFLOW` or `GRAPH_BUSY` as `criticalPath`.
   * @example
   * const t = g.timing((n) => (n.kind === 'kernel' ? 10 : 1));
   * t.nodes.filter((x) => x.critical);   // where the time goes
   */
  timing(costOf?: (node: GraphNode) => number): GraphTiming {
    const OP = 'ComputeGraph.timing';
    const { byOrd, cost } = this.#scheduleInput(OP, costOf);
    const t = nodeTimes(this.#store, byOrd, cost);
    // Every time is at most the length; a finite length keeps the slacks and critical flags exact.
    finiteSum(OP, t.length, 'along the critical path');
    // Slack is a difference of sums. Whole-number costs (and a length below 2^53) add up exactly,
    // so every slack is exact, even a slack of 1 in 10^12; otherwise round-off below this is no
    // slack at all.
    let whole = t.length <= Number.MAX_SAFE_INTEGER;
    for (let v = 0; v < cost.length && whole; v++) whole = Number.isInteger(cost[v]!);
    const eps = whole ? 0 : 1e-9 * Math.max(1, t.length);
    const nodes: NodeTiming[] = new Array(this.#store.n);
    for (let v = 0; v < nodes.length; v++) {
      const asap = t.asap[v]!;
      const alap = Math.max(asap, t.alap[v]!);
      const slack = alap - asap <= eps ? 0 : alap - asap;
      nodes[v] = { id: v as NodeId, asap, alap: slack === 0 ? asap : alap, slack, critical: slack === 0 };
    }
    return { length: t.length, nodes };
  }

  /**
   * A schedule on `streams` streams (Graham's list scheduling, longest remaining path first) and
   * how good it is: `lowerBound ≤ optimum ≤ makespan ≤ upperBound`, where the upper bound is
   * Graham's `total/k + (1 − 1/k)·critical path` (at most `2 − 1/k` times the optimum). With
   * `streams` ≥ the widest antichain the makespan is the critical path. Costs as `criticalPath`.
   * @throws GraphError `EmptyGraph`; InvalidArgumentError unless `streams` is an integer in 1..1024
   *   or for a bad `costOf`; GraphError `GRAPH_COST_OVERFLOW` when all costs add up to more than
   *   `Number.MAX_VALUE`, or `GRAPH_BUSY` as `criticalPath`.
   */
  boundedMakespan(streams: number, costOf?: (node: GraphNode) => number): BoundedMakespan {
    const OP = 'ComputeGraph.boundedMakespan';
    const k = requireInt(OP, 'streams', streams, 1, 1024);
    const { byOrd, cost } = this.#scheduleInput(OP, costOf);
    let total = 0;
    for (let v = 0; v < cost.length; v++) total += cost[v]!;
    // Every start, finish and bound is at most the total (costs are ≥ 0), so a finite total keeps them finite.
    finiteSum(OP, total, 'over all nodes');
    const critical = longestPath(this.#store, byOrd, cost).cost;
    const { makespan, placement } = listSchedule(this.#store, byOrd, cost, k);
    // Every list schedule lies within both bounds (they are theorems); fractional costs summed in
    // other orders can put a bound an ulp on the wrong side, which is round-off, so it is clamped.
    return {
      streams: k,
      makespan,
      lowerBound: Math.min(makespan, Math.max(critical, total / k)),
      upperBound: Math.max(makespan, total / k + (1 - 1 / k) * critical),
      totalCost: total,
      criticalPath: critical,
      placement: placement.map((p, v) => ({ id: v as NodeId, ...p })),
    };
  }

  // ── output ────────────────────────────────────────────────────────────────────────────────

  /**
   * Graphviz DOT text: one cluster per stream, shape and fill by kind (kernel box, memcpy
   * parallelogram, memset hexagon, host callback ellipse, empty diamond), cross-stream edges
   * dashed; child graphs are clusters of their nodes, conditional nodes clusters of their bodies
   * (`while body`, `if then`, `if else`, `switch case 2`); `highlight` draws a path (e.g.
   * `criticalPath().nodes`) in thick red.
   * @throws InvalidArgumentError for bad options; GraphError `NodeNotFound` for an unknown highlighted id.
   */
  toDot(options?: DotOptions): string {
    return renderDot(this.#store, this.#dotOptions('ComputeGraph.toDot', options, ['title', 'highlight']));
  }

  /**
   * The text of `toDot(options)` in pieces of about 64 KiB, for graphs whose DOT is longer than a
   * string can be (V8's limit, 512 MiB, is about 3.5 million nodes). `onProgress(done, total)` is
   * told the nodes and edges written after each piece. The graph must not change until the last
   * piece is read (a piece read after a change throws GraphError `GRAPH_BUSY`).
   * @throws as `toDot`.
   */
  toDotChunks(options?: DotChunkOptions): IterableIterator<string> {
    const OP = 'ComputeGraph.toDotChunks';
    return dotChunks(this.#store, this.#dotOptions(OP, options, ['title', 'highlight', 'onProgress']), OP);
  }

  /**
   * Writes `toDot(options)` to a file path (created or replaced) or a Writable (left open),
   * waiting for the Writable when it asks to; resolves with the characters written.
   * @throws as `toDotChunks`; the file's or Writable's own errors.
   */
  async writeDot(target: TextTarget, options?: DotChunkOptions): Promise<number> {
    const OP = 'ComputeGraph.writeDot';
    requireTarget(OP, target);
    return writeChunks(dotChunks(this.#store, this.#dotOptions(OP, options, ['title', 'highlight', 'onProgress']), OP), target);
  }

  /** `toDot`'s options, checked for the call `op`. */
  #dotOptions(op: string, options: unknown, keys: readonly string[]): DotChunkOptions {
    const o = requireOptions<DotChunkOptions>(op, options, keys);
    if (o.title !== undefined && typeof o.title !== 'string') {
      throw new InvalidArgumentError(op, 'title', `title must be a string, got ${describe(o.title)}`);
    }
    if (o.highlight !== undefined) {
      if (!Array.isArray(o.highlight)) throw new InvalidArgumentError(op, 'highlight', `highlight must be an array of node ids, got ${describe(o.highlight)}`);
      // Every index: forEach would skip a hole, which then highlighted nothing in its place.
      for (let i = 0; i < o.highlight.length; i++) this.#id(op, `highlight[${i}]`, o.highlight[i]);
    }
    requireCallback(op, 'onProgress', o.onProgress);
    return o;
  }

  /** The graph as a versioned document (see graph-json.ts and docs/model.md); `JSON.stringify(graph)` uses it. */
  toJSON(): ComputeGraphJson {
    const s = this.#store;
    const edges: GraphJsonEdge[] = new Array(s.m);
    let k = 0;
    forEachEdge(s, (u, v, code) => {
      edges[k++] = code === PLAIN_EDGE ? [u, v] : [u, v, edgeDataOf(code)];
    });
    // A child graph's graph and a conditional's bodies are written as documents of their own, so
    // the value is plain data that fromJSON, structuredClone and JSON.stringify all take as it is.
    const nodes: GraphJsonNode[] = this.nodes().map(documentNode);
    return { format: GRAPH_JSON_FORMAT, version: GRAPH_JSON_VERSION, nodes, edges };
  }

  /**
   * The text of `JSON.stringify(graph)` — or, with `space`, of `JSON.stringify(graph, null, space)`
   * — byte for byte, in pieces of about 64 KiB, never held whole: for graphs whose text is longer
   * than a string can be (about 3.5 million nodes). `onProgress(done, total)` is told the nodes and
   * edges written after each piece. The graph must not change until the last piece is read (a
   * piece read after a change throws GraphError `GRAPH_BUSY`).
   * @throws InvalidArgumentError for bad options.
   * @example
   * for (const piece of graph.toJSONChunks()) socket.write(piece);
   */
  toJSONChunks(options?: JsonChunkOptions): IterableIterator<string> {
    const OP = 'ComputeGraph.toJSONChunks';
    return graphJsonChunks(this.#store, OP, jsonOptions(OP, options));
  }

  /**
   * Writes the JSON text (as `toJSONChunks`) to a file path (created or replaced) or a Writable
   * (left open), waiting for the Writable when it asks to; resolves with the characters written.
   * `ComputeGraph.readJSON` reads it back.
   * @throws InvalidArgumentError for bad options or target; the file's or Writable's own errors.
   * @example
   * await graph.writeJSON('graph.json');
   */
  async writeJSON(target: TextTarget, options?: JsonChunkOptions): Promise<number> {
    const OP = 'ComputeGraph.writeJSON';
    requireTarget(OP, target);
    return writeChunks(graphJsonChunks(this.#store, OP, jsonOptions(OP, options)), target);
  }

  /**
   * Reads a graph document from a file path, a Readable or any (async) iterable of byte or string
   * pieces, as it arrives: memory is the graph plus about one piece, whatever the text's length.
   * Accepts what `fromJSON` accepts, with its checks and messages (see graph-json-read.ts for the
   * small differences of a reader that sees the text in order). `onProgress(bytes)` is told the
   * bytes read after each piece.
   * @throws GraphError kind `ValidationFailed`, code `GRAPH_JSON_INVALID`, naming the first bad
   *   field; InvalidArgumentError for a bad source or options, or a piece that is neither a
   *   Uint8Array nor a string (which no reader could take as text); the source's own errors (a
   *   missing file) as they are.
   * @example
   * const g = await ComputeGraph.readJSON('graph.json');
   */
  static async readJSON(source: GraphSource, options?: ReadGraphOptions): Promise<ComputeGraph> {
    const OP = 'ComputeGraph.readJSON';
    const isIterable = typeof source === 'object' && source !== null && (Symbol.asyncIterator in source || Symbol.iterator in source);
    if (typeof source !== 'string' && !isIterable) {
      throw new InvalidArgumentError(OP, 'source', `source must be a file path, a Readable or an iterable of byte or string pieces, got ${describe(source)}`);
    }
    const o = requireOptions<ReadGraphOptions>(OP, options, ['onProgress']);
    requireCallback(OP, 'onProgress', o.onProgress);
    const graph = new ComputeGraph();
    graph.#store = await readGraphJson(source, OP, o);
    return graph;
  }

  /**
   * The graph in the binary form (graph-binary-format.ts): the store's columns with a header and a
   * checksum per section, a few times smaller than the JSON and read many times faster.
   * `ComputeGraph.fromBinary` reads it back; the JSON stays the interchange format.
   * @example
   * const copy = ComputeGraph.fromBinary(graph.toBinary());
   */
  toBinary(): Uint8Array {
    return graphBinaryBytes(this.#store, 'ComputeGraph.toBinary');
  }

  /**
   * Writes the binary form (as `toBinary`) to a file path (created or replaced) or a Writable (left
   * open), a piece at a time and waiting for the Writable when it asks to: most pieces are views of
   * the graph's own columns, so memory does not grow with the graph. Resolves with the bytes
   * written. The graph must not change until it resolves (GraphError `GRAPH_BUSY`).
   * @throws InvalidArgumentError for a bad target; the file's or Writable's own errors.
   * @example
   * await graph.writeBinary('graph.cgraph');
   */
  async writeBinary(target: ByteTarget): Promise<number> {
    const OP = 'ComputeGraph.writeBinary';
    requireTarget(OP, target);
    return writeChunks(graphBinaryChunks(this.#store, OP), target);
  }

  /**
   * Reads the binary form from bytes in memory. Accepts exactly the graphs `addNode` and
   * `addEdges` could build (every kind, parameter, stream, name, cost and edge checked, column by
   * column), so a corrupt or truncated file is refused, never loaded as another graph.
   * @throws FileFormatError (`ERR_FILE_FORMAT`) naming the section and what is wrong in it.
   * @example
   * const g = ComputeGraph.fromBinary(readFileSync('graph.cgraph'));
   */
  static fromBinary(bytes: Uint8Array): ComputeGraph {
    const OP = 'ComputeGraph.fromBinary';
    if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError(OP, 'bytes', `bytes must be a Uint8Array, got ${describe(bytes)}`);
    return graphFromStore(readGraphBinaryBytes(bytes, OP));
  }

  /**
   * Reads the binary form from a file path, a Readable or any (async) iterable of byte pieces, or
   * bytes; checks as `fromBinary`. Memory is the graph plus one section as it arrives.
   * `onProgress(bytes)` is told the bytes read after each piece.
   * @throws FileFormatError (`ERR_FILE_FORMAT`) naming the file (or `<stream>`, `<bytes>`) and the
   *   section; InvalidArgumentError for a bad source or options, or a piece that is not a
   *   Uint8Array (a string's bytes are not the file's); the source's own errors (a missing file)
   *   as they are.
   * @example
   * const g = await ComputeGraph.readBinary('graph.cgraph');
   */
  static async readBinary(source: BinarySource, options?: ReadGraphOptions): Promise<ComputeGraph> {
    const OP = 'ComputeGraph.readBinary';
    const isIterable = typeof source === 'object' && source !== null && (Symbol.asyncIterator in source || Symbol.iterator in source);
    if ((typeof source !== 'string' || source === '') && !isIterable) {
      throw new InvalidArgumentError(OP, 'source', `source must be a file path, a Readable, an iterable of byte pieces or a Uint8Array, got ${describe(source)}`);
    }
    const o = requireOptions<ReadGraphOptions>(OP, options, ['onProgress']);
    requireCallback(OP, 'onProgress', o.onProgress);
    return graphFromStore(await readGraphBinary(source, OP, o.onProgress));
  }

  /** `ComputeGraph(5 nodes, 4 edges, 2 streams)`. */
  toString(): string {
    return `ComputeGraph(${this.nodeCount()} nodes, ${this.edgeCount()} edges, ${this.streams().length} streams)`;
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  /** Checks an id argument: a u32 (else InvalidArgumentError) that names a node (else NodeNotFound). */
  #id(op: string, name: string, id: unknown): number {
    const v = isU32(id) ? id : requireU32(op, name, id);
    if (v >= this.#store.n) {
      const n = this.#store.n;
      throw new GraphError(
        'NodeNotFound',
        GraphErrorCode.NodeNotFound,
        `${op}: node ${v} not found (${name}; the graph has ${n} node${n === 1 ? '' : 's'}${n > 0 ? `, ids 0..${n - 1}` : ''})`,
      );
    }
    return v;
  }

  /**
   * What the schedule methods start from: `costOf` checked, the graph not empty, every node's cost
   * (its own, or `costOf(record)` checked) and a topological order, all of the graph as it is now.
   *
   * `costOf` is the user's code, run in the middle of the call: if it changed the graph, the costs
   * would cover fewer nodes than the order (NaN times) and the loop over nodes would never end. So
   * the graph refuses to change while it runs (`GRAPH_BUSY`, see `#writable`), and the order is
   * taken after the last call to it.
   */
  #scheduleInput(op: string, costOf: unknown): { byOrd: Uint32Array; cost: Float64Array } {
    if (costOf !== undefined && typeof costOf !== 'function') {
      throw new InvalidArgumentError(op, 'costOf', `costOf must be a function, got ${describe(costOf)}`);
    }
    this.#nonEmpty(op);
    const s = this.#store;
    let cost: Float64Array;
    if (costOf === undefined) {
      cost = s.cost === null ? new Float64Array(s.n).fill(1) : s.cost.subarray(0, s.n);
    } else {
      const f = costOf as (node: GraphNode) => number;
      const n = s.n;
      const version = s.version;
      cost = new Float64Array(n);
      const outer = this.#readingBy;
      this.#readingBy = `${op} (its costOf callback is running)`;
      try {
        for (let v = 0; v < n; v++) {
          const c = f(s.readNode(v));
          if (typeof c !== 'number' || !Number.isFinite(c) || c < 0) {
            throw new InvalidArgumentError(op, 'costOf', `costOf(node ${v}) must return a finite number ≥ 0, got ${describe(c)}`);
          }
          cost[v] = c;
        }
      } finally {
        this.#readingBy = outer;
      }
      // A second line of defence: nothing may have changed the store while costOf ran.
      if (s.version !== version) {
        throw new GraphError('Internal', GraphErrorCode.Busy, `${op}: the graph changed while costOf ran; costOf must only read the node it is given`);
      }
    }
    const cache = this.#fresh();
    cache.byOrd ??= nodesByOrd(s);
    return { byOrd: cache.byOrd, cost };
  }

  /**
   * Refuses a change while the graph runs a user callback in the middle of a call (`costOf`, the
   * `edges` iterable of `addEdges`): the call would go on with data that no longer fits the graph.
   */
  #writable(op: string): void {
    if (this.#readOnly !== null) {
      throw new GraphError('ValidationFailed', GraphErrorCode.ReadOnly, `${op}: this graph is ${this.#readOnly} and cannot change; clone() it to edit a copy`);
    }
    if (this.#readingBy !== null) {
      throw new GraphError(
        'Internal',
        GraphErrorCode.Busy,
        `${op}: the graph cannot change while ${this.#readingBy}; change it after that call returns`,
      );
    }
  }

  #fresh(): Cache {
    if (this.#cache.version !== this.#store.version) this.#cache = freshCache(this.#store.version);
    return this.#cache;
  }

  #nonEmpty(op: string): Cache {
    if (this.#store.n === 0) throw new GraphError('EmptyGraph', GraphErrorCode.Empty, `${op}: the graph has no nodes`);
    return this.#fresh();
  }

  #levels(op: string): Uint32Array {
    const cache = this.#nonEmpty(op);
    cache.byOrd ??= nodesByOrd(this.#store);
    cache.level ??= nodeLevels(this.#store, cache.byOrd);
    return cache.level;
  }
}

/**
 * Calls `visit(from, to, code)` for every edge with its data code, sorted by `from`, then `to`.
 * O(n + m): a graph without edge data reads no codes; one with them looks each up by edge number
 * through a per-node map of its out-list, never by searching.
 */
function forEachEdge(s: GraphStore, visit: (u: number, v: number, code: number) => void): void {
  const succ: number[] = [];
  const numbers = new Map<number, number>();
  const coded = s.edgeCodes.size > 0;
  for (let u = 0; u < s.n; u++) {
    s.successors(u, succ);
    if (coded) {
      numbers.clear();
      for (let e = s.firstOut[u]!; e !== 0; e = s.nextOut(e)) numbers.set(s.edgeTo(e), e);
    }
    for (let i = 0; i < succ.length; i++) {
      const v = succ[i]!;
      visit(u, v, coded ? s.edgeCodeOf(numbers.get(v)!) : PLAIN_EDGE);
    }
  }
}

/** The options of the JSON writers, checked for the call `op`. */
function jsonOptions(op: string, options: unknown): JsonChunkOptions {
  const o = requireOptions<JsonChunkOptions>(op, options, ['space', 'onProgress']);
  if (o.space !== undefined && typeof o.space !== 'number' && typeof o.space !== 'string') {
    throw new InvalidArgumentError(op, 'space', `space must be a number of spaces or a string, as JSON.stringify takes it, got ${describe(o.space)}`);
  }
  requireCallback(op, 'onProgress', o.onProgress);
  return o;
}

/** Refuses an `onProgress` (or other optional callback) that is given but not a function. */
function requireCallback(op: string, name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'function') throw new InvalidArgumentError(op, name, `${name} must be a function, got ${describe(value)}`);
}

/** Refuses a write target that is neither a path nor a Writable (an object with `write`). */
function requireTarget(op: string, target: unknown): void {
  const writable = typeof target === 'object' && target !== null && typeof (target as { write?: unknown }).write === 'function';
  if ((typeof target !== 'string' || target === '') && !writable) {
    throw new InvalidArgumentError(op, 'target', `target must be a file path or a Writable, got ${describe(target)}`);
  }
}

/** A `GRAPH_JSON_INVALID` GraphError of the call `op`. */
function jsonInvalid(op: string, message: string, cause?: unknown): GraphError {
  return new GraphError('ValidationFailed', GraphErrorCode.JsonInvalid, `${op}: ${message}`, cause === undefined ? undefined : { cause });
}

/** Refuses a sum of costs that overflowed (`Infinity`): every time and bound built on it would be wrong. */
function finiteSum(op: string, sum: number, where: string): void {
  if (!Number.isFinite(sum)) {
    throw new GraphError(
      'ValidationFailed',
      GraphErrorCode.CostOverflow,
      `${op}: the costs ${where} add up to more than the largest number (${Number.MAX_VALUE}); use smaller units`,
    );
  }
}

/**
 * True for a graph this module made (a brand check on a private field): `Object.create(
 * ComputeGraph.prototype)` and look-alike objects are not graphs. Internal: entry points that take a
 * graph check it with `requireGraph`.
 */
export function isComputeGraph(value: unknown): value is ComputeGraph {
  return branded(value);
}

/** `value` if it is a `ComputeGraph` (brand-checked), else InvalidArgumentError naming `op` and `name`. */
export function requireGraph(op: string, name: string, value: unknown): ComputeGraph {
  if (!branded(value)) throw new InvalidArgumentError(op, name, `${name} must be a ComputeGraph, got ${describe(value)}`);
  return value;
}

/** `graph.addNode(spec)` for the public call `op` (e.g. `GraphBuilder.kernel`): refusals name `op` and the field. Internal. */
export function addNodeAs(graph: ComputeGraph, op: string, spec: unknown): NodeId {
  return nodeAs(graph, op, spec);
}

/**
 * Adds `edges` to `graph` for the public call `op` (e.g. `GraphBuilder.chain`), all or none; refusals
 * name `op` and the arguments as `edges` names them. Returns how many edges were new. Internal.
 */
export function addEdgesAs(graph: ComputeGraph, op: string, edges: readonly EdgeArg[]): number {
  return edgesAs(graph, op, edges);
}

/** `graph.addEdge(from, to, data)` for the public call `op` (e.g. `GraphBuilder.dep`): refusals name `op`. Internal. */
export function addEdgeAs(graph: ComputeGraph, op: string, from: unknown, to: unknown, data?: unknown): boolean {
  return edgeAs(graph, op, from, to, data);
}

/**
 * Gives the plain edge `from → to` of `graph` the data `data` (for `GraphBuilder.dep`, whose
 * inferred edges are plain). Returns false, changing nothing, when there is no such plain edge.
 * Internal.
 */
export function upgradeEdgeAs(graph: ComputeGraph, op: string, from: unknown, to: unknown, data: unknown): boolean {
  return upgradeAs(graph, op, from, to, data);
}

/** Checks that `id` names a node of `graph`, for the public call `op` (`name`: its argument). Internal. */
export function nodeIdAs(graph: ComputeGraph, op: string, name: string, id: unknown): NodeId {
  return idAs(graph, op, name, id) as NodeId;
}

/**
 * Makes `graph` read-only for good (`readOnly`): changing it is refused with GraphError
 * `GRAPH_READ_ONLY`, whose message says it is `what` (`a MultiDeviceGraph's step`). Internal.
 */
export function makeReadOnly(graph: ComputeGraph, what: string): void {
  freeze(graph, what);
}

/** Wraps a finished store (from `StreamCapture.endCapture`) as a graph. Internal. */
export function graphFromStore(store: GraphStore): ComputeGraph {
  const graph = new ComputeGraph();
  adopt(graph, store);
  return graph;
}
