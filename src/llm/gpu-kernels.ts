/**
 * The decoder's CUDA kernels, compiled with NVRTC when a GPU engine starts. One decode step of a
 * batch of B sequences (B one of the batch buckets) is five launches a layer: the Q|K|V GEMV of the
 * RMSNorm of the residual (the norm computed inside the GEMV), attention (with the rotary embedding
 * of q and k and the KV-cache append), the output GEMV (added into the residual), the gate|up GEMV of the second RMSNorm
 * (which writes their SwiGLU), the down GEMV (added into the residual); around the layers,
 * the embedding, the logits GEMV of the final norm and a greedy argmax. A prefill step (one that
 * holds several consecutive positions of a sequence: a prompt's chunk) has a sixth launch a layer,
 * the KV append on its own before attention, so each position sees the keys of those before it.
 *
 * Programmatic dependent launch: every kernel loads what does not depend on the kernels before it
 * (a GEMV's first weights; in a decode step, attention's cached keys and values and its rotary
 * angles), then waits for them (`griddepcontrol.wait`) before it reads or writes anything else,
 * and lets the next one start (`griddepcontrol.launch_dependents`) once its main loop is done, or
 * at once where the next kernel is small (attention, argmax) or is the output GEMV after
 * attention's few blocks. Launched with programmatic edges (the graphed step), each kernel's start and its
 * weights' memory latency overlap the kernel before; launched plainly both instructions do
 * nothing. Either way the arithmetic is the same.
 *
 * Every kernel reads the batch's slots and positions from device memory, so a step's graph serves
 * every sequence length, and works in f32 whatever the weights are stored as (f32, or bf16 as the
 * upper half of an f32: `W_BF16`). Reductions run in a fixed order, so the same launch gives the
 * same bits, eager or replayed.
 */

/** The batch buckets: a step of B sequences is padded up to the next one, whose GEMVs have a tile of their own (`GEMV_TILES`). */
export const GEMV_BATCHES = [1, 2, 4, 8, 16, 32] as const;

/** Positions a block of the attention kernel covers (a score each in shared memory); longer contexts are split over blocks. */
export const ATTENTION_CHUNK = 256;

/** Head widths with an attention kernel of their own. */
export const ATTENTION_HEAD_DIMS = [16, 32, 64, 128, 256] as const;

/**
 * What a GEMV computes: W · x of the plain rows, W · RMSNorm(x), or the SwiGLU of W · RMSNorm(x)
 * where W's rows are gate and up rows in turn (gate j at 2j, up j at 2j + 1: `interleaveRows`),
 * one output per pair.
 */
export const GEMV_MODE = { plain: 0, rmsnorm: 1, rmsnormSwiglu: 2 } as const;

/**
 * The rows of a and b (`cols` values each, as many rows in each) in turn: a's row j at 2j, b's at
 * 2j + 1, the layout of the gate|up matrix of `GEMV_MODE.rmsnormSwiglu`.
 */
export function interleaveRows(a: Float32Array, b: Float32Array, cols: number): Float32Array {
  const out = new Float32Array(a.length + b.length);
  for (let j = 0; j * cols < a.length; j++) {
    out.set(a.subarray(j * cols, (j + 1) * cols), 2 * j * cols);
    out.set(b.subarray(j * cols, (j + 1) * cols), (2 * j + 1) * cols);
  }
  return out;
}

/**
 * How bucket B's GEMVs split the work: `batch` sequences a block (the bucket's B in B / batch
 * slices, each reading the weights again, mostly from L2) and `rows` rows a warp (each input it
 * loads serves that many rows). A lane keeps rows × batch sums in registers: more of either saves
 * loads and costs resident warps. Measured on the H200 (default config, graphed step): see
 * docs/decoder.md, "GEMVs for every batch size".
 */
export const GEMV_TILES: Readonly<Record<number, { readonly batch: number; readonly rows: number }>> = {
  1: { batch: 1, rows: 1 },
  2: { batch: 2, rows: 1 },
  4: { batch: 4, rows: 1 },
  8: { batch: 4, rows: 2 },
  16: { batch: 4, rows: 4 },
  32: { batch: 8, rows: 4 },
};

