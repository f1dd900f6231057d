/**
 * `DeviceBuffer`'s copy refusals against the stand-in driver (fixtures/stand-in-driver.c with
 * copies written down): each names the option the program gave, and nothing is enqueued.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, InvalidArgumentError } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('device-buffer', ['STAND_IN_COPIES']);
const skip = lib === null && 'gcc is absent';
const copies = lib?.counter('orders');

test('copyFromDeviceAsync names srcOffset and dstOffset in its refusals, and copies nothing', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const x = DeviceBuffer.alloc(d, 64);
  const y = DeviceBuffer.alloc(d, 64);
  const before = copies!();
  const names = (call: () => unknown, parameter: string, pattern: RegExp): void => {
    const e = refused(call, InvalidArgumentError, 'DeviceBuffer.copyFromDeviceAsync', pattern) as InvalidArgumentError;
    assert.equal(e.parameter, parameter);
  };
  names(() => x.copyFromDeviceAsync(s, y, { srcOffset: '4' as never }), 'srcOffset', /srcOffset must be an integer/);
  names(() => x.copyFromDeviceAsync(s, y, { srcOffset: NaN }), 'srcOffset', /srcOffset must be an integer/);
  names(() => x.copyFromDeviceAsync(s, y, { srcOffset: 65 }), 'srcOffset', /srcOffset 65 is past the end of the 64-byte buffer/);
  names(() => x.copyFromDeviceAsync(s, y, { dstOffset: -1 }), 'dstOffset', /dstOffset must be an integer/);
  names(() => x.copyFromDeviceAsync(s, y, { dstOffset: 65 }), 'dstOffset', /dstOffset 65 is past the end of the 64-byte buffer/);
  assert.equal(copies!(), before, 'nothing enqueued');
  x.copyFromDeviceAsync(s, y, { srcOffset: 8, dstOffset: 16, byteLength: 8 });
  assert.equal(copies!(), before + 1);
});
