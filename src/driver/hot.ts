/**
 * The one home of the hot calls: the optional Node-API addon for the two hot driver calls
 * (`native/cudagraph_hot.c`) — the prepared kernel launch (`cuLaunchKernel` of a launch registered
 * once, by a small integer id; also a whole sequence of them in one call) and `cuGraphLaunch` — and
 * for the calls that build and update graphs node by node (`cuGraphAddKernelNode_v2`, one node or
 * a batch, `cuGraphExecKernelNodeSetParams_v2` and `cuGraphNodeSetEnabled`), and everything around it: loading the addon,
 * its mailbox, binding the driver functions into it, and the koffi fallback. koffi stays the
 * binding for everything else, and for these calls too where the addon is absent:
 * docs/ffi-decision.md has the measurements. The result layer's launch objects
 * (`result/launch.ts`, `result/graph.ts`) are built on the few functions at the end of this file.
 *
 * The addon ships prebuilt (`native/prebuilt/<platform>-<arch>/cudagraph_hot.node`, built by
 * scripts/build-native.sh): npm runs no install scripts and users need no compiler. It is loaded on
 * first use, only where a prebuilt file exists for this platform and architecture; when it is
 * missing, fails to load or has another ABI version, cudagraph uses koffi, silently.
 * `CUDAGRAPH_NATIVE=0` forces koffi (to compare the two paths, and for tests).
 *
 * The addon does not link libcuda: the driver functions are bound into it with the addresses that
 * the loader's library resolved (`bind` below), so lazy symbols and the no-driver behaviour are
 * unchanged.
 */
import type { Environment } from '../util/environment.js';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { driverSymbol, symbolAddress, onLibrariesReset, type DriverApi } from './sys.js';

/** The ABI version this code speaks; the addon reports its own as `abi`. */
export const NATIVE_ABI = 7;

/** The driver functions the addon calls. */
export type HotSymbol =
  | 'cuLaunchKernel'
  | 'cuGraphLaunch'
  | 'cuGraphAddKernelNode_v2'
  | 'cuGraphExecKernelNodeSetParams_v2'
  | 'cuGraphNodeSetEnabled'
  | 'cuEventQuery'
  | 'cuStreamQuery'
  | 'cuEventRecord'
  | 'cuCtxSetCurrent';

/**
 * A kernel launch's shape in `cuLaunchKernel`'s argument order: function, grid x/y/z, block x/y/z,
 * dynamic shared memory. Named once, so the addon's calls and the checked wrapper cannot disagree.
 */
export type LaunchShape = [
  fn: bigint,
  gridX: number,
  gridY: number,
  gridZ: number,
  blockX: number,
  blockY: number,
  blockZ: number,
  sharedMem: number,
];

/**
 * The addon's functions (the C file documents each). Results are CUresult values (0 = success),
 * or the addon's own negative codes `NOT_BOUND` (bind the driver function, then call again) and
 * `BAD_ID` (no launch registered under that id).
 */
