/**
 * The demo's workload, defined once as data so that the CPU model and the GPU run the same work:
 * the forward pass of a tiny MLP (batch 64, 784 → 256 → 256 → 256 → 128 → 10, float32) with its
 * loss and accuracy, spread over three streams the way a hand-tuned CUDA program would:
 *
 * - the main stream uploads the batch and the labels and normalises the pixels;
 * - fork: every hidden layer runs split by output units, one half on stream A and one on stream B
 *   (gemm, bias, ReLU: three small kernels per half); between layers A and B exchange a join, since
 *   each half of the next layer reads the whole activation;
 * - the output layer is split along K (each side multiplies its own half of the last activation),
 *   and the main stream joins both partial products, adds them and the bias;
 * - fork again: softmax and argmax split by batch rows on A and B; join: cross-entropy and the
 *   loss/accuracy reduction on main, then the results go back to the host.
 *
 * 34 kernels, 2 uploads, 3 downloads; the weights stay on the device (uploaded once, not part of
 * the per-iteration work). `src/cli/workload-model.ts` records `MLP_PROGRAM` in the CPU model;
 * `src/cli/workload-gpu.ts` runs it on a GPU (eagerly, and captured into a CUDA graph).
 */

/** The MLP's shape: batch size and layer widths (inputs first). */
export const MLP = { batch: 64, widths: [784, 256, 256, 256, 128, 10] } as const;

/** Stream indices of the program: 0 is the main (origin) stream. */
export type Lane = 0 | 1 | 2;
/** The program's streams: main (the origin), A and B. */
export const LANES = { main: 0, a: 1, b: 2 } as const;
/** Display names of the lanes. */
export const LANE_NAMES: readonly string[] = ['main', 'A', 'B'];

/** A buffer's element type. */
export type ElementType = 'f32' | 'i32';

/** What a buffer holds and who writes it. */
export type BufferRole = 'input' | 'weight' | 'scratch' | 'output';

/** A device buffer of the program. */
export interface BufferSpec {
  readonly name: string;
  readonly elements: number;
  readonly type: ElementType;
  readonly role: BufferRole;
}

/** A kernel argument: a buffer (its device address), or a scalar of a C type. */
export type ProgramArg = { readonly buf: string } | { readonly i32: number } | { readonly f32: number };

/** The kernels of `KERNEL_SOURCE`. */
export type KernelFn = 'scale_shift' | 'gemm' | 'add_bias' | 'relu' | 'sum2_bias' | 'softmax_rows' | 'argmax_rows' | 'cross_entropy' | 'reduce_stats';

/** One step of the program. */
export type Step =
  | { readonly op: 'upload'; readonly stream: Lane; readonly name: string; readonly buffer: string }
  | { readonly op: 'download'; readonly stream: Lane; readonly name: string; readonly buffer: string }
  | {
      readonly op: 'kernel';
      readonly stream: Lane;
      readonly name: string;
      readonly fn: KernelFn;
      readonly grid: number;
      readonly block: number;
      readonly args: readonly ProgramArg[];
    }
  /**
   * Cross-stream dependencies: first an event is recorded on every `from` stream, then every `to`
   * stream waits on the event of its `from`. Recording all before any wait lets two streams join
   * each other (A ↔ B) without either event carrying the other's wait.
   */
  | { readonly op: 'join'; readonly edges: readonly (readonly [from: Lane, to: Lane])[] };

/** A program: its buffers and its steps, in issue order. */
export interface Program {
  readonly buffers: readonly BufferSpec[];
  readonly steps: readonly Step[];
}

/** The steps that become graph nodes (every step but `join`). */
export type NodeStep = Exclude<Step, { op: 'join' }>;

/** Pixels are 0..255; normalisation maps them to about −0.5..0.5. */
export const PIXEL_SCALE = 1 / 255;
export const PIXEL_SHIFT = -0.5;

const BLOCK = 256;
const blocksFor = (n: number): number => Math.ceil(n / BLOCK);

