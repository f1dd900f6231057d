/**
 * How the capture entry points end, against the stand-in driver (fixtures/stand-in-driver.c with
 * events: captures and instantiations that do nothing): a refusal of `end()`'s options leaves the
 * capture running, and an error met while ending a capture that `captureGraph`,
 * `GraphCaptureGuard.capture`, `makeGraphed` or a `GraphCache` began names the call the program
 * made, not the call that ended it inside.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DisposedError, GraphCache, GraphCaptureGuard, InvalidArgumentError, StreamGraphCapture, captureGraph, makeGraphed, type Stream } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('capture-ends', ['STAND_IN_POOLS']);
const skip = lib === null && 'gcc is absent';

test('StreamGraphCapture.end refuses bad instantiation flags before it ends the capture', { skip }, () => {
  const s = Device.get(0).createStream();
  const cap = StreamGraphCapture.begin(s);
  refused(() => cap.end({ flags: { autoFree: true } as never }), InvalidArgumentError, 'StreamGraphCapture.end', /unknown option 'autoFree'/);
  refused(() => cap.end({ flags: 5 as never }), InvalidArgumentError, 'StreamGraphCapture.end', /must be an object/);
  refused(() => cap.end({ flags: { upload: {} as never } }), InvalidArgumentError, 'StreamGraphCapture.end', /upload must be a Stream/);
  refused(() => cap.end({ flags: { deviceLaunch: true, autoFreeOnLaunch: true } }), InvalidArgumentError, 'StreamGraphCapture.end', /cannot be combined/);
  // A disposed upload stream is refused before the end too (and by the guard, which keeps capturing).
  const gone = Device.get(0).createStream();
  gone.dispose();
  refused(() => cap.end({ flags: { upload: gone } }), DisposedError, 'StreamGraphCapture.end', /Stream 0x[0-9a-f]+ has been disposed/);
  assert.deepEqual([cap.isActive(), s.isCapturing], [true, true], 'the capture goes on');
  using exec = cap.end({ flags: { autoFreeOnLaunch: true } });
  const t = Device.get(0).createStream();
  const guard = GraphCaptureGuard.begin(t);
  refused(() => guard.finish({ flags: { upload: gone } }), DisposedError, 'GraphCaptureGuard.finish', /has been disposed/);
  assert.deepEqual([guard.state, t.isCapturing], ['capturing', true], 'the guard goes on capturing');
  guard.finish().dispose();
  let ran = false;
  refused(() => captureGraph(t, () => void (ran = true), { flags: { upload: gone } }), DisposedError, 'captureGraph', /has been disposed/);
  assert.deepEqual([ran, t.isCapturing], [false, false], 'refused before anything started');
  assert.deepEqual([cap.isActive(), s.isCapturing, exec.disposed], [false, false, false]);
});

test('an error ending the capture of captureGraph, GraphCaptureGuard.capture and makeGraphed names that call', { skip }, () => {
  const d = Device.get(0);
  // Disposing the captured stream inside the body: the capture ends, its graph is discarded and the
  // DisposedError comes from the end of the capture, inside the call.
  const calls: Array<[string, (s: Stream) => unknown]> = [
    ['captureGraph', (s) => captureGraph(s, (x) => x.dispose())],
    ['GraphCaptureGuard.capture', (s) => GraphCaptureGuard.capture(s, (x) => x.dispose())],
    ['makeGraphed', (s) => makeGraphed(s, (x) => (x === s ? x.dispose() : undefined), { warmup: 1 })],
  ];
  for (const [op, call] of calls) {
    const s = d.createStream();
    refused(() => call(s), DisposedError, op, /the captured stream .* has been disposed \(The capture was ended first and its graph discarded\.\)/);
    assert.equal(s.isCapturing, false, `${op}: the capture ended`);
  }
  // GraphCaptureGuard.finish itself keeps its own name.
  const s = d.createStream();
  const guard = GraphCaptureGuard.begin(s);
  s.dispose();
  refused(() => guard.finish(), DisposedError, 'GraphCaptureGuard.finish', /the captured stream/);
});

test('GraphCache: errors of its captures and of its stream name the cache call', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const cache = new GraphCache({ stream: s, pool: false, warmup: 0, capture: (x: Stream, key: number) => (key === 2 ? x.dispose() : undefined) });
  refused(() => cache.launch(2), DisposedError, 'GraphCache.launch', /the captured stream/);
  assert.equal(cache.stats.graphs, 0, 'nothing cached');

  const t = d.createStream();
  const c2 = new GraphCache({ stream: t, pool: false, warmup: 0, capture: () => {} });
  assert.equal(c2.launch(1).hit, false);
  {
    // A capture already running on the cache's stream.
    using cap = StreamGraphCapture.begin(t);
    refused(() => c2.launch(2), InvalidArgumentError, 'GraphCache.launch', /already capturing/);
    refused(() => c2.prepare([3]), InvalidArgumentError, 'GraphCache.prepare', /already capturing/);
    assert.equal(cap.isActive(), true);
  }
  t.dispose();
  refused(() => c2.launch(1), DisposedError, 'GraphCache.launch', /Stream .* has been disposed/);
  refused(() => c2.launch(2), DisposedError, 'GraphCache.launch', /Stream .* has been disposed/);
  refused(() => c2.prepare([3]), DisposedError, 'GraphCache.prepare', /Stream .* has been disposed/);
  assert.deepEqual(c2.keys(), [1], 'nothing cached, nothing evicted');
  for (const c of [cache, c2]) c.dispose();
});
