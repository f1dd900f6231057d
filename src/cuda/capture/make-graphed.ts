import { InvalidArgumentError } from '../../errors/base.js';
import { requireInt, assertInstance, isThenable } from '../../util/validate.js';
import type { Stream } from '../device/stream.js';
import { GraphCaptureGuard } from './guard.js';
import { ASYNC_CAPTURE_RULE, checkCaptureBody, checkCaptureOptions, type CaptureBody, type NotAPromise, type CaptureOptions } from './capture-options.js';
import { CaptureStateError } from './guard-errors.js';
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
export function makeGraphed<R>(stream: Stream, fn: (stream: Stream) => R & NotAPromise<R>, options?: MakeGraphedOptions): CapturedGraph {
  return makeGraphedFor('makeGraphed', stream, fn, options);
}

/** @internal `makeGraphed` for a caller that names its own operation in errors (a `GraphCache`). */
export function makeGraphedFor(op: string, stream: Stream, fn: CaptureBody, options: unknown): CapturedGraph {
  const body = checkCaptureBody(op, fn);
  // Everything the capture will check, checked before the warm-up runs.
  const o = checkCaptureOptions(op, options, ['warmup']);
  const warmup = o.extra['warmup'] === undefined ? 3 : requireInt(op, 'warmup', o.extra['warmup'], 0, 1_000_000);
  assertInstance(op, 'stream', stream, brands.Stream);
  stream.handleFor(op);
  if (stream.isCapturing) {
    throw new InvalidArgumentError(op, 'stream', 'the stream is already capturing: warm-up work would be recorded into that capture');
  }
  if (warmup > 0) warmUp(op, stream, body, warmup);
  return GraphCaptureGuard.captureChecked(op, stream, body, o);
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
