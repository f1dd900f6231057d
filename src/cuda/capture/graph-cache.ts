/**
 * `GraphCache`: graphs for changing shapes. A graph replays fixed shapes; work whose shape changes
 * (batch size, sequence length) keeps one graph per shape, captured on first use and replayed
 * after. With `buckets`, a numeric key is padded up to the next bucket, so a handful of graphs
 * serve every size (the caller pads its inputs to the size it is told). Least-recently-used graphs
 * go beyond `maxGraphs`.
 *
 * All the cache's graphs replay on its one stream, so never two at once: that is what lets them
 * take `DeviceBuffer.allocAsync` memory from one one-stream `CapturePool`, where memory one capture
 * frees serves the next, and why each of its graphs refuses a launch on any other stream. `run`
 * copies inputs in and outputs out in that stream's order, and writes the cache's named scalars
 * into the graph before it launches. docs/graph-cache.md.
 */
import { DisposedError, InvalidArgumentError } from '../../errors/base.js';
import { describe, isAsyncFunction, isThenable, requireInt, requireInstance, requireOneOf, requireOptions } from '../../util/validate.js';
import { brands } from '../core/brands.js';
import { INTERNAL } from '../core/internal.js';
import type { Stream } from '../device/stream.js';
import { CapturePool } from '../pool/capture-pool.js';
import type { CapturedGraph } from './captured-graph.js';
import { makeGraphedFor } from './make-graphed.js';
import { ASYNC_CAPTURE_RULE, type NotAPromise } from './capture-options.js';
import { enqueueCopies, planCopies, type CacheInput, type CacheOutput } from './cache-io.js';
import { ScalarTable, type CacheScalars } from './cache-scalars.js';
import { CacheEntries, checkBuckets, resolveCacheKey, resolveCacheKeys, type CacheKey, type CacheOverflow } from '../../model/cache-keys.js';

export type { CacheKey, CacheOverflow } from '../../model/cache-keys.js';
export type { CacheInput, CacheOutput } from './cache-io.js';
export type { CacheScalar, CacheScalars } from './cache-scalars.js';

/** Options of `new GraphCache`. */
export interface GraphCacheOptions<K extends CacheKey, R = unknown> {
  /** The stream every graph of the cache is captured and replayed on, and the only one its graphs launch on. */
  readonly stream: Stream;
  /**
   * Records the work for `key` on `stream`, synchronously (an async function is refused): it is
   * run for warm-up, then captured. `DeviceBuffer.allocAsync` here takes memory from the cache's
   * pool, and what it frees before it returns is scratch, given back for the next captures; any
   * memory allocated here can be overwritten by the launch of another of the cache's graphs
   * (docs/graph-cache.md). Allocate static inputs and outputs before, with `DeviceBuffer.alloc`.
   */
  readonly capture: (stream: Stream, key: K) => R & NotAPromise<R>;
  /** Sizes numeric keys are padded up to (ascending positive integers). Default: none, every key its own graph. */
  readonly buckets?: readonly number[];
  /** A numeric key above the largest bucket: `'refuse'` (the default) or `'eager'`. */
  readonly overflow?: CacheOverflow;
  /**
   * The pool the graphs allocate from: `true` (the default) for a one-stream pool of `stream` the
   * cache makes and disposes, whose memory the graphs share; a `CapturePool` of the caller's
   * (shared among the graphs only if made with `{ stream }` of this stream); `false` for none.
   */
  readonly pool?: CapturePool | boolean;
  /** Graphs kept at most; the least recently used goes first. Default: no bound. */
  readonly maxGraphs?: number;
  /** Warm-up runs of `capture` before each capture, on a side stream (as `makeGraphed`). Default 1. */
  readonly warmup?: number;
  /**
   * Values `run` writes into the graph before each launch, by name (`run(key, { scalars: { pos: 7 } })`):
   * each name says which kernel's argument it is, by index, and its C type.
   */
  readonly scalars?: CacheScalars;
}

