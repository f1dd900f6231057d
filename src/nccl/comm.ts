import { DisposedError, InvalidArgumentError, privateConstructorError } from '../errors/base.js';
import { renamed } from '../model/call-name.js';
import { describe, requireInt, requireOptions, assertInstance } from '../util/validate.js';
import { INTERNAL, CAPTURE, LIFETIME } from '../cuda/core/internal.js';
import { makeCurrent } from '../cuda/core/context.js';
import { Lifetime, surfaceCleanupErrors } from '../cuda/core/lifetime.js';
import { Device } from '../cuda/device/device.js';
import type { Stream } from '../cuda/device/stream.js';
import type { DeviceBuffer } from '../cuda/memory/device-buffer.js';
import { NCCL_MIN_CAPTURE_VERSION, decodeNcclVersion, ncclResultName } from './codes.js';
import type { CollectiveOp, ElementType, ReduceOp } from '../model/element-type.js';
import { COLLECTIVE_OPTIONS, checkCollective } from './collective-args.js';
import { NcclError } from './nccl-error.js';
import * as nr from './result.js';
import { ncclGroup as groupEach, ncclGroupDepth, currentContext, restoreContext } from './group.js';
import { NcclUniqueId } from './unique-id.js';
import { ncclVersion } from './version.js';
import { brands } from '../cuda/core/brands.js';

/** Options of `allReduce`: `recv` omitted means in place (the result replaces `send`). */
export interface AllReduceOptions {
  readonly send: DeviceBuffer;
  readonly recv?: DeviceBuffer;
  /** Elements per rank. */
  readonly count: number;
  readonly type: ElementType;
  readonly op: ReduceOp;
  /** Byte offsets into the buffers (multiples of the element size). Default 0. */
  readonly sendOffset?: number;
  readonly recvOffset?: number;
}

/** Options of `broadcast`: the root's `send` (default: its `recv`, in place) reaches every rank's `recv`. */
export interface BroadcastOptions {
  readonly send?: DeviceBuffer;
  readonly recv: DeviceBuffer;
  readonly count: number;
  readonly type: ElementType;
  /** The rank whose data is sent. */
  readonly root: number;
  readonly sendOffset?: number;
  readonly recvOffset?: number;
}

/** Options of `reduce`: every rank's `send` reduced into the root's `recv`. */
export interface ReduceOptions {
  readonly send: DeviceBuffer;
  readonly recv?: DeviceBuffer;
  readonly count: number;
  readonly type: ElementType;
  readonly op: ReduceOp;
  readonly root: number;
  readonly sendOffset?: number;
  readonly recvOffset?: number;
}

/**
 * Options of `allGather`: each rank's `count` elements of `send` land at `rank·count` in every
 * rank's `recv` (`size·count` elements). `send` omitted: in place, this rank's block of `recv`.
 */
export interface AllGatherOptions {
  readonly send?: DeviceBuffer;
  readonly recv: DeviceBuffer;
  /** Elements each rank sends. */
  readonly count: number;
  readonly type: ElementType;
  readonly sendOffset?: number;
  readonly recvOffset?: number;
}

/**
 * Options of `reduceScatter`: `send` holds `size·count` elements; block `r` of the reduction
 * lands in rank r's `recv` (`count` elements). `recv` omitted: in place, this rank's block of `send`.
 */
export interface ReduceScatterOptions {
  readonly send: DeviceBuffer;
  readonly recv?: DeviceBuffer;
  /** Elements each rank receives. */
  readonly count: number;
  readonly type: ElementType;
  readonly op: ReduceOp;
  readonly sendOffset?: number;
  readonly recvOffset?: number;
}

