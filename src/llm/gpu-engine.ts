/**
 * The decoder on the GPU: `GpuDecodeEngine`, eager or graphed. A step of B sequences is padded up
 * to the next batch bucket (1, 2, 4, 8, 16, 32) and runs the same launches either way
 * (gpu-kernels.ts): eagerly, as prepared launches one after another; graphed, as one replay of the
 * bucket's graph from a `GraphCache` (captured at start, one per bucket). The step's inputs (tokens,
 * slots, positions) go in through one small copy into buffers the graphs read (inside the graph
 * when graphed), the argmax writes the next tokens straight into pinned host memory (the logits,
 * when asked, come out by one more copy), and the step awaits the stream without blocking
 * the event loop. Nothing is recaptured per step: the kernels read each sequence's length from
 * device memory.
 *
 * Padding rows of a bucket write into a spare KV-cache slot of their own (`slots`, one past the
 * last), at position 0, so they never touch a live sequence.
 */
import { InvalidArgumentError, DisposedError } from '../errors/base.js';
import { describe, requireBoolean, requireInt, requireOneOf, requireOptions } from '../util/validate.js';
import { Device, DeviceBuffer, GraphCache, Module, PinnedHostBuffer, arg, type Kernel, type LaunchConfig, type PreparedLaunch, type Stream } from '../cuda/index.js';
import type { LlamaConfig } from './config.js';
import { headDim } from './config.js';
import type { DecodeEngine, DecodeEntry, StepResult } from './engine.js';
import { ATTENTION_CHUNK, ATTENTION_HEAD_DIMS, GEMV_BATCHES, GEMV_MODE, GEMV_TILES, decoderSource, gemvName, gemvSplit, interleaveRows } from './gpu-kernels.js';

/** One launch of a step: prepared, and its kernel and config for a capture with programmatic edges. */
interface Launch {
  readonly kernel: Kernel;
  readonly config: LaunchConfig;
  readonly prepared: PreparedLaunch;
}

/** Where the engine finds each weight, by its Hugging Face name, as f32 values. */
export type WeightSource = (name: string) => Float32Array;

/** Options of `new GpuDecodeEngine`. */
export interface GpuEngineOptions {
  readonly config: LlamaConfig;
  readonly weights: WeightSource;
  /** How the weights are kept on the device: `f32` (default) or `bf16` (rounded to nearest even). */
  readonly dtype?: 'f32' | 'bf16';
  /** `true` (default): one graph per batch bucket, replayed; `false`: the same launches, eagerly. */
  readonly graphs?: boolean;
  /**
   * Graphed only: join the step's kernels by programmatic edges (programmatic dependent launch), so
   * each starts, and loads its first weights, while the one before finishes. Default `true` on
   * compute capability 9.0 and later (the kernels' `griddepcontrol` needs it), `false` before;
   * `true` on an older device is refused. The tokens and logits are the same bits either way.
   */
  readonly pdl?: boolean;
  /** Sequences in flight at once (KV-cache slots). Default 32. */
  readonly slots?: number;
  /** The most sequences a step takes, at most 32. Default 32. */
  readonly maxBatch?: number;
  /** Positions a sequence may reach; default `config.maxPositions`. */
  readonly maxPositions?: number;
  /** The device; default device 0. */
  readonly device?: Device;
}


/**
 * The compiled kernels, one module per (device, weights' type, head width) for the process:
 * NVRTC takes seconds over them, and every engine of that kind runs the same code. Kept until the
 * process ends (an engine's dispose leaves it).
 */
const modules = new Map<string, Module>();

function decoderModule(device: Device, dtype: 'f32' | 'bf16', headWidth: number): Module {
  const key = `${device.ordinal}/${dtype}/${headWidth}`;
  let m = modules.get(key);
  if (m === undefined || m.disposed) {
    m = Module.compile(device, decoderSource(dtype, headWidth));
    modules.set(key, m);
  }
  return m;
}