/** What `run` does around the launch. Every part is checked before anything is enqueued. */
export interface CacheRunOptions {
  /** Copies into the graph's input buffers, enqueued on the cache's stream before the launch. */
  readonly inputs?: readonly CacheInput[];
  /** Copies out of the graph's output buffers, enqueued after the launch. */
  readonly outputs?: readonly CacheOutput[];
  /** Values of the cache's declared `scalars`, written into the graph before the launch. */
  readonly scalars?: Readonly<Record<string, number | bigint>>;
}

/** What `launch` did. */
export interface CacheLaunch<K extends CacheKey> {
  /** The key the work ran for: the one given, or its bucket. */
  readonly key: K;
  /** The graph launched, or null when the key overflowed and the work ran eagerly. */
  readonly graph: CapturedGraph | null;
  /** True when the graph was already cached. */
  readonly hit: boolean;
}

/** The cache's counters (a copy). */
export interface GraphCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly captures: number;
  /** Milliseconds spent warming up and capturing, in all. */
  readonly captureMs: number;
  readonly evictions: number;
  /** Keys above the largest bucket run eagerly (`overflow: 'eager'`). */
  readonly eager: number;
  /** Graphs cached now. */
  readonly graphs: number;
  /** The shared pool's bytes (0 without a pool): what it holds from the driver, what buffers use, and what graphs share (see `CapturePool.sharedBytes`). */
  readonly poolReservedBytes: number;
  readonly poolUsedBytes: number;
  readonly poolSharedBytes: number;
}

/** Why a cache's graph refuses another stream (the end of `CapturedGraph.launch`'s message). */
const OWNED_WHY = "it belongs to a GraphCache, whose graphs replay on the cache's stream only so that they can share one pool's memory, never two in flight together (cache.launch and cache.run launch it there)";

/**
 * A cache of captured graphs keyed by shape. See the file comment and docs/graph-cache.md.
 * `K` is the key type, `R` the capture function's result (inferred: it makes an async capture
 * function a type error).
 *
 * @example
 * using cache = new GraphCache({
 *   stream: s,
 *   buckets: [1, 2, 4, 8],
 *   capture: (s, batch) => step(s, batch),                        // reads tokens, writes logits
 *   scalars: { pos: { kernel: 'rope', index: 3, type: 'i32' } },
 * });
 * cache.prepare([1, 2, 4, 8]);                                     // at start-up, largest first
 * const { key } = cache.run(batch.length, {
 *   inputs: [{ src: hostTokens, dst: tokens }],
 *   outputs: [{ src: logits, dst: hostLogits }],
 *   scalars: { pos },
 * });
 */
export class GraphCache<K extends CacheKey = CacheKey, R = unknown> {
  /** The stream the cache captures and replays on. */
  readonly stream: Stream;
  readonly #capture: (stream: Stream, key: K) => unknown;
  readonly #buckets: readonly number[] | null;
  readonly #overflow: CacheOverflow;
  readonly #pool: CapturePool | null;
  readonly #ownsPool: boolean;
  readonly #maxGraphs: number;
  readonly #warmup: number;
  readonly #scalars: ScalarTable;
  /** The graphs by key, least recently used first. */
  readonly #graphs = new CacheEntries<K, CapturedGraph>();
  #stats = { hits: 0, misses: 0, captures: 0, captureMs: 0, evictions: 0, eager: 0 };
  #disposed = false;

