import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import assert from 'node:assert/strict';
import {
  CaptureMode,
  StreamGraphCapture,
  DeviceBuffer,
  PinnedHostBuffer,
  Module,
  Graph,
  InvalidArgumentError,
  DisposedError,
  CudaError,
  imageKind,
  requireCaptureSupport,
  Device,
  Stream,
  Event,
  GraphExec,
  Kernel,
  PreparedLaunch,
  HostFunction,
} from '../../src/index.js';
import { requireCaptureMode, driverCaptureMode } from '../../src/cuda/capture/capture-mode.js';
import { checkInstantiateFlags } from '../../src/cuda/graph/instantiate-flags.js';
import { Lifetime, deferCleanups, resumeCleanups, deferredCleanupCount, surfaceCleanupErrors, keepFailure } from '../../src/cuda/core/lifetime.js';

function refuses(fn: () => unknown, op: string, pattern?: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && (!pattern || pattern.test(e.message)));
}

test('capture modes: the three string values, and their driver numbers', () => {
  assert.deepEqual(Object.values(CaptureMode), ['global', 'threadLocal', 'relaxed']);
  assert.deepEqual(['global', 'threadLocal', 'relaxed'].map((m) => driverCaptureMode(requireCaptureMode('op', m))), [0, 1, 2]);
  for (const bad of ['GLOBAL', 'thread_local', 0, null, undefined]) refuses(() => requireCaptureMode('StreamGraphCapture.begin', bad), 'StreamGraphCapture.begin');
});

test('instantiate flags become the driver bits; bad combinations and types are refused', () => {
  assert.deepEqual(checkInstantiateFlags('op', undefined), { bits: 0, upload: null });
  assert.equal(checkInstantiateFlags('op', { autoFreeOnLaunch: true }).bits, 1);
  assert.equal(checkInstantiateFlags('op', { deviceLaunch: true, useNodePriority: true }).bits, 12);
  assert.equal(checkInstantiateFlags('op', { autoFreeOnLaunch: false }).bits, 0);
  refuses(() => checkInstantiateFlags('GraphExec', { deviceLaunch: true, autoFreeOnLaunch: true }), 'GraphExec', /cannot be combined/);
  refuses(() => checkInstantiateFlags('op', { upload: 1 }), 'op', /upload must be a Stream/);
  refuses(() => checkInstantiateFlags('op', { autoFreeOnLaunch: 1 }), 'op');
  refuses(() => checkInstantiateFlags('op', { autofree: true }), 'op', /unknown option 'autofree'/);
});

test('a driver older than CUDA 10.0 gets NotSupported (801) from capture', () => {
  assert.throws(
    () => requireCaptureSupport('StreamGraphCapture.begin', 9020),
    (e: unknown) => e instanceof CudaError && e.code === 801 && /CUDA 9\.2/.test(e.message) && e.message.startsWith('StreamGraphCapture.begin: CUDA_ERROR_NOT_SUPPORTED'),
  );
  requireCaptureSupport('op', 10000);
  requireCaptureSupport('op', 13000);
});

test('public entry points refuse wrong types before touching the driver', () => {
  refuses(() => StreamGraphCapture.begin({} as never), 'StreamGraphCapture.begin', /stream must be a Stream/);
  refuses(() => DeviceBuffer.alloc({} as never, 16), 'DeviceBuffer.alloc', /device must be a Device/);
  refuses(() => DeviceBuffer.allocAsync(null as never, 16), 'DeviceBuffer.allocAsync');
  refuses(() => Module.load(1 as never, 'ptx'), 'Module.load');
  refuses(() => Module.compile(undefined as never, 'src'), 'Module.compile');
  refuses(() => Graph.create(5 as never), 'Graph.create');
  refuses(() => PinnedHostBuffer.alloc(0 as never, 16), 'PinnedHostBuffer.alloc');
  refuses(() => PinnedHostBuffer.alloc(4096 as never, 1.5), 'PinnedHostBuffer.alloc', /the order is PinnedHostBuffer\.alloc\(device, byteLength\)/);
  refuses(() => Stream.wrap(null as never, -1n), 'Stream.wrap');
  refuses(() => Device.get(-1), 'Device.get');
  refuses(() => Device.get(0.5), 'Device.get');
});