/** bf16 bits of f32 values, rounded to nearest even (NaN kept a NaN). */
function toBf16(x: Float32Array): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  const out = new Uint16Array(x.length);
  for (let i = 0; i < u.length; i++) {
    const v = u[i]!;
    out[i] = (v & 0x7fffffff) > 0x7f800000 ? (v >>> 16) | 0x40 : (v + 0x7fff + ((v >>> 16) & 1)) >>> 16;
  }
  return out;
}

export class GpuDecodeEngine implements DecodeEngine {
  readonly config: LlamaConfig;
  readonly slots: number;
  readonly maxBatch: number;
  readonly maxPositions: number;
  readonly name: string;
  readonly device: Device;
  readonly stream: Stream;
  readonly #graphs: boolean;
  readonly #dtype: 'f32' | 'bf16';
  readonly #buckets: readonly number[];
  readonly #module: Module;
  readonly #buffers: DeviceBuffer[] = [];
  /** The step's inputs on the device: tokens | slots | positions, `maxBatch` each. */
  readonly #io: DeviceBuffer;
  readonly #logits: DeviceBuffer;
  readonly #hostIn: PinnedHostBuffer;
  /**
   * The next tokens, written by the argmax kernel itself over the bus (zero-copy): a copy out of
   * device memory would be a node of its own at the end of the step. Measured on an H200 beside
   * the copy: 1–7 µs a step faster graphed (beyond the spread at batches 4, 8 and 16), eager a tie.
   */
  readonly #hostOut: PinnedHostBuffer;
  readonly #hostLogits: PinnedHostBuffer;
  readonly #in: Int32Array;
  readonly #out: Int32Array;
  readonly #logitsView: Float32Array;
  /**
   * Per bucket: the step's launches, prepared once (and their kernels and configs, for a capture
   * with programmatic edges): `decode`, one position a sequence; `prefill`, the same with the KV
   * append on its own before each attention (a step that holds several positions of a sequence).
   */
  readonly #launches = new Map<number, { decode: Launch[]; prefill: Launch[] }>();
  readonly #pdl: boolean;
  readonly #cache: GraphCache<number> | null;
  readonly #prefillCache: GraphCache<number> | null;
  #busy = false;
  #disposed = false;
  #stats = { steps: 0, prefillSteps: 0, tokens: 0, paddedRows: 0 };

