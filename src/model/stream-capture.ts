/**
 * `StreamCapture`: the CPU model of CUDA stream capture over several streams (the seed
 * `oxicuda_graph::capture::StreamCapture`, in camelCase). Needs no GPU.
 *
 * The rules, exactly as the seed has them:
 * - a new node depends on the previous node recorded on its stream (same-stream order), and on
 *   every node parked on that stream by earlier `waitEvent` calls; then the parked list is cleared;
 * - `recordEvent(s, e)` makes `e` stand for the current head of `s` (a later record moves it);
 *   on a stream with no ops yet it does nothing;
 * - `waitEvent(s, e)` parks the node `e` stands for on `s`: it gates only ops recorded on `s`
 *   afterwards; waiting on an event never recorded does nothing;
 * - `invalidate(s)` marks `s` Invalidated and poisons the session: `endCapture` then fails;
 * - `endCapture(s)` returns one `ComputeGraph` with every stream's nodes and ends the session.
 *
 * Beyond the seed, the work CUDA captures as other node kinds: external event records and waits
 * (`recordExternalEvent`, `waitExternalEvent`: event nodes), stream-ordered allocation
 * (`recordMemAlloc`, `recordMemFree`: graph memory nodes), a graph spliced in as a child
 * (`recordChildGraph`), and kernels launched with programmatic stream serialization
 * (`recordKernel(…, { programmatic: true })`: a programmatic edge from the kernel before it), and
 * conditional nodes (`conditionalHandle`, `recordWhile`, `recordIf`, `recordSwitch`: each body is
 * recorded by a callback into a capture of its own, as CUDA captures a body into the body graph).
 *
 * Every call checks its input first and throws before changing anything.
 *
 * `new StreamCapture({ semantics: 'cuda' })` follows what the CUDA driver does instead, where the
 * two differ (docs/conformance.md lists each difference and the conformance suite checks it on a
 * real GPU): streams join the capture by waiting on an event recorded in it, an event stands for
 * its stream's whole dependency set (the newest node and the waits parked since), recording on a
 * stream outside the capture makes an "external" event, and `endCapture` refuses unjoined work
 * and a stream that is not the origin.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, isU32, requireBoolean, requireInt, requireName, requireOneOf, requireOptions, requireSize, requireU32 } from '../util/validate.js';
import { isCut, listText } from './bounded-text.js';
import { CaptureStatus } from './capture-status.js';
import { GraphErrorCode } from './error-codes.js';
import { GraphStore } from './graph-store.js';
import { graphFromStore, type ComputeGraph } from './compute-graph.js';
import { encodeMemcpyDir, MemcpyDir } from './memcpy-dir.js';
import { BLOCK_THREADS_MAX, GRID_X_MAX, KIND_HOST, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET } from './node.js';
import { appendNodeSpec } from './node-spec.js';
import { edgeCode } from './edge-data.js';
import { renamed } from './call-name.js';
import { checkBodyCount, checkEstimate, type ConditionalHandleRecord, type ConditionalType } from './conditional.js';
import { HandleRegistry } from './conditional-handles.js';
import { CaptureEvent, StreamId, type NodeId } from './ids.js';
import { keepAlive } from './kept-shapes.js';

const NONE = 0;
const ACTIVE = 1;
const INVALIDATED = 2;
const STATUS_NAMES = [CaptureStatus.None, CaptureStatus.Active, CaptureStatus.Invalidated] as const;
/** The longest parked list searched for a duplicate; a longer one is looked up in a set (`#park`). */
const PARKED_SCAN = 16;
/** Marks an event recorded outside the capture (CUDA semantics). */
const EXTERNAL = 'external';

/** The capture rules a `StreamCapture` follows. */
export type CaptureSemantics = 'per-stream' | 'cuda';

/** A store for a capture to record into: it grows by larger steps until `endCapture` fits it (graph-store.ts). */
function recordingStore(): GraphStore {
  const store = new GraphStore();
  store.growth = 4;
  return store;
}

/** Whether the first capture has made the kept one (kept-shapes.ts). */
let captureKept = false;

/**
 * A capture of two streams with a node of each kind, a join and a wait, left open: kept for the
 * life of the process so that V8 keeps its compiled recording code when a program drops every
 * capture (kept-shapes.ts says why).
 */
function keptCapture(): StreamCapture {
  const cap = new StreamCapture();
  const [a, b] = [StreamId(0), StreamId(1)];
  cap.beginCapture(a);
  cap.beginCapture(b);
  cap.recordKernel(a, 'kept', 1, 1, 0);
  cap.recordMemcpy(b, 'kept', MemcpyDir.DeviceToDevice, 4);
  cap.recordEvent(b, CaptureEvent(0));
  cap.waitEvent(a, CaptureEvent(0));
  cap.recordMemset(a, 'kept', 4, 0);
  cap.recordHostCallback(b, 'kept');
  return cap;
}

/** Options of `new StreamCapture`. */
export interface StreamCaptureOptions {
  /**
   * `'per-stream'` (default): every stream is captured on its own (`beginCapture` on each), an
   * event stands for one node, and a capture may end with streams not joined back: the upstream
   * model's rules, exactly. `'cuda'`: what real CUDA stream
   * capture does where the two differ (see the class comment and docs/conformance.md).
   */
  readonly semantics?: CaptureSemantics;
}

