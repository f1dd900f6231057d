/**
 * The guard's rules that hold without a GPU: input refused before anything starts (including
 * async capture bodies), how a cleanup failure is attached to the user's exception, how an
 * unexpected status is explained, and cleanup errors kept for the next call.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GraphCaptureGuard,
  CapturedGraph,
  DeviceScalar,
  CapturePool,
  captureGraph,
  makeGraphed,
  attachCleanupFailure,
  explainCaptureStatus,
  CaptureStateError,
  CaptureStatus,
  CudagraphError,
  CudaError,
  InvalidArgumentError,
  SuppressedCleanupError,
  Device,
} from '../../../src/index.js';
import { isAsyncFunction, isThenable } from '../../../src/util/validate.js';
import { checkScalar } from '../../../src/cuda/capture/device-scalar.js';
import { Lifetime, keepCleanupError } from '../../../src/cuda/core/lifetime.js';
import { observeDriverSymbols, type DriverSymbol } from '../../../src/driver/sys.js';
import { driverAvailable } from '../../../src/index.js';

function refuses(fn: () => unknown, op: string, pattern?: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && (!pattern || pattern.test(e.message)));
}

const notAStream = {} as never;

test('begin refuses what is not a Stream, naming the operation', () => {
  for (const bad of [null, undefined, 0, 0n, 'stream', {}]) {
    refuses(() => GraphCaptureGuard.begin(bad as never), 'GraphCaptureGuard.begin', /stream must be a Stream/);
    refuses(() => GraphCaptureGuard.beginWithMode(bad as never, 'global'), 'GraphCaptureGuard.beginWithMode', /stream must be a Stream/);
    refuses(() => GraphCaptureGuard.beginWithPool(bad as never, new CapturePool()), 'GraphCaptureGuard.beginWithPool', /stream must be a Stream/);
  }
});

test('an async capture body is refused before the capture begins, with the rule', () => {
  const rule = /async function: a capture must be synchronous.*await/s;
  // The type refuses an async body already (the build fails if it stops doing so); plain JS gets the run-time refusal.
  // @ts-expect-error an async body is not a CaptureBody
  refuses(() => captureGraph(notAStream, async () => {}), 'captureGraph', rule);
  refuses(() => captureGraph(notAStream, async function* () {} as never), 'captureGraph', rule);
  // @ts-expect-error an async body is not a CaptureBody
  refuses(() => GraphCaptureGuard.capture(notAStream, async () => {}), 'GraphCaptureGuard.capture', rule);
  // @ts-expect-error an async body is not a CaptureBody
  refuses(() => makeGraphed(notAStream, async () => {}), 'makeGraphed', rule);
  for (const bad of [null, 1, 'fn', {}]) {
    refuses(() => captureGraph(notAStream, bad as never), 'captureGraph', /fn must be a function/);
    refuses(() => makeGraphed(notAStream, bad as never), 'makeGraphed', /fn must be a function/);
  }
});

test('capture options are checked before anything starts', () => {
  refuses(() => captureGraph(notAStream, () => {}, { bogus: true } as never), 'captureGraph', /unknown option 'bogus'/);
  refuses(() => captureGraph(notAStream, () => {}, { flags: { autoFreeOnLaunch: 1 } } as never), 'captureGraph', /autoFreeOnLaunch/);
  refuses(() => captureGraph(notAStream, () => {}), 'captureGraph', /stream must be a Stream/);
  for (const bad of [-1, 1.5, NaN, Infinity, '3']) refuses(() => makeGraphed(notAStream, () => {}, { warmup: bad as never }), 'makeGraphed', /warmup/);
  refuses(() => makeGraphed(notAStream, () => {}, { mode: 'GLOBAL' as never }), 'makeGraphed', /mode must be one of/);
  refuses(() => makeGraphed(notAStream, () => {}, { pool: {} as never }), 'makeGraphed', /pool must be a CapturePool/);
  refuses(() => makeGraphed(notAStream, () => {}, { flags: { deviceLaunch: true, autoFreeOnLaunch: true } }), 'makeGraphed', /cannot be combined/);
  refuses(() => makeGraphed(notAStream, () => {}, { warmup: 0 }), 'makeGraphed', /stream must be a Stream/);
});

test('async detection: native async functions before the call, thenables after it', () => {
  assert.equal(isAsyncFunction(async () => {}), true);
  assert.equal(isAsyncFunction(async function named() {}), true);
  assert.equal(isAsyncFunction(async function* gen() {}), true);
  assert.equal(isAsyncFunction(() => Promise.resolve()), false, 'a plain function returning a Promise is caught after the call');
  assert.equal(isAsyncFunction(function* gen() {}), false);
  assert.equal(isAsyncFunction(null), false);
  assert.equal(isThenable(Promise.resolve()), true);
  assert.equal(isThenable({ then() {} }), true);
  const fnThenable = Object.assign(() => {}, { then: () => {} });
  assert.equal(isThenable(fnThenable), true);
  assert.equal(isThenable(undefined), false);
  assert.equal(isThenable({ then: 1 }), false);
  const hostile = Object.defineProperty({}, 'then', {
    get() {
      throw new Error('boom');
    },
  });
  assert.equal(isThenable(hostile), false, 'a throwing then getter is not a thenable and does not throw');
});

test('a cleanup failure is attached to the exception that stopped the capture, which is rethrown as itself', () => {
  const userError = new RangeError('user code failed mid-capture');
  const cleanup = new Error('cuGraphDestroy failed');
  assert.equal(attachCleanupFailure(userError, null, 'op'), userError, 'no cleanup failure: the error unchanged');
  assert.equal(Object.hasOwn(userError, 'suppressed'), false);
  const thrown = attachCleanupFailure(userError, cleanup, 'captureGraph');
  assert.equal(thrown, userError, 'the same object, stack and class intact');
  assert.equal((thrown as { suppressed?: unknown }).suppressed, cleanup);
  assert.equal(Object.keys(userError).includes('suppressed'), false, 'non-enumerable: logging the error shows what the user threw');
  // Nothing can be attached to a primitive or a frozen object: both travel in a SuppressedCleanupError.
  const fromString = attachCleanupFailure('a string', cleanup, 'captureGraph');
  assert.ok(fromString instanceof SuppressedCleanupError);
  assert.equal(fromString.error, 'a string');
  assert.equal(fromString.suppressed, cleanup);
  assert.match(fromString.message, /^captureGraph: a string\n\(and cleaning up the capture failed: cuGraphDestroy failed\)/);
  const frozen = Object.freeze(new Error('frozen'));
  const wrapped = attachCleanupFailure(frozen, cleanup, 'op') as SuppressedCleanupError;
  assert.ok(wrapped instanceof SuppressedCleanupError && wrapped.error === frozen && wrapped.suppressed === cleanup);
  const already = Object.assign(new Error('has its own'), { suppressed: 'mine' });
  assert.equal((attachCleanupFailure(already, cleanup, 'op') as SuppressedCleanupError).suppressed, cleanup);
  assert.equal(already.suppressed, 'mine', 'an existing suppressed property is never overwritten');
});

test('an unexpected status is explained; the first illegal call is named with its stack', () => {
  const illegal = new CudaError({ code: 900, operation: 'Stream.synchronize', driverCall: 'cuStreamSynchronize' });
  const first = { operation: 'Stream.synchronize', error: illegal };
  const active = explainCaptureStatus(CaptureStatus.Active, true, null);
  assert.equal(active.expected, true);
  const inv = explainCaptureStatus(CaptureStatus.Invalidated, true, first);
  assert.equal(inv.expected, false);
  assert.equal(inv.firstFailure, first);
  assert.match(inv.explanation, /invalidated/);
  assert.match(inv.explanation, /Stream\.synchronize, which failed with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED \(900\)/);
  assert.ok(inv.explanation.includes(illegal.stack!), 'the JS stack of the illegal call');
  assert.match(inv.explanation, /901/);
  const invUnknown = explainCaptureStatus(CaptureStatus.Invalidated, true, null);
  assert.match(invUnknown.explanation, /forbidden allocation/);
  assert.match(invUnknown.explanation, /synchroniz/);
  assert.match(invUnknown.explanation, /not pinned/);
  const ended = explainCaptureStatus(CaptureStatus.None, true, null);
  assert.equal(ended.expected, false);
  assert.match(ended.explanation, /ended it behind the guard/);
  assert.equal(explainCaptureStatus(CaptureStatus.None, false, null).expected, true);
  const again = explainCaptureStatus(CaptureStatus.Active, false, null);
  assert.equal(again.expected, false);
  assert.match(again.explanation, /another capture began/);
});

test('CaptureStateError: typed, with a stable code and the operation first', () => {
  const e = new CaptureStateError('GraphCaptureGuard.finish', 'ERR_GUARD_FINISHED', 'already finished');
  assert.ok(e instanceof CudagraphError && e instanceof Error);
  assert.equal(e.name, 'CaptureStateError');
  assert.equal(e.code, 'ERR_GUARD_FINISHED');
  assert.equal(e.operation, 'GraphCaptureGuard.finish');
  assert.equal(e.message, 'GraphCaptureGuard.finish: already finished');
});

test('a cleanup error kept by a dispose that cannot throw is thrown by the next public call, once', () => {
  const failure = new Error('ending the abandoned capture failed');
  keepCleanupError(failure);
  const other = new Lifetime('Stream 0x1', {}, () => {});
  assert.throws(
    () => other.assertAlive('Stream.synchronize'),
    (e: unknown) => e instanceof CudaError && e.operation === 'Stream.synchronize' && e.cause === failure && e.message.includes(failure.message),
  );
  other.assertAlive('Stream.synchronize');
});

test('device scalars: values are checked for their C type', () => {
  assert.equal(checkScalar('op', 'i32', -5), -5);
  assert.equal(checkScalar('op', 'u32', 2 ** 32 - 1), 2 ** 32 - 1);
  assert.equal(checkScalar('op', 'i64', 7), 7n);
  assert.equal(checkScalar('op', 'u64', 2n ** 64n - 1n), 2n ** 64n - 1n);
  assert.ok(Number.isNaN(checkScalar('op', 'f32', NaN) as number));
  for (const [type, bad] of [
    ['i32', 2 ** 31],
    ['i32', 1.5],
    ['u32', -1],
    ['u32', NaN],
    ['i64', 2n ** 63n],
    ['u64', -1n],
    ['u64', 2 ** 60],
    ['f32', 1n],
    ['f64', '1'],
  ] as const) {
    refuses(() => checkScalar('DeviceScalar.set', type, bad), 'DeviceScalar.set');
  }
  refuses(() => DeviceScalar.create(notAStream, 'u32', 0), 'DeviceScalar.create', /stream must be a Stream/);
});

test('guards, captured graphs and device scalars cannot be constructed directly (a typed error naming the factory)', () => {
  for (const C of [GraphCaptureGuard, CapturedGraph, DeviceScalar]) {
    assert.throws(
      () => new (C as unknown as new (...a: unknown[]) => unknown)(Symbol('x')),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`new ${C.name}: ${C.name} objects are made by `),
      C.name,
    );
  }
});

const noDriver = driverAvailable().ok ? 'a driver loads here: the fetch of cuInit happens once and is cached' : false;

test('the driver-call observer sees each driver function a call fetches (used to count cuGraphUpload on the GPU)', { skip: noDriver }, () => {
  const seen: DriverSymbol[] = [];
  observeDriverSymbols((name) => seen.push(name));
  try {
    assert.throws(() => Device.count(), (e: unknown) => e instanceof CudaError && e.code === 3);
    assert.throws(() => Device.count(), (e: unknown) => e instanceof CudaError && e.code === 3);
  } finally {
    observeDriverSymbols(null);
  }
  assert.deepEqual(seen, ['cuInit', 'cuInit']);
  assert.throws(() => Device.count());
  assert.equal(seen.length, 2);
});
