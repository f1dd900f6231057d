/**
 * The demo workload's data (a deterministic batch, labels and weights) and its CPU reference: the
 * same MLP forward pass in float64, written straight from the maths, not from the program's steps,
 * so it checks the GPU's results independently.
 */
import { mulberry32 } from '../util/random.js';
import { MLP, PIXEL_SCALE, PIXEL_SHIFT, type Program } from './workload.js';

/** Host arrays by buffer name: the inputs and the weights. */
export type WorkloadData = ReadonlyMap<string, Float32Array | Int32Array>;

/** What the forward pass produces. */
export interface ForwardResult {
  /** Softmax probabilities, batch × classes, row-major. */
  readonly probs: ArrayLike<number>;
  /** Predicted class per row. */
  readonly pred: ArrayLike<number>;
  /** Mean cross-entropy loss. */
  readonly loss: number;
  /** Fraction of rows predicted right. */
  readonly accuracy: number;
}

/**
 * The batch (integer pixels 0..255), the labels (0..9) and weights scaled as Glorot's uniform
 * initialisation does, so activations stay in a sensible range through every layer.
 */
export function workloadData(program: Program, seed = 42): WorkloadData {
  const next = mulberry32(seed);
  const { widths } = MLP;
  const classes = widths[widths.length - 1]!;
  const out = new Map<string, Float32Array | Int32Array>();
  for (const b of program.buffers) {
    if (b.role !== 'input' && b.role !== 'weight') continue;
    if (b.type === 'i32') {
      out.set(b.name, Int32Array.from({ length: b.elements }, () => Math.floor(next() * classes)));
    } else if (b.name === 'xRaw') {
      out.set(b.name, Float32Array.from({ length: b.elements }, () => Math.floor(next() * 256)));
    } else {
      const layer = Number(b.name.slice(1));
      const limit = Math.sqrt(6 / (widths[layer - 1]! + widths[layer]!));
      const scale = b.name.startsWith('b') ? 0.1 : limit;
      out.set(b.name, Float32Array.from({ length: b.elements }, () => (next() * 2 - 1) * scale));
    }
  }
  return out;
}

/** The forward pass in float64, from the maths. */
export function referenceForward(data: WorkloadData): ForwardResult {
  const { batch, widths } = MLP;
  const get = (name: string): Float32Array | Int32Array => {
    const a = data.get(name);
    if (a === undefined) throw new Error(`workload: no data for ${name}`);
    return a;
  };
  const xRaw = get('xRaw');
  let act = Float64Array.from(xRaw, (v) => v * PIXEL_SCALE + PIXEL_SHIFT);
  const layers = widths.length - 1;
  for (let l = 1; l <= layers; l++) {
    const k = widths[l - 1]!;
    const n = widths[l]!;
    const W = get(`W${l}`);
    const b = get(`b${l}`);
    const next = new Float64Array(batch * n);
    for (let m = 0; m < batch; m++) {
      for (let j = 0; j < n; j++) {
        let acc = b[j]!;
        for (let i = 0; i < k; i++) acc += act[m * k + i]! * W[i * n + j]!;
        next[m * n + j] = l < layers ? Math.max(acc, 0) : acc;
      }
    }
    act = next;
  }
  const classes = widths[layers]!;
  const labels = get('labels');
  const probs = new Float64Array(batch * classes);
  const pred = new Int32Array(batch);
  let loss = 0;
  let hits = 0;
  for (let m = 0; m < batch; m++) {
    const row = act.subarray(m * classes, (m + 1) * classes);
    const mx = Math.max(...row);
    let sum = 0;
    for (let j = 0; j < classes; j++) sum += Math.exp(row[j]! - mx);
    let best = 0;
    for (let j = 0; j < classes; j++) {
      probs[m * classes + j] = Math.exp(row[j]! - mx) / sum;
      if (row[j]! > row[best]!) best = j;
    }
    pred[m] = best;
    loss -= Math.log(probs[m * classes + labels[m]!]!);
    if (best === labels[m]) hits++;
  }
  return { probs, pred, loss: loss / batch, accuracy: hits / batch };
}

/** How far `got` is from the reference: the largest error relative to the largest reference value. */
export function relativeError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i]! - want[i]!));
    scale = Math.max(scale, Math.abs(want[i]!));
  }
  return scale === 0 ? err : err / scale;
}
