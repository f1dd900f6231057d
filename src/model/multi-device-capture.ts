/**
 * The CPU model of a multi-GPU step: one modelled stream per rank (GPU), the work each rank
 * records, and NCCL collectives that join the ranks. Built on `StreamCapture` without changing it:
 * a collective is recorded as one kernel node per rank (what NCCL captures on each device: its
 * collective kernel), and events make every rank's collective node depend on the work every rank
 * recorded before it. So the one `ComputeGraph` says what the real per-device graphs cannot say
 * alone: that rank 1's optimizer step waits for rank 0's gradients.
 *
 * Why a node per rank rather than one shared node: each rank's subgraph (its stream's nodes) then
 * has exactly the shape of that device's real captured graph — same node count, same order — so
 * it can be compared with what the driver read back; and the rendezvous is the set of cross-rank
 * edges into the collective nodes, drawn dashed between the ranks' clusters. A single node would
 * belong to no rank's stream, and every rank's graph would lose its collective.
 */
import { InvalidArgumentError, privateConstructorError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, requireInt, requireOneOf, requireOptions, requireSize } from '../util/validate.js';
import { GraphErrorCode } from './error-codes.js';
import { COLLECTIVE_OPS, ELEMENT_TYPES, REDUCE_OPS, type CollectiveOp, type ElementType, type ReduceOp } from './element-type.js';
import { asCall } from './call-name.js';
import { StreamCapture } from './stream-capture.js';
import { StreamId, CaptureEvent, type NodeId } from './ids.js';
import { makeReadOnly, type ComputeGraph } from './compute-graph.js';
import type { MemcpyDir } from './memcpy-dir.js';
import type { DotOptions } from './dot.js';

const NCCL_NAMES: Record<CollectiveOp, string> = {
  allReduce: 'ncclAllReduce',
  broadcast: 'ncclBroadcast',
  reduce: 'ncclReduce',
  allGather: 'ncclAllGather',
  reduceScatter: 'ncclReduceScatter',
};

/** Proves a `MultiDeviceGraph` constructor call comes from `MultiDeviceCapture.endCapture`. */
const CONSTRUCT = Symbol('MultiDeviceCapture.endCapture');

/** A collective as the model records it. */
export interface CollectiveSpec {
  readonly op: CollectiveOp;
  /** Element type. */
  readonly type: ElementType;
  /** Elements per rank, as the NCCL call takes it (allGather: sent; reduceScatter: received). */
  readonly count: number;
  /** Reduction, for allReduce, reduce and reduceScatter. */
  readonly redOp?: ReduceOp;
  /** Root rank, for broadcast and reduce. */
  readonly root?: number;
}

/** One recorded collective: its spec and its node on each rank (index = rank). */
export interface RecordedCollective {
  readonly index: number;
  readonly spec: CollectiveSpec;
  readonly nodes: readonly NodeId[];
}

/** Options of `new MultiDeviceCapture`. */
export interface MultiDeviceCaptureOptions {
  /** The StreamId of rank 0; rank r records on `firstStream + r`. Default 0. */
  readonly firstStream?: number;
}

/**
 * Records a multi-GPU step on the CPU: `ranks` modelled streams, per-rank work, and collectives
 * that join them. `endCapture()` returns a `MultiDeviceGraph` (the whole step as one `ComputeGraph`
 * plus which node belongs to which rank and which nodes are collectives).
 *
 * @example
 * const cap = new MultiDeviceCapture(2);
 * cap.beginCapture();
 * for (let r = 0; r < 2; r++) cap.recordKernel(r, 'grad', 64, 256, 0);
 * cap.recordCollective({ op: 'allReduce', type: 'f32', count: 1 << 20, redOp: 'sum' });
 * for (let r = 0; r < 2; r++) cap.recordKernel(r, 'sgd', 64, 256, 0);
 * const step = cap.endCapture();
 * step.graph.isReachable(step.nodesOf(0)[0]!, step.nodesOf(1)[2]!); // true: rank 1's update waits for rank 0's gradient
 */
export class MultiDeviceCapture {
  /** Number of ranks. */
  readonly ranks: number;
  readonly #first: number;
  readonly #cap = new StreamCapture();
  readonly #collectives: RecordedCollective[] = [];
  #nextEvent = 0;
  #begun = false;
  #ended = false;

