/**
 * CapturePool bookkeeping and the pool handle registry, without a GPU: what a pool keeps alive is
 * a set of `Lifetime`s, the mechanism every cudagraph resource uses, so resources made here from a
 * `Lifetime` whose cleanup records that it ran show exactly when the pool lets go.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  CapturePool,
  graphPoolHandle,
  capturePoolForHandle,
  releaseGraphPoolHandle,
  InvalidArgumentError,
  DisposedError,
  type DeviceBuffer,
} from '../../../src/index.js';
import { Lifetime } from '../../../src/cuda/core/lifetime.js';
import { LIFETIME } from '../../../src/cuda/core/internal.js';

/** A resource like a DeviceBuffer: a Lifetime whose free is recorded in `freed`. */
function resource(name: string, freed: string[]): DeviceBuffer {
  const r = {} as { [LIFETIME]: Lifetime };
  r[LIFETIME] = new Lifetime(name, r, () => freed.push(name));
  return r as unknown as DeviceBuffer;
}

function refuses(fn: () => unknown, op: string, pattern?: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && (!pattern || pattern.test(e.message)));
}

test('a new pool is empty and unsealed and makes no driver call until a capture uses it', () => {
  const pool = new CapturePool();
  assert.equal(pool.bufferCount, 0);
  assert.equal(pool.isSealed, false);
  assert.equal(pool.released, false);
  assert.equal(pool.device, null);
  assert.equal(pool.memPoolHandle, null);
  assert.equal(pool.usedBytes, 0);
  assert.equal(pool.reservedBytes, 0);
  assert.equal(pool.holderCount, 0);
  assert.equal(pool.handle, null);
  pool.trim(); // nothing to trim yet
  assert.match(String(pool), /^CapturePool #\d+$/);
  assert.notEqual(new CapturePool().id, pool.id);
});

test('recordBuffer returns 0, 1, 2, … and counts; clearBuffers empties the pool, which stays usable', () => {
  const freed: string[] = [];
  const pool = new CapturePool();
  assert.equal(pool.recordBuffer(resource('a', freed)), 0);
  assert.equal(pool.recordBuffer(resource('b', freed)), 1);
  assert.equal(pool.recordBuffer(resource('c', freed)), 2);
  assert.equal(pool.bufferCount, 3);
  pool.clearBuffers();
  assert.equal(pool.bufferCount, 0);
  assert.equal(pool.recordBuffer(resource('d', freed)), 0, 'indices restart after clearBuffers');
  assert.equal(pool.bufferCount, 1);
});

test('a recorded buffer outlives its owner until the pool lets go; clearBuffers lets go at once', () => {
  const freed: string[] = [];
  const pool = new CapturePool();
  const a = resource('a', freed);
  const b = resource('b', freed);
  pool.recordBuffer(a);
  pool.recordBuffer(b);
  a[LIFETIME].dispose(); // the program drops its claim ("donates" the buffer)
  assert.deepEqual(freed, [], 'the pool keeps it alive');
  pool.clearBuffers();
  assert.deepEqual(freed, ['a'], 'freed once its last holder let go; b is still owned by the program');
  b[LIFETIME].dispose();
  assert.deepEqual(freed, ['a', 'b']);
});

test('the pool is released when its last holder lets go: creator, then each graph holding it', () => {
  const freed: string[] = [];
  const pool = new CapturePool();
  const a = resource('a', freed);
  pool.recordBuffer(a);
  a[LIFETIME].dispose();
  pool.retainHold('test'); // what a CapturedGraph does
  pool.retainHold('test'); // a second graph sharing the pool
  assert.equal(pool.holderCount, 2);
  pool.dispose(); // the creator lets go
  pool.dispose(); // idempotent
  assert.equal(pool.released, false, 'graphs still hold it');
  assert.deepEqual(freed, []);
  assert.equal(pool.recordBuffer(resource('late', freed)), 1, 'usable while held, as graph.pool is');
  pool.releaseHold();
  assert.equal(pool.released, false);
  assert.deepEqual(freed, []);
  pool.releaseHold(); // the last graph goes
  assert.equal(pool.released, true);
  assert.deepEqual(freed, ['a'], "the recorded buffers are released; 'late' is still owned by the program");
  assert.equal(pool.bufferCount, 0);
});

test('a released pool refuses every use with DisposedError; getters still answer', () => {
  const pool = new CapturePool();
  pool.dispose();
  assert.equal(pool.released, true);
  for (const [op, fn] of [
    ['CapturePool.recordBuffer', () => pool.recordBuffer(resource('x', []))],
    ['CapturePool.seal', () => pool.seal()],
    ['CapturePool.unseal', () => pool.unseal()],
    ['CapturePool.clearBuffers', () => pool.clearBuffers()],
    ['CapturePool.trim', () => pool.trim()],
    ['test', () => pool.retainHold('test')],
  ] as const) {
    assert.throws(fn, (e: unknown) => e instanceof DisposedError && e.message.startsWith(`${op}: CapturePool #${pool.id}`), op);
  }
  assert.equal(pool.bufferCount, 0);
  assert.equal(pool.usedBytes, 0);
  assert.equal(pool.isSealed, false);
});

test('seal, unseal and isSealed toggle', () => {
  const pool = new CapturePool();
  pool.seal();
  assert.equal(pool.isSealed, true);
  pool.seal();
  assert.equal(pool.isSealed, true);
  pool.unseal();
  assert.equal(pool.isSealed, false);
  pool.recordBuffer(resource('x', [])); // sealing is about captures and allocations, not records
});

test('bad input is refused with a typed error that names the operation, and changes nothing', () => {
  const pool = new CapturePool();
  for (const bad of [null, undefined, 3, 'buf', {}, { handle: 1n }]) refuses(() => pool.recordBuffer(bad as never), 'CapturePool.recordBuffer', /must be a DeviceBuffer/);
  assert.equal(pool.bufferCount, 0);
  const gone = resource('gone', []);
  gone[LIFETIME].dispose();
  assert.throws(() => pool.recordBuffer(gone), (e: unknown) => e instanceof DisposedError && e.message === 'CapturePool.recordBuffer: gone has been disposed');
  assert.equal(pool.bufferCount, 0);
  for (const bad of [-1, 1.5, NaN, Infinity, '0']) refuses(() => pool.trim(bad as never), 'CapturePool.trim');
  refuses(() => new CapturePool({ bogus: 1 } as never), 'CapturePool', /unknown option 'bogus'/);
  refuses(() => new CapturePool({ device: 0 } as never), 'CapturePool', /device must be a Device/);
  for (const bad of [-1, 0.5, NaN, Infinity]) refuses(() => new CapturePool({ releaseThreshold: bad }), 'CapturePool', /releaseThreshold/);
  refuses(() => new CapturePool(5 as never), 'CapturePool', /options must be an object/);
});

test('graph pool handles: start at 1, only grow, resolve to one shared pool; release is idempotent', () => {
  const h1 = graphPoolHandle();
  const h2 = graphPoolHandle();
  assert.ok(Number.isSafeInteger(h1) && h1 >= 1);
  assert.ok(h2 > h1);
  const p1 = capturePoolForHandle(h1)!;
  const p2 = capturePoolForHandle(h2)!;
  assert.ok(p1 instanceof CapturePool && p2 instanceof CapturePool);
  assert.equal(capturePoolForHandle(h1), p1, 'repeated lookups give the same pool');
  assert.notEqual(p1, p2);
  assert.equal(p1.handle, h1);
  const freed: string[] = [];
  const buf = resource('shared', freed);
  p1.recordBuffer(buf);
  buf[LIFETIME].dispose();
  assert.equal(capturePoolForHandle(h1)!.bufferCount, 1, 'a buffer recorded through one lookup is seen through another');
  p1.retainHold('test'); // a graph captured with the pool
  releaseGraphPoolHandle(h1);
  assert.equal(capturePoolForHandle(h1), undefined, 'a released handle resolves to undefined');
  assert.equal(p1.released, false, 'the graph keeps the pool and its buffers');
  assert.deepEqual(freed, []);
  releaseGraphPoolHandle(h1); // idempotent
  p1.releaseHold();
  assert.equal(p1.released, true);
  assert.deepEqual(freed, ['shared']);
  const h3 = graphPoolHandle();
  assert.ok(h3 > h2, 'handles are never reused');
  assert.equal(capturePoolForHandle(0), undefined);
  assert.equal(capturePoolForHandle(Number.MAX_SAFE_INTEGER), undefined);
  releaseGraphPoolHandle(Number.MAX_SAFE_INTEGER); // unknown: ignored
  for (const bad of [-1, 1.5, NaN, Infinity, '1', 1n, null]) {
    refuses(() => capturePoolForHandle(bad as never), 'capturePoolForHandle', /handle must be an integer/);
    refuses(() => releaseGraphPoolHandle(bad as never), 'releaseGraphPoolHandle', /handle must be an integer/);
  }
  // Disposing a handle's pool releases the handle too.
  p2.dispose();
  assert.equal(capturePoolForHandle(h2), undefined);
  assert.equal(p2.released, true);
  releaseGraphPoolHandle(h3);
});

test('a pool the program forgot to dispose is released by garbage collection, with its buffers', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const freed: string[] = [];
  (() => {
    const pool = new CapturePool();
    const a = resource('forgotten', freed);
    pool.recordBuffer(a);
    a[LIFETIME].dispose();
  })();
  for (let i = 0; i < 20 && freed.length === 0; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(freed, ['forgotten']);
});
