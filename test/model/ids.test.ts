import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamId, CaptureEvent, NodeId, InvalidArgumentError } from '../../src/index.js';

test('branded id factories accept integers in 0..2^32-1', () => {
  assert.equal(StreamId(0), 0);
  assert.equal(CaptureEvent(7), 7);
  assert.equal(NodeId(0xffff_ffff), 0xffff_ffff);
});

test('branded id factories refuse anything else, naming the factory', () => {
  for (const bad of [-1, 1.5, NaN, Infinity, -Infinity, 2 ** 32, '1', null, undefined, 1n]) {
    for (const [name, make] of [['StreamId', StreamId], ['CaptureEvent', CaptureEvent], ['NodeId', NodeId]] as const) {
      assert.throws(
        () => make(bad as number),
        (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${name}: `),
        `${name}(${String(bad)})`,
      );
    }
  }
});