export interface HotAddon {
  readonly abi: number;
  readonly NOT_BOUND: number;
  readonly BAD_ID: number;
  /** `cuLaunchKernel` of registered launch `id` on `stream`. */
  launch(id: number, stream: bigint): number;
  /** `cuLaunchKernel` with every argument given (one-off launches). */
  launchKernel(...call: [...LaunchShape, stream: bigint, params: bigint]): number;
  /**
   * `cuLaunchKernel` of registered launch `ids[i]` on `streams[i]` for every i in order, stopping
   * at the first failure: returns 0 when all were submitted, else that call's CUresult, with
   * `done[0]` the number submitted. `NOT_BOUND` and `BAD_ID` come before any launch (`done[0]` 0).
   */
  launchSequence(ids: Uint32Array, streams: BigUint64Array, done: Uint32Array): number;
  /** `cuGraphLaunch(exec, stream)`. */
  graphLaunch(exec: bigint, stream: bigint): number;
  /**
   * This environment's mailbox (64 bytes, the same buffer on every call; layout in `Mailbox`):
   * the per-call hot functions below read their arguments from it and write their result into it.
   */
  mailbox(): ArrayBuffer;
  /** `launch(mailbox id, mailbox stream)`, the result written to the mailbox. */
  launchFromMailbox(): void;
  /** `graphLaunch(mailbox exec, mailbox stream)`, the result written to the mailbox. */
  graphLaunchFromMailbox(): void;
  /**
   * `cuGraphAddKernelNode_v2(&node, graph, deps, count, params)` from the mailbox (`GRAPH`, `DEPS`:
   * the address of `COUNT` handles, `PARAMS`: the address of the node's parameters), the result and
   * the node (`NODE`, 0 on a failure) written to it.
   */
  addKernelNodeFromMailbox(): void;
  /** `cuGraphExecKernelNodeSetParams_v2(exec, node, params)` from the mailbox (`EXEC`, `NODE`, `PARAMS`), the result written to it. */
  execKernelParamsFromMailbox(): void;
  /** `cuGraphNodeSetEnabled(exec, node, enabled)` from the mailbox (`EXEC`, `NODE`, `COUNT`: 1 on, 0 off), the result written to it. */
  nodeSetEnabledFromMailbox(): void;
  /**
   * `cuGraphAddKernelNode_v2(&out[i], graph, deps, blocks + 72 * blockOf[i])` for every i in order,
   * stopping at the first failure: returns 0 when all were added, else that call's CUresult, with
   * `done[0]` the number added. Node i's dependencies are entries `depStart[i]` to
   * `depStart[i + 1] - 1`: `out[depIndex[k]]` (a node of this batch) where `depIndex[k] >= 0`, else
   * `depHandle[k]`. `NOT_BOUND`, and `BAD_ID` for arrays that do not describe a batch, come first.
   */
  addKernelNodes(
    graph: bigint,
    blocks: Uint8Array,
    blockOf: Uint32Array,
    depStart: Uint32Array,
    depIndex: Int32Array,
    depHandle: BigUint64Array,
    out: BigUint64Array,
    done: Uint32Array,
  ): number;
  /** Keeps a launch (the argument block at `params` must stay put until release); returns its id. */
  register(...launch: [...LaunchShape, params: bigint]): number;
  /** Forgets launch `id`; false when none was registered under it. */
  release(id: number): boolean;
  /** How many launches are registered. */
  registered(): number;
  /** Sets the address of driver function `name` (0n unbinds); false for an unknown name. */
  bind(name: HotSymbol, address: bigint): boolean;
  /**
   * Starts this environment's completion thread (once; a second call throws): it polls the events
   * of the waits handed over by `waitEvent` and calls `onComplete([id, CUresult, …])` with those
   * that ended, in batches, waking the event loop. It polls without sleeping for `spinNs` after the last activity, then
   * sleeps a sixteenth of the idle time between polls, at most `maxSleepNs`.
   */
  waiterStart(onComplete: (done: number[]) => void, spinNs: number, maxSleepNs: number): void;
  /**
   * Records `event` on `stream` (unless `stream` is 0n), then hands the wait for it to the
   * completion thread, which reports `id`. Returns 0, the record's CUresult, or `NOT_BOUND`.
   */
  waitEvent(id: number, ctx: bigint, event: bigint, stream: bigint): number;
  /**
   * Hands a wait for all of `stream`'s work to the completion thread (polled with cuStreamQuery:
   * enqueues nothing). Returns 0 or `NOT_BOUND`.
   */
  waitStream(id: number, ctx: bigint, stream: bigint): number;
  /** `cuEventRecord(event, stream)`: its CUresult, or `NOT_BOUND`. */
  eventRecord(event: bigint, stream: bigint): number;
  /** `cuEventQuery(event)`: its CUresult (600 while not ready), or `NOT_BOUND`. */
  eventQuery(event: bigint): number;
  /** Waits handed over and not reported yet. */
  waitsPending(): number;
}

/**
 * Typed views of an addon's mailbox, the buffer through which the per-call hot functions take
 * their arguments and give their result: passing them as Node-API arguments costs about 5–7 ns
 * each, and the result as many again, against about 1 ns for a typed-array store or load
 * (docs/ffi-decision.md, "mailbox"). Write the inputs, call, read `i32[RESULT]`.
 */