/** Options of `NcclComm.initRank`. */
export interface InitRankOptions {
  /** The id rank 0 made (`NcclUniqueId.create()`), as the object, its hex or its 128 bytes. */
  readonly id: NcclUniqueId | string | ArrayBufferView;
  /** This process's rank, 0..size−1. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
}

/** The state a communicator's cleanup reads (never the communicator itself: the finalizer must be able to collect it). */
interface CommState {
  abort: boolean;
}

/** `NcclComm.#prepare` for the clique, whose calls run in the group it opens (set in `NcclComm`'s static block). */
let prepareCollective: (comm: NcclComm, op: string, kind: CollectiveOp, stream: Stream, options: unknown) => () => void;

/** @internal A Device, or the Device of an ordinal (which must exist). */
export function requireDevice(op: string, d: unknown): Device {
  if (brands.Device.is(d)) return d;
  if (typeof d === 'number') return Device.getFor(op, d);
  throw new InvalidArgumentError(op, 'device', `device must be a Device or an ordinal, got ${describe(d)}`);
}

function toUniqueId(op: string, id: unknown): NcclUniqueId {
  if (NcclUniqueId.is(id)) return id;
  if (typeof id === 'string') return NcclUniqueId.fromHex(id);
  if (ArrayBuffer.isView(id)) return NcclUniqueId.fromBytes(id);
  throw new InvalidArgumentError(op, 'id', `id must be an NcclUniqueId, its hex string or its 128 bytes, got ${describe(id)}`);
}

/**
 * One rank of an NCCL communicator, bound to one device. Made by `NcclComm.initRank` (one rank per
 * process, the shape that scales to several hosts) or by `NcclComm.initAll` (every rank in this
 * process, one per local GPU: an `NcclClique`). Collectives are enqueued on a `Stream` of the
 * communicator's device and, like any stream work, are recorded instead when the stream is
 * capturing (NCCL 2.9+): the captured graph then keeps the buffers and this communicator alive.
 *
 * `dispose()` destroys the communicator (`ncclCommDestroy`), or aborts it (`ncclCommAbort`) when
 * NCCL reports an asynchronous error or `abort()` was called; while a captured graph still holds
 * it, that waits until the graph is freed (NCCL 2.26+ would otherwise block in the destroy until
 * the graph is gone).
 *
 * @example
 * using clique = NcclComm.initAll([0, 1]);
 * ncclGroup(() => {
 *   for (const c of clique.comms) c.allReduce(streams[c.rank], { send: grads[c.rank], count: n, type: 'f32', op: 'sum' });
 * });
 */
export class NcclComm {
  /** The device this rank runs on. */
  readonly device: Device;
  /** This rank, 0..size−1 (`ncclCommUserRank`). */
  readonly rank: number;
  /** Number of ranks in the communicator (`ncclCommCount`). */
  readonly size: number;
  /** Ranks of this communicator driven by this process (1 for `initRank`, `size` for `initAll`). */
  readonly localRanks: number;
  /** @internal */
  readonly [LIFETIME]: Lifetime;
  readonly #handle: bigint;
  readonly #state: CommState;

  /** @internal Use `NcclComm.initRank` or `NcclComm.initAll`. */
  constructor(key: typeof INTERNAL, device: Device, handle: bigint, rank: number, size: number, localRanks: number) {
    if (key !== INTERNAL) throw privateConstructorError('NcclComm', 'NcclComm.initRank() or NcclComm.initAll()');
    this.device = device;
    this.#handle = handle;
    this.rank = rank;
    this.size = size;
    this.localRanks = localRanks;
    const state: CommState = { abort: false };
    this.#state = state;
    this[LIFETIME] = new Lifetime(`NcclComm (rank ${rank} of ${size}, device ${device.ordinal})`, this, () => {
      const op = 'NcclComm.dispose';
      let abort = state.abort;
      if (!abort) {
        try {
          const e = nr.commAsyncError(op, handle);
          abort = e !== 0 && e !== 7; // 7: ncclInProgress, not an error
        } catch {
          abort = true;
        }
      }
      const ctx = currentContext(op);
      const rc = abort ? nr.commAbort(op, handle) : nr.commDestroy(op, handle);
      restoreContext(op, ctx);
      if (rc !== 0) throw nr.ncclError(rc, op, abort ? 'ncclCommAbort' : 'ncclCommDestroy');
    }, { waits: true }); // destroying a communicator flushes its work: deferred while a JS host call is in flight
  }

