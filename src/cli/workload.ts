/**
 * The demo's workload: the forward pass of a tiny 2-layer MLP (batch 64, 784 → 256 → 10, float32)
 * with its loss, spread over three streams the way a hand-tuned CUDA program would:
 *
 * - the main stream uploads the batch and the layer-2 weights while streams A and B each upload
 *   one half of the layer-1 weights (fork: A and B wait for the batch);
 * - layer 1 runs split by hidden units, half on A and half on B (gemm, bias, ReLU);
 * - the main stream joins both halves and runs layer 2 (gemm, bias);
 * - the softmax and argmax run split by batch rows on A and B (a second fork/join);
 * - the main stream computes the loss and downloads the results, then a host callback reports.
 *
 * The same script is meant to drive a real capture later (the GPU path of `cudagraph demo`), so it
 * talks only to the recorder methods a real stream also has.
 */
import { CaptureEvent, StreamId, type NodeId } from '../model/ids.js';
import { MemcpyDir } from '../model/memcpy-dir.js';
import type { StreamCapture } from '../model/stream-capture.js';

/** The MLP's shape: batch size and layer widths. */
export const MLP = { batch: 64, inputs: 784, hidden: 256, outputs: 10 } as const;

/** The streams the workload uses: main (the origin), A and B. */
export const DEMO_STREAMS = { main: StreamId(0), a: StreamId(1), b: StreamId(2) } as const;

const F32 = 4;

/** Records the workload on `cap` (whose three streams are begun here); returns the loss node. */
export function recordMlpForward(cap: StreamCapture): NodeId {
  const { main, a, b } = DEMO_STREAMS;
  const { batch, inputs, hidden, outputs } = MLP;
  const half = hidden / 2;
  const rows = batch / 2;
  let nextEvent = 0;
  const event = (): CaptureEvent => CaptureEvent(nextEvent++);
  /** `to` waits for everything recorded on `from` so far. */
  const join = (from: StreamId, to: StreamId): void => {
    const e = event();
    cap.recordEvent(from, e);
    cap.waitEvent(to, e);
  };

  for (const s of [main, a, b]) cap.beginCapture(s);

  // Uploads: the batch on main, one half of the layer-1 weights on each side stream (no
  // dependency between them: they overlap).
  cap.recordMemcpy(main, 'upload x', MemcpyDir.HostToDevice, batch * inputs * F32);
  for (const [s, part] of [
    [a, 'a'],
    [b, 'b'],
  ] as const) {
    cap.recordMemcpy(s, `upload W1${part}`, MemcpyDir.HostToDevice, inputs * half * F32);
    cap.recordMemcpy(s, `upload b1${part}`, MemcpyDir.HostToDevice, half * F32);
    cap.recordMemset(s, `zero h1${part}`, batch * half * F32, 0);
  }
  // Fork: layer 1 on A and B needs the batch. Main meanwhile uploads what layer 2 and the loss need.
  join(main, a);
  join(main, b);
  cap.recordMemcpy(main, 'upload labels', MemcpyDir.HostToDevice, batch * 4);
  cap.recordMemcpy(main, 'upload W2', MemcpyDir.HostToDevice, hidden * outputs * F32);
  cap.recordMemcpy(main, 'upload b2', MemcpyDir.HostToDevice, outputs * F32);
  cap.recordMemset(main, 'zero logits', batch * outputs * F32, 0);

  // Layer 1, split by hidden units.
  for (const [s, part] of [
    [a, 'a'],
    [b, 'b'],
  ] as const) {
    cap.recordKernel(s, `layer1.gemm ${part}`, (batch / 16) * (half / 16), 256, 2 * 16 * 16 * F32);
    cap.recordKernel(s, `layer1.bias ${part}`, (batch * half) / 256, 256, 0);
    cap.recordKernel(s, `layer1.relu ${part}`, (batch * half) / 256, 256, 0);
  }

  // Layer 2 on main, once both halves are done (join).
  join(a, main);
  join(b, main);
  cap.recordKernel(main, 'layer2.gemm', batch / 16, 256, 2 * 16 * 16 * F32);
  cap.recordKernel(main, 'layer2.bias', Math.ceil((batch * outputs) / 256), 256, 0);

  // Softmax and argmax, split by batch rows (fork), then the loss on main (join).
  join(main, a);
  join(main, b);
  for (const [s, part] of [
    [a, 'rows 0-31'],
    [b, 'rows 32-63'],
  ] as const) {
    cap.recordKernel(s, `softmax ${part}`, rows, 32, outputs * F32);
    cap.recordKernel(s, `argmax ${part}`, rows, 32, 0);
  }
  join(a, main);
  join(b, main);
  cap.recordKernel(main, 'cross_entropy', batch, 32, 0);
  const loss = cap.recordKernel(main, 'mean loss', 1, 64, 64 * F32);

  // Results back to the host, then report.
  cap.recordMemcpy(main, 'download probs', MemcpyDir.DeviceToHost, batch * outputs * F32);
  cap.recordMemcpy(main, 'download predictions', MemcpyDir.DeviceToHost, batch * 4);
  cap.recordMemcpy(main, 'download loss', MemcpyDir.DeviceToHost, F32);
  cap.recordHostCallback(main, 'report accuracy');
  return loss;
}
