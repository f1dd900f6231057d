/**
 * The driver's refusal of a graph launch, against the hazard stand-in driver
 * (test/support/stand-in/hazard-driver.c, which answers a graph launch on a capturing stream with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED as CUDA 13.0 does): the error names the call the program
 * made (`CapturedGraph.launch`, `GraphCache.run`, `GraphExec.launchAndWait`, …), here and as that
 * capture's first failure, not the exec launch inside it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CudaError, Device, GraphCache, StreamGraphCapture, captureGraph } from '../../../src/index.js';
import { buildHazardDriver } from '../../support/hazards/child.js';
import { refused } from '../../support/refused.js';

const so = buildHazardDriver();
const skip = so === null && 'gcc is absent';
if (so !== null) process.env['CUDA_DRIVER_PATH'] = so;

test('a graph launch the driver refuses (900 on a capturing stream) names the call made', { skip }, async () => {
  const d = Device.get(0);
  const s = d.createStream();
  const graph = captureGraph(s, () => {});
  const exec = graph.graph.instantiate();
  const cache = new GraphCache({ stream: d.createStream(), capture: () => {}, pool: false, warmup: 0 });
  cache.launch(1);
  const other = d.createStream();
  const calls: Array<[string, () => unknown]> = [
    ['CapturedGraph.launch', () => graph.launch(other)],
    ['GraphExec.launch', () => exec.launch(other)],
  ];
  for (const [op, call] of calls) {
    const cap = StreamGraphCapture.begin(other);
    try {
      refused(call, CudaError, op, /CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED \(900\)/);
      assert.equal(cap.firstFailure?.operation, op, `${op}: the capture's first failure`);
    } finally {
      cap.dispose();
    }
  }
  for (const op of ['GraphCache.launch', 'GraphCache.run'] as const) {
    const cap = StreamGraphCapture.begin(cache.stream);
    try {
      // run refuses a capturing stream itself; launch reaches the driver.
      if (op === 'GraphCache.launch') refused(() => cache.launch(1), CudaError, op, /\(900\)/);
      else refused(() => cache.run(1), Error, op, /capturing/);
    } finally {
      cap.dispose();
    }
  }
  assert.equal(graph.numReplays, 0, 'a refused launch is not counted');
  graph.launch(other);
  assert.equal(graph.numReplays, 1, 'the stream launches again once the capture ended');
  await other.synchronizeAsync();
  for (const x of [exec, graph, cache]) x.dispose();
});
