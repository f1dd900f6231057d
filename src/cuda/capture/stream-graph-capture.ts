import { DisposedError, InvalidArgumentError, privateConstructorError } from '../../errors/base.js';
import { CudaError } from '../../errors/cuda-error.js';
import { describe, requireBoolean, requireInstance, requireOptions } from '../../util/validate.js';
import { CaptureStatus } from '../../model/capture-status.js';
import { graph as gr, init, event as ev, stream as st, captureSplice as cs, cudaError } from '../../driver/result/index.js';
import { CU, CU_STREAM_CAPTURE_STATUS } from '../../driver/layouts.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../core/internal.js';
import { makeCurrent } from '../core/context.js';
import { captureStarted, captureEnded, type CaptureSink } from '../core/capture-hooks.js';
import { surfaceCleanupErrors, keepFailure, keepCleanupError, takeCleanupError, type Lifetime } from '../core/lifetime.js';
import { takeHostCallbackError } from '../host/host-calls.js';
import type { Stream } from '../device/stream.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import { DEFAULT_CAPTURE_MODE, requireCaptureMode, driverCaptureMode, type CaptureMode } from './capture-mode.js';
import { Graph, registerCaptureInto } from '../graph/graph.js';
import type { GraphExec } from '../graph/graph-exec.js';
import { CudaNode, dependencyHandles } from '../graph/cuda-node.js';
import { checkInstantiateFlags, type InstantiateFlags } from '../graph/instantiate-flags.js';
import { brands } from '../core/brands.js';

/** The first driver version with stream capture (CUDA 10.0). */
export const MIN_CAPTURE_DRIVER_VERSION = 10000;

/**
 * @throws CudaError 801 `CUDA_ERROR_NOT_SUPPORTED` when `version` (from `cuDriverGetVersion`)
 *   predates stream capture (CUDA 10.0).
 */
export function requireCaptureSupport(op: string, version: number): void {
  if (version < MIN_CAPTURE_DRIVER_VERSION) {
    throw new CudaError({
      code: 801,
      operation: op,
      detail: `stream capture needs a driver supporting CUDA 10.0 or newer; this driver supports CUDA ${Math.floor(version / 1000)}.${(version % 1000) / 10}`,
      details: { driverVersion: version },
    });
  }
}

/** The first illegal call seen during a capture. */
export interface CaptureFailure {
  /** The public operation that failed, e.g. `DeviceBuffer.copyFromHost`. */
  readonly operation: string;
  /** Its error (900–908); `error.stack` is the JS stack of the call. */
  readonly error: CudaError;
}

const STATUS = [CaptureStatus.None, CaptureStatus.Active, CaptureStatus.Invalidated] as const;

/**
 * @internal Serves `DeviceBuffer.allocAsync` on the streams of a capture (a `CapturePool`
 * bound to it by `GraphCaptureGuard.beginWithPool`).
 */
export interface CaptureAllocator {
  allocate(op: string, stream: Stream, byteLength: number): DeviceBuffer;
}

/**
 * The bookkeeping of one capture, which streams and events point at (`stream[CAPTURE]`): what the
 * graph must keep alive, the streams that joined, the first illegal call, the graph allocations.
 * It never references the `StreamGraphCapture` the program holds, so that object can be
 * garbage-collected while its stream still records into this one; a finalizer then abandons the
 * capture (a forgotten capture must not defer every free of the process for ever).
 */
class CaptureRecord implements CaptureSink {
  active = true;
  readonly held = new Set<Lifetime>();
  readonly joined = new Set<Stream>();
  first: CaptureFailure | null = null;
  /** Graph allocations (`allocAsync` recorded as allocation nodes), released if the capture fails. */
  readonly graphAllocations: Lifetime[] = [];
  /** What the owner of a collected capture must still release (a guard's pool), run once by `collected`. */
  onCollected: (() => unknown) | null = null;
  /** The graph being captured into (`beginInto`): the user's, never destroyed by the capture; else null. */
  into: Graph | null = null;
  /** The object `capture.graph` handed out for the graph being captured, owned by the capture until it ends. */
  borrowed: Graph | null = null;
  /** The capture mode (bodies of conditional nodes captured during this capture use it too). */
  mode: CaptureMode = DEFAULT_CAPTURE_MODE;
  /** A conditional body whose capture failed (its call and error): ending the capture then fails with it. */
  poisoned: { readonly op: string; readonly error: unknown } | null = null;