/** Options of `StreamCapture.recordKernel`. */
export interface RecordKernelOptions {
  /**
   * Launched with programmatic stream serialization (CUDA's launch attribute
   * `PROGRAMMATIC_STREAM_SERIALIZATION`): when the node before it on the stream is a kernel, the
   * edge between them is programmatic (port `'trigger'`). Default false.
   */
  readonly programmatic?: boolean;
}

/** The data code of the edge programmatic stream serialization makes. */
const PSS_EDGE = edgeCode('programmatic', 'trigger');

/** Options of `StreamCapture.endCapture`. */
export interface EndCaptureOptions {
  /**
   * Refuse to end while another stream has work not joined back into the ending stream, as real
   * CUDA does (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED`, 904). Default false (the seed's behaviour),
   * true under `semantics: 'cuda'`.
   */
  readonly requireJoined?: boolean;
}

/** Options of `StreamCapture.conditionalHandle`. */
export interface ConditionalHandleOptions {
  /** The condition's value at the start of every launch: 0..2^32−1, default 0. */
  readonly default?: number;
  /** Whether every launch starts with the condition at `default` (`CU_GRAPH_COND_ASSIGN_DEFAULT`); default true. */
  readonly assignDefault?: boolean;
}

/** Options of `recordWhile`, `recordIf` and `recordSwitch`. */
export interface RecordConditionalOptions {
  /** The node's name (default `'conditional'`). */
  readonly name?: string;
  /**
   * How often the bodies are expected to run (default 1): a while loop's trips, or for 'if' and
   * 'switch' the chance (0..1) that a body runs. The node's cost is this times its largest body's
   * critical path.
   */
  readonly estimate?: number;
}

/**
 * Records one conditional body: `capture` is a capture of its own, already capturing on `stream`
 * (the stream the conditional is recorded on); what the callback records there is the body. It may
 * fork to other streams and join back, and record conditionals of its own (nested bodies). It must
 * record synchronously and leave `capture` open: the recording call ends it.
 */
export type BodyRecorder = (capture: StreamCapture, stream: StreamId) => void;

/**
 * A capture session over any number of modelled streams.
 *
 * @example
 * const cap = new StreamCapture();
 * const main = StreamId(0), side = StreamId(1);
 * cap.beginCapture(main);
 * cap.beginCapture(side);
 * const up = cap.recordMemcpy(main, 'upload', MemcpyDir.HostToDevice, 4096);
 * cap.recordEvent(main, CaptureEvent(0));      // fork
 * cap.waitEvent(side, CaptureEvent(0));
 * const k = cap.recordKernel(side, 'relu', 4, 256, 0);
 * cap.recordEvent(side, CaptureEvent(1));      // join
 * cap.waitEvent(main, CaptureEvent(1));
 * const dn = cap.recordMemcpy(main, 'download', MemcpyDir.DeviceToHost, 4096);
 * const graph = cap.endCapture(main);
 * graph.isReachable(up, k) && graph.isReachable(k, dn); // true
 */
export class StreamCapture {
  #store = recordingStore();
  #ended = false;
  /** The first stream invalidated in this capture, or null: once set, endCapture fails. */
  #poisonedBy: number | null = null;
  #activeCount = 0;
  // Per stream slot (the store's slot numbering): status, head node (−1: none), parked waits.
  #status: number[] = [];
  #head: number[] = [];
  #parked: number[][] = [];
  /**
   * Per slot, a set of the parked list's nodes once the list is long (`#park`), so that waiting on
   * many events before the next op stays linear; undefined while the list is short.
   */
  #parkedSets: (Set<number> | undefined)[] = [];
  /** Event → the node it stands for (per-stream semantics). */
  #events = new Map<number, number>();
  /** True under `semantics: 'cuda'`. */
  readonly #cuda: boolean;
  /** CUDA semantics: event → the dependency set it captured, or EXTERNAL (recorded outside the capture). */
  #eventSets = new Map<number, readonly number[] | typeof EXTERNAL>();
  /** CUDA semantics: the slot of the stream the capture began on (−1: none yet). */
  #origin = -1;
  /** Conditional handles, shared with the captures of this capture's bodies (conditional-handles.ts). */
  #handles = new HandleRegistry();
  /** The call recording a conditional body, if any: the capture holds still meanwhile (all or nothing). */
  #busy: string | null = null;

  /**
   * A session with no stream capturing.
   * @throws InvalidArgumentError for an unknown option or semantics.
   */
  constructor(options?: StreamCaptureOptions) {
    const OP = 'StreamCapture';
    const o = requireOptions<StreamCaptureOptions>(OP, options, ['semantics']);
    const semantics = o.semantics === undefined ? 'per-stream' : requireOneOf(OP, 'semantics', o.semantics, ['per-stream', 'cuda'] as const);
    this.#cuda = semantics === 'cuda';
    if (!captureKept) {
      captureKept = true;
      try {
        keepAlive(keptCapture());
      } catch {
        // Only an optimisation: it must never make a construction fail.
      }
    }
  }

  /** The rules this capture follows. */
  get semantics(): CaptureSemantics {
    return this.#cuda ? 'cuda' : 'per-stream';
  }

