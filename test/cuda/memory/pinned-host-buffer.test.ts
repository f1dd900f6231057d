/**
 * `PinnedHostBuffer` against the stand-in driver (fixtures/stand-in-driver.c: registration that
 * does nothing): an allocation the host cannot make is a typed out-of-memory error naming the
 * call, as the device's is, and leaves nothing registered.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CudaError, Device, PinnedHostBuffer } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('pinned');
const skip = lib === null && 'gcc is absent';

test('host memory that cannot be allocated is CudaError 2 (out of memory) naming PinnedHostBuffer.alloc', { skip }, () => {
  const d = Device.get(0);
  // 16 TiB, the largest size accepted: no host has it.
  const e = refused(() => PinnedHostBuffer.alloc(d, 2 ** 44), CudaError, 'PinnedHostBuffer.alloc', /CUDA_ERROR_OUT_OF_MEMORY \(2\).*17592186044416 bytes/s) as CudaError;
  assert.equal(e.code, 2);
  assert.ok(e.cause instanceof RangeError, 'the allocation failure is the cause');
  using ok = PinnedHostBuffer.alloc(d, 64);
  assert.equal(ok.byteLength, 64, 'the next allocation works');
});