  constructor(
    readonly stream: Stream,
    /** The stream's handle, valid until the capture ends even if the stream is disposed meanwhile (its destroy waits for the capture). */
    readonly handle: bigint,
    readonly allocator: CaptureAllocator | null,
  ) {}

  /**
   * The graph being captured into as a `Graph` (`cuStreamGetCaptureInfo`): the user's for a capture
   * into a graph, else one object made on first use and handed to whoever asks until the capture ends.
   */
  graphFor(op: string): Graph {
    if (this.into !== null) return this.into;
    if (this.borrowed !== null && !this.borrowed.disposed) return this.borrowed;
    const info = this.liveInfo(op, this.handle);
    const g = new Graph(INTERNAL, this.stream.device, info.graph, [], false);
    g.beginCapture(false);
    this.borrowed = g;
    return g;
  }

  /** The live capture state of stream `handle` (this capture's stream, or one joined to it). */
  liveInfo(op: string, handle: bigint): cs.CaptureInfo {
    if (!this.active) throw new InvalidArgumentError(op, 'capture', 'the capture has ended');
    makeCurrent(op, this.stream.device.context);
    const info = cs.captureInfo(op, handle);
    if (info.status !== CU_STREAM_CAPTURE_STATUS.ACTIVE) {
      throw new InvalidArgumentError(op, 'capture', 'the capture was invalidated by an illegal call (see capture.firstFailure); end or dispose it');
    }
    return info;
  }

  /** Leaves capture mode in the bookkeeping: detaches the streams and resumes deferred frees. */
  close(): void {
    if (!this.active) return;
    this.active = false;
    if (this.stream[CAPTURE] === this) this.stream[CAPTURE] = null;
    for (const s of this.joined) if (s[CAPTURE] === this) s[CAPTURE] = null;
    this.joined.clear();
    for (const l of this.held) l.release();
    this.held.clear();
    captureEnded(this);
  }

  /** CaptureSink: keep `life` alive with the graph. */
  retain(life: Lifetime): void {
    if (!this.active || this.held.has(life)) return;
    this.held.add(life);
    life.retain();
  }

  /** CaptureSink: remember the first capture error. */
  noteError(error: CudaError): void {
    // Ending a capture is never the cause of another capture's failure.
    if (error.driverCall === 'cuStreamEndCapture') return;
    if (this.first === null && this.active) this.first = { operation: error.operation, error };
  }

  /** CaptureSink: a capture with an allocator serves allocations from it. */
  allocate(op: string, stream: object, byteLength: number): DeviceBuffer | null {
    if (this.allocator === null || !this.active || !brands.Stream.is(stream)) return null;
    return this.allocator.allocate(op, stream, byteLength);
  }

  /** CaptureSink: remember a graph allocation, to release it if the capture fails. */
  allocated(life: Lifetime): void {
    if (this.active) this.graphAllocations.push(life);
  }

  /** CaptureSink: `stream` joined this capture through an event. */
  join(stream: object): void {
    if (!this.active || !brands.Stream.is(stream) || stream === this.stream) return;
    stream[CAPTURE] = this;
    this.joined.add(stream);
  }

  /**
   * A failed capture's graph allocations vanish with its graph: mark their buffers freed (and
   * disposed) without a `cuMemFree`, which would fail on an address the driver took back.
   */
  releaseGraphAllocations(): void {
    for (const life of this.graphAllocations.splice(0)) if (!life.freed) life.markFreed();
  }

