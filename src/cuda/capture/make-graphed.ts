import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt, requireOptions, assertInstance } from '../../util/validate.js';
import type { Stream } from '../device/stream.js';
import { GraphCaptureGuard, ASYNC_CAPTURE_RULE, isAsyncFunction, isThenable, type CaptureBody, type CaptureOptions } from './guard.js';
import { CaptureStateError } from './guard-errors.js';
import type { CapturePool } from '../pool/capture-pool.js';
import { requireCaptureMode } from './capture-mode.js';
import { checkInstantiateFlags } from '../graph/instantiate-flags.js';
import type { CapturedGraph } from './captured-graph.js';
import { brands } from '../core/brands.js';

/** Options of `makeGraphed`. */
export interface MakeGraphedOptions extends CaptureOptions {
  /** Runs of `fn` on a side stream before the capture. Default 3 (PyTorch's). */
  readonly warmup?: number;
}

/**
 * PyTorch's `make_graphed_callables` without autograd: runs `fn(side)` `warmup` times on a side
 * stream forked from `stream` (lazy initialisation, module loads and allocations happen there,
 * not under capture), joins the side stream back into `stream`, then captures `fn(stream)` once on
 * `stream` and returns the graph. `fn` receives the stream to submit its work to.
 *
 * @throws InvalidArgumentError for bad arguments, an async `fn`, or a stream already capturing;
 *   CaptureStateError `ERR_ASYNC_CAPTURE` when `fn` returns a Promise; whatever `fn` throws
 *   (during warm-up, or during the capture, which is then discarded); the errors of `captureGraph`.
 *
 * @example
 * const graph = makeGraphed(s, (s) => { layer1.launch(s); layer2.launch(s); }, { warmup: 3 });
 * graph.launch();
 */
export function makeGraphed(stream: Stream, fn: CaptureBody, options?: MakeGraphedOptions): CapturedGraph {
  const op = 'makeGraphed';
  if (typeof fn !== 'function') throw new InvalidArgumentError(op, 'fn', `fn must be a function, got ${describe(fn)}`);
  if (isAsyncFunction(fn)) throw new InvalidArgumentError(op, 'fn', `fn is an async function: ${ASYNC_CAPTURE_RULE}`);
  const o = requireOptions<MakeGraphedOptions>(op, options, ['warmup', 'mode', 'pool', 'flags']);
  const warmup = o.warmup === undefined ? 3 : requireInt(op, 'warmup', o.warmup, 0, 1_000_000);
  // Everything the capture will check, checked before the warm-up runs.
  if (o.mode !== undefined) requireCaptureMode(op, o.mode);
  if (o.pool !== undefined) assertInstance(op, 'pool', o.pool, brands.CapturePool);
  checkInstantiateFlags(op, o.flags);
  assertInstance(op, 'stream', stream, brands.Stream);
  stream.handleFor(op);
  if (stream.isCapturing) {
    throw new InvalidArgumentError(op, 'stream', 'the stream is already capturing: warm-up work would be recorded into that capture');
  }
  if (warmup > 0) warmUp(op, stream, fn, warmup);
  const { warmup: _, ...capture } = o;
  return GraphCaptureGuard.captureFor(op, stream, fn, capture);
}

/** Runs `fn` `times` times on a stream forked from `stream`, then joins it back (also on failure). */
function warmUp(op: string, stream: Stream, fn: CaptureBody, times: number): void {
  const side = stream.fork();
  let failed = false;
  try {
    for (let i = 0; i < times; i++) {
      const result = fn(side);
      if (isThenable(result)) {
        Promise.resolve(result).catch(() => {});
        throw new CaptureStateError(op, 'ERR_ASYNC_CAPTURE', `fn returned a Promise during warm-up: ${ASYNC_CAPTURE_RULE}`);
      }
    }
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    try {
      stream.join(side); // what warm-up submitted runs before anything queued on stream afterwards
    } catch (e) {
      if (!failed) throw e;
    } finally {
      side.dispose();
    }
  }
}