test('objects cannot be constructed directly, only through their factories (a typed error naming the factory)', () => {
  for (const C of [Device, Stream, Event, DeviceBuffer, PinnedHostBuffer, Module, Kernel, PreparedLaunch, Graph, GraphExec, StreamGraphCapture, HostFunction]) {
    assert.throws(
      () => new (C as unknown as new (...a: unknown[]) => unknown)(Symbol('x')),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`new ${C.name}: ${C.name} objects are made by `),
      C.name,
    );
  }
});

test('module images are recognised by their first bytes', () => {
  assert.equal(imageKind(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2])), 'cubin');
  assert.equal(imageKind(new Uint8Array([0x50, 0xed, 0x55, 0xba, 1, 0])), 'fatbin');
  assert.equal(imageKind(new TextEncoder().encode('.version 8.0\n.target sm_90')), 'ptx');
});

test('Lifetime: dispose is idempotent, use after dispose throws DisposedError, holders delay the free', () => {
  const freed: string[] = [];
  const owner = {};
  const life = new Lifetime('Thing A', owner, () => freed.push('A'));
  life.assertAlive('Thing.use');
  life.retain();
  life.retain();
  life.dispose();
  life.dispose();
  assert.throws(() => life.assertAlive('Thing.use'), (e: unknown) => e instanceof DisposedError && e.message === 'Thing.use: Thing A has been disposed');
  assert.deepEqual(freed, [], 'held: not freed yet');
  life.release();
  assert.deepEqual(freed, []);
  life.release();
  assert.deepEqual(freed, ['A'], 'freed when the last holder lets go');
  life.release();
  assert.deepEqual(freed, ['A'], 'a stray release does nothing');
});

test('Lifetime: frees are deferred while a capture is active and run when the last one ends', () => {
  const freed: string[] = [];
  const a = new Lifetime('A', {}, () => freed.push('A'));
  const b = new Lifetime('B', {}, () => freed.push('B'));
  deferCleanups();
  deferCleanups();
  a.dispose();
  assert.equal(deferredCleanupCount(), 1);
  resumeCleanups();
  b.dispose();
  assert.deepEqual(freed, []);
  resumeCleanups();
  assert.deepEqual(freed, ['A', 'B']);
  assert.equal(deferredCleanupCount(), 0);
  resumeCleanups(); // unbalanced: harmless
});

test('a failing free does not throw from dispose; the next call reports it once', () => {
  const life = new Lifetime('Buffer X', {}, () => keepFailure(700, 'DeviceBuffer.dispose', 'cuMemFree_v2'));
  life.dispose();
  const other = new Lifetime('Other', {}, () => {});
  assert.throws(
    () => other.assertAlive('Stream.synchronize'),
    (e: unknown) =>
      e instanceof CudaError &&
      e.code === 700 &&
      e.operation === 'Stream.synchronize' &&
      e.cause instanceof CudaError &&
      /dispose\(\) and garbage-collection finalizers cannot throw/.test(e.message),
  );
  other.assertAlive('Stream.synchronize');
  surfaceCleanupErrors('x');
});

test('the finalizer frees a resource that was never disposed (unless a holder keeps it)', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const freed: string[] = [];
  (() => {
    new Lifetime('Dropped', {}, () => freed.push('dropped'));
  })();
  for (let i = 0; i < 10 && freed.length === 0; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(freed, ['dropped']);
});

test('an unknown option is quoted bounded and escaped (a huge or multi-line key cannot flood the message)', () => {
  const key = `x\n${'y'.repeat(10_000)}`;
  assert.throws(
    () => checkInstantiateFlags('op', { [key]: true }),
    (e: unknown) => e instanceof InvalidArgumentError && e.message.length < 300 && !e.message.includes('\n') && /unknown option 'x\\ny+…'/.test(e.message),
  );
});