  /**
   * This process's rank of a communicator of `size` ranks (`ncclCommInitRank`), on `device`. Every
   * rank must call it with the same id and size; it returns once all have joined (the JS thread
   * waits meanwhile).
   * @throws InvalidArgumentError for a bad device, id, rank or size; NcclError from NCCL (e.g.
   *   `ncclInvalidUsage` when two ranks share a device, `ncclSystemError` when rank 0's process
   *   cannot be reached); `NCCL_NOT_LOADED` listing the paths tried.
   */
  static initRank(device: Device | number, options: InitRankOptions): NcclComm {
    const op = 'NcclComm.initRank';
    const d = requireDevice(op, device);
    const o = requireOptions<InitRankOptions>(op, options, ['id', 'rank', 'size']);
    const size = requireInt(op, 'size', o.size, 1, 1 << 30);
    const rank = requireInt(op, 'rank', o.rank, 0, size - 1);
    const id = toUniqueId(op, o.id);
    surfaceCleanupErrors(op);
    makeCurrent(op, d.context);
    const handle = nr.commInitRank(op, size, id.bytesFor(), rank);
    restoreContext(op, d.context);
    return NcclComm.#adopt(op, d, handle, size, 1, rank);
  }

  /**
   * One communicator over `devices` (Devices or ordinals, distinct), all driven by this process
   * (`ncclCommInitAll`): rank i runs on `devices[i]`. Collectives on them must be issued in one
   * group (`ncclGroup`, or the clique's own methods), or they could wait for each other forever.
   * @throws InvalidArgumentError for an empty list, a repeated device, or a non-device; NcclError from NCCL.
   */
  static initAll(devices: readonly (Device | number)[]): NcclClique {
    const op = 'NcclComm.initAll';
    if (!Array.isArray(devices) || devices.length === 0) {
      throw new InvalidArgumentError(op, 'devices', `devices must be a non-empty array of Devices or ordinals, got ${describe(devices)}`);
    }
    const list = devices.map((x, i) => {
      try {
        return requireDevice(op, x);
      } catch (e) {
        if (e instanceof InvalidArgumentError) throw new InvalidArgumentError(op, `devices[${i}]`, `devices[${i}]: ${e.message.slice(op.length + 2)}`);
        throw e;
      }
    });
    const ordinals = list.map((d) => d.ordinal);
    const repeated = ordinals.find((o, i) => ordinals.indexOf(o) !== i);
    if (repeated !== undefined) {
      throw new InvalidArgumentError(op, 'devices', `device ${repeated} appears twice: NCCL runs one rank per device`);
    }
    surfaceCleanupErrors(op);
    const ctx = currentContext(op);
    const handles = nr.commInitAll(op, ordinals);
    restoreContext(op, ctx);
    const comms: NcclComm[] = [];
    try {
      for (let i = 0; i < handles.length; i++) comms.push(NcclComm.#adopt(op, list[i]!, handles[i]!, list.length, list.length, i));
    } catch (e) {
      // The queries failed on some rank: the clique is unusable; free every rank, aborting what is left.
      for (const c of comms) c.abort();
      for (let i = comms.length + 1; i < handles.length; i++) nr.commAbort(op, handles[i]!);
      throw e;
    }
    return new NcclClique(INTERNAL, comms);
  }

  /** Wraps a new handle after checking NCCL agrees on its rank, size and device; aborts it if not. */
  static #adopt(op: string, device: Device, handle: bigint, size: number, localRanks: number, rank: number): NcclComm {
    try {
      const r = nr.commQuery(op, 'ncclCommUserRank', handle);
      const n = nr.commQuery(op, 'ncclCommCount', handle);
      const dev = nr.commQuery(op, 'ncclCommCuDevice', handle);
      if (r !== rank || n !== size || dev !== device.ordinal) {
        throw new NcclError({
          result: 3,
          operation: op,
          detail: `NCCL reports rank ${r} of ${n} on device ${dev}; expected rank ${rank} of ${size} on device ${device.ordinal}`,
        });
      }
    } catch (e) {
      nr.commAbort(op, handle);
      throw e;
    }
    return new NcclComm(INTERNAL, device, handle, rank, size, localRanks);
  }