  /**
   * Ends the capture on the saved handle, whatever else is wrong (a disposed stream, an error kept
   * for the next call): the seed's rule is that capture always ends. Returns the graph, which now
   * holds what the capture retained.
   * @throws CudaError when ending fails (901 names the first illegal call), after leaving capture
   *   mode; 903 when the capture already ended.
   */
  finish(op: string): Graph {
    if (!this.active) {
      throw new CudaError({
        code: 903,
        operation: op,
        detail: 'this capture has already ended (end, endGraph and dispose end it once)',
      });
    }
    const h = this.handle;
    makeCurrent(op, this.stream.device.context);
    const { code, graph } = gr.streamEndCapture(op, h);
    if (code !== 0) {
      if (graph !== 0n && graph !== this.into?.handleUnchecked()) gr.graphDestroy(op, graph);
      // The driver normally leaves capture mode even when ending fails; if it did not (e.g. the
      // wrong thread), stay active so dispose() can try again.
      let still = false;
      try {
        still = gr.streamIsCapturing(op, h) !== CU_STREAM_CAPTURE_STATUS.NONE;
      } catch {
        still = false;
      }
      if (!still) {
        this.keepIntoHolds();
        this.close();
        this.releaseGraphAllocations();
        this.forgetGraphs();
      }
      throw this.endError(op, code);
    }
    if (graph === 0n) {
      // Never seen from a driver; a Graph wrapping no handle would fail later and less clearly.
      this.keepIntoHolds();
      this.close();
      this.releaseGraphAllocations();
      this.forgetGraphs();
      throw cudaError(999, op, 'cuStreamEndCapture', 'ending the capture succeeded but returned no graph');
    }
    if (this.poisoned !== null) {
      // A conditional body failed to capture: the graph is incomplete. Discard it (a graph of the
      // user's keeps what was recorded, as after any failed capture into it) and say why.
      if (graph !== this.into?.handleUnchecked()) gr.graphDestroy(op, graph);
      this.keepIntoHolds();
      this.close();
      this.releaseGraphAllocations();
      this.forgetGraphs();
      const p = this.poisoned;
      const why = p.error instanceof Error ? `${p.error.name}: ${p.error.message}` : String(p.error);
      throw cudaError(901, op, 'cuStreamEndCapture', `The capture of a conditional body failed in ${p.op} (${why}); the graph was discarded.`, undefined, p.error);
    }
    const held = [...this.held];
    this.held.clear(); // ownership passes to the graph
    // Captured allocation nodes come from `allocAsync`, which the record counts; explicit nodes
    // added through `capture.graph` are counted by that graph.
    const memory = this.graphAllocations.length > 0;
    this.graphAllocations.length = 0; // they live on with the graph (freed in it, or by their buffers)
    this.close();
    // A graph handed out during the capture (the user's own, or `capture.graph`) becomes the result:
    // its node objects stay valid. (A dispose of it during the capture takes effect now.)
    const target = this.into ?? this.borrowed;
    if (target !== null) {
      target.adoptCapture(graph, held, memory);
      return target;
    }
    return new Graph(INTERNAL, this.stream.device, graph, held, memory);
  }

  /**
   * A capture into the user's graph that fails or is abandoned leaves in that graph the nodes it
   * recorded: the graph keeps what they use (the holds the capture took), never the capture.
   */
  keepIntoHolds(): void {
    if (this.into === null) return;
    const held = [...this.held];
    this.held.clear();
    this.into.keepAfterCapture(held);
  }

  /** Where a failed or abandoned capture leaves the graph objects it handed out. */
  forgetGraphs(): void {
    this.into?.adoptCapture(0n, [], false);
    this.borrowed?.adoptCapture(0n, [], false);
  }

