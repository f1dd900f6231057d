/**
 * Which device's primary context is current on the JS thread. Calls that need a current context
 * go through `makeCurrent`, which costs a compare when the device is already current, so the
 * launch path pays nothing in the usual one-device program.
 *
 * The contract (docs/driver.md, "The current context"): cudagraph remembers the context it last
 * made current (once per process, shared by every loaded copy of cudagraph) and trusts that no
 * other code changes the JS thread's current context between its calls, or that code which does
 * (another addon, a user's own FFI) restores it before calling cudagraph again. Programs that
 * cannot promise it choose another check with `setContextCheck` or `CUDAGRAPH_CONTEXT_CHECK`:
 * - `'trust'` (default): the mirror is trusted; a `cuCtxSetCurrent` only when it names another context.
 * - `'verify'`: every call that needs a context asks the driver (`cuCtxGetCurrent`) and makes the
 *   right one current when it differs: correct next to any other code, for a driver call each time.
 * - `'strict'`: like `'verify'`, but a context changed behind cudagraph's back is reported: the
 *   call throws `CudaError` 201 `CUDA_ERROR_INVALID_CONTEXT` naming both contexts (for finding the
 *   code that breaks the contract).
 */
import { CudaError } from '../../errors/cuda-error.js';
import { requireOneOf } from '../../util/validate.js';
import { device as dev, processState } from '../../driver/result/index.js';

/** How cudagraph makes sure the right context is current (see the file comment). */
export type ContextCheck = 'trust' | 'verify' | 'strict';

const CHECKS: readonly ContextCheck[] = ['trust', 'verify', 'strict'];

/** The context cudagraph last made current on this thread (any copy of it), or null. */
const mirror = processState.context;

function fromEnvironment(): ContextCheck {
  const v = process.env.CUDAGRAPH_CONTEXT_CHECK;
  if (v === undefined || v === '') return 'trust';
  if ((CHECKS as readonly string[]).includes(v)) return v as ContextCheck;
  process.emitWarning(`cudagraph: CUDAGRAPH_CONTEXT_CHECK=${JSON.stringify(v)} is not one of ${CHECKS.join(', ')}; using 'trust'`, {
    code: 'CUDAGRAPH_CONTEXT_CHECK',
  });
  return 'trust';
}

let check: ContextCheck = fromEnvironment();
/** True in `'trust'` mode: the hot path may skip the driver when the mirror names `ctx`. */
let trusting = check === 'trust';

/** Makes `ctx` current unless it already is. */
export function makeCurrent(op: string, ctx: bigint): void {
  if (trusting && mirror.current === ctx) return;
  switchContext(op, ctx);
}

function switchContext(op: string, ctx: bigint): void {
  if (trusting) {
    dev.ctxSetCurrent(op, ctx);
    mirror.current = ctx;
    return;
  }
  const actual = dev.ctxGetCurrent(op);
  const expected = mirror.current;
  if (check === 'strict' && expected !== null && actual !== expected) {
    const found = actual === 0n ? 'no context' : `context 0x${actual.toString(16)}`;
    // The mirror no longer says what is current: whatever happens next, it must not be trusted.
    mirror.current = null;
    throw new CudaError({
      code: 201,
      operation: op,
      driverCall: 'cuCtxGetCurrent',
      detail:
        `the JS thread's current CUDA context was changed outside cudagraph: cudagraph made context ` +
        `0x${expected.toString(16)} current, the driver now has ${found}. Code that switches contexts must restore the ` +
        `previous one before calling cudagraph (or run with setContextCheck('verify')).`,
      details: { found: actual === 0n ? null : `0x${actual.toString(16)}` },
    });
  }
  if (actual !== ctx) dev.ctxSetCurrent(op, ctx);
  mirror.current = ctx;
}

/**
 * Chooses how cudagraph makes sure the right CUDA context is current before a driver call:
 * `'trust'` (the default: it remembers the context it made current and assumes no other code
 * changes it on the JS thread), `'verify'` (it asks the driver every time and fixes what differs)
 * or `'strict'` (it asks every time and throws `CudaError` 201 when other code changed it).
 * The environment variable `CUDAGRAPH_CONTEXT_CHECK` sets the starting mode.
 * @throws InvalidArgumentError for another value.
 */
export function setContextCheck(mode: ContextCheck): void {
  check = requireOneOf('setContextCheck', 'mode', mode, CHECKS);
  trusting = check === 'trust';
}

/** The current context check (`setContextCheck`). */
export function getContextCheck(): ContextCheck {
  return check;
}

/**
 * @internal For `cudagraph doctor` and tests: the context cudagraph believes current and the one
 * the driver reports (`cuCtxGetCurrent`); `ok` when they agree or cudagraph has made none current.
 */
export function contextReport(op: string): { expected: bigint | null; actual: bigint; ok: boolean } {
  const actual = dev.ctxGetCurrent(op);
  const expected = mirror.current;
  return { expected, actual, ok: expected === null || expected === actual };
}

/**
 * @internal Code inside cudagraph that switched contexts without `makeCurrent` (NCCL calls that
 * change devices) says so: the mirror no longer knows what is current.
 */
export function forgetCurrentContext(): void {
  mirror.current = null;
}