  /** @throws InvalidArgumentError unless 1 ≤ ranks ≤ 4096 and the streams fit in u32. */
  constructor(ranks: number, options?: MultiDeviceCaptureOptions) {
    const op = 'MultiDeviceCapture';
    this.ranks = requireInt(op, 'ranks', ranks, 1, MAX_RANKS);
    const o = requireOptions<MultiDeviceCaptureOptions>(op, options, ['firstStream']);
    this.#first = o.firstStream === undefined ? 0 : requireInt(op, 'firstStream', o.firstStream, 0, 0xffff_ffff - this.ranks + 1);
  }

  /** The modelled stream of `rank`. @throws InvalidArgumentError out of range. */
  stream(rank: number): StreamId {
    return StreamId(this.#first + requireInt('MultiDeviceCapture.stream', 'rank', rank, 0, this.ranks - 1));
  }

  /** Begins capture on every rank's stream. @throws GraphError if already begun. */
  beginCapture(): void {
    const op = 'MultiDeviceCapture.beginCapture';
    if (this.#ended) this.#open(op);
    if (this.#begun) throw new GraphError('Internal', GraphErrorCode.CaptureAlreadyActive, `${op}: capture has already begun`);
    for (let r = 0; r < this.ranks; r++) this.#cap.beginCapture(this.stream(r));
    this.#begun = true;
  }

  // The record calls go through the inner StreamCapture; `asCall` makes its refusals name the
  // call the user made (`MultiDeviceCapture.recordKernel: …`, not `StreamCapture.recordKernel: …`).

  /** Records a kernel on `rank` (as `StreamCapture.recordKernel` on its stream). */
  recordKernel(rank: number, functionName: string, numBlocks: number, threadsPerBlock: number, sharedMem: number): NodeId {
    const op = 'MultiDeviceCapture.recordKernel';
    return asCall(op, () => this.#cap.recordKernel(this.#rankStream(op, rank), functionName, numBlocks, threadsPerBlock, sharedMem));
  }

  /** Records a copy on `rank`. */
  recordMemcpy(rank: number, name: string, dir: MemcpyDir, sizeBytes: number): NodeId {
    const op = 'MultiDeviceCapture.recordMemcpy';
    return asCall(op, () => this.#cap.recordMemcpy(this.#rankStream(op, rank), name, dir, sizeBytes));
  }

  /** Records a fill on `rank`. */
  recordMemset(rank: number, name: string, sizeBytes: number, value: number): NodeId {
    const op = 'MultiDeviceCapture.recordMemset';
    return asCall(op, () => this.#cap.recordMemset(this.#rankStream(op, rank), name, sizeBytes, value));
  }

  /** Records a host callback on `rank`. */
  recordHostCallback(rank: number, label: string): NodeId {
    const op = 'MultiDeviceCapture.recordHostCallback';
    return asCall(op, () => this.#cap.recordHostCallback(this.#rankStream(op, rank), label));
  }

  /**
   * Records one collective on every rank: a kernel node per rank named after the NCCL call
   * (`ncclAllReduce(sum, f32 × 1024)`), each depending on the last node of every rank. Returns the
   * nodes, index = rank. Like the NCCL binding, it checks the spec before recording anything.
   * @throws InvalidArgumentError for an unknown op, type or reduction, a missing or extra `redOp`
   *   or `root`, a root out of range, a bad count; GraphError if capture has not begun.
   */
  recordCollective(spec: CollectiveSpec): NodeId[] {
    const op = 'MultiDeviceCapture.recordCollective';
    const s = this.#checkSpec(op, spec);
    this.#open(op);
    const label = labelOf(s);
    // Every rank's head first, then each rank's node after all of them: the rendezvous.
    const events: number[] = [];
    for (let r = 0; r < this.ranks; r++) {
      const e = this.#nextEvent++;
      events.push(e);
      this.#cap.recordEvent(this.stream(r), CaptureEvent(e));
    }
    const nodes: NodeId[] = [];
    for (let r = 0; r < this.ranks; r++) {
      const st = this.stream(r);
      for (let q = 0; q < this.ranks; q++) if (q !== r) this.#cap.waitEvent(st, CaptureEvent(events[q]!));
      nodes.push(this.#cap.recordKernel(st, label, 1, 1, 0));
    }
    this.#collectives.push(Object.freeze({ index: this.#collectives.length, spec: s, nodes: Object.freeze(nodes) }));
    return nodes;
  }

  /** Nodes recorded so far, on all ranks. @throws GraphError `CAPTURE_SESSION_ENDED` after `endCapture`. */
  nodeCount(): number {
    if (this.#ended) this.#open('MultiDeviceCapture.nodeCount');
    return asCall('MultiDeviceCapture.nodeCount', () => this.#cap.nodeCount());
  }

  /**
   * Ends the capture on every rank and returns the step. The ranks are not joined at the end (each
   * device's graph ends on its own).
   * @throws GraphError when capture was not begun or has ended.
   */
  endCapture(): MultiDeviceGraph {
    const op = 'MultiDeviceCapture.endCapture';
    this.#open(op);
    const graph = asCall(op, () => this.#cap.endCapture(this.stream(0)));
    // The ranks are read off the nodes' streams: a node added later would belong to none.
    makeReadOnly(graph, "a MultiDeviceGraph's step");
    this.#ended = true;
    return new MultiDeviceGraph(CONSTRUCT, graph, this.ranks, this.#first, this.#collectives);
  }

  /** Refuses calls before `beginCapture` and after `endCapture`, as `StreamCapture` does. */
  #open(op: string): void {
    if (this.#ended) {
      throw new GraphError('Internal', GraphErrorCode.CaptureSessionEnded, `${op}: this capture has ended (endCapture returned its graph)`);
    }
    if (!this.#begun) {
      throw new GraphError('Internal', GraphErrorCode.CaptureNotActive, `${op}: capture has not begun (call beginCapture first)`);
    }
  }

  #rankStream(op: string, rank: unknown): StreamId {
    // After the end, this class's refusal (the inner capture's would say to start a new StreamCapture).
    if (this.#ended) this.#open(op);
    return StreamId(this.#first + requireInt(op, 'rank', rank, 0, this.ranks - 1));
  }

  #checkSpec(op: string, spec: unknown): CollectiveSpec {
    return checkSpec(op, spec, this.ranks);
  }
}

/** The most ranks a `MultiDeviceCapture` has. */
const MAX_RANKS = 4096;

/** A collective spec checked for the call `op` (roots below `ranks`), as a frozen copy: each field read once. */
function checkSpec(op: string, spec: unknown, ranks: number): CollectiveSpec {
  const o = requireOptions<CollectiveSpec>(op, spec, ['op', 'type', 'count', 'redOp', 'root']);
  if (spec === undefined) throw new InvalidArgumentError(op, 'spec', `spec must be { op, type, count, … }, got ${describe(spec)}`);
  const kind = requireOneOf(op, 'op', o.op, COLLECTIVE_OPS);
  const type = requireOneOf(op, 'type', o.type, ELEMENT_TYPES);
  const count = requireSize(op, 'count', o.count);
  const reduces = kind === 'allReduce' || kind === 'reduce' || kind === 'reduceScatter';
  const rooted = kind === 'broadcast' || kind === 'reduce';
  const given = { redOp: o.redOp, root: o.root };
  if (!reduces && given.redOp !== undefined) throw new InvalidArgumentError(op, 'redOp', `${kind} takes no redOp`);
  if (!rooted && given.root !== undefined) throw new InvalidArgumentError(op, 'root', `${kind} takes no root`);
  const redOp = reduces ? requireOneOf(op, 'redOp', given.redOp, REDUCE_OPS) : undefined;
  const root = rooted ? requireInt(op, 'root', given.root, 0, ranks - 1) : undefined;
  return Object.freeze({
    op: kind,
    type,
    count,
    ...(redOp !== undefined ? { redOp } : {}),
    ...(root !== undefined ? { root } : {}),
  });
}

/**
 * The node name of a collective: `ncclAllReduce(sum, f32 × 1024)`, `ncclBroadcast(root 0, f16 × 8)`.
 * @throws InvalidArgumentError for a spec `recordCollective` would refuse (roots up to 4095).
 */
export function collectiveLabel(spec: CollectiveSpec): string {
  return labelOf(checkSpec('collectiveLabel', spec, MAX_RANKS));
}

/** `collectiveLabel` of a checked spec. */
function labelOf(spec: CollectiveSpec): string {
  const parts: string[] = [];
  if (spec.redOp !== undefined) parts.push(spec.redOp);
  if (spec.root !== undefined) parts.push(`root ${spec.root}`);
  parts.push(`${spec.type} × ${spec.count}`);
  return `${NCCL_NAMES[spec.op]}(${parts.join(', ')})`;
}

/**
 * A recorded multi-GPU step: the `ComputeGraph` of every rank's work (one stream per rank) with
 * the collectives joining them, and the rank of every node.
 */
export class MultiDeviceGraph {
  /** The whole step, read-only (`clone()` it to edit a copy). Rank r's nodes are on stream `firstStream + r`. */
  readonly graph: ComputeGraph;
  /** Number of ranks. */
  readonly ranks: number;
  /** The collectives, in the order recorded. */
  readonly collectives: readonly RecordedCollective[];
  readonly #first: number;
  readonly #collectiveOf: Map<number, number>;

  /**
   * @internal Made by `MultiDeviceCapture.endCapture` only: `key` proves it, and any other call
   * (`new MultiDeviceGraph(…)`) is refused with InvalidArgumentError.
   */
  constructor(key: symbol, graph: ComputeGraph, ranks: number, firstStream: number, collectives: readonly RecordedCollective[]) {
    if (key !== CONSTRUCT) throw privateConstructorError('MultiDeviceGraph', 'MultiDeviceCapture.endCapture()');
    this.graph = graph;
    this.ranks = ranks;
    this.#first = firstStream;
    this.collectives = Object.freeze([...collectives]);
    this.#collectiveOf = new Map();
    for (const c of collectives) for (const n of c.nodes) this.#collectiveOf.set(n, c.index);
  }

  /** The rank a node belongs to. @throws GraphError `NodeNotFound` for an unknown id. */
  rankOf(id: NodeId): number {
    return asCall('MultiDeviceGraph.rankOf', () => this.graph.node(id)).stream! - this.#first;
  }

  /** Rank `rank`'s nodes in the order it recorded them (the order of that device's stream). */
  nodesOf(rank: number): NodeId[] {
    const r = requireInt('MultiDeviceGraph.nodesOf', 'rank', rank, 0, this.ranks - 1);
    const s = this.#first + r;
    return this.graph
      .nodes()
      .filter((n) => n.stream === s)
      .map((n) => n.id);
  }

  /** The collective a node stands for (its index in `collectives`), or null for ordinary work. */
  collectiveOf(id: NodeId): number | null {
    asCall('MultiDeviceGraph.collectiveOf', () => this.graph.node(id)); // NodeNotFound for unknown ids
    return this.#collectiveOf.get(id) ?? null;
  }

  /** Edges between ranks: each ends at a collective node (the rendezvous). */
  crossRankEdges(): [NodeId, NodeId][] {
    return this.graph.edges().filter(([a, b]) => this.rankOf(a) !== this.rankOf(b));
  }

  /**
   * Per rank, how many nodes of each kind it holds, collectives counted apart: what each device's
   * real captured graph should contain (NCCL's collective kernel being one kernel node there).
   */
  rankSummary(): { rank: number; nodes: number; kernels: number; memcpys: number; memsets: number; hostCallbacks: number; collectives: number }[] {
    const out = Array.from({ length: this.ranks }, (_, rank) => ({ rank, nodes: 0, kernels: 0, memcpys: 0, memsets: 0, hostCallbacks: 0, collectives: 0 }));
    for (const n of this.graph.nodes()) {
      const row = out[n.stream! - this.#first]!;
      row.nodes++;
      if (this.#collectiveOf.has(n.id)) row.collectives++;
      else if (n.kind === 'kernel') row.kernels++;
      else if (n.kind === 'memcpy') row.memcpys++;
      else if (n.kind === 'memset') row.memsets++;
      else if (n.kind === 'hostCallback') row.hostCallbacks++;
    }
    return out;
  }

  /** DOT text: one cluster per rank's stream; the rendezvous edges are the dashed cross-stream ones. */
  toDot(options?: DotOptions): string {
    return this.graph.toDot(options);
  }

  /** `MultiDeviceGraph(2 ranks, 6 nodes, 1 collective)`. */
  toString(): string {
    return `MultiDeviceGraph(${this.ranks} ranks, ${this.graph.nodeCount()} nodes, ${this.collectives.length} collective${this.collectives.length === 1 ? '' : 's'})`;
  }
}