  endError(op: string, code: number): CudaError {
    const first = this.first;
    if (code === 901 || first !== null) {
      const detail =
        first !== null
          ? `The first call made through cudagraph that failed during this capture: ${first.operation}, with ` +
            `${first.error.errorName} (${first.error.code}). Its stack:\n${first.error.stack ?? '(no stack)'}`
          : 'No call made through cudagraph failed during the capture: the illegal operation came from outside ' +
            '(another library, the legacy NULL stream, or another thread while a global-mode capture was active).';
      return cudaError(
        code,
        op,
        'cuStreamEndCapture',
        detail,
        { firstFailedOperation: first?.operation ?? null, firstFailedCode: first?.error.code ?? null },
        first?.error,
      );
    }
    return cudaError(code, op, 'cuStreamEndCapture');
  }

  /**
   * Ends an active capture best-effort and leaves every stream it touched usable: joins the
   * streams forked into it (when it is still active, so that ending does not fail as unjoined),
   * ends it on the saved handle, destroys what was captured, and releases its graph allocations.
   * Never throws.
   * @returns the first cleanup failure: a stream still capturing afterwards, a graph that could
   *   not be destroyed, or an unexpected exception; null when the cleanup succeeded. The 901 an
   *   invalidated capture ends with is expected, not a failure.
   */
  abandon(op: string): unknown {
    if (!this.active) return null;
    let failure: unknown = null;
    const keep = (e: unknown): void => {
      if (failure === null) failure = e;
    };
    const h = this.handle;
    const joined = [...this.joined];
    try {
      makeCurrent(op, this.stream.device.context);
      let status: number = CU_STREAM_CAPTURE_STATUS.NONE;
      try {
        status = gr.streamIsCapturing(op, h);
      } catch (e) {
        keep(e);
      }
      // Raw driver calls only: a public call here would throw (and so swallow) an error kept for the program.
      let marker = 0n;
      if (status === CU_STREAM_CAPTURE_STATUS.ACTIVE && joined.length > 0) {
        try {
          marker = ev.eventCreate(op, CU.EVENT_DISABLE_TIMING);
        } catch {
          marker = 0n; // No join then: ending reports the unjoined streams, and discards the capture anyway.
        }
      }
      try {
        if (marker !== 0n) {
          for (const side of joined) {
            if (side[CAPTURE] !== this) continue;
            try {
              ev.eventRecord(op, marker, side.handleUnchecked());
              st.streamWaitEvent(op, h, marker);
            } catch {
              // Ending reports an unjoined stream itself; the capture is discarded either way.
            }
          }
        }
        const { code, graph } = gr.streamEndCapture(op, h);
        // A capture into the user's graph leaves that graph theirs (with what was recorded so far).
        if (graph !== 0n && graph !== this.into?.handleUnchecked()) {
          const rc = gr.graphDestroy(op, graph);
          if (rc !== 0) keep(cudaError(rc, op, 'cuGraphDestroy', "destroying the abandoned capture's graph failed"));
        }
        const streams: Array<readonly [string, bigint]> = [['the captured stream', h], ...joined.map((x) => [`the forked stream ${x}`, x.handleUnchecked()] as const)];
        for (const [name, handle] of streams) {
          let still: number = CU_STREAM_CAPTURE_STATUS.NONE;
          try {
            still = gr.streamIsCapturing(op, handle);
          } catch {
            continue; // A stream the driver no longer knows is not left capturing.
          }
          if (still !== CU_STREAM_CAPTURE_STATUS.NONE) {
            keep(
              cudaError(
                code !== 0 ? code : 999,
                op,
                'cuStreamEndCapture',
                `${name} is still capturing after the abandoned capture was ended; work submitted to it is recorded, not run`,
              ),
            );
          }
        }
      } finally {
        if (marker !== 0n) keepFailure(ev.eventDestroy(op, marker), op, 'cuEventDestroy_v2');
      }
    } catch (e) {
      keep(e);
    }
    this.keepIntoHolds();
    this.close();
    this.releaseGraphAllocations();
    this.forgetGraphs();
    return failure;
  }