/** The GEMV kernel's name for bucket B: `gemv_<f32|bf16>_m<mode>_b<batch>_r<rows>` of its tile. */
export function gemvName(dtype: 'f32' | 'bf16', mode: number, bucket: number): string {
  const t = GEMV_TILES[bucket]!;
  return `gemv_${dtype}_m${mode}_b${t.batch}_r${t.rows}`;
}

/**
 * Blocks of a GEMV an SM holds at once: its 256 threads use about 64 registers each, and an SM
 * has 64 K of them. A grid larger than this many blocks a multiprocessor runs in two waves, and
 * the second wave's weights are loaded only when the first is done.
 */
export const GEMV_BLOCKS_PER_SM = 4;

/**
 * Warps a GEMV row of `rows` × `cols` weights is split over: about one per 256 columns, at most
 * 8, dividing `cols / 4`; fewer while batch 1's grid (8 / split rows a block) would not fit on
 * `multiprocessors` SMs at once; at most 4 with `pairs` (a block holds 8 / split groups of a
 * tile's rows and must hold both rows of each gate|up pair whatever the tile: with one row a
 * group, 8 / split must be even). The split depends on the matrix and the device only, never
 * on the batch, so that a sequence's sums are the same in every bucket.
 */
export function gemvSplit(cols: number, rows: number, multiprocessors: number, pairs = false): number {
  let k = 1;
  while (k < (pairs ? 4 : 8) && cols / (2 * k) >= 256 && cols % (8 * k) === 0) k *= 2;
  while (k > 1 && Math.ceil(rows / (8 / k)) > GEMV_BLOCKS_PER_SM * multiprocessors) k /= 2;
  return k;
}