  /** A new rendezvous id (`ncclGetUniqueId`); the same as `NcclUniqueId.create()`. */
  static uniqueId(): NcclUniqueId {
    return NcclUniqueId.create();
  }

  /** The `ncclComm_t` handle. @throws DisposedError after dispose. */
  get handle(): bigint {
    this[LIFETIME].assertAlive('NcclComm.handle');
    return this.#handle;
  }

  /** True after `dispose()` or `abort()`. */
  get disposed(): boolean {
    return this[LIFETIME].disposed;
  }

  /**
   * NCCL's asynchronous error state (`ncclCommGetAsyncError`): `'ncclSuccess'`, `'ncclInProgress'`,
   * or the error (`'ncclRemoteError'` when a peer died, …).
   */
  asyncError(): string {
    const op = 'NcclComm.asyncError';
    this[LIFETIME].assertAlive(op);
    return ncclResultName(nr.commAsyncError(op, this.#handle));
  }

  /** Reduces `count` elements across all ranks; every rank gets the result (`ncclAllReduce`). */
  allReduce(stream: Stream, options: AllReduceOptions): void {
    this.#collective('NcclComm.allReduce', 'allReduce', stream, options);
  }

  /** Copies the root's `count` elements to every rank (`ncclBroadcast`). */
  broadcast(stream: Stream, options: BroadcastOptions): void {
    this.#collective('NcclComm.broadcast', 'broadcast', stream, options);
  }

  /** Reduces `count` elements across all ranks into the root's `recv` (`ncclReduce`). */
  reduce(stream: Stream, options: ReduceOptions): void {
    this.#collective('NcclComm.reduce', 'reduce', stream, options);
  }

  /** Gathers every rank's `count` elements into every rank's `recv`, in rank order (`ncclAllGather`). */
  allGather(stream: Stream, options: AllGatherOptions): void {
    this.#collective('NcclComm.allGather', 'allGather', stream, options);
  }

  /** Reduces `size·count` elements across ranks and leaves block `rank` of the result on each (`ncclReduceScatter`). */
  reduceScatter(stream: Stream, options: ReduceScatterOptions): void {
    this.#collective('NcclComm.reduceScatter', 'reduceScatter', stream, options);
  }

  /**
   * Checks everything, then enqueues the collective on `stream`. Object rules: `stream` and the
   * buffers live on this communicator's device and are not disposed; a communicator whose other
   * ranks this process drives must be called inside a group; a capturing stream needs NCCL 2.9+.
   * @throws InvalidArgumentError (nothing enqueued) for any refused argument; DisposedError; NcclError from NCCL.
   */
  #collective(op: string, kind: CollectiveOp, stream: Stream, options: unknown): void {
    this.#prepare(op, kind, stream, options, ncclGroupDepth() > 0)();
  }

  /**
   * Every check of `#collective`, and nothing enqueued: returns the call that enqueues it. `grouped`
   * says whether it will be enqueued inside a group (a clique opens one for all its ranks).
   */
  #prepare(op: string, kind: CollectiveOp, stream: Stream, options: unknown, grouped: boolean): () => void {
    this[LIFETIME].assertAlive(op);
    assertInstance(op, 'stream', stream, brands.Stream);
    const h = stream.handleFor(op);
    if (stream.device !== this.device) {
      throw new InvalidArgumentError(
        op,
        'stream',
        `stream is on device ${stream.device.ordinal} but this communicator's rank ${this.rank} runs on device ${this.device.ordinal}`,
      );
    }
    if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options are required ({ send/recv, count, type, … })');
    const o = requireOptions<Record<string, unknown>>(op, options, COLLECTIVE_OPTIONS[kind]);
    const send = this.#buffer(op, 'send', o.send);
    const recv = this.#buffer(op, 'recv', o.recv);
    const version = ncclVersion(op);
    const c = checkCollective(op, {
      kind,
      rank: this.rank,
      size: this.size,
      version,
      count: o.count,
      type: o.type,
      op: o.op,
      root: o.root,
      send: { byteLength: send?.byteLength ?? null, offset: o.sendOffset },
      recv: { byteLength: recv?.byteLength ?? null, offset: o.recvOffset },
      sameBuffer: send === null || recv === null || send === recv,
    });
    if (this.localRanks > 1 && !grouped) {
      throw new InvalidArgumentError(
        op,
        'group',
        `this process drives ${this.localRanks} ranks of the communicator: issue their collectives inside one group ` +
          '(ncclGroup(() => …) or the NcclClique methods), or the first call could wait for ranks the thread never reaches',
      );
    }
    const sink = stream[CAPTURE];
    if (sink !== null && version < NCCL_MIN_CAPTURE_VERSION) {
      const v = decodeNcclVersion(version);
      throw new InvalidArgumentError(op, 'stream', `the stream is capturing, and NCCL ${v.major}.${v.minor}.${v.patch} cannot be captured (2.9 or newer can)`);
    }
    const sendBuf = send ?? recv!;
    const recvBuf = recv ?? send!;
    const sendPtr = sendBuf.ptrFor(op) + BigInt(c.sendOffset);
    const recvPtr = recvBuf.ptrFor(op) + BigInt(c.recvOffset);
    return () => {
      makeCurrent(op, this.device.context);
      nr.collective(op, {
        kind,
        send: sendPtr,
        recv: recvPtr,
        count: c.count,
        datatype: c.datatype,
        op: c.redOp,
        root: c.root,
        comm: this.#handle,
        stream: h,
      });
      if (ncclGroupDepth() === 0) restoreContext(op, this.device.context);
      if (sink !== null) {
        // The graph replays this collective later: it keeps the buffers and the communicator alive.
        sink.retain(sendBuf[LIFETIME]);
        sink.retain(recvBuf[LIFETIME]);
        sink.retain(this[LIFETIME]);
      }
    };
  }