  constructor(options: GpuEngineOptions) {
    const op = 'GpuDecodeEngine';
    const o = requireOptions<GpuEngineOptions>(op, options, ['config', 'weights', 'dtype', 'graphs', 'pdl', 'slots', 'maxBatch', 'maxPositions', 'device']);
    if (typeof o.config !== 'object' || o.config === null) throw new InvalidArgumentError(op, 'config', `config must be a LlamaConfig, got ${describe(o.config)}`);
    if (typeof o.weights !== 'function') throw new InvalidArgumentError(op, 'weights', `weights must be a function from a tensor name to its values, got ${describe(o.weights)}`);
    const c = o.config;
    // Four columns a load in every GEMV.
    if (c.dim % 4 !== 0 || c.hidden % 4 !== 0) throw new InvalidArgumentError(op, 'config', `dim (${c.dim}) and hidden (${c.hidden}) must be multiples of 4`);
    if (!(ATTENTION_HEAD_DIMS as readonly number[]).includes(headDim(c))) {
      throw new InvalidArgumentError(op, 'config', `the head width dim / heads must be one of ${ATTENTION_HEAD_DIMS.join(', ')}, got ${headDim(c)}`);
    }
    this.config = c;
    this.#dtype = o.dtype === undefined ? 'f32' : requireOneOf(op, 'dtype', o.dtype, ['f32', 'bf16'] as const);
    this.#graphs = o.graphs === undefined ? true : requireBoolean(op, 'graphs', o.graphs);
    this.slots = requireInt(op, 'slots', o.slots ?? 32, 1, 4096);
    this.maxBatch = requireInt(op, 'maxBatch', o.maxBatch ?? 32, 1, 32);
    this.maxPositions = requireInt(op, 'maxPositions', o.maxPositions ?? c.maxPositions, 1, c.maxPositions);
    this.device = o.device ?? Device.get(0);
    const pdlCapable = this.device.computeCapability.major >= 9;
    const pdl = o.pdl === undefined ? pdlCapable : requireBoolean(op, 'pdl', o.pdl);
    if (pdl && !pdlCapable) {
      const cc = this.device.computeCapability;
      throw new InvalidArgumentError(op, 'pdl', `programmatic dependent launch needs compute capability 9.0 or later; ${this.device.name} has ${cc.major}.${cc.minor}`);
    }
    this.#pdl = pdl && this.#graphs;
    this.#buckets = GEMV_BATCHES.filter((b, i) => b <= this.maxBatch || (i > 0 && GEMV_BATCHES[i - 1]! < this.maxBatch));
    this.name = `gpu ${this.#graphs ? (this.#pdl ? 'graphed' : 'graphed without PDL') : 'eager'} (${this.device.name}, ${this.#dtype})`;
    const d = this.device;
    this.stream = d.createStream();
    try {
      this.#module = decoderModule(d, this.#dtype, headDim(c));
      const hd = headDim(c);
      const qkvDim = (c.heads + 2 * c.kvHeads) * hd;
      const kvDim = c.kvHeads * hd;
      const MB = this.#buckets.at(-1)!;
      const buf = (bytes: number): DeviceBuffer => {
        const b = DeviceBuffer.alloc(d, Math.max(4, bytes));
        this.#buffers.push(b);
        return b;
      };
      const bytesPer = this.#dtype === 'f32' ? 4 : 2;
      const upload = (values: Float32Array): DeviceBuffer => {
        const b = buf(values.length * bytesPer);
        b.copyFromHost(this.#dtype === 'f32' ? values : toBf16(values));
        return b;
      };
      const weight = (name: string, length: number): Float32Array => {
        const w = o.weights!(name);
        if (!(w instanceof Float32Array) || w.length !== length) {
          throw new InvalidArgumentError(op, 'weights', `${name} must be a Float32Array of ${length} values, got ${describe(w)}${w instanceof Float32Array ? ` of ${w.length}` : ''}`);
        }
        return w;
      };
      const concat = (...parts: Float32Array[]): Float32Array => {
        const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) {
          out.set(p, at);
          at += p.length;
        }
        return out;
      };
      const emb = upload(weight('model.embed_tokens.weight', c.vocab * c.dim));
      const layers = Array.from({ length: c.layers }, (_, i) => {
        const p = `model.layers.${i}.`;
        return {
          inNorm: upload(weight(`${p}input_layernorm.weight`, c.dim)),
          // Q, K and V in one matrix (one GEMV); gate and up likewise, their rows in turn (GEMV_MODE.rmsnormSwiglu).
          qkv: upload(concat(weight(`${p}self_attn.q_proj.weight`, c.heads * hd * c.dim), weight(`${p}self_attn.k_proj.weight`, kvDim * c.dim), weight(`${p}self_attn.v_proj.weight`, kvDim * c.dim))),
          o: upload(weight(`${p}self_attn.o_proj.weight`, c.dim * c.heads * hd)),
          postNorm: upload(weight(`${p}post_attention_layernorm.weight`, c.dim)),
          gu: upload(interleaveRows(weight(`${p}mlp.gate_proj.weight`, c.hidden * c.dim), weight(`${p}mlp.up_proj.weight`, c.hidden * c.dim), c.dim)),
          down: upload(weight(`${p}mlp.down_proj.weight`, c.dim * c.hidden)),
        };
      });
      const finalNorm = upload(weight('model.norm.weight', c.dim));
      const lmHead = upload(weight('lm_head.weight', c.vocab * c.dim));
      // The KV cache: one spare slot past the last, for a bucket's padding rows.
      const cacheBytes = (this.slots + 1) * c.layers * this.maxPositions * kvDim * 4;
      const kcache = buf(cacheBytes);
      const vcache = buf(cacheBytes);
      const x = buf(MB * c.dim * 4);
      const qkv = buf(MB * qkvDim * 4);
      const att = buf(MB * c.heads * hd * 4);
      const gu = buf(MB * c.hidden * 4);
      this.#logits = buf(MB * c.vocab * 4);
      this.#io = buf(3 * MB * 4);
      this.#hostIn = PinnedHostBuffer.alloc(d, 3 * MB * 4);
      this.#hostOut = PinnedHostBuffer.alloc(d, MB * 4);
      this.#hostLogits = PinnedHostBuffer.alloc(d, MB * c.vocab * 4);
      this.#in = new Int32Array(this.#hostIn.bytes.buffer, this.#hostIn.bytes.byteOffset, 3 * MB);
      this.#out = new Int32Array(this.#hostOut.bytes.buffer, this.#hostOut.bytes.byteOffset, MB);
      this.#logitsView = new Float32Array(this.#hostLogits.bytes.buffer, this.#hostLogits.bytes.byteOffset, MB * c.vocab);
      // Device addresses of the three input rows.
      const tokens = this.#io;
      const slotsAt = this.#io.ptr + BigInt(MB * 4);
      const positionsAt = this.#io.ptr + BigInt(2 * MB * 4);
      const k = (name: string) => {
        const kernel = this.#module.function(name);
        return { prepare: (config: LaunchConfig) => ({ kernel, config, prepared: kernel.prepare(config) }) };
      };
      const t = this.#dtype;
      // Attention's position chunks: a grid dimension fixed at capture, partial results per chunk, a counter per (sequence, head), zeroed once (the last block of each launch resets its own).
      const chunks = Math.ceil(this.maxPositions / ATTENTION_CHUNK);
      const attnPart = buf(MB * c.heads * chunks * (hd + 2) * 4);
      const attnArrived = buf(MB * c.heads * 4);
      attnArrived.copyFromHost(new Uint32Array(MB * c.heads));
      const none = arg.u64(0n);
      for (const B of this.#buckets) {
        /** out (+)= W · input for the bucket's rows as `mode` says (GEMV_MODE); `norm`: the weight of its RMSNorm. */
        const g = (out: DeviceBuffer, w: DeviceBuffer, input: DeviceBuffer, rows: number, cols: number, mode: number, accumulate: 0 | 1, norm?: DeviceBuffer, startNext: 0 | 1 = 0) => {
          const split = gemvSplit(cols, rows, this.device.multiprocessorCount, mode === GEMV_MODE.rmsnormSwiglu);
          // A block: 8 / split groups of the tile's rows a warp, for one slice of the batch.
          const tile = GEMV_TILES[B]!;
          return k(gemvName(t, mode, B)).prepare({
            grid: [Math.ceil(rows / ((8 / split) * tile.rows)), B / tile.batch], block: 256,
            args: [out, w, input, norm ?? none, arg.i32(rows), arg.i32(cols), arg.i32(accumulate), arg.f32(c.rmsEps), arg.i32(split), arg.i32(startNext)],
          });
        };
        const cacheArgs = (li: number) => [kcache, vcache, arg.u64(slotsAt), arg.u64(positionsAt), arg.i32(c.heads), arg.i32(c.kvHeads), arg.i32(c.layers), arg.i32(li), arg.i32(this.maxPositions), arg.f32(c.ropeTheta)];
        const steps = { decode: [] as Launch[], prefill: [] as Launch[] };
        for (const [kind, list] of Object.entries(steps)) {
          const appended = kind === 'prefill';
          list.push(k(`embed_${t}`).prepare({ grid: B, block: 256, args: [x, emb, tokens, arg.i32(c.dim)] }));
          layers.forEach((L, li) => {
            list.push(g(qkv, L.qkv, x, qkvDim, c.dim, GEMV_MODE.rmsnorm, 0, L.inNorm, appended ? 0 : 1));
            if (appended) list.push(k(`kv_append_hd${hd}`).prepare({ grid: [B, c.kvHeads], block: hd, args: [qkv, ...cacheArgs(li)] }));
            list.push(k(`attention_hd${hd}`).prepare({
              grid: [B, c.heads, chunks], block: 256, sharedMem: ATTENTION_CHUNK * 4,
              args: [att, qkv, ...cacheArgs(li), attnPart, attnArrived, arg.i32(ATTENTION_CHUNK), arg.i32(appended ? 1 : 0)],
            }));
            list.push(g(x, L.o, att, c.dim, c.heads * hd, GEMV_MODE.plain, 1));
            list.push(g(gu, L.gu, x, 2 * c.hidden, c.dim, GEMV_MODE.rmsnormSwiglu, 0, L.postNorm));
            list.push(g(x, L.down, gu, c.dim, c.hidden, GEMV_MODE.plain, 1));
          });
          list.push(g(this.#logits, lmHead, x, c.vocab, c.dim, GEMV_MODE.rmsnorm, 0, finalNorm, 1));
          list.push(k('argmax').prepare({ grid: B, block: 256, args: [this.#hostOut, this.#logits, arg.i32(c.vocab)] }));
        }
        this.#launches.set(B, steps);
      }
      // 48 KiB of dynamic shared memory without opting in: 12,288 scores (the static arrays take the rest of a block's share).
      // A bucket's graph holds the input copy too (from the pinned buffer, whose address never
      // changes): one launch submits the whole step.
      // Both kinds of step are captured at start, so no request waits for a capture.
      const cache = (prefill: boolean) => new GraphCache<number>({ stream: this.stream, buckets: this.#buckets, pool: false, warmup: 0, capture: (s, B) => this.#enqueueStep(s, B, prefill) });
      this.#cache = this.#graphs ? cache(false) : null;
      this.#prefillCache = this.#graphs ? cache(true) : null;
      this.#cache?.prepare(this.#buckets);
      this.#prefillCache?.prepare(this.#buckets);
      this.stream.synchronize();
    } catch (e) {
      this.#release();
      throw e;
    }
  }

  /** The step of bucket B as the stream sees it: the inputs in, the launches (the argmax writes B tokens into the pinned buffer: the padding's too). */
  #enqueueStep(s: Stream, B: number, prefill: boolean): void {
    const MB = this.#buckets.at(-1)!;
    this.#io.copyFromHostAsync(s, this.#hostIn.bytes, { byteLength: 3 * MB * 4 });
    this.#enqueue(s, B, prefill);
  }

  #enqueue(s: Stream, B: number, prefill: boolean): void {
    const steps = this.#launches.get(B)!;
    const list = prefill ? steps.prefill : steps.decode;
    if (!this.#pdl) {
      for (const l of list) l.prepared.launch(s);
      return;
    }
    // Under capture: the first kernel follows the input copy plainly, every later one by a programmatic edge.
    list.forEach((l, i) => {
      if (i === 0) l.prepared.launch(s);
      else l.kernel.launch(s, { ...l.config, attributes: { programmaticStreamSerialization: true } });
    });
  }

  /** The smallest bucket that holds `n` sequences. */
  #bucket(n: number): number {
    return this.#buckets.find((b) => b >= n)!;
  }

  step(entries: readonly DecodeEntry[], options?: { readonly logits?: boolean }): Promise<StepResult> {
    const op = 'GpuDecodeEngine.step';
    try {
      if (this.#disposed) throw new DisposedError(op, this.name);
      const o = requireOptions<{ logits: boolean }>(op, options, ['logits']);
      if (!Array.isArray(entries) || entries.length === 0 || entries.length > this.maxBatch) {
        throw new InvalidArgumentError(op, 'entries', `entries must be an array of 1 to ${this.maxBatch} entries, got ${describe(entries)}`);
      }
      if (this.#busy) throw new InvalidArgumentError(op, 'entries', 'a step is in flight: await it before the next');
      const n = entries.length;
      const B = this.#bucket(n);
      const MB = this.#buckets.at(-1)!;
      // Each slot's last position in this step, and the entry that holds it.
      const last = new Map<number, { position: number; at: number }>();
      let prefill = false;
      const rows: [number, number, number][] = [];
      const slots = this.slots;
      const vocab = this.config.vocab;
      const maxPositions = this.maxPositions;
      for (let i = 0; i < n; i++) {
        const e = entries[i] as DecodeEntry;
        if (typeof e !== 'object' || e === null) throw new InvalidArgumentError(op, `entries[${i}]`, `must be { slot, token, position }, got ${describe(e)}`);
        const { slot, token, position } = e;
        // The checks of every entry of every step: names are made only for a refusal.
        if (!(Number.isInteger(slot) && slot >= 0 && slot < slots)) requireInt(op, `entries[${i}].slot`, slot, 0, slots - 1);
        if (!(Number.isInteger(token) && token >= 0 && token < vocab)) requireInt(op, `entries[${i}].token`, token, 0, vocab - 1);
        if (!(Number.isInteger(position) && position >= 0 && position < maxPositions)) requireInt(op, `entries[${i}].position`, position, 0, maxPositions - 1);
        const before = last.get(slot);
        if (before !== undefined) {
          if (position !== before.position + 1) {
            throw new InvalidArgumentError(op, `entries[${i}].position`, `entries[${i}].position (${position}): slot ${slot} is at position ${before.position} in entries[${before.at}], so a later entry of it must be at the next position (${before.position + 1})`);
          }
          prefill = true;
        }
        last.set(slot, { position, at: i });
        rows.push([token, slot, position]);
      }
      const inp = this.#in;
      for (let b = 0; b < B; b++) {
        const r = rows[b];
        // Padding rows: the spare slot, position 0.
        inp[b] = r === undefined ? 0 : r[0];
        inp[MB + b] = r === undefined ? this.slots : r[1];
        inp[2 * MB + b] = r === undefined ? 0 : r[2];
      }
      const s = this.stream;
      const logits = o.logits === true;
      const cache = prefill ? this.#prefillCache : this.#cache;
      if (cache !== null) cache.launch(B);
      else this.#enqueueStep(s, B, prefill);
      if (logits) this.#logits.copyToHostAsync(s, this.#hostLogits.bytes, { byteLength: n * this.config.vocab * 4 });
      this.#busy = true;
      return s.synchronizeAsync().then(
        () => {
          this.#busy = false;
          this.#stats.steps++;
          if (prefill) this.#stats.prefillSteps++;
          this.#stats.tokens += n;
          this.#stats.paddedRows += B - n;
          return { tokens: this.#out.slice(0, n), ...(logits ? { logits: this.#logitsView.slice(0, n * this.config.vocab) } : {}) };
        },
        (e: unknown) => {
          this.#busy = false;
          throw e;
        },
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  stats(): Readonly<Record<string, number>> {
    const g = this.#cache?.stats;
    const p = this.#prefillCache?.stats;
    // The whole device's use (every process and context on it): what a leak on the device would move.
    const mem = this.#disposed ? null : this.device.memoryInfo();
    return {
      ...this.#stats,
      ...(mem !== null ? { deviceMemoryUsedBytes: mem.total - mem.free } : {}),
      ...(g && p ? { graphs: g.graphs + p.graphs, graphCaptures: g.captures + p.captures, graphHits: g.hits + p.hits, graphMisses: g.misses + p.misses, graphCaptureMs: g.captureMs + p.captureMs } : {}),
    };
  }

  #release(): void {
    this.#cache?.dispose();
    this.#prefillCache?.dispose();
    for (const b of this.#buffers) b.dispose();
    this.#hostIn?.dispose();
    this.#hostOut?.dispose();
    this.#hostLogits?.dispose();
    this.stream.dispose();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#release();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