  /** The program dropped its capture object without ending it: abandon, and release what its owner held. */
  collected(): void {
    if (!this.active) return;
    let failure = this.abandon('StreamGraphCapture (garbage-collected without end() or dispose())');
    const hook = this.onCollected;
    this.onCollected = null;
    if (hook !== null) {
      try {
        failure ??= hook();
      } catch (e) {
        failure ??= e;
      }
    }
    if (failure !== null && failure !== undefined) keepCleanupError(failure);
  }
}

registerCaptureInto((op, stream, graph, options) => {
  const cap = StreamGraphCapture.beginIntoFor(op, stream, graph, options);
  return { endGraph: () => cap.endGraphFor(op), dispose: () => cap.dispose() };
});

/** Abandons the captures the program forgot without ending or disposing them. */
const forgotten = new FinalizationRegistry<CaptureRecord>((record) => record.collected());

/** @internal The live capture `stream` records into (begun on it or joined to it), or null. */
export function captureRecordOf(stream: Stream): CaptureRecord | null {
  const sink = stream[CAPTURE];
  return sink instanceof CaptureRecord && sink.active ? sink : null;
}

/**
 * Driver-backed stream capture (`cuStreamBeginCapture_v2` / `cuStreamEndCapture`): work submitted
 * to the stream while the capture is active is recorded, not executed, and `end()` instantiates it
 * into a launchable `GraphExec`. Every buffer, module and pinned host buffer the captured work
 * touches is kept alive by the graph.
 *
 * Exactly one outcome per capture: `end()` (or `endGraph()`), or `dispose()` (also by leaving a
 * `using` scope), which ends the capture best-effort, destroys what was captured, ignores errors
 * and leaves the stream usable. A capture the program drops without either is abandoned the same
 * way when it is garbage-collected (frees held back meanwhile then run).
 *
 * @example
 * const s = device.stream();
 * let exec;
 * {
 *   using cap = StreamGraphCapture.begin(s, 'global');
 *   buf.memsetAsync(s, 0xab);            // recorded, not run
 *   exec = cap.end();                    // nodeCount ≥ 1
 * }
 * exec.launch(); s.synchronize();        // now it runs
 */
export class StreamGraphCapture {
  /** The stream the capture began on (where `end()` must be called). */
  readonly stream: Stream;
  /** The capture mode. */
  readonly mode: CaptureMode;
  readonly #record: CaptureRecord;

  /** @internal Use `StreamGraphCapture.begin`. */
  constructor(key: typeof INTERNAL, record: CaptureRecord, mode: CaptureMode) {
    if (key !== INTERNAL) throw privateConstructorError('StreamGraphCapture', 'StreamGraphCapture.begin(stream, mode)');
    this.stream = record.stream;
    this.mode = mode;
    this.#record = record;
    forgotten.register(this, record, this);
  }

  /** @internal True for a StreamGraphCapture this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is StreamGraphCapture {
    return typeof value === 'object' && value !== null && #record in value;
  }

  /**
   * Begins capturing `stream` (`cuStreamBeginCapture_v2`) in `mode` (default `'threadLocal'`, as
   * every capture entry point: `DEFAULT_CAPTURE_MODE`).
   * @throws InvalidArgumentError for a non-Stream, an unknown mode, the legacy NULL stream (it
   *   cannot be captured), or a stream already capturing; CudaError 3 without a driver; CudaError
   *   801 `CUDA_ERROR_NOT_SUPPORTED` when the driver predates CUDA 10.0; other CudaErrors from the driver.
   */
  static begin(stream: Stream, mode: CaptureMode = DEFAULT_CAPTURE_MODE): StreamGraphCapture {
    return StreamGraphCapture.beginFor('StreamGraphCapture.begin', stream, mode, null);
  }