  /**
   * The capture status of `stream`: `None` if never begun.
   * @throws GraphError `CAPTURE_SESSION_ENDED` after `endCapture`.
   */
  status(stream: StreamId): CaptureStatus {
    const OP = 'StreamCapture.status';
    this.#open(OP);
    const slot = this.#store.findSlot(requireU32(OP, 'stream', stream));
    return STATUS_NAMES[slot < 0 ? NONE : (this.#status[slot] as 0 | 1 | 2)];
  }

  /** True while any stream of the session is `Active`. @throws GraphError `CAPTURE_SESSION_ENDED`. */
  isCapturing(): boolean {
    this.#open('StreamCapture.isCapturing');
    return this.#activeCount > 0;
  }

  /** Nodes recorded so far, on all streams (events are not nodes). @throws GraphError `CAPTURE_SESSION_ENDED`. */
  nodeCount(): number {
    this.#open('StreamCapture.nodeCount');
    return this.#store.n;
  }

  /**
   * Begins capture on `stream`. An `Invalidated` stream may be begun again, but the session stays
   * poisoned (as in the seed): its `endCapture` still fails.
   * @throws GraphError kind `Internal`, code `CAPTURE_ALREADY_ACTIVE`, if `stream` is `Active`.
   */
  beginCapture(stream: StreamId): void {
    const OP = 'StreamCapture.beginCapture';
    this.#writable(OP);
    const s = requireU32(OP, 'stream', stream);
    const known = this.#store.findSlot(s);
    if (known >= 0 && this.#status[known] === ACTIVE) {
      throw new GraphError('Internal', GraphErrorCode.CaptureAlreadyActive, `${OP}: stream ${s} is already capturing`);
    }
    if (this.#cuda && this.#origin >= 0 && this.#origin !== known) {
      const origin = this.#store.streamIds[this.#origin]!;
      throw new GraphError(
        'Internal',
        GraphErrorCode.CaptureAlreadyActive,
        `${OP}: this capture began on stream ${origin}; under CUDA semantics other streams join it ` +
          `by waiting on an event recorded in it (waitEvent), not by beginCapture`,
      );
    }
    const slot = this.#slot(s);
    this.#status[slot] = ACTIVE;
    this.#activeCount++;
    if (this.#cuda) this.#origin = slot;
  }

  /**
   * Records a kernel launch of `numBlocks` blocks of `threadsPerBlock` threads (grid [n, 1, 1],
   * block [t, 1, 1]) with `sharedMem` bytes of dynamic shared memory. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for an
   *   empty name, numBlocks outside 1..2^31−1, threadsPerBlock outside 1..1024, sharedMem outside 0..2^32−1.
   */
  recordKernel(stream: StreamId, functionName: string, numBlocks: number, threadsPerBlock: number, sharedMem: number, options?: RecordKernelOptions): NodeId {
    const OP = 'StreamCapture.recordKernel';
    const slot = this.#active(OP, stream);
    let programmatic = false;
    if (options !== undefined) {
      const o = requireOptions<RecordKernelOptions>(OP, options, ['programmatic']);
      programmatic = o.programmatic === undefined ? false : requireBoolean(OP, 'programmatic', o.programmatic);
    }
    // The common case in one cheap test; the require* calls only run to throw the right message.
    if (
      !(typeof functionName === 'string' && functionName.length > 0) ||
      !(isU32(numBlocks) && numBlocks >= 1 && numBlocks <= GRID_X_MAX) ||
      !(isU32(threadsPerBlock) && threadsPerBlock >= 1 && threadsPerBlock <= BLOCK_THREADS_MAX) ||
      !isU32(sharedMem)
    ) {
      requireName(OP, 'functionName', functionName);
      requireInt(OP, 'numBlocks', numBlocks, 1, GRID_X_MAX);
      requireInt(OP, 'threadsPerBlock', threadsPerBlock, 1, BLOCK_THREADS_MAX);
      requireU32(OP, 'sharedMem', sharedMem);
    }
    const store = this.#store;
    const name = store.intern(functionName);
    const id = store.appendNode(KIND_KERNEL, slot, name);
    store.setKernel1D(id, name, numBlocks, threadsPerBlock, sharedMem);
    const head = this.#head[slot]!;
    this.#wire(slot, id);
    // #wire adds the same-stream edge last, so it is the newest edge.
    if (programmatic && head >= 0 && store.kind[head] === KIND_KERNEL) store.setEdgeCode(store.m, PSS_EDGE);
    return id as NodeId;
  }

  /**
   * Records an event record node (`cuEventRecordWithFlags(…, CU_EVENT_RECORD_EXTERNAL)` under
   * capture): unlike `recordEvent`, the event is recorded when the graph runs, for work outside it.
   * Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for a bad event.
   */
  recordExternalEvent(stream: StreamId, event: CaptureEvent): NodeId {
    return this.#recordSpec('StreamCapture.recordExternalEvent', stream, { kind: 'eventRecord', event });
  }

  /**
   * Records an event wait node (`cuStreamWaitEvent(…, CU_EVENT_WAIT_EXTERNAL)` under capture):
   * the graph waits, when it runs, for the event's last record outside it. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for a bad event.
   */
  waitExternalEvent(stream: StreamId, event: CaptureEvent): NodeId {
    return this.#recordSpec('StreamCapture.waitExternalEvent', stream, { kind: 'eventWait', event });
  }

  /**
   * Records a stream-ordered allocation (`cuMemAllocAsync` under capture): an allocation node of
   * `sizeBytes` on `device` (default 0). Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for a bad size or device.
   */
  recordMemAlloc(stream: StreamId, sizeBytes: number, device = 0): NodeId {
    return this.#recordSpec('StreamCapture.recordMemAlloc', stream, { kind: 'memAlloc', sizeBytes, device });
  }

  /**
   * Records a stream-ordered free (`cuMemFreeAsync` under capture): a free node of the allocation
   * node `alloc` of this capture, or (`null`) of graph memory allocated outside it. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError when `alloc`
   *   is not an allocation node of this capture or is freed already.
   */
  recordMemFree(stream: StreamId, alloc: NodeId | null): NodeId {
    const OP = 'StreamCapture.recordMemFree';
    // Left out is a mistake, not "allocated outside": the caller says which with null.
    if (alloc === undefined) {
      this.#active(OP, stream);
      throw new InvalidArgumentError(OP, 'alloc', 'alloc must be the allocation node to free, or null for memory allocated outside the capture; got undefined');
    }
    return this.#recordSpec(OP, stream, { kind: 'memFree', alloc });
  }

  /**
   * Splices `graph` into the capture as a child graph node (what `cuStreamGetCaptureInfo`,
   * `cuGraphAddChildGraphNode` and `cuStreamUpdateCaptureDependencies` do together). The graph is
   * copied. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for a
   *   non-graph or a graph holding allocation or free nodes (CUDA's rule for child graphs).
   */
  recordChildGraph(stream: StreamId, graph: ComputeGraph, name?: string): NodeId {
    return this.#recordSpec('StreamCapture.recordChildGraph', stream, { kind: 'childGraph', graph, ...(name !== undefined ? { name } : {}) });
  }

  /**
   * A new conditional handle of this capture (CUDA: `cuGraphConditionalHandleCreate` on the
   * capture's graph), for one conditional node recorded in this capture or in one of its bodies.
   * Ids count from 0 across the capture and its bodies' captures.
   * @throws GraphError `CAPTURE_SESSION_ENDED` after `endCapture`; InvalidArgumentError for bad options.
   * @example
   * const h = cap.conditionalHandle({ default: 1 });
   * cap.recordWhile(s, h, (body, bs) => { body.recordKernel(bs, 'step', 64, 256, 0); body.recordKernel(bs, 'check', 1, 32, 0); }, { estimate: 20 });
   */
  conditionalHandle(options?: ConditionalHandleOptions): ConditionalHandleRecord {
    const OP = 'StreamCapture.conditionalHandle';
    this.#open(OP);
    const o = requireOptions<ConditionalHandleOptions>(OP, options, ['default', 'assignDefault']);
    const dflt = o.default === undefined ? 0 : requireU32(OP, 'default', o.default);
    const assign = o.assignDefault === undefined ? true : requireBoolean(OP, 'assignDefault', o.assignDefault);
    return this.#handles.issue(OP, dflt, assign);
  }

  /**
   * Records a while loop on `stream`: `body` records the loop's body (see `BodyRecorder`), which
   * runs again and again while `handle`'s condition is non-zero (checked before each trip). The node
   * comes after the stream's current work and is its newest node. Returns the new node.
   * @throws whatever `body` throws, unchanged; GraphError kind `Internal` if `stream` is not
   *   `Active`; InvalidArgumentError for a handle not made by this capture or already used, a
   *   non-function, bad options, or a body holding a node kind CUDA does not allow in one (a host
   *   callback, say); the body capture's own refusal at its end (`CAPTURE_UNJOINED` under CUDA
   *   semantics, …). A refused call, a throwing body included, adds nothing and uses no handle.
   */
  recordWhile(stream: StreamId, handle: ConditionalHandleRecord, body: BodyRecorder, options?: RecordConditionalOptions): NodeId {
    return this.#recordConditional('StreamCapture.recordWhile', stream, handle, 'while', [body], ['body'], options);
  }

  /**
   * Records an if node on `stream`: `then` records the body that runs when `handle`'s condition is
   * non-zero, `otherwise` (if given) the body that runs when it is zero. Otherwise as `recordWhile`.
   * @throws as `recordWhile`.
   */
  recordIf(stream: StreamId, handle: ConditionalHandleRecord, then: BodyRecorder, otherwise?: BodyRecorder, options?: RecordConditionalOptions): NodeId {
    const bodies = otherwise === undefined ? [then] : [then, otherwise];
    return this.#recordConditional('StreamCapture.recordIf', stream, handle, 'if', bodies, ['then', 'otherwise'], options);
  }

  /**
   * Records a switch node on `stream`: `cases[v]` records the body that runs when `handle`'s
   * condition is `v` (none runs for a value ≥ `cases.length`). 1..65535 cases. Otherwise as `recordWhile`.
   * @throws as `recordWhile`; InvalidArgumentError for a `cases` that is not such an array.
   */
  recordSwitch(stream: StreamId, handle: ConditionalHandleRecord, cases: readonly BodyRecorder[], options?: RecordConditionalOptions): NodeId {
    const OP = 'StreamCapture.recordSwitch';
    this.#active(OP, stream);
    if (!Array.isArray(cases)) throw new InvalidArgumentError(OP, 'cases', `cases must be an array of body callbacks, got ${describe(cases)}`);
    // A copy: the callbacks run user code, which must not change the list under us.
    const list = [...(cases as readonly unknown[])];
    checkBodyCount(OP, 'cases', 'switch', list.length);
    return this.#recordConditional(OP, stream, handle, 'switch', list, list.map((_, i) => `cases[${i}]`), options);
  }

  /**
   * Records a conditional node of `type` on `stream`, all or nothing: everything is checked, the
   * handle reserved, each body recorded into a capture of its own, then the node added and wired.
   * Any refusal or exception on the way gives back the handles it took and leaves the capture as it was.
   */
  #recordConditional(
    op: string,
    stream: StreamId,
    handle: unknown,
    type: ConditionalType,
    bodies: readonly unknown[],
    names: readonly string[],
    options: unknown,
  ): NodeId {
    const slot = this.#active(op, stream);
    const o = requireOptions<RecordConditionalOptions>(op, options, ['name', 'estimate']);
    if (o.name !== undefined) requireName(op, 'name', o.name);
    if (o.estimate !== undefined) checkEstimate(op, 'estimate', type, o.estimate);
    bodies.forEach((f, i) => {
      if (typeof f !== 'function') throw new InvalidArgumentError(op, names[i]!, `${names[i]} must be a function (capture, stream) => void, got ${describe(f)}`);
    });
    const h = this.#handles.unused(op, 'handle', handle);
    const mark = this.#handles.mark();
    // Reserved before the bodies run, so that no body can take it too.
    this.#handles.use(h);
    const s = this.#store.streamIds[slot]! as StreamId;
    this.#busy = op;
    try {
      const graphs = bodies.map((f, i) => this.#recordBody(op, names[i]!, f as BodyRecorder, s));
      const spec = { kind: 'conditional', type, bodies: graphs, handle: h, stream: s, ...o };
      let id: number;
      try {
        id = appendNodeSpec(this.#store, op, '', spec);
      } catch (e) {
        // The spec names a body `bodies[i]`; this call names it as its argument (`then`, `cases[2]`).
        const m = e instanceof InvalidArgumentError ? /^bodies\[(\d+)\]/.exec(e.parameter) : null;
        if (m === null) throw e;
        const name = names[Number(m[1])]!;
        throw new InvalidArgumentError(op, name, name + (e as InvalidArgumentError).message.slice(op.length + 2 + m[0].length));
      }
      this.#wire(slot, id);
      return id as NodeId;
    } catch (e) {
      this.#handles.rollback(mark);
      throw e;
    } finally {
      this.#busy = null;
    }
  }

  /** Records one body: `record` into a fresh capture of `stream` sharing this one's handles, ended when it returns. */
  #recordBody(op: string, name: string, record: BodyRecorder, stream: StreamId): ComputeGraph {
    const body = new StreamCapture({ semantics: this.semantics });
    body.#handles = this.#handles;
    body.beginCapture(stream);
    const result: unknown = record(body, stream);
    if (typeof result === 'object' && result !== null && typeof (result as PromiseLike<unknown>).then === 'function') {
      // What it records after its first await finds the body ended; its rejection is answered here,
      // so it cannot end the process as an unhandled one.
      (result as PromiseLike<unknown>).then(undefined, () => {});
      body.#ended = true;
      throw new InvalidArgumentError(op, name, `${name} returned a promise; a body must record synchronously (its capture ends when the callback returns)`);
    }
    if (body.#ended) {
      throw new GraphError('Internal', GraphErrorCode.CaptureSessionEnded, `${op}: ${name} ended its own capture; the body's capture ends when the callback returns`);
    }
    try {
      return body.endCapture(stream);
    } catch (e) {
      throw renamed(e, op, name);
    }
  }

  /** Records the node `spec` describes on `stream` (checked as `addNode` checks it, refusals naming `op`). */
  #recordSpec(op: string, stream: StreamId, spec: Record<string, unknown>): NodeId {
    const slot = this.#active(op, stream);
    const id = appendNodeSpec(this.#store, op, '', { ...spec, stream: this.#store.streamIds[slot] });
    this.#wire(slot, id);
    return id as NodeId;
  }

  /**
   * Records a copy of `sizeBytes` bytes in direction `dir`. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for an
   *   empty name, an unknown direction, or a size that is not an integer in 0..2^53−1.
   */
  recordMemcpy(stream: StreamId, name: string, dir: MemcpyDir, sizeBytes: number): NodeId {
    const OP = 'StreamCapture.recordMemcpy';
    const slot = this.#active(OP, stream);
    if (!(typeof name === 'string' && name.length > 0)) requireName(OP, 'name', name);
    const devices = [0, 0];
    const code = encodeMemcpyDir(OP, 'dir', dir, devices);
    requireSize(OP, 'sizeBytes', sizeBytes);
    const store = this.#store;
    const id = store.appendNode(KIND_MEMCPY, slot, store.intern(name));
    store.setMemcpy(id, code, sizeBytes, devices[0]!, devices[1]!);
    this.#wire(slot, id);
    return id as NodeId;
  }

  /**
   * Records a fill of `sizeBytes` bytes with the byte `value`. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for an
   *   empty name, a bad size, or a value outside 0..255.
   */
  recordMemset(stream: StreamId, name: string, sizeBytes: number, value: number): NodeId {
    const OP = 'StreamCapture.recordMemset';
    const slot = this.#active(OP, stream);
    if (!(typeof name === 'string' && name.length > 0)) requireName(OP, 'name', name);
    requireSize(OP, 'sizeBytes', sizeBytes);
    if (!(isU32(value) && value <= 255)) requireInt(OP, 'value', value, 0, 255);
    const store = this.#store;
    const id = store.appendNode(KIND_MEMSET, slot, store.intern(name));
    store.setMemset(id, sizeBytes, value, 1);
    this.#wire(slot, id);
    return id as NodeId;
  }

  /**
   * Records a host callback; `label` is also the node's name. Returns the new node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`; InvalidArgumentError for an empty label.
   */
  recordHostCallback(stream: StreamId, label: string): NodeId {
    const OP = 'StreamCapture.recordHostCallback';
    const slot = this.#active(OP, stream);
    if (!(typeof label === 'string' && label.length > 0)) requireName(OP, 'label', label);
    const store = this.#store;
    const name = store.intern(label);
    const id = store.appendNode(KIND_HOST, slot, name);
    store.setHost(id, name);
    this.#wire(slot, id);
    return id as NodeId;
  }

  /**
   * The fork half: `event` now stands for the newest node recorded on `stream`. Recording it again
   * later moves it to the newer node. On a stream with no ops yet this does nothing (the event
   * keeps any earlier meaning). Adds no node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`.
   */
  recordEvent(stream: StreamId, event: CaptureEvent): void {
    const OP = 'StreamCapture.recordEvent';
    if (this.#cuda) {
      this.#recordEventCuda(OP, stream, event);
      return;
    }
    const slot = this.#active(OP, stream);
    const e = isU32(event) ? event : requireU32(OP, 'event', event);
    const head = this.#head[slot]!;
    if (head >= 0) this.#events.set(e, head);
  }

  /**
   * The join half: the next op recorded on `stream` will depend on the node `event` stands for.
   * Ops already recorded on `stream` are not affected. Waiting on an event never recorded does
   * nothing. Adds no node.
   * @throws GraphError kind `Internal` if `stream` is not `Active`.
   */
  waitEvent(stream: StreamId, event: CaptureEvent): void {
    const OP = 'StreamCapture.waitEvent';
    if (this.#cuda) {
      this.#waitEventCuda(OP, stream, event);
      return;
    }
    const slot = this.#active(OP, stream);
    const e = isU32(event) ? event : requireU32(OP, 'event', event);
    const source = this.#events.get(e);
    if (source === undefined) return;
    this.#park(slot, source);
  }

  /**
   * Models an illegal operation during capture: `stream` becomes `Invalidated` and the whole
   * session is poisoned (`endCapture` on any stream then throws kind `ValidationFailed`).
   * @throws GraphError kind `Internal` if `stream` is not `Active`.
   */
  invalidate(stream: StreamId): void {
    const OP = 'StreamCapture.invalidate';
    const slot = this.#active(OP, stream);
    this.#status[slot] = INVALIDATED;
    this.#activeCount--;
    this.#poisonedBy ??= this.#store.streamIds[slot]!;
  }

  /**
   * The streams (ascending) whose work is not joined back into `origin`: their newest node does
   * not reach `origin`'s newest node nor any node parked on `origin` by `waitEvent`. Real CUDA
   * refuses to end such a capture (error 904). Streams with no ops are never listed.
   * @throws GraphError kind `Internal` if `origin` was never begun.
   */
  unjoinedStreams(origin: StreamId): StreamId[] {
    const OP = 'StreamCapture.unjoinedStreams';
    this.#open(OP);
    const o = requireU32(OP, 'stream', origin);
    const slot = this.#store.findSlot(o);
    if (slot < 0 || this.#status[slot] === NONE) {
      throw new GraphError('Internal', GraphErrorCode.CaptureNotActive, `${OP}: stream ${o} is not capturing`);
    }
    return this.#unjoined(slot);
  }

  /**
   * Ends the session and returns the `ComputeGraph` of every stream's nodes. Parked waits with no
   * later op are dropped (they gate nothing).
   * @throws GraphError kind `Internal`: `stream` not capturing (`CAPTURE_NOT_ACTIVE`), session
   *   already ended (`CAPTURE_SESSION_ENDED`); kind `ValidationFailed`: a stream was invalidated
   *   (`CAPTURE_INVALIDATED`), or `requireJoined` and some stream is not joined back
   *   (`CAPTURE_UNJOINED`, naming each). A failed call ends nothing: the session stays as it was.
   */
  endCapture(stream: StreamId, options?: EndCaptureOptions): ComputeGraph {
    const OP = 'StreamCapture.endCapture';
    this.#writable(OP);
    const s = requireU32(OP, 'stream', stream);
    const o = requireOptions<EndCaptureOptions>(OP, options, ['requireJoined']);
    const requireJoined = o.requireJoined === undefined ? this.#cuda : requireBoolean(OP, 'requireJoined', o.requireJoined);
    const slot = this.#store.findSlot(s);
    if (slot < 0 || this.#status[slot] === NONE) {
      throw new GraphError('Internal', GraphErrorCode.CaptureNotActive, `${OP}: stream ${s} is not capturing`);
    }
    if (this.#cuda && slot !== this.#origin) {
      const origin = this.#store.streamIds[this.#origin]!;
      throw new GraphError(
        'Internal',
        GraphErrorCode.CaptureUnmatched,
        `${OP}: stream ${s} joined the capture that began on stream ${origin}; end it on stream ${origin} ` +
          '(CUDA would fail with CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)',
      );
    }
    if (this.#poisonedBy !== null) {
      const where = this.#status[slot] === INVALIDATED ? `stream ${s} was invalidated` : `the capture was invalidated on stream ${this.#poisonedBy}`;
      throw new GraphError(
        'ValidationFailed',
        GraphErrorCode.CaptureInvalidated,
        `${OP}: ${where} by an illegal operation; the session cannot produce a graph (start a new StreamCapture)`,
      );
    }
    if (requireJoined) {
      const unjoined = this.#unjoined(slot);
      if (unjoined.length > 0) {
        // Thousands of streams can be unjoined: the list shows a few and the count (bounded-text.ts).
        const list = listText(unjoined.length, (i) => `stream ${unjoined[i]}`);
        const streams = isCut(unjoined.length) ? `${unjoined.length.toLocaleString('en-US')} streams (${list})` : list;
        throw new GraphError(
          'ValidationFailed',
          GraphErrorCode.CaptureUnjoined,
          `${OP}: ${streams} ha${unjoined.length === 1 ? 's' : 've'} work not joined back into stream ${s} ` +
            `(record an event after the last op there and wait on it from stream ${s}); ` +
            'a real CUDA capture would fail with CUDA_ERROR_STREAM_CAPTURE_UNJOINED',
        );
      }
    }
    this.#ended = true;
    const store = this.#store;
    store.shrinkToFit();
    // The session is over: drop its bookkeeping so the graph is all that stays alive.
    this.#store = new GraphStore();
    this.#events.clear();
    this.#eventSets.clear();
    this.#parked = [];
    this.#parkedSets = [];
    this.#head = [];
    return graphFromStore(store);
  }

  /** `StreamCapture(3 nodes, 2 capturing)`. */
  toString(): string {
    if (this.#ended) return 'StreamCapture(ended)';
    return `StreamCapture(${this.#store.n} nodes, ${this.#activeCount} capturing${this.#poisonedBy === null ? '' : ', invalidated'})`;
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  #open(op: string): void {
    if (this.#ended) {
      throw new GraphError(
        'Internal',
        GraphErrorCode.CaptureSessionEnded,
        `${op}: this capture session has ended (endCapture returned its graph); start a new StreamCapture`,
      );
    }
  }

  /**
   * Checks that the session is open and not recording a conditional body: a change to the capture
   * from a body callback would land in the middle of the conditional, which is then refused or
   * added after it (the callback is given the body's own capture for its work).
   */
  #writable(op: string): void {
    this.#open(op);
    if (this.#busy !== null) {
      throw new GraphError(
        'Internal',
        GraphErrorCode.Busy,
        `${op}: the capture cannot change while ${this.#busy} records a body; record the body through the capture its callback is given`,
      );
    }
  }

  /** Checks that the session is open, not busy, and `stream` is `Active`; returns its slot. */
  #active(op: string, stream: unknown): number {
    if (this.#ended || this.#busy !== null) this.#writable(op);
    if (!isU32(stream)) requireU32(op, 'stream', stream);
    const slot = this.#store.findSlot(stream as number);
    const status = slot < 0 ? NONE : this.#status[slot]!;
    if (status === ACTIVE) return slot;
    if (status === INVALIDATED) {
      throw new GraphError(
        'Internal',
        GraphErrorCode.CaptureStreamInvalidated,
        `${op}: stream ${stream} capture is invalidated (invalidate() was called on it)`,
      );
    }
    throw new GraphError('Internal', GraphErrorCode.CaptureNotActive, `${op}: stream ${stream} is not capturing (call beginCapture first)`);
  }

  /** The slot of stream `s`, registering it (status None, no head, nothing parked) if new. */
  #slot(s: number): number {
    const slot = this.#store.streamSlot(s);
    while (this.#status.length <= slot) {
      this.#status.push(NONE);
      this.#head.push(-1);
      this.#parked.push([]);
    }
    return slot;
  }

  /** A stream's dependency set under CUDA semantics: its newest node and the waits parked since. */
  #dependencySet(slot: number): number[] {
    const head = this.#head[slot]!;
    const set = [...this.#parked[slot]!];
    if (head >= 0 && !set.includes(head)) set.unshift(head);
    return set;
  }

  /**
   * CUDA's `cuEventRecord`: on a capturing stream the event captures the stream's whole
   * dependency set (possibly empty, replacing any earlier meaning); on a stream outside the capture
   * it is an ordinary record, so the event becomes external to the capture.
   */
  #recordEventCuda(op: string, stream: unknown, event: unknown): void {
    this.#writable(op);
    const s = isU32(stream) ? stream : requireU32(op, 'stream', stream);
    const e = isU32(event) ? event : requireU32(op, 'event', event);
    const slot = this.#store.findSlot(s);
    const status = slot < 0 ? NONE : this.#status[slot]!;
    if (status === NONE) {
      this.#eventSets.set(e, EXTERNAL);
      return;
    }
    const active = this.#active(op, s);
    this.#eventSets.set(e, this.#dependencySet(active));
  }

  /**
   * CUDA's `cuStreamWaitEvent`: a captured event adds its set to the stream's dependencies, and a
   * stream outside the capture joins it with that set; an event never recorded is complete, so
   * waiting on it does nothing; a capturing stream waiting on an event recorded outside the capture
   * crosses the capture boundary: the capture is invalidated and the call fails.
   */
  #waitEventCuda(op: string, stream: unknown, event: unknown): void {
    this.#writable(op);
    const s = isU32(stream) ? stream : requireU32(op, 'stream', stream);
    const e = isU32(event) ? event : requireU32(op, 'event', event);
    const known = this.#store.findSlot(s);
    const status = known < 0 ? NONE : this.#status[known]!;
    const set = this.#eventSets.get(e);
    if (status === NONE) {
      // Outside the capture a wait is ordinary work, except on an event captured here: then the
      // stream joins the capture, depending on what the event captured.
      if (set === undefined || set === EXTERNAL) return;
      const slot = this.#slot(s);
      this.#status[slot] = ACTIVE;
      this.#activeCount++;
      this.#parked[slot] = [...set];
      this.#parkedSets[slot] = undefined;
      return;
    }
    const slot = this.#active(op, s);
    if (set === undefined) return;
    if (set === EXTERNAL) {
      this.#status[slot] = INVALIDATED;
      this.#activeCount--;
      this.#poisonedBy ??= s;
      throw new GraphError(
        'ValidationFailed',
        GraphErrorCode.CaptureIsolation,
        `${op}: stream ${s} waited on event ${e}, which was recorded outside the capture; the capture is ` +
          'invalidated (CUDA fails with CUDA_ERROR_STREAM_CAPTURE_ISOLATION)',
      );
    }
    for (const p of set) this.#park(slot, p);
  }

