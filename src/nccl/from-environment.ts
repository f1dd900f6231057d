import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt, requireOptions } from '../util/validate.js';
import type { Device } from '../cuda/device/device.js';
import { NCCL_UNIQUE_ID_BYTES } from './codes.js';
import { NcclComm, requireDevice } from './comm.js';
import { readLaunchEnvironment, type EnvironmentVariables, type LaunchEnvironment } from './launch-environment.js';
import { RendezvousError } from './rendezvous-error.js';
import { checkOptions, rendezvousAs, type AbortSignalLike } from './rendezvous.js';
import { NcclUniqueId } from './unique-id.js';
import { ncclVersion } from './version.js';

/** Options of `initNcclFromEnvironment`. */
export interface InitNcclFromEnvironmentOptions {
  /** Where the launcher's variables are read (default `process.env`). */
  readonly env?: EnvironmentVariables;
  /** The device this rank runs on (a Device or an ordinal). Default: `LOCAL_RANK`. */
  readonly device?: Device | number;
  /** How long the rendezvous waits for the whole group, in milliseconds (default 300,000). */
  readonly timeoutMs?: number;
  /** Gives up the rendezvous when it fires (`ERR_RENDEZVOUS_ABORTED`). */
  readonly signal?: AbortSignalLike;
  /** Rank 0 only: the address its rendezvous server listens on (default: every interface). */
  readonly listenHost?: string;
  /**
   * The rendezvous port, the same on every rank. Default: `MASTER_PORT`, or `MASTER_PORT + 1`
   * when torchrun's agent serves its own store on `MASTER_PORT` (`TORCHELASTIC_USE_AGENT_STORE=True`).
   */
  readonly port?: number;
}

/**
 * @internal The steps of `initNcclFromEnvironment` that touch CUDA and NCCL, apart so the
 * environment and the rendezvous around them can be run without a GPU. `prepare` runs first on
 * every rank (a rank that cannot load NCCL or lacks its device fails before it joins, and rank 0's
 * timeout names it), `createId` on rank 0 only, `initRank` last, once every rank holds the id.
 */
export interface JoinSteps<D, T> {
  prepare(op: string, device: Device | number): D;
  createId(op: string): Uint8Array;
  initRank(op: string, device: D, init: { readonly id: Uint8Array; readonly rank: number; readonly size: number }): T;
  /** Bytes the id must have (the payload of every rank is checked against it). */
  readonly idBytes: number;
}

/** The real steps: the CUDA device, `ncclGetUniqueId`, `ncclCommInitRank` through `NcclComm.initRank`. */
const NCCL_STEPS: JoinSteps<Device, NcclComm> = {
  prepare(op, device) {
    const d = requireDevice(op, device);
    ncclVersion(op); // loads NCCL now: NCCL_NOT_LOADED here, before this rank joins the group
    return d;
  },
  createId: () => NcclUniqueId.create().toBytes(),
  initRank: (_op, device, init) => NcclComm.initRank(device, init),
  idBytes: NCCL_UNIQUE_ID_BYTES,
};

const KEYS = ['env', 'device', 'timeoutMs', 'signal', 'listenHost', 'port'];

/**
 * This process's rank of a communicator over every process of a job started by torchrun (or any
 * launcher that sets `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`), on one host
 * or many: it parses the environment (`parseLaunchEnvironment`), picks the device `LOCAL_RANK`
 * (or `device`), makes the unique id on rank 0 (`ncclGetUniqueId`), hands it to every rank over
 * `tcpRendezvous` at `MASTER_ADDR:MASTER_PORT` (the next port when torchrun's agent holds that
 * one, or the `port` option), and joins with `NcclComm.initRank`. It resolves
 * when every rank has joined; `ncclCommInitRank` itself blocks the JS thread meanwhile, as
 * `initRank` does.
 *
 * @example
 * // torchrun --nnodes 2 --nproc-per-node 8 --rdzv-endpoint node0:29500 … node train.js
 * using comm = await initNcclFromEnvironment({ timeoutMs: 60_000 });
 * comm.allReduce(stream, { send: grads, count: n, type: 'f32', op: 'sum' });
 * @throws LaunchEnvironmentError for a missing or malformed variable (before any socket or NCCL
 *   call); InvalidArgumentError for a bad option; RendezvousError when the group does not form
 *   (which ranks are missing, which address was unreachable, a world size mismatch, …); NcclError
 *   from NCCL (`NCCL_NOT_LOADED` before joining; `ncclCommInitRank`'s own errors after).
 */
export function initNcclFromEnvironment(options?: InitNcclFromEnvironmentOptions): Promise<NcclComm> {
  return joinFromEnvironment('initNcclFromEnvironment', options, NCCL_STEPS);
}

/**
 * @internal `initNcclFromEnvironment` over any steps. Resolves to what `initRank` returns, and
 * reports the launch environment it read through `onLaunch` (tests).
 */
export async function joinFromEnvironment<D, T>(
  op: string,
  options: unknown,
  steps: JoinSteps<D, T>,
  hooks: { onLaunch?: (launch: LaunchEnvironment) => void; onListening?: (address: { host: string; port: number }) => void } = {},
): Promise<T> {
  const o = requireOptions<InitNcclFromEnvironmentOptions>(op, options, KEYS);
  const launch = readLaunchEnvironment(op, o.env ?? process.env);
  const device = o.device ?? launch.localRank;
  if (typeof device !== 'number' && (typeof device !== 'object' || device === null)) {
    throw new InvalidArgumentError(op, 'device', `device must be a Device or an ordinal, got ${describe(device)}`);
  }
  const port = o.port !== undefined ? requireInt(op, 'port', o.port, 1, 65535) : launch.agentStore ? launch.masterPort + 1 : launch.masterPort;
  if (port > 65535) {
    throw new InvalidArgumentError(op, 'port', `torchrun's agent holds MASTER_PORT 65535 (TORCHELASTIC_USE_AGENT_STORE=True) and the next port does not exist: give the rendezvous a port (option port)`);
  }
  // Every option of the rendezvous checked before anything is opened, the payload aside (made below).
  const rdzv = {
    rank: launch.rank,
    worldSize: launch.worldSize,
    addr: launch.masterAddr,
    port,
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.signal !== undefined ? { signal: o.signal } : {}),
    ...(o.listenHost !== undefined ? { listenHost: o.listenHost } : {}),
    ...(hooks.onListening !== undefined ? { onListening: hooks.onListening } : {}),
  };
  checkOptions(op, { ...rdzv, ...(launch.rank === 0 ? { payload: new Uint8Array(0) } : {}) });
  hooks.onLaunch?.(launch);
  const d = steps.prepare(op, device);
  const payload = launch.rank === 0 ? steps.createId(op) : undefined;
  const { payload: id } = await rendezvousAs(op, { ...rdzv, ...(payload !== undefined ? { payload } : {}) });
  if (id.length !== steps.idBytes) {
    throw new RendezvousError(op, 'ERR_RENDEZVOUS_PROTOCOL', `rank 0 handed out ${id.length} bytes; the id is ${steps.idBytes} bytes (is rank 0 another program?)`, {
      rank: launch.rank,
      worldSize: launch.worldSize,
    });
  }
  return steps.initRank(op, d, { id, rank: launch.rank, size: launch.worldSize });
}