export interface Mailbox {
  /**
   * Index `ID` (u32): the registered launch. Index `RESULT` (i32, read as i32): the last result.
   * Index `COUNT` (u32): how many dependencies `DEPS` points at (or the flag of `nodeSetEnabledFromMailbox`). `NODE_LO`, `NODE_HI`: the halves of `NODE`.
   */
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  /**
   * Index `STREAM` (u64): the stream. `EXEC`: the executable graph. `GRAPH`: the graph a node is
   * added to. `PARAMS`, `DEPS`: addresses of a kernel node's parameters and dependencies. `NODE`:
   * the node added, or the exec's node to update.
   */
  readonly u64: BigUint64Array;
}

/** Slots of the mailbox, by view (must match `mailbox_layout` in native/cudagraph_hot.c). */
export const MAILBOX = { ID: 0, RESULT: 1, STREAM: 1, EXEC: 2, GRAPH: 3, PARAMS: 4, DEPS: 5, COUNT: 12, NODE: 7, NODE_LO: 14, NODE_HI: 15 } as const;

const mailboxes = new WeakMap<HotAddon, Mailbox>();
/** The last addon asked for and its mailbox: the hot paths ask every call, and it is almost always the same addon. */
let lastAddon: HotAddon | null = null;
let lastMailbox: Mailbox | null = null;

/** The typed views of `hot`'s mailbox (made once per addon object: the one mailbox cache). */
export function mailboxOf(hot: HotAddon): Mailbox {
  if (hot === lastAddon) return lastMailbox!;
  let m = mailboxes.get(hot);
  if (m === undefined) {
    const buffer = hot.mailbox();
    m = { u32: new Uint32Array(buffer), i32: new Int32Array(buffer), u64: new BigUint64Array(buffer) };
    mailboxes.set(hot, m);
  }
  lastAddon = hot;
  lastMailbox = m;
  return m;
}

/** Whether the addon is in use, where it was loaded from, and why not when it is not. */
export interface NativeStatus {
  /** True when the hot calls go through the addon. */
  readonly active: boolean;
  /** The addon file tried (null when none was tried). */
  readonly path: string | null;
  /** A short reason: `loaded`, `CUDAGRAPH_NATIVE=0`, `no prebuilt addon for darwin-arm64`, the load error. */
  readonly reason: string;
}

/** Where the prebuilt addon of `platform`-`arch` lives in the package (whether or not it exists). */
export function prebuiltAddonPath(platform: string = process.platform, arch: string = process.arch): string {
  // This file is dist/src/driver/hot.js; the package root is three folders up.
  return fileURLToPath(new URL(`../../../native/prebuilt/${platform}-${arch}/cudagraph_hot.node`, import.meta.url));
}

/**
 * Loads the addon as the environment says. Never throws: any failure gives `addon: null` and the
 * reason. `path` overrides the prebuilt file (tests).
 */
export function loadNativeAddon(
  env: Environment = process.env,
  platform: string = process.platform,
  arch: string = process.arch,
  path: string = prebuiltAddonPath(platform, arch),
): { addon: HotAddon | null; status: NativeStatus } {
  const off = (reason: string, tried: string | null = null) => ({ addon: null, status: { active: false, path: tried, reason } });
  const flag = env['CUDAGRAPH_NATIVE'];
  if (flag !== undefined && /^(0|false|off|no)$/i.test(flag.trim())) return off(`CUDAGRAPH_NATIVE=${flag}`);
  if (!existsSync(path)) return off(`no prebuilt addon for ${platform}-${arch}`, path);
  try {
    const addon = createRequire(import.meta.url)(path) as HotAddon;
    if (addon.abi !== NATIVE_ABI) return off(`the addon's ABI is ${String(addon.abi)}, expected ${NATIVE_ABI}`, path);
    return { addon, status: { active: true, path, reason: 'loaded' } };
  } catch (e) {
    return off(e instanceof Error ? e.message.split('\n')[0]! : String(e), path);
  }
}

let addon: HotAddon | null | undefined;
let status: NativeStatus | undefined;