  static {
    prepareCollective = (comm, op, kind, stream, options) => comm.#prepare(op, kind, stream, options, true);
  }

  #buffer(op: string, name: 'send' | 'recv', b: unknown): DeviceBuffer | null {
    if (b === undefined) return null;
    assertInstance(op, name, b, brands.DeviceBuffer);
    b.ptrFor(op); // DisposedError naming op
    if (b.device !== this.device) {
      throw new InvalidArgumentError(
        op,
        name,
        `${name} is on device ${b.device.ordinal} but this communicator's rank ${this.rank} runs on device ${this.device.ordinal}`,
      );
    }
    return b;
  }

  /**
   * Frees the communicator with `ncclCommAbort` (pending work is abandoned): the way out after an
   * error, a peer's death or a hang. Idempotent.
   * @throws InvalidArgumentError while a captured graph holds the communicator (dispose the graph
   *   first: NCCL would wait for it to be destroyed).
   */
  abort(): void {
    if (this[LIFETIME].disposed) return;
    if (this[LIFETIME].holders > 0) {
      throw new InvalidArgumentError(
        'NcclComm.abort',
        'this',
        `${this[LIFETIME].holders} captured graph(s) hold this communicator; dispose them first (NCCL waits for graphs that use a communicator before freeing it)`,
      );
    }
    this.#state.abort = true;
    this[LIFETIME].dispose();
  }

  /** Destroys the communicator (or lets the graphs holding it do so). Idempotent; never throws. */
  dispose(): void {
    this[LIFETIME].dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** `NcclComm(rank 0 of 2, device 0)`. */
  toString(): string {
    return `NcclComm(rank ${this.rank} of ${this.size}, device ${this.device.ordinal})`;
  }
}

/** Collective options per rank, for the clique methods. */
export type PerRank<T> = (rank: number, comm: NcclComm) => T;

/**
 * Every rank of one communicator, driven by this process (`NcclComm.initAll`). Its collective
 * methods issue the call on every rank inside one group, on `streams[rank]`.
 *
 * @example
 * using clique = NcclComm.initAll([0, 1]);
 * clique.allReduce(streams, (r) => ({ send: grads[r], count: n, type: 'f32', op: 'sum' }));
 */
export class NcclClique {
  /** The ranks, in rank order. */
  readonly comms: readonly NcclComm[];

