/**
 * Kernel launch (`cuLaunchKernel`): the hot path. The caller passes an argument block it packed
 * once (an array of pointers to argument slots). The call goes through the Node-API addon when it
 * is loaded (`../native.ts`), else through koffi; both give the same results and the same errors.
 */
import { driverSymbol, bindNativeSymbol, onLibrariesReset, type DriverApi } from '../sys.js';
import { nativeAddon, type HotAddon } from '../native.js';
import { cudaError } from '../check.js';

let cuLaunchKernel: DriverApi['cuLaunchKernel'] | null = null;
onLibrariesReset(() => (cuLaunchKernel = null));

/** `cuLaunchKernel` through koffi; returns the CUresult. */
function koffiLaunch(
  op: string,
  fn: bigint,
  gridX: number,
  gridY: number,
  gridZ: number,
  blockX: number,
  blockY: number,
  blockZ: number,
  sharedMem: number,
  stream: bigint,
  params: bigint,
): number {
  return (cuLaunchKernel ??= driverSymbol(op, 'cuLaunchKernel'))(
    fn,
    gridX,
    gridY,
    gridZ,
    blockX,
    blockY,
    blockZ,
    sharedMem,
    stream,
    params,
    null,
  );
}

/** Launches `fn` on `stream` with the packed parameter array at address `params` (one-off launches). */
export function launchKernel(
  op: string,
  fn: bigint,
  gridX: number,
  gridY: number,
  gridZ: number,
  blockX: number,
  blockY: number,
  blockZ: number,
  sharedMem: number,
  stream: bigint,
  params: bigint,
): void {
  const hot = nativeAddon();
  let rc = -1;
  if (hot !== null) {
    rc = hot.launchKernel(fn, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMem, stream, params);
    if (rc === hot.NOT_BOUND && bindNativeSymbol(op, hot, 'cuLaunchKernel')) {
      rc = hot.launchKernel(fn, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMem, stream, params);
    }
  }
  if (hot === null || rc === hot.NOT_BOUND) {
    rc = koffiLaunch(op, fn, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMem, stream, params);
  }
  if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
}

/**
 * A kernel launch whose function, shape and argument block are fixed: `launch(op, stream)` is one
 * `cuLaunchKernel`. Made by `prepareLaunch`; `release()` once the argument block is freed.
 */
export interface KernelCall {
  /** Launches on `stream`. @throws CudaError when the driver refuses the launch. */
  launch(op: string, stream: bigint): void;
  /** Forgets the launch (idempotent); `launch` must not be called afterwards. */
  release(): void;
}

/** The koffi form: the arguments are kept in JS and passed on every call. */
class KoffiKernelCall implements KernelCall {
  constructor(
    private readonly fn: bigint,
    private readonly grid: readonly [number, number, number],
    private readonly block: readonly [number, number, number],
    private readonly sharedMem: number,
    private readonly params: bigint,
  ) {}

  launch(op: string, stream: bigint): void {
    const g = this.grid;
    const b = this.block;
    const rc = koffiLaunch(op, this.fn, g[0], g[1], g[2], b[0], b[1], b[2], this.sharedMem, stream, this.params);
    if (rc !== 0) throw cudaError(rc, op, 'cuLaunchKernel');
  }

  release(): void {}
}

/**
 * The addon form: the launch is registered in the addon once, and a call passes its id and the
 * stream (registering saves about 50 ns a call over passing the ten arguments; docs/ffi-decision.md).
 */
class NativeKernelCall implements KernelCall {
  #id: number;

  constructor(
    private readonly hot: HotAddon,
    private readonly fallback: KoffiKernelCall,
    fn: bigint,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedMem: number,
    params: bigint,
  ) {
    this.#id = hot.register(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMem, params);
  }

  launch(op: string, stream: bigint): void {
    const rc = this.hot.launch(this.#id, stream);
    if (rc !== 0) this.#failed(op, stream, rc);
  }

  /** Not a success: bind the driver function on first use (koffi where it cannot be), else throw. */
  #failed(op: string, stream: bigint, rc: number): void {
    const hot = this.hot;
    if (rc === hot.NOT_BOUND) {
      if (bindNativeSymbol(op, hot, 'cuLaunchKernel')) rc = hot.launch(this.#id, stream);
      if (rc === hot.NOT_BOUND) {
        this.fallback.launch(op, stream);
        return;
      }
      if (rc === 0) return;
    }
    if (rc === hot.BAD_ID) throw new Error(`${op}: internal error: launch ${this.#id} is not registered in the native addon`);
    throw cudaError(rc, op, 'cuLaunchKernel');
  }

  release(): void {
    if (this.#id < 0) return;
    this.hot.release(this.#id);
    this.#id = -1;
  }
}

/**
 * Fixes a launch of `fn` with the argument block at `params` (0n: no arguments), which must stay
 * valid until `release()`. Touches no driver: the driver function is resolved on the first launch,
 * as on every other call.
 */
export function prepareLaunch(
  fn: bigint,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  sharedMem: number,
  params: bigint,
): KernelCall {
  const koffiCall = new KoffiKernelCall(fn, grid, block, sharedMem, params);
  const hot = nativeAddon();
  return hot === null ? koffiCall : new NativeKernelCall(hot, koffiCall, fn, grid, block, sharedMem, params);
}