  /**
   * @throws InvalidArgumentError for a non-Stream, a capture that is not a function or is async,
   *   buckets that are not ascending positive integers, an unknown overflow or option, a bad
   *   maxGraphs or warmup, a bad scalar declaration, a pool that is one-stream for another stream;
   *   DisposedError for a disposed stream.
   */
  constructor(options: GraphCacheOptions<K, R>) {
    const op = 'GraphCache';
    if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options { stream, capture } are required');
    const o = requireOptions<GraphCacheOptions<K, R>>(op, options, ['stream', 'capture', 'buckets', 'overflow', 'pool', 'maxGraphs', 'warmup', 'scalars']);
    this.stream = requireInstance(op, 'stream', o.stream, brands.Stream);
    this.stream.handleFor(op);
    if (typeof o.capture !== 'function') throw new InvalidArgumentError(op, 'capture', `capture must be a function (stream, key) => void, got ${describe(o.capture)}`);
    if (isAsyncFunction(o.capture)) throw new InvalidArgumentError(op, 'capture', `capture is an async function: ${ASYNC_CAPTURE_RULE}`);
    this.#capture = o.capture;
    this.#buckets = o.buckets === undefined ? null : checkBuckets(op, o.buckets);
    this.#overflow = o.overflow === undefined ? 'refuse' : requireOneOf(op, 'overflow', o.overflow, ['refuse', 'eager'] as const);
    this.#maxGraphs = o.maxGraphs === undefined ? Number.MAX_SAFE_INTEGER : requireInt(op, 'maxGraphs', o.maxGraphs, 1, Number.MAX_SAFE_INTEGER);
    this.#warmup = o.warmup === undefined ? 1 : requireInt(op, 'warmup', o.warmup, 0, 1000);
    this.#scalars = new ScalarTable(op, o.scalars);
    if (o.pool === undefined || o.pool === true) {
      this.#pool = new CapturePool({ stream: this.stream });
      this.#ownsPool = true;
    } else if (o.pool === false) {
      this.#pool = null;
      this.#ownsPool = false;
    } else {
      const pool = requireInstance(op, 'pool', o.pool, brands.CapturePool);
      if (pool.stream !== null && pool.stream !== this.stream) {
        throw new InvalidArgumentError(op, 'pool', `${pool} is a one-stream pool of ${pool.stream}; the cache captures on ${this.stream}`);
      }
      this.#pool = pool;
      this.#ownsPool = false;
    }
  }

  /** @internal True for a GraphCache this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is GraphCache {
    return typeof value === 'object' && value !== null && #graphs in value;
  }

  /**
   * The key `key` runs as: itself, or with buckets its bucket (the smallest ≥ key); null when it is
   * above the largest bucket.
   * @throws InvalidArgumentError for a key that is not a cache key (or not a number with buckets).
   */
  resolve(key: K): K | null {
    return this.#resolve('GraphCache.resolve', key);
  }

  /**
   * Runs the work for `key` on the cache's stream: replays its graph, capturing it first on a
   * miss (after `warmup` runs on a side stream); with `overflow: 'eager'` a key above the largest
   * bucket runs eagerly instead. Returns the key it ran as (pad the inputs to it) and the graph,
   * which launches on the cache's stream only (`graph.onlyStream`).
   * @throws InvalidArgumentError for a bad key, or one above the largest bucket (`overflow:
   *   'refuse'`); DisposedError after `dispose` or for a disposed stream; whatever `capture` throws
   *   (nothing is cached then); the errors of `makeGraphed` and `CapturedGraph.launch`, under this
   *   call's name.
   */
  launch(key: K): CacheLaunch<K> {
    const op = 'GraphCache.launch';
    this.#alive(op);
    this.stream.handleFor(op);
    const k = this.#runKey(op, key);
    if (k === null) {
      this.#runEagerly(op, key);
      return { key, graph: null, hit: false };
    }
    const { graph, hit } = this.#graphOf(op, k);
    graph.launchFor(op, this.stream);
    return { key: k, graph, hit };
  }