function buildProgram(): Program {
  const { batch, widths } = MLP;
  const layers = widths.length - 1;
  const buffers: BufferSpec[] = [
    { name: 'xRaw', elements: batch * widths[0]!, type: 'f32', role: 'input' },
    { name: 'labels', elements: batch, type: 'i32', role: 'input' },
    { name: 'x', elements: batch * widths[0]!, type: 'f32', role: 'scratch' },
  ];
  for (let l = 1; l <= layers; l++) {
    buffers.push({ name: `W${l}`, elements: widths[l - 1]! * widths[l]!, type: 'f32', role: 'weight' });
    buffers.push({ name: `b${l}`, elements: widths[l]!, type: 'f32', role: 'weight' });
    if (l < layers) buffers.push({ name: `h${l}`, elements: batch * widths[l]!, type: 'f32', role: 'scratch' });
  }
  const classes = widths[layers]!;
  buffers.push(
    { name: 'partialA', elements: batch * classes, type: 'f32', role: 'scratch' },
    { name: 'partialB', elements: batch * classes, type: 'f32', role: 'scratch' },
    { name: 'logits', elements: batch * classes, type: 'f32', role: 'scratch' },
    { name: 'probs', elements: batch * classes, type: 'f32', role: 'output' },
    { name: 'pred', elements: batch, type: 'i32', role: 'output' },
    { name: 'rowLoss', elements: batch, type: 'f32', role: 'scratch' },
    { name: 'correct', elements: batch, type: 'i32', role: 'scratch' },
    { name: 'stats', elements: 2, type: 'f32', role: 'output' },
  );

  const { main, a, b } = LANES;
  const sides = [
    [a, 'a', 'partialA'],
    [b, 'b', 'partialB'],
  ] as const;
  const steps: Step[] = [];
  const kernel = (stream: Lane, name: string, fn: KernelFn, grid: number, block: number, ...args: ProgramArg[]): void => {
    steps.push({ op: 'kernel', stream, name, fn, grid, block, args });
  };
  const buf = (name: string): ProgramArg => ({ buf: name });
  const i32 = (v: number): ProgramArg => ({ i32: v });
  const f32 = (v: number): ProgramArg => ({ f32: v });

  const pixels = batch * widths[0]!;
  steps.push({ op: 'upload', stream: main, name: 'upload x', buffer: 'xRaw' });
  steps.push({ op: 'upload', stream: main, name: 'upload labels', buffer: 'labels' });
  kernel(main, 'normalize x', 'scale_shift', blocksFor(pixels), BLOCK, buf('xRaw'), buf('x'), i32(pixels), f32(PIXEL_SCALE), f32(PIXEL_SHIFT));
  steps.push({ op: 'join', edges: [[main, a], [main, b]] });

  // Hidden layers, split by output units: side p computes columns [p·half, (p+1)·half).
  for (let l = 1; l < layers; l++) {
    const input = l === 1 ? 'x' : `h${l - 1}`;
    const k = widths[l - 1]!;
    const n = widths[l]!;
    const half = n / 2;
    sides.forEach(([s, part], p) => {
      const off = p * half;
      // gemm(A, aOff, lda, B, bOff, ldb, C, cOff, ldc, M, N, K)
      kernel(s, `layer${l}.gemm ${part}`, 'gemm', blocksFor(batch * half), BLOCK,
        buf(input), i32(0), i32(k), buf(`W${l}`), i32(off), i32(n), buf(`h${l}`), i32(off), i32(n), i32(batch), i32(half), i32(k));
      kernel(s, `layer${l}.bias ${part}`, 'add_bias', blocksFor(batch * half), BLOCK,
        buf(`h${l}`), i32(off), i32(n), buf(`b${l}`), i32(off), i32(batch), i32(half));
      kernel(s, `layer${l}.relu ${part}`, 'relu', blocksFor(batch * half), BLOCK, buf(`h${l}`), i32(off), i32(n), i32(batch), i32(half));
    });
    // Each half of the next layer reads the whole activation: A and B join each other. The
    // output layer below is split along K the same way as this one, so it needs no join.
    if (l < layers - 1) steps.push({ op: 'join', edges: [[a, b], [b, a]] });
  }

  // Output layer, split along K: side p multiplies its own half of the last activation.
  const k = widths[layers - 1]!;
  const halfK = k / 2;
  sides.forEach(([s, part, partial], p) => {
    kernel(s, `output.gemm ${part}`, 'gemm', blocksFor(batch * classes), BLOCK,
      buf(`h${layers - 1}`), i32(p * halfK), i32(k), buf(`W${layers}`), i32(p * halfK * classes), i32(classes),
      buf(partial), i32(0), i32(classes), i32(batch), i32(classes), i32(halfK));
  });
  steps.push({ op: 'join', edges: [[a, main], [b, main]] });
  kernel(main, 'output.sum+bias', 'sum2_bias', blocksFor(batch * classes), BLOCK,
    buf('partialA'), buf('partialB'), buf(`b${layers}`), buf('logits'), i32(batch), i32(classes));

  // Softmax and argmax, split by batch rows.
  steps.push({ op: 'join', edges: [[main, a], [main, b]] });
  const rows = batch / 2;
  sides.forEach(([s], p) => {
    const range = `rows ${p * rows}-${(p + 1) * rows - 1}`;
    kernel(s, `softmax ${range}`, 'softmax_rows', 1, rows, buf('logits'), buf('probs'), i32(p * rows), i32(rows), i32(classes));
    kernel(s, `argmax ${range}`, 'argmax_rows', 1, rows, buf('probs'), buf('pred'), i32(p * rows), i32(rows), i32(classes));
  });
  steps.push({ op: 'join', edges: [[a, main], [b, main]] });
  kernel(main, 'cross_entropy', 'cross_entropy', 1, batch, buf('probs'), buf('labels'), buf('pred'), buf('rowLoss'), buf('correct'), i32(batch), i32(classes));
  kernel(main, 'loss+accuracy', 'reduce_stats', 1, 32, buf('rowLoss'), buf('correct'), buf('stats'), i32(batch));
  steps.push({ op: 'download', stream: main, name: 'download probs', buffer: 'probs' });
  steps.push({ op: 'download', stream: main, name: 'download predictions', buffer: 'pred' });
  steps.push({ op: 'download', stream: main, name: 'download loss+accuracy', buffer: 'stats' });
  return { buffers, steps };
}