  /**
   * Parks node `v` on `slot` unless it is parked there already. A short list is searched; a long
   * one (a join of many streams) is looked up in its set, so k waits cost O(k), not O(k²).
   */
  #park(slot: number, v: number): void {
    const parked = this.#parked[slot]!;
    if (parked.length < PARKED_SCAN) {
      if (!parked.includes(v)) parked.push(v);
      return;
    }
    let set = this.#parkedSets[slot];
    if (set === undefined) {
      set = new Set(parked);
      this.#parkedSets[slot] = set;
    }
    if (!set.has(v)) {
      set.add(v);
      parked.push(v);
    }
  }

  /** Wires a just-appended node: parked waits first, then the same-stream edge; it becomes the head. */
  #wire(slot: number, id: number): void {
    const store = this.#store;
    const head = this.#head[slot]!;
    const parked = this.#parked[slot]!;
    if (parked.length > 0) {
      for (let i = 0; i < parked.length; i++) {
        const p = parked[i]!;
        if (p !== head) store.appendEdge(p, id);
      }
      if (parked.length >= PARKED_SCAN) this.#parkedSets[slot] = undefined;
      parked.length = 0;
    }
    if (head >= 0) store.appendEdge(head, id);
    this.#head[slot] = id;
  }

  #unjoined(origin: number): StreamId[] {
    if (this.#cuda) return this.#unjoinedCuda(origin);
    const store = this.#store;
    // Every ancestor (inclusive) of origin's frontier: its head and its parked waits.
    const seen = this.#ancestors(this.#dependencySet(origin));
    const out: StreamId[] = [];
    for (let slot = 0; slot < this.#head.length; slot++) {
      const h = this.#head[slot]!;
      if (slot !== origin && h >= 0 && !seen[h]) out.push(store.streamIds[slot]! as StreamId);
    }
    return out.sort((a, b) => a - b);
  }
  /** Marks `frontier` and every ancestor of it (a DFS over the in-edges). */
  #ancestors(frontier: number[]): Uint8Array {
    const store = this.#store;
    const seen = new Uint8Array(store.n);
    const stack = frontier;
    for (const v of stack) seen[v] = 1;
    while (stack.length > 0) {
      const v = stack.pop()!;
      for (let e = store.firstIn[v]!; e !== 0; e = store.nextIn(e)) {
        const p = store.edgeFrom(e);
        if (!seen[p]) {
          seen[p] = 1;
          stack.push(p);
        }
      }
    }
    return seen;
  }

  /**
   * CUDA's rule at `cuStreamEndCapture`: every node of every other capturing stream's dependency
   * set (newest node and parked waits) must reach the origin's dependency set.
   */
  #unjoinedCuda(origin: number): StreamId[] {
    const store = this.#store;
    const seen = this.#ancestors(this.#dependencySet(origin));
    const out: StreamId[] = [];
    for (let slot = 0; slot < this.#status.length; slot++) {
      if (slot === origin || this.#status[slot] === NONE) continue;
      if (this.#dependencySet(slot).some((v) => !seen[v])) out.push(store.streamIds[slot]! as StreamId);
    }
    return out.sort((a, b) => a - b);
  }
}