  /** @internal Made by `NcclComm.initAll`. */
  constructor(key: typeof INTERNAL, comms: readonly NcclComm[]) {
    if (key !== INTERNAL) throw privateConstructorError('NcclClique', 'NcclComm.initAll()');
    this.comms = Object.freeze([...comms]);
  }

  /** Number of ranks. */
  get size(): number {
    return this.comms.length;
  }

  /** The devices, in rank order. */
  get devices(): Device[] {
    return this.comms.map((c) => c.device);
  }

  /** Rank `rank`'s communicator. @throws InvalidArgumentError out of range. */
  comm(rank: number): NcclComm {
    return this.comms[requireInt('NcclClique.comm', 'rank', rank, 0, this.comms.length - 1)]!;
  }

  /**
   * `allReduce` on every rank, in one group. All or nothing: every rank's call is checked before
   * the group opens, so a refused rank enqueues no rank's (the others would wait for it forever).
   * @throws as `NcclComm.allReduce`, naming this call and the rank (`NcclClique.allReduce: rank 1: …`).
   */
  allReduce(streams: readonly Stream[], options: PerRank<AllReduceOptions>): void {
    this.#each('NcclClique.allReduce', 'allReduce', streams, options);
  }

  /** `broadcast` on every rank, in one group; all or nothing, as `allReduce`. */
  broadcast(streams: readonly Stream[], options: PerRank<BroadcastOptions>): void {
    this.#each('NcclClique.broadcast', 'broadcast', streams, options);
  }

  /** `reduce` on every rank, in one group; all or nothing, as `allReduce`. */
  reduce(streams: readonly Stream[], options: PerRank<ReduceOptions>): void {
    this.#each('NcclClique.reduce', 'reduce', streams, options);
  }

  /** `allGather` on every rank, in one group; all or nothing, as `allReduce`. */
  allGather(streams: readonly Stream[], options: PerRank<AllGatherOptions>): void {
    this.#each('NcclClique.allGather', 'allGather', streams, options);
  }

  /** `reduceScatter` on every rank, in one group; all or nothing, as `allReduce`. */
  reduceScatter(streams: readonly Stream[], options: PerRank<ReduceScatterOptions>): void {
    this.#each('NcclClique.reduceScatter', 'reduceScatter', streams, options);
  }

  #each(op: string, kind: CollectiveOp, streams: readonly Stream[], options: unknown): void {
    if (!Array.isArray(streams) || streams.length !== this.comms.length) {
      throw new InvalidArgumentError(op, 'streams', `streams must be an array of ${this.comms.length} Streams (one per rank), got ${describe(streams)}`);
    }
    if (typeof options !== 'function') {
      throw new InvalidArgumentError(op, 'options', `options must be a function (rank, comm) => options, got ${describe(options)}`);
    }
    // Every rank's options are built (and can throw) and every rank's call checked before the
    // group opens: a rank refused inside it would leave the others' collectives enqueued alone.
    const per = this.comms.map((c) => (options as PerRank<unknown>)(c.rank, c));
    const calls = this.comms.map((c) => {
      try {
        return prepareCollective(c, op, kind, streams[c.rank]!, per[c.rank]);
      } catch (e) {
        throw atRank(e, op, c.rank);
      }
    });
    groupEach(() => {
      for (const call of calls) call();
    });
  }

  /** Destroys every rank (in rank order, as NVIDIA's examples do). Idempotent; never throws. */
  dispose(): void {
    for (const c of this.comms) c.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** `NcclClique(2 ranks: devices 0, 1)`. */
  toString(): string {
    return `NcclClique(${this.comms.length} ranks: devices ${this.comms.map((c) => c.device.ordinal).join(', ')})`;
  }
}

/** A refusal of rank `rank`'s call in the clique call `op`, reworded to say so (`NcclClique.allReduce: rank 1: …`). */
function atRank(e: unknown, op: string, rank: number): unknown {
  if (e instanceof DisposedError && e.message.startsWith(`${op}: `)) {
    const what = e.message.slice(op.length + 2).replace(/ has been disposed$/, '');
    return new DisposedError(op, `rank ${rank}: ${what}`);
  }
  return renamed(e, op, `rank ${rank}`);
}