  /**
   * @internal `begin` for a caller that names its own operation in errors (the guard), with an
   * optional allocator serving `DeviceBuffer.allocAsync` on the capture's streams.
   */
  static beginFor(
    op: string,
    stream: Stream,
    mode: unknown,
    allocator: CaptureAllocator | null,
    into: { readonly graph: Graph; readonly dependencies: BigUint64Array } | null = null,
  ): StreamGraphCapture {
    requireInstance(op, 'stream', stream, brands.Stream);
    const m = requireCaptureMode(op, mode);
    const h = StreamGraphCapture.capturableHandle(op, stream);
    requireCaptureSupport(op, init.driverVersion(op));
    if (into !== null && into.graph.device !== stream.device) {
      throw new InvalidArgumentError(op, 'stream', `the stream is on ${stream.device}; the graph runs on ${into.graph.device}`);
    }
    makeCurrent(op, stream.device.context);
    if (into === null) gr.streamBeginCapture(op, h, driverCaptureMode(m));
    else cs.beginCaptureToGraph(op, h, into.graph.handle, into.dependencies, driverCaptureMode(m));
    const record = new CaptureRecord(stream, h, allocator);
    record.mode = m;
    if (into !== null) {
      record.into = into.graph;
      into.graph.beginCapture(true);
    }
    stream[CAPTURE] = record;
    captureStarted(record);
    return new StreamGraphCapture(INTERNAL, record, m);
  }

  /**
   * @internal The handle of `stream` (a checked Stream) if a capture can begin on it: refuses a
   * disposed stream, the legacy NULL stream and a stream already capturing (for `GraphCaptureGuard`,
   * which checks before it takes a pool's memory), and surfaces kept cleanup errors.
   */
  static capturableHandle(op: string, stream: Stream): bigint {
    const h = stream.handleFor(op);
    if (stream.isLegacyDefault) {
      throw new InvalidArgumentError(
        op,
        'stream',
        'the legacy NULL stream cannot be captured; use device.stream() or device.createStream() (non-blocking streams)',
      );
    }
    if (stream[CAPTURE] !== null) {
      throw new InvalidArgumentError(op, 'stream', 'the stream is already capturing; end or dispose that capture first');
    }
    surfaceCleanupErrors(op);
    return h;
  }

  /**
   * Begins capturing `stream` into the existing `graph` (`cuStreamBeginCaptureToGraph`): the
   * captured work becomes nodes of `graph`, the first of them after `options.dependencies`
   * (nodes of `graph`; default none). `endGraph()` returns `graph` itself; `dispose()` ends the
   * capture and leaves `graph` the user's (with what was recorded before a failure).
   * `graph.captureInto(stream, body)` wraps this.
   * @throws InvalidArgumentError as `begin`, and for a graph of another device or a dependency
   *   that is not a node of `graph`; DisposedError for a disposed graph.
   */
  static beginInto(stream: Stream, graph: Graph, options?: { dependencies?: readonly CudaNode[]; mode?: CaptureMode }): StreamGraphCapture {
    return StreamGraphCapture.beginIntoFor('StreamGraphCapture.beginInto', stream, graph, options);
  }

  /** @internal `beginInto` for a caller that names its own operation in errors (`Graph.captureInto`). */
  static beginIntoFor(op: string, stream: Stream, graph: Graph, options: unknown): StreamGraphCapture {
    requireInstance(op, 'graph', graph, brands.Graph);
    graph[LIFETIME].assertAlive(op);
    const o = requireOptions<{ dependencies: readonly CudaNode[]; mode: CaptureMode }>(op, options, ['dependencies', 'mode']);
    graph.refuseWhileCapturing(op, 'begin another capture into it');
    const deps = dependencyHandles(op, o.dependencies, graph) ?? new BigUint64Array(0);
    return StreamGraphCapture.beginFor(op, stream, o.mode ?? DEFAULT_CAPTURE_MODE, null, { graph, dependencies: deps });
  }