const COMMON_SOURCE = String.raw`
typedef unsigned short bf16_t;
// NVRTC has no math.h: minus infinity by its bits.
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ float ld(const float *w, size_t i) { return w[i]; }
__device__ __forceinline__ float ld(const bf16_t *w, size_t i) { return __uint_as_float(((unsigned)w[i]) << 16); }
// Four consecutive weights from element i (a multiple of 4): one 16-byte (f32) or 8-byte (bf16) load.
__device__ __forceinline__ float4 ld4(const float *w, size_t i) { return *reinterpret_cast<const float4 *>(w + i); }
__device__ __forceinline__ float4 ld4(const bf16_t *w, size_t i) {
  uint2 u = *reinterpret_cast<const uint2 *>(w + i);
  return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u), __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

// Programmatic dependent launch (sm_90+; nothing before): let the next kernel start; wait for the last.
__device__ __forceinline__ void pdl_start() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The sum (or max) of v over a block of at most 1024 threads; every thread gets it. Fixed order.
__device__ float block_sum(float v, float *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(t);
}
__device__ float block_max(float v, float *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < warps ? scratch[lane] : NEG_INF;
  return warp_max(t);
}

// acc + w . x, in this order, in every GEMV and attention score: the same bits for a row
// whatever the code around it (an expression left to the compiler may be fused differently in
// two places, as attention's two ways of reading keys showed).
__device__ __forceinline__ float dot4(float acc, float4 w, float4 x) {
  return fmaf(w.w, x.w, fmaf(w.z, x.z, fmaf(w.y, x.y, fmaf(w.x, x.x, acc))));
}
// acc + p * v, each lane one fused multiply-add.
__device__ __forceinline__ float4 axpy4(float p, float4 v, float4 acc) {
  return make_float4(fmaf(p, v.x, acc.x), fmaf(p, v.y, acc.y), fmaf(p, v.z, acc.z), fmaf(p, v.w, acc.w));
}

// out[b*rows + r] (+)= W[r, :] . in_b for NB sequences b of the batch (the slice blockIdx.y: a
// batch of B runs B / NB slices, each reading W, mostly from L2), W read once for the slice.
// A block of 8 warps holds 8 / ksplit groups of ROWS rows; each group's columns are split over
// ksplit warps (so a matrix of few, long rows still fills the GPU), each lane loading four
// columns of each of its ROWS rows at a time, so that every input it loads serves ROWS rows
// (with many sequences the inputs, not the weights, are most of the loads); the parts are added
// in a fixed order (no atomics: the same bits every run). A row's sum is taken in the same order
// whatever NB and ROWS are (lane l adds columns l*4 + 128 i in ascending i; then the warp's sum;
// then the ksplit parts in order), so a sequence's outputs do not depend on its batch. in_b is:
//   MODE 0: in[b, :];
//   MODE 1, 2: RMSNorm of in[b, :] with weight nw (Hugging Face's LlamaRMSNorm: w * (x / rms(x))),
//           the norm computed by every block (cheap beside its rows of W): the sums are taken
//           with nw * x and scaled by 1 / rms(x) at the end, so that the norm's own reduction
//           runs beside them rather than before them.
// MODE 2 writes, for each pair of rows (2j: gate, 2j + 1: up), out[b * rows/2 + j] = silu(gate) *
// up: computed once a hidden unit here rather than by every warp of the down GEMV that reads it
// (each of which would take the exponentials of all its columns after its wait). A block holds
// both rows of a pair: 8 / ksplit * ROWS is even (ksplit at most 4), and so is rows.
// cols must be a multiple of 4 * ksplit.
template <int MODE, typename W>
__device__ __forceinline__ float4 input4(const float *in, const W *nw, int b, int cols, int c) {
  float4 x = *reinterpret_cast<const float4 *>(in + (size_t)b * cols + c);
  if (MODE != 0) {
    float4 n = ld4(nw, c);
    return make_float4(n.x * x.x, n.y * x.y, n.z * x.z, n.w * x.w);
  }
  return x;
}

template <typename W, int NB, int MODE, int ROWS>
__device__ void gemv(float *out, const W *w, const float *in, const W *nw, int rows, int cols, int accumulate, float eps, int ksplit, int startNext) {
  // Up to PRE 4-column pieces of each row per lane are loaded first, before waiting for the
  // kernel before and before the norm, neither of which they depend on: the weights' memory
  // latency overlaps both. (One piece with several rows: the registers go to the accumulators.)
  const int PRE = ROWS == 1 ? 4 : 1;
  // startNext: the next kernel is small (attention, argmax) and may start at once: its few blocks
  // take little SM room, and their loads made before their wait overlap all of this kernel.
  if (startNext) pdl_start();
  __shared__ float part[8][ROWS][NB];
  __shared__ float rs[NB];
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // This block's slice of the batch.
  in += (size_t)blockIdx.y * NB * cols;
  out += (size_t)blockIdx.y * NB * (MODE == 2 ? rows / 2 : rows);
  int perBlock = 8 / ksplit;
  int row0 = (blockIdx.x * perBlock + warp / ksplit) * ROWS;
  int seg = cols / ksplit, c0 = (warp % ksplit) * seg, end = c0 + seg;
  // Rows past the matrix read row 0 (their sums are dropped): no branch in the loop.
  size_t base[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; r++) base[r] = row0 + r < rows ? (size_t)(row0 + r) * cols : 0;
  bool live = row0 < rows;
  float4 wpre[PRE][ROWS], npre[PRE];
#pragma unroll
  for (int i = 0; i < PRE; i++) {
    int c = c0 + lane * 4 + i * 128;
    if (live && c < end) {
#pragma unroll
      for (int r = 0; r < ROWS; r++) wpre[i][r] = ld4(w, base[r] + c);
      // The norm's weights too: no kernel writes them either.
      if (MODE != 0) npre[i] = ld4(nw, c);
    }
  }
  pdl_wait();
  if (MODE != 0) {
    // One warp a sequence; four independent 16-byte loads in flight per lane.
    for (int b = warp; b < NB; b += 8) {
      float ss = 0.0f;
#pragma unroll 4
      for (int c = lane * 4; c < cols; c += 128) {
        float4 v = *reinterpret_cast<const float4 *>(in + (size_t)b * cols + c);
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      }
      ss = warp_sum(ss);
      if (lane == 0) rs[b] = rsqrtf(ss / cols + eps);
    }
    // No barrier here: rs is read after the one before the parts are added.
  }
  float acc[ROWS][NB];
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int b = 0; b < NB; b++) acc[r][b] = 0.0f;
  if (live) {
#pragma unroll
    for (int i = 0; i < PRE; i++) {
      int c = c0 + lane * 4 + i * 128;
      if (c < end) {
#pragma unroll
        for (int b = 0; b < NB; b++) {
          float4 xv;
          if (MODE != 0) {
            // input4's arithmetic, with the norm's weights already loaded.
            float4 x = *reinterpret_cast<const float4 *>(in + (size_t)b * cols + c);
            xv = make_float4(npre[i].x * x.x, npre[i].y * x.y, npre[i].z * x.z, npre[i].w * x.w);
          } else {
            xv = input4<MODE>(in, nw, b, cols, c);
          }
#pragma unroll
          for (int r = 0; r < ROWS; r++) acc[r][b] = dot4(acc[r][b], wpre[i][r], xv);
        }
      }
    }
#pragma unroll(ROWS == 1 ? 4 : 1)
    for (int c = c0 + lane * 4 + PRE * 128; c < end; c += 128) {
      float4 wv[ROWS];
#pragma unroll
      for (int r = 0; r < ROWS; r++) wv[r] = ld4(w, base[r] + c);
#pragma unroll
      for (int b = 0; b < NB; b++) {
        float4 xv = input4<MODE>(in, nw, b, cols, c);
#pragma unroll
        for (int r = 0; r < ROWS; r++) acc[r][b] = dot4(acc[r][b], wv[r], xv);
      }
    }
  }
  // The next kernel may start now: its blocks take SM room only while this one finishes.
  if (!startNext) pdl_start();
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int b = 0; b < NB; b++) {
      float v = warp_sum(acc[r][b]);
      if (lane == 0) part[warp][r][b] = v;
    }
  __syncthreads();
  // Row rr of the block (rr = g * ROWS + r) is row blockIdx.x * perBlock * ROWS + rr of W.
  const int pair = MODE == 2 ? 2 : 1;
  for (int t = threadIdx.x; t < perBlock * ROWS / pair * NB; t += blockDim.x) {
    int rr0 = t / NB * pair, b = t % NB;
    int grow = blockIdx.x * perBlock * ROWS + rr0;
    if (grow >= rows) continue;
    float v[2];
#pragma unroll
    for (int e = 0; e < pair; e++) {
      int g = (rr0 + e) / ROWS, r = (rr0 + e) % ROWS;
      float s = 0.0f;
      for (int k = 0; k < ksplit; k++) s += part[g * ksplit + k][r][b];
      v[e] = MODE != 0 ? s * rs[b] : s;
    }
    if (MODE == 2) {
      out[(size_t)b * (rows / 2) + grow / 2] = v[0] / (1.0f + expf(-v[0])) * v[1];
    } else {
      float *o = out + (size_t)b * rows + grow;
      *o = accumulate ? *o + v[0] : v[0];
    }
  }
}
#define GEMV(T, NAME, NB, MODE, ROWS) \
  extern "C" __global__ void __launch_bounds__(256) gemv_##NAME##_m##MODE##_b##NB##_r##ROWS(float *out, const T *w, const float *in, const T *nw, \
                                                               int rows, int cols, int accumulate, float eps, int ksplit, int startNext) { \
    gemv<T, NB, MODE, ROWS>(out, w, in, nw, rows, cols, accumulate, eps, ksplit, startNext); }
#define GEMV_MODES(T, NAME, NB, ROWS) GEMV(T, NAME, NB, 0, ROWS) GEMV(T, NAME, NB, 1, ROWS) GEMV(T, NAME, NB, 2, ROWS)
// x[b, :] = embedding[tokens[b], :] (one block a sequence).
template <typename W>
__device__ void embed(float *x, const W *emb, const int *tokens, int dim) {
  pdl_start();
  pdl_wait();
  int b = blockIdx.x;
  size_t row = (size_t)tokens[b] * dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) x[(size_t)b * dim + i] = ld(emb, row + i);
}
extern "C" __global__ void embed_f32(float *x, const float *emb, const int *tokens, int dim) { embed(x, emb, tokens, dim); }
extern "C" __global__ void embed_bf16(float *x, const bf16_t *emb, const int *tokens, int dim) { embed(x, emb, tokens, dim); }

// Hugging Face's rotary embedding (rotate_half: pairs (j, j + hd/2)): the angle's sine and
// cosine of pair j at position pos, then the rotation of one pair by them.
__device__ __forceinline__ void rope_angle(int j, int hd, int pos, float theta, float *s, float *c) {
  float inv = 1.0f / powf(theta, (float)(2 * j) / (float)hd);
  sincosf((float)pos * inv, s, c);
}
// Explicit fused multiply-adds: attention rotates the new key, kv_append a prompt's keys, and
// both must give the same bits (an expression left to the compiler may be fused differently).
__device__ __forceinline__ void rope_rotate(float x1, float x2, float s, float c, float *r1, float *r2) {
  *r1 = fmaf(x1, c, -__fmul_rn(x2, s));
  *r2 = fmaf(x2, c, __fmul_rn(x1, s));
}
__device__ __forceinline__ void rope_pair(float x1, float x2, int j, int hd, int pos, float theta, float *r1, float *r2) {
  float s, c;
  rope_angle(j, hd, pos, theta, &s, &c);
  rope_rotate(x1, x2, s, c, r1, r2);
}

// out[b, h*HD:(h+1)*HD] = softmax(q . K[0..pos] / sqrt(HD)) . V[0..pos] for head h of sequence b
// (grouped-query: kv head h / (heads / kvHeads)). Blocks of 256 threads, grid (sequence, head,
// chunk): block z covers positions [z*CHUNK, (z+1)*CHUNK). A sequence whose positions fit in one
// chunk is done by its first block alone, which writes the output; the others return at once.
// A longer one is split (flash-decoding): each block of a chunk the sequence reaches writes its
// chunk's max score, sum of exponentials and weighted values to part, and the last block to
// arrive (a counter per (sequence, head), reset by that block) combines them in chunk order, so
// the result does not depend on which block came last. Long contexts thus spread over many SMs,
// and the grid, fixed at capture, serves every length.
// qkv = [q (heads*HD) | k (kvHeads*HD) | v (kvHeads*HD)] as the Q|K|V GEMV wrote it, before the
// rotary embedding: each block rotates its q, the block holding pos also the current k, takes
// the current k and v from registers rather than the cache, and for the first head of each kv
// head writes them into the cache of (slot, layer) at pos (cache:
// [slot][layer][position][kvHeads*HD]). No block reads what another writes in the same launch
// (other blocks read positions below pos only), and the rotation and the cache append need no
// launch of their own. With appended = 1 (a prompt's chunk: kv_append ran first) every key and
// value, pos's included, comes from the cache and nothing is written. Scores: a thread a position, its key row read as HD/4 independent 16-byte
// loads. Values: the block in 1024/HD stripes of positions, a thread four columns, the stripes
// added in a fixed order. Dynamic shared memory: CHUNK scores.
template <int HD>
__device__ void attention(float *out, const float *qkv, float *kcache, float *vcache, const int *slots,
                          const int *positions, int heads, int kvHeads, int layers, int layer, int maxPos, float theta,
                          float *part, unsigned *arrived, int chunk, int appended) {
  extern __shared__ float sc[];
  __shared__ float scratch[32];
  __shared__ float4 q4[HD / 4];
  __shared__ float4 kcur4[HD / 4];
  __shared__ float4 vcur4[HD / 4];
  __shared__ float4 partial[256];
  __shared__ bool last;
  int b = blockIdx.x, h = blockIdx.y, z = blockIdx.z;
  // Positions and slots come from the step's input copy, which every kernel of the step follows:
  // safe to read before the wait, so the blocks past the sequence's length leave at once.
  int pos = positions[b], slot = slots[b], group = heads / kvHeads, kvh = h / group;
  int chunks = pos / chunk + 1;
  if (z >= chunks) return;
  // The output GEMV may start at once: its blocks are few and load their weights meanwhile.
  pdl_start();
  int t0 = z * chunk, t1 = min(t0 + chunk, pos + 1);
  // fresh: this block covers pos and its key and value are not in the cache yet (kv_append did
  // not run): it takes them from registers, and the first head of the kv head writes them.
  bool fresh = !appended && t1 == pos + 1;
  int qkvDim = (heads + 2 * kvHeads) * HD, kvDim = kvHeads * HD;
  size_t base = ((size_t)slot * layers + layer) * maxPos * kvDim + (size_t)kvh * HD;
  // Values: a thread four columns (one 16-byte load a position), the block in 1024 / HD stripes
  // of positions. Positions read from the cache: [t0, tv). pos comes last in its stripe either
  // way, so a fresh and an appended step add the same values in the same order: the same bits.
  const int C4 = HD / 4, stripes = 256 / C4;
  int d4 = threadIdx.x % C4, stripe = threadIdx.x / C4;
  int tv = fresh ? pos : t1;
  // early: a decode step (the cached keys and values, below pos, were written by earlier steps,
  // not by the kernels before this one), a head width whose key row and value columns fit in
  // registers (a thread's key row is HD floats, its values a position in each of HD / 4 stripes)
  // and a chunk of at most one position a thread: both are loaded before the wait, so their
  // memory latency overlaps the kernel before rather than following it.
  constexpr int EARLY = HD <= 64 ? HD / 4 : 1;
  bool early = HD <= 64 && !appended && chunk <= (int)blockDim.x;
  float4 kpre[EARLY], vpre[EARLY];
  if (early) {
    int t = t0 + threadIdx.x;
    if (t < t1 && !(t == pos && fresh)) {
      const float4 *k = reinterpret_cast<const float4 *>(kcache + base + (size_t)t * kvDim);
#pragma unroll
      for (int i = 0; i < EARLY; i++) kpre[i] = k[i];
    }
#pragma unroll
    for (int i = 0; i < EARLY; i++) {
      int tt = t0 + stripe + i * stripes;
      if (tt < tv) vpre[i] = *reinterpret_cast<const float4 *>(vcache + base + (size_t)tt * kvDim + 4 * d4);
    }
  }
  // The rotation's angles depend on pos alone: computed before the wait too.
  const int half = HD / 2;
  float rs = 0.0f, rc = 0.0f;
  if (threadIdx.x < half) rope_angle(threadIdx.x, HD, pos, theta, &rs, &rc);
  pdl_wait();
  const float *row = qkv + (size_t)b * qkvDim;
  size_t at = base + (size_t)pos * kvDim;
  bool writer = fresh && h % group == 0;
  if (threadIdx.x < half) {
    int j = threadIdx.x;
    float *q = reinterpret_cast<float *>(q4), *kc = reinterpret_cast<float *>(kcur4);
    const float *qs = row + h * HD, *ks = row + (heads + kvh) * HD;
    rope_rotate(qs[j], qs[j + half], rs, rc, &q[j], &q[j + half]);
    if (fresh) {
      rope_rotate(ks[j], ks[j + half], rs, rc, &kc[j], &kc[j + half]);
      if (writer) {
        kcache[at + j] = kc[j];
        kcache[at + j + half] = kc[j + half];
      }
    }
  }
  if (fresh) {
    for (int d = threadIdx.x; d < HD; d += blockDim.x) {
      float v = row[(heads + kvHeads + kvh) * HD + d];
      reinterpret_cast<float *>(vcur4)[d] = v;
      if (writer) vcache[at + d] = v;
    }
  }
  __syncthreads();
  float scale = rsqrtf((float)HD), m = NEG_INF;
  if (early) {
    int t = t0 + threadIdx.x;
    if (t < t1) {
      bool cur = t == pos && fresh;
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < EARLY; i++) {
        float4 kv = cur ? kcur4[i] : kpre[i];
        s = dot4(s, q4[i], kv);
      }
      s *= scale;
      sc[t - t0] = s;
      m = s;
    }
  } else {
    for (int t = t0 + threadIdx.x; t < t1; t += blockDim.x) {
      const float4 *k = t == pos && fresh ? kcur4 : reinterpret_cast<const float4 *>(kcache + base + (size_t)t * kvDim);
      float4 kv[HD / 4];
#pragma unroll
      for (int i = 0; i < HD / 4; i++) kv[i] = k[i];
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < HD / 4; i++) s = dot4(s, q4[i], kv[i]);
      s *= scale;
      sc[t - t0] = s;
      m = fmaxf(m, s);
    }
  }
  m = block_max(m, scratch);
  float sum = 0.0f;
  for (int t = t0 + threadIdx.x; t < t1; t += blockDim.x) {
    float e = expf(sc[t - t0] - m);
    sc[t - t0] = e;
    sum += e;
  }
  // The exponentials, for every stripe; their block sum is taken after the values (only the
  // last division needs it), its first barrier publishing the stripes' partial sums too.
  __syncthreads();
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (early) {
#pragma unroll
    for (int i = 0; i < EARLY; i++) {
      int t = t0 + stripe + i * stripes;
      if (t < tv) {
        float p = sc[t - t0];
        float4 v = vpre[i];
        acc = axpy4(p, v, acc);
      }
    }
  } else {
#pragma unroll 8
    for (int t = t0 + stripe; t < tv; t += stripes) {
      float p = sc[t - t0];
      float4 v = *reinterpret_cast<const float4 *>(vcache + base + (size_t)t * kvDim + 4 * d4);
      acc = axpy4(p, v, acc);
    }
  }
  if (fresh && (pos - t0) % stripes == stripe) {
    float p = sc[pos - t0];
    float4 v = vcur4[d4];
    acc = axpy4(p, v, acc);
  }
  partial[threadIdx.x] = acc;
  sum = block_sum(sum, scratch);
  const float *pf = reinterpret_cast<const float *>(partial);
  float *o = out + (size_t)b * heads * HD + h * HD;
  if (chunks == 1) {
    if (threadIdx.x < HD) {
      float v = 0.0f;
      for (int k = 0; k < stripes; k++) v += pf[(k * C4) * 4 + threadIdx.x];
      o[threadIdx.x] = v / sum;
    }
    return;
  }
  // Split: this chunk's (max, sum, weighted values) for the block that comes last.
  int S = (maxPos + chunk - 1) / chunk;
  float *mine = part + ((size_t)(b * heads + h) * S + z) * (HD + 2);
  if (threadIdx.x < HD) {
    float v = 0.0f;
    for (int k = 0; k < stripes; k++) v += pf[(k * C4) * 4 + threadIdx.x];
    mine[2 + threadIdx.x] = v;
  }
  if (threadIdx.x == 0) {
    mine[0] = m;
    mine[1] = sum;
  }
  __threadfence();
  __syncthreads();
  unsigned *count = arrived + b * heads + h;
  if (threadIdx.x == 0) last = atomicAdd(count, 1u) == (unsigned)(chunks - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  const float *all = part + (size_t)(b * heads + h) * S * (HD + 2);
  if (threadIdx.x < HD) {
    float M = NEG_INF;
    for (int c = 0; c < chunks; c++) M = fmaxf(M, __ldcg(all + (size_t)c * (HD + 2)));
    float L = 0.0f, O = 0.0f;
    for (int c = 0; c < chunks; c++) {
      const float *pc = all + (size_t)c * (HD + 2);
      float w = expf(__ldcg(pc) - M);
      L += __ldcg(pc + 1) * w;
      O += __ldcg(pc + 2 + threadIdx.x) * w;
    }
    o[threadIdx.x] = O / L;
  }
  if (threadIdx.x == 0) *count = 0u;
}
// The key (rotated) and value of every sequence b's position into the cache of (slot, layer), as
// attention's fresh blocks write them: grid (sequence, kv head), HD threads. A step that holds
// several consecutive positions of one sequence (a prompt's chunk) runs this first, then
// attention with appended = 1, so each position attends over the keys of the ones before it in
// the same step.
template <int HD>
__device__ void kv_append(const float *qkv, float *kcache, float *vcache, const int *slots, const int *positions,
                          int heads, int kvHeads, int layers, int layer, int maxPos, float theta) {
  int b = blockIdx.x, kvh = blockIdx.y;
  int pos = positions[b], slot = slots[b];
  pdl_start();
  pdl_wait();
  int kvDim = kvHeads * HD;
  const float *row = qkv + (size_t)b * (heads + 2 * kvHeads) * HD;
  size_t at = ((size_t)slot * layers + layer) * maxPos * kvDim + (size_t)pos * kvDim + (size_t)kvh * HD;
  const float *ks = row + (heads + kvh) * HD;
  const int half = HD / 2;
  int j = threadIdx.x;
  if (j < half) {
    float r1, r2;
    rope_pair(ks[j], ks[j + half], j, HD, pos, theta, &r1, &r2);
    kcache[at + j] = r1;
    kcache[at + j + half] = r2;
  }
  vcache[at + j] = row[(heads + kvHeads + kvh) * HD + j];
}
#define ATTENTION(HD) \
  extern "C" __global__ void __launch_bounds__(256) attention_hd##HD(float *out, const float *qkv, float *kcache, float *vcache, \
      const int *slots, const int *positions, int heads, int kvHeads, int layers, int layer, int maxPos, float theta, \
      float *part, unsigned *arrived, int chunk, int appended) { \
    attention<HD>(out, qkv, kcache, vcache, slots, positions, heads, kvHeads, layers, layer, maxPos, theta, part, arrived, chunk, appended); } \
  extern "C" __global__ void __launch_bounds__(HD) kv_append_hd##HD(const float *qkv, float *kcache, float *vcache, const int *slots, \
      const int *positions, int heads, int kvHeads, int layers, int layer, int maxPos, float theta) { \
    kv_append<HD>(qkv, kcache, vcache, slots, positions, heads, kvHeads, layers, layer, maxPos, theta); }

// tokens[b] = argmax of logits[b, :] (the lowest index on a tie; one block a sequence).
extern "C" __global__ void argmax(int *tokens, const float *logits, int vocab) {
  __shared__ float best[1024];
  __shared__ int at[1024];
  pdl_start();
  pdl_wait();
  int b = blockIdx.x;
  const float *l = logits + (size_t)b * vocab;
  float m = NEG_INF;
  int mi = 0x7fffffff;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    float v = l[i];
    if (v > m || (v == m && i < mi)) { m = v; mi = i; }
  }
  best[threadIdx.x] = m;
  at[threadIdx.x] = mi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      float o = best[threadIdx.x + s];
      int oi = at[threadIdx.x + s];
      if (o > best[threadIdx.x] || (o == best[threadIdx.x] && oi < at[threadIdx.x])) { best[threadIdx.x] = o; at[threadIdx.x] = oi; }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) tokens[b] = at[0];
}
`;

/**
 * The kernels of one engine: the GEMVs of its weights' type and the attention of its head width
 * only (NVRTC's time grows with the instantiations: the f32 and bf16 sets with every head width
 * took about a minute on the H200's host, a quarter of that is one engine's).
 */
export function decoderSource(dtype: 'f32' | 'bf16', headWidth: number): string {
  const [type, name] = dtype === 'f32' ? ['float', 'f32'] : ['bf16_t', 'bf16'];
  const tiles = new Set(GEMV_BATCHES.map((b) => `${GEMV_TILES[b]!.batch}, ${GEMV_TILES[b]!.rows}`));
  const gemvs = [...tiles].map((t) => `GEMV_MODES(${type}, ${name}, ${t})`).join('\n');
  return `${COMMON_SOURCE}\n${gemvs}\nATTENTION(${headWidth})\n`;
}
