/**
 * `GraphCaptureGuard.beginWithPool` against the stand-in driver with memory pools
 * (fixtures/stand-in-driver.c, STAND_IN_POOLS): a begin refused for its stream leaves the pool as
 * it was, its memory not yet made and nothing holding it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CapturePool, Device, DisposedError, GraphCaptureGuard, InvalidArgumentError, Stream, StreamGraphCapture } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('pool-capture', ['STAND_IN_POOLS']);
const skip = lib === null && 'gcc is absent';

test('a refused beginWithPool makes no pool memory and leaves no hold', { skip }, () => {
  const d = Device.get(0);
  using pool = new CapturePool();
  const busy = d.createStream();
  const gone = d.createStream();
  gone.dispose();
  const unchanged = (what: string): void => {
    assert.deepEqual([pool.device, pool.memPoolHandle, pool.holderCount], [null, null, 0], `${what}: the pool is as it was`);
  };
  {
    using cap = StreamGraphCapture.begin(busy);
    refused(() => GraphCaptureGuard.beginWithPool(busy, pool), InvalidArgumentError, 'GraphCaptureGuard.beginWithPool', /already capturing/);
    unchanged('a capturing stream');
    assert.equal(cap.isActive(), true);
  }
  refused(() => GraphCaptureGuard.beginWithPool(gone, pool), DisposedError, 'GraphCaptureGuard.beginWithPool', /Stream 0x[0-9a-f]+ has been disposed/);
  unchanged('a disposed stream');
  refused(() => GraphCaptureGuard.beginWithPool(Stream.wrap(d, 0n), pool), InvalidArgumentError, 'GraphCaptureGuard.beginWithPool', /legacy NULL stream cannot be captured/);
  unchanged('the legacy stream');
  const guard = GraphCaptureGuard.beginWithPool(busy, pool);
  assert.equal(pool.device, d, 'a begin that goes ahead makes the memory');
  guard.dispose();
});