  /**
   * The graph the capture is recording into (`cuStreamGetCaptureInfo`): add explicit nodes to it
   * while the capture is active (not remove them: CUDA's rule), and splice them into the
   * captured work with `insert` or `setDependencies`. The same object `endGraph()` returns.
   * @throws CaptureStateError-like InvalidArgumentError once the capture has ended or was invalidated.
   */
  get graph(): Graph {
    return this.#graphFor('StreamGraphCapture.graph');
  }

  #graphFor(op: string): Graph {
    return this.#record.graphFor(op);
  }

  #liveInfo(op: string): cs.CaptureInfo {
    return this.#record.liveInfo(op, this.#record.handle);
  }

  /** The nodes the next work captured on the stream will depend on (the capture's frontier), as nodes of `capture.graph`. */
  dependencies(): CudaNode[] {
    const op = 'StreamGraphCapture.dependencies';
    const g = this.#graphFor(op);
    return this.#liveInfo(op).dependencies.map((h) => g.nodeOf(op, h));
  }

  /**
   * Makes `nodes` (of `capture.graph`) the capture's frontier, or with `{ add: true }` adds them to
   * it (`cuStreamUpdateCaptureDependencies_v2`): the next work captured on the stream runs after them.
   */
  setDependencies(nodes: readonly CudaNode[], options?: { add?: boolean }): void {
    const op = 'StreamGraphCapture.setDependencies';
    const o = requireOptions<{ add: boolean }>(op, options, ['add']);
    const add = o.add === undefined ? false : requireBoolean(op, 'add', o.add);
    const g = this.#graphFor(op);
    const handles = dependencyHandles(op, nodes, g, 'nodes') ?? new BigUint64Array(0);
    this.#liveInfo(op);
    cs.updateCaptureDependencies(op, this.#record.handle, handles, add ? cs.CAPTURE_DEPENDENCIES.ADD : cs.CAPTURE_DEPENDENCIES.SET);
  }

  /**
   * Splices explicit nodes into the captured work: calls `build(graph, dependencies)` with the
   * capture's graph and frontier; the node(s) it returns (nodes of that graph, normally built
   * after `dependencies`) become the frontier, so the work captured next runs after them. An
   * exception from `build` propagates unchanged, and the frontier stays as it was.
   * @example
   * cap.insert((g, deps) => g.addKernelNode(k, { grid: 1, block: 32, args: [x] }, deps));
   */
  insert(build: (graph: Graph, dependencies: CudaNode[]) => CudaNode | readonly CudaNode[]): CudaNode[] {
    const op = 'StreamGraphCapture.insert';
    if (typeof build !== 'function') throw new InvalidArgumentError(op, 'build', `build must be a function (graph, dependencies) => node(s), got ${describe(build)}`);
    const g = this.#graphFor(op);
    const deps = this.#liveInfo(op).dependencies.map((h) => g.nodeOf(op, h));
    const out = build(g, deps);
    const nodes = CudaNode.is(out) ? [out] : out;
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new InvalidArgumentError(op, 'build', `build must return a node of capture.graph or a non-empty array of them, got ${describe(out)}`);
    }
    const handles = dependencyHandles(op, nodes, g, 'build()') ?? new BigUint64Array(0);
    this.#liveInfo(op);
    cs.updateCaptureDependencies(op, this.#record.handle, handles, cs.CAPTURE_DEPENDENCIES.SET);
    return [...nodes];
  }

  /** True until the capture has been ended (by `end`, `endGraph` or `dispose`). */
  isActive(): boolean {
    return this.#record.active;
  }

  /**
   * The driver's status for the stream (`cuStreamIsCapturing`): `Active` while recording,
   * `Invalidated` after an illegal call (the capture must still be ended), `None` once ended.
   */
  captureStatus(): CaptureStatus {
    const op = 'StreamGraphCapture.captureStatus';
    const status = gr.streamIsCapturing(op, this.stream.handleFor(op));
    return STATUS[status] ?? CaptureStatus.Invalidated;
  }

  /** The first illegal call (900–908) made through cudagraph during this capture, or null. */
  get firstFailure(): CaptureFailure | null {
    return this.#record.first;
  }

  /**
   * Ends the capture and instantiates the graph into a `GraphExec` (which owns the graph:
   * `exec.graph`). The capture ends on every path; if anything then fails (instantiation, the
   * stream was disposed meanwhile, an error kept for the next call), the graph is destroyed before
   * the error is thrown.
   * @throws CudaError 901 `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` whose message names the first
   *   illegal call and its JS stack (`cause` is that call's error); CudaError 903 when the
   *   capture has already ended; DisposedError when the captured stream was disposed (the capture
   *   was ended and discarded); the error kept from an earlier dispose or host function; other
   *   CudaErrors from the driver. InvalidArgumentError for bad options or flags, before the capture
   *   ends (it goes on recording).
   */
  end(options?: { flags?: InstantiateFlags }): GraphExec {
    return this.endFor('StreamGraphCapture.end', options);
  }

  /** @internal `end` for a caller that names its own operation in errors (the guard). */
  endFor(op: string, options?: { flags?: InstantiateFlags }): GraphExec {
    const flags = options === undefined ? undefined : (options as { flags?: unknown }).flags;
    if (options !== undefined && (typeof options !== 'object' || options === null || Object.keys(options).some((k) => k !== 'flags'))) {
      throw new InvalidArgumentError(op, 'options', `options must be { flags? }, got ${describe(options)}`);
    }
    // Refused before the capture ends: a refusal leaves it recording.
    checkInstantiateFlags(op, flags);
    const graph = this.#finish(op);
    const owns = graph !== this.#record.into;
    try {
      return graph.instantiateFor(op, flags, this.stream, owns);
    } catch (e) {
      if (owns) graph.dispose();
      throw e;
    }
  }

  /**
   * Ends the capture and returns the captured `Graph` without instantiating it (read it back,
   * draw it, instantiate it later or several times).
   * @throws as `end()`.
   */
  endGraph(): Graph {
    return this.#finish('StreamGraphCapture.endGraph');
  }

  /** @internal `endGraph` for a caller that names its own operation in errors (`Graph.captureInto`). */
  endGraphFor(op: string): Graph {
    return this.#finish(op);
  }

  /**
   * Ends the capture (always), then refuses to hand out its graph when the stream was disposed or
   * an error waits to be reported: the graph is destroyed and that error thrown.
   */
  #finish(op: string): Graph {
    const record = this.#record;
    let graph: Graph;
    try {
      graph = record.finish(op);
    } finally {
      // Ended (or failed and left capture mode): nothing left for the finalizer to abandon.
      if (!record.active) forgotten.unregister(this);
    }
    let error: Error | null = null;
    if (this.stream.disposed) {
      error = new DisposedError(op, `the captured stream ${this.stream}`);
    } else {
      error = takeCleanupError(op) ?? takeHostCallbackError(op);
    }
    if (error !== null) {
      if (graph !== record.into) graph.dispose();
      error.message += graph !== record.into ? ' (The capture was ended first and its graph discarded.)' : ' (The capture into the graph was ended first.)';
      throw error;
    }
    return graph;
  }

  /**
   * @internal Ends an active capture best-effort and leaves every stream it touched usable (see
   * `dispose`). Never throws; returns the first cleanup failure, or null.
   */
  abandon(op: string): unknown {
    forgotten.unregister(this);
    return this.#record.abandon(op);
  }

  /**
   * @internal What must be released if this capture is garbage-collected while still active (a
   * guard's pool hold and pool buffers); the closure must not reference the guard or this capture.
   */
  onCollected(release: () => unknown): void {
    this.#record.onCollected = release;
  }

  /**
   * Ends an active capture best-effort, destroys whatever was captured, ignores errors, and
   * leaves the stream usable. A no-op once the capture has ended. Never throws.
   */
  dispose(): void {
    this.abandon('StreamGraphCapture.dispose');
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