  /**
   * `launch` with the work around it, in the cache's stream order: copies `inputs` into the
   * graph's input buffers, writes the `scalars` into its kernel nodes, launches it, and copies its
   * outputs out. Everything is checked first (every copy's buffers and sizes, every scalar's name
   * and value, the key, and on a miss the capture, then where the scalars go in the graph), so a
   * refused call enqueues nothing. Copies from ordinary JS memory are staged by the driver (the
   * source may be reused at once); copies into it return when the bytes have arrived, so the
   * outputs are ready when `run` returns. With `PinnedHostBuffer` views both are asynchronous:
   * synchronize the stream before reading or refilling them.
   * @throws as `launch`; InvalidArgumentError for a bad copy (a non-buffer, a size larger than a
   *   side holds, a buffer of another device), an undeclared scalar or a value its type cannot
   *   hold, a scalar whose kernel or argument is not in the graph, scalars for a key that runs
   *   eagerly, a capturing stream; DisposedError for a disposed buffer.
   */
  run(key: K, options?: CacheRunOptions): CacheLaunch<K> {
    return this.#run('GraphCache.run', key, options);
  }

  /** `run` for the public call `op` (`run` or `runAndWait`). */
  #run(op: string, key: K, options: CacheRunOptions | undefined): CacheLaunch<K> {
    this.#alive(op);
    const o = requireOptions<CacheRunOptions>(op, options, ['inputs', 'outputs', 'scalars']);
    const inputs = planCopies(op, 'inputs', this.stream, o.inputs);
    const outputs = planCopies(op, 'outputs', this.stream, o.outputs);
    const scalars = this.#scalars.values(op, o.scalars);
    this.stream.handleFor(op);
    if (this.stream.isCapturing) throw new InvalidArgumentError(op, 'this', `the cache's stream ${this.stream} is capturing: run would record its copies and launch into that capture`);
    const k = this.#runKey(op, key);
    if (k === null) {
      if (scalars.length > 0) {
        throw new InvalidArgumentError(op, 'scalars', `key ${describe(key)} is above the largest bucket and runs eagerly, with no graph to write scalars into; give the values to the work directly`);
      }
      enqueueCopies(this.stream, inputs);
      this.#runEagerly(op, key);
      enqueueCopies(this.stream, outputs);
      return { key, graph: null, hit: false };
    }
    const { graph, hit } = this.#graphOf(op, k);
    const sites = this.#scalars.sites(op, graph, scalars);
    enqueueCopies(this.stream, inputs);
    scalars.forEach(({ values }, i) => sites[i]!.forEach((site, j) => graph.setKernelArgAt(op, site, values[j]!)));
    graph.launchFor(op, this.stream);
    enqueueCopies(this.stream, outputs);
    return { key: k, graph, hit };
  }

  /**
   * `run(key, options)` then `await stream.synchronizeAsync()`: resolves with what `run` did once
   * the work, its output copies included, is done, the event loop free meanwhile (docs/driver.md,
   * "Waiting without blocking"). Refusals reject, as `run` throws them, with nothing enqueued.
   *
   * @example
   * const r = await cache.runAndWait(n, { inputs: [{ src: batch, dst: x }], outputs: [{ src: y, dst: result }] });
   */
  runAndWait(key: K, options?: CacheRunOptions): Promise<CacheLaunch<K>> {
    try {
      const r = this.#run('GraphCache.runAndWait', key, options);
      return this.stream.synchronizeAsync().then(() => r);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Captures the graphs of `keys` now (at start-up, before the first request), skipping cached
   * ones; returns the keys they run as, in the order given. All keys are checked first. Numeric
   * keys are captured largest first: the scratch memory a capture frees serves the next ones in
   * the shared pool only where it fits (vLLM captures its batch sizes in the same order).
   * @throws as `launch`.
   */
  prepare(keys: readonly K[]): K[] {
    const op = 'GraphCache.prepare';
    this.#alive(op);
    const resolved = resolveCacheKeys<K>(op, keys, this.#buckets);
    const numbers = [...new Set(resolved.filter((k): k is K & number => typeof k === 'number'))].sort((a, b) => b - a);
    for (const k of [...numbers, ...resolved.filter((k) => typeof k !== 'number')]) if (!this.#graphs.has(k)) this.#add(op, k);
    return resolved;
  }

  /** Whether the graph `key` runs as is cached. @throws as `resolve`. */
  has(key: K): boolean {
    const k = this.#resolve('GraphCache.has', key);
    return k !== null && this.#graphs.has(k);
  }

  /** The keys cached, least recently used first. */
  keys(): K[] {
    return this.#graphs.entries().map(([k]) => k);
  }

  /** The counters, and the shared pool's bytes. */
  get stats(): GraphCacheStats {
    return {
      ...this.#stats,
      graphs: this.#graphs.size,
      poolReservedBytes: this.#pool !== null && !this.#pool.released ? this.#pool.reservedBytes : 0,
      poolUsedBytes: this.#pool !== null && !this.#pool.released ? this.#pool.usedBytes : 0,
      poolSharedBytes: this.#pool !== null && !this.#pool.released ? this.#pool.sharedBytes : 0,
    };
  }

  /** The shared pool, or null. */
  get pool(): CapturePool | null {
    return this.#pool;
  }

  /** True after `dispose()`. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** Disposes every cached graph (and the pool the cache made). Idempotent; never throws. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const [, graph] of this.#graphs.entries()) graph.dispose();
    this.#graphs.clear();
    if (this.#ownsPool) this.#pool?.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #alive(op: string): void {
    if (this.#disposed) throw new DisposedError(op, 'GraphCache');
  }

  #resolve(op: string, key: unknown, name = 'key'): K | null {
    return resolveCacheKey<K>(op, name, key, this.#buckets);
  }

  /** The key `key` runs as, or null when it runs eagerly. @throws for a bad key, or one above the buckets with `overflow: 'refuse'`. */
  #runKey(op: string, key: K): K | null {
    const k = this.#resolve(op, key);
    if (k === null && this.#overflow === 'refuse') {
      throw new InvalidArgumentError(op, 'key', `key ${describe(key)} is above the largest bucket (${this.#buckets!.at(-1)}); add a bucket, or make the cache with overflow: 'eager'`);
    }
    return k;
  }

  /** The cached graph of `k` (now the most recently used), or a new capture of it. */
  #graphOf(op: string, k: K): { graph: CapturedGraph; hit: boolean } {
    let found = this.#graphs.use(k);
    if (found !== undefined && found.disposed) {
      // The program disposed a graph the cache handed out: capture it again.
      this.#graphs.delete(k);
      found = undefined;
    }
    if (found === undefined) return { graph: this.#add(op, k), hit: false };
    this.#stats.hits++;
    return { graph: found, hit: true };
  }

  /** Captures the graph of `k` (a miss), caches it, and evicts beyond `maxGraphs`. */
  #add(op: string, k: K): CapturedGraph {
    this.#stats.misses++;
    const t0 = performance.now();
    const graph = makeGraphedFor(op, this.stream, (s) => this.#body(op, s, k), { warmup: this.#warmup, ...(this.#pool !== null ? { pool: this.#pool } : {}) });
    graph.restrictTo(INTERNAL, this.stream, OWNED_WHY);
    this.#stats.captureMs += performance.now() - t0;
    this.#stats.captures++;
    for (const old of this.#graphs.add(k, graph, this.#maxGraphs)) {
      old.dispose();
      this.#stats.evictions++;
    }
    return graph;
  }

  /** The user's capture function for `k` on `s`, refused when it returns a Promise. */
  #body(op: string, s: Stream, k: K): void {
    const r: unknown = this.#capture(s, k);
    if (isThenable(r)) {
      Promise.resolve(r).catch(() => {});
      throw new InvalidArgumentError(op, 'capture', 'capture returned a Promise: a graph records synchronous work only');
    }
  }

  #runEagerly(op: string, key: K): void {
    this.#body(op, this.stream, key);
    this.#stats.eager++;
  }
}