/** The demo's program (see the file comment). */
export const MLP_PROGRAM: Program = buildProgram();

/** The steps of `program` that become graph nodes, in issue order (node i of a capture is step i). */
export function nodeSteps(program: Program): NodeStep[] {
  return program.steps.filter((s): s is NodeStep => s.op !== 'join');
}

/** The buffer `name` of `program`. @throws Error for an unknown name (a bug in the program). */
export function bufferSpec(program: Program, name: string): BufferSpec {
  const b = program.buffers.find((x) => x.name === name);
  if (b === undefined) throw new Error(`workload: unknown buffer ${name}`);
  return b;
}

/** Bytes of a buffer (every element type is 4 bytes). */
export function bufferBytes(spec: BufferSpec): number {
  return spec.elements * 4;
}

/**
 * The kernels, in CUDA C++ compiled at run time with NVRTC. Plain and deterministic on purpose
 * (one thread per output element, fixed summation order, no atomics): the graph's results must be
 * bit-for-bit those of the eager run.
 */
export const KERNEL_SOURCE = String.raw`
extern "C" __global__ void scale_shift(const float *in, float *out, int n, float scale, float shift) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * scale + shift;
}
// C[cOff + m*ldc + n] = sum_k A[aOff + m*lda + k] * B[bOff + k*ldb + n], for m < M, n < N.
extern "C" __global__ void gemm(const float *A, int aOff, int lda, const float *B, int bOff, int ldb,
                                float *C, int cOff, int ldc, int M, int N, int K) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  int m = i / N, n = i % N;
  const float *a = A + aOff + m * lda;
  const float *b = B + bOff + n;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * b[k * ldb];
  C[cOff + m * ldc + n] = acc;
}
extern "C" __global__ void add_bias(float *C, int cOff, int ldc, const float *bias, int bOff, int M, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  int m = i / N, n = i % N;
  C[cOff + m * ldc + n] += bias[bOff + n];
}
extern "C" __global__ void relu(float *C, int cOff, int ldc, int M, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  int m = i / N, n = i % N;
  float *c = C + cOff + m * ldc + n;
  *c = fmaxf(*c, 0.0f);
}
extern "C" __global__ void sum2_bias(const float *P, const float *Q, const float *bias, float *out, int M, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M * N) out[i] = P[i] + Q[i] + bias[i % N];
}
extern "C" __global__ void softmax_rows(const float *logits, float *probs, int row0, int rows, int N) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  r += row0;
  const float *z = logits + r * N;
  float *p = probs + r * N;
  float mx = z[0];
  for (int j = 1; j < N; ++j) mx = fmaxf(mx, z[j]);
  float sum = 0.0f;
  for (int j = 0; j < N; ++j) { float e = expf(z[j] - mx); p[j] = e; sum += e; }
  float inv = 1.0f / sum;
  for (int j = 0; j < N; ++j) p[j] *= inv;
}
extern "C" __global__ void argmax_rows(const float *probs, int *pred, int row0, int rows, int N) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  r += row0;
  const float *p = probs + r * N;
  int best = 0;
  for (int j = 1; j < N; ++j) if (p[j] > p[best]) best = j;
  pred[r] = best;
}
extern "C" __global__ void cross_entropy(const float *probs, const int *labels, const int *pred,
                                         float *rowLoss, int *correct, int M, int N) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= M) return;
  rowLoss[r] = -logf(fmaxf(probs[r * N + labels[r]], 1e-30f));
  correct[r] = pred[r] == labels[r] ? 1 : 0;
}
// stats[0] = mean loss, stats[1] = accuracy. One thread, fixed order: deterministic.
extern "C" __global__ void reduce_stats(const float *rowLoss, const int *correct, float *stats, int M) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float loss = 0.0f;
  int hits = 0;
  for (int r = 0; r < M; ++r) { loss += rowLoss[r]; hits += correct[r]; }
  stats[0] = loss / M;
  stats[1] = (float)hits / M;
}
`;
