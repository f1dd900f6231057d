/**
 * The one options shape of the capture entry points that run a body (`captureGraph`,
 * `GraphCaptureGuard.capture`, `makeGraphed`), and its one check. The entry points that begin a
 * capture the caller ends (`StreamGraphCapture.begin`, `GraphCaptureGuard.begin`/`beginWithMode`/
 * `beginWithPool`) keep the seeds' positional signatures and share the rest of the implementation.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, isAsyncFunction, requireInstance, requireOptions } from '../../util/validate.js';
import type { Stream } from '../device/stream.js';
import type { CapturePool } from '../pool/capture-pool.js';
import { checkInstantiateFlags, type InstantiateFlags } from '../graph/instantiate-flags.js';
import { DEFAULT_CAPTURE_MODE, requireCaptureMode, type CaptureMode } from './capture-mode.js';
import { brands } from '../core/brands.js';

/** Options of `captureGraph`, `GraphCaptureGuard.capture` and `makeGraphed`. */
export interface CaptureOptions {
  /** The capture mode. Default `'threadLocal'` (`DEFAULT_CAPTURE_MODE`). */
  readonly mode?: CaptureMode;
  /** Take `DeviceBuffer.allocAsync` memory from this pool, and attach it to the graph. */
  readonly pool?: CapturePool;
  /** How the graph is instantiated. */
  readonly flags?: InstantiateFlags;
}

/** `CaptureOptions` checked, with the defaults filled in. */
export interface CheckedCaptureOptions {
  readonly mode: CaptureMode;
  readonly pool: CapturePool | null;
  readonly flags: InstantiateFlags | undefined;
}

/** A function recorded into a graph: it submits work to `stream` and returns nothing (never a Promise). */
export type CaptureBody = (stream: Stream) => void;

/**
 * `unknown` for a result that is not a Promise (or other thenable), `never` for one that is: the
 * capture entry points take `fn: (stream) => R & NotAPromise<R>`, so an `async` body is refused by
 * the type checker, before the run-time check refuses it for plain JavaScript.
 */
export type NotAPromise<R> = R extends PromiseLike<unknown> ? never : unknown;

/** Why a capture body must be synchronous (the message of both refusals; docs/guard.md says more). */
export const ASYNC_CAPTURE_RULE =
  'a capture must be synchronous. While an await waits, other code on this thread (timers, I/O callbacks, ' +
  'other requests) runs, and what it submits to the stream is recorded into the graph or invalidates the ' +
  'capture; and the capture would end before the code after the await runs. Do the awaiting (loading data, ' +
  'reading inputs) before the capture, capture a synchronous function, and await the graph launches afterwards';


/** @throws InvalidArgumentError unless `fn` is a synchronous function. */
export function checkCaptureBody(op: string, fn: unknown): CaptureBody {
  if (typeof fn !== 'function') throw new InvalidArgumentError(op, 'fn', `fn must be a function, got ${describe(fn)}`);
  if (isAsyncFunction(fn)) throw new InvalidArgumentError(op, 'fn', `fn is an async function: ${ASYNC_CAPTURE_RULE}`);
  return fn as CaptureBody;
}

/**
 * Checks `options` (`CaptureOptions`, plus the caller's own keys in `more`, returned untouched in
 * `extra`), before anything starts.
 * @throws InvalidArgumentError naming `op` for an unknown key, a bad mode, pool or flags.
 */
export function checkCaptureOptions(op: string, options: unknown, more: readonly string[] = []): CheckedCaptureOptions & { readonly extra: Readonly<Record<string, unknown>> } {
  const o = requireOptions<CaptureOptions & Record<string, unknown>>(op, options, ['mode', 'pool', 'flags', ...more]);
  const mode = o.mode === undefined ? DEFAULT_CAPTURE_MODE : requireCaptureMode(op, o.mode);
  const pool = o.pool === undefined ? null : requireInstance(op, 'pool', o.pool, brands.CapturePool);
  checkInstantiateFlags(op, o.flags);
  const extra: Record<string, unknown> = {};
  for (const k of more) if (o[k] !== undefined) extra[k] = o[k];
  return { mode, pool, flags: o.flags, extra };
}