/** The addon when the hot calls use it, else null (decided on first call, then fixed). */
export function nativeAddon(): HotAddon | null {
  if (addon !== undefined) return addon;
  const loaded = loadNativeAddon();
  status = loaded.status;
  return (addon = loaded.addon);
}

/**
 * Whether the hot calls (`PreparedLaunch.launch`, `LaunchSequence.launch`, `kernel.launch`,
 * `GraphExec.launch`) go through the Node-API addon or koffi, and why. Loads the addon on first call; never throws.
 */
export function nativeStatus(): NativeStatus {
  nativeAddon();
  return status!;
}

/**
 * Test and benchmark hook: use `next` for launches prepared from now on and for graph launches
 * (null: koffi; undefined: decide again from the environment). Returns the addon in use before.
 * @internal
 */
export function setNativeAddonForTesting(next: HotAddon | null | undefined): HotAddon | null {
  const before = nativeAddon();
  addon = next;
  status = next === undefined ? undefined : next === null ? { active: false, path: null, reason: 'set by a test' } : { active: true, path: null, reason: 'set by a test' };
  return before;
}

/** Driver functions bound into the addon from the loaded library: true bound, false no address. */
const bindings = new Map<HotSymbol, boolean>();

onLibrariesReset(() => {
  // The addresses bound into the addon belong to the library just forgotten.
  const hot = addon ?? null;
  for (const name of bindings.keys()) hot?.bind(name, 0n);
  bindings.clear();
  koffiKernel = null;
  koffiGraph = null;
});

/**
 * Binds driver function `name` into `hot` with the address the loaded library resolved (the same
 * function koffi calls). Returns false when the library gives no address (koffi must make the
 * call); the outcome is remembered.
 * @throws CudaError 3 when no driver library loads; CudaError 801 when this driver lacks `name`.
 */
export function bindNativeSymbol(op: string, hot: HotAddon, name: HotSymbol): boolean {
  const known = bindings.get(name);
  if (known !== undefined) return known;
  const address = symbolAddress(op, name);
  const bound = address !== null && hot.bind(name, address);
  bindings.set(name, bound);
  return bound;
}

/**
 * Settles a hot call the addon answered with `rc`: when it is `NOT_BOUND` (the driver function is
 * not bound yet), binds it and makes the call `again`; where the library gives no address, makes
 * it through `koffi`. Returns the CUresult that stands. The one bind-and-retry of every hot call
 * (the closures are made only on this slow path, the first call of each kind).
 */
export function settle(op: string, hot: HotAddon, name: HotSymbol, rc: number, again: () => number, koffi: () => number): number {
  if (rc !== hot.NOT_BOUND) return rc;
  if (bindNativeSymbol(op, hot, name)) {
    rc = again();
    if (rc !== hot.NOT_BOUND) return rc;
  }
  return koffi();
}

/**
 * `settle` of a mailbox call that did not succeed: `call` makes it again (its result is read from
 * the mailbox). Returns the CUresult that stands.
 */
export function settleMailbox(op: string, hot: HotAddon, name: HotSymbol, call: () => void, koffi: () => number): number {
  const box = mailboxOf(hot);
  const again = (): number => {
    call();
    return box.i32[MAILBOX.RESULT]!;
  };
  return settle(op, hot, name, box.i32[MAILBOX.RESULT]!, again, koffi);
}

let koffiKernel: DriverApi['cuLaunchKernel'] | null = null;
let koffiGraph: DriverApi['cuGraphLaunch'] | null = null;

/** koffi's `cuLaunchKernel`, resolved once (the fallback where the addon is absent or unbound). */
export function koffiLaunchKernel(op: string): DriverApi['cuLaunchKernel'] {
  return (koffiKernel ??= driverSymbol(op, 'cuLaunchKernel'));
}

/** koffi's `cuGraphLaunch`, resolved once (the fallback where the addon is absent or unbound). */
export function koffiGraphLaunch(op: string): DriverApi['cuGraphLaunch'] {
  return (koffiGraph ??= driverSymbol(op, 'cuGraphLaunch'));
}
