/**
 * `GraphCache`: graphs for changing shapes. A graph replays fixed shapes; work whose shape changes
 * (batch size, sequence length) keeps one graph per shape, captured on first use and replayed
 * after. With `buckets`, a numeric key is padded up to the next bucket, so a handful of graphs
 * serve every size (the caller pads its inputs to the size it is told). All the cache's graphs
 * take `DeviceBuffer.allocAsync` memory from one `CapturePool`: they are replayed on the cache's
 * one stream, so never two at once, and their memory can be shared. Least-recently-used graphs go
 * beyond `maxGraphs`.
 */
import { DisposedError, InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt, requireInstance, requireOneOf, requireOptions } from '../../util/validate.js';
import { brands } from '../core/brands.js';
import type { Stream } from '../device/stream.js';
import { CapturePool } from '../pool/capture-pool.js';
import type { CapturedGraph } from './captured-graph.js';
import { isThenable } from './guard.js';
import { makeGraphed } from './make-graphed.js';
import { CacheEntries, checkBuckets, resolveCacheKey, resolveCacheKeys, type CacheKey, type CacheOverflow } from '../../model/cache-keys.js';

export type { CacheKey, CacheOverflow } from '../../model/cache-keys.js';

/** Options of `new GraphCache`. */
export interface GraphCacheOptions<K extends CacheKey> {
  /** The stream every graph of the cache is captured and replayed on. */
  readonly stream: Stream;
  /** Records the work for `key` on `stream` (synchronously; it is run for warm-up, then captured). */
  readonly capture: (stream: Stream, key: K) => void;
  /** Sizes numeric keys are padded up to (ascending positive integers). Default: none, every key its own graph. */
  readonly buckets?: readonly number[];
  /** A numeric key above the largest bucket: `'refuse'` (the default) or `'eager'`. */
  readonly overflow?: CacheOverflow;
  /** The pool the graphs share: a `CapturePool` of the caller's, `true` for one the cache makes and disposes (the default), `false` for none. */
  readonly pool?: CapturePool | boolean;
  /** Graphs kept at most; the least recently used goes first. Default: no bound. */
  readonly maxGraphs?: number;
  /** Warm-up runs of `capture` before each capture, on a side stream (as `makeGraphed`). Default 1. */
  readonly warmup?: number;
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
  /** The shared pool's bytes (0 without a pool). */
  readonly poolReservedBytes: number;
  readonly poolUsedBytes: number;
}

/** A cache of captured graphs keyed by shape. See the file comment; docs/guard.md, "GraphCache". */
export class GraphCache<K extends CacheKey = CacheKey> {
  /** The stream the cache captures and replays on. */
  readonly stream: Stream;
  readonly #capture: (stream: Stream, key: K) => void;
  readonly #buckets: readonly number[] | null;
  readonly #overflow: CacheOverflow;
  readonly #pool: CapturePool | null;
  readonly #ownsPool: boolean;
  readonly #maxGraphs: number;
  readonly #warmup: number;
  /** The graphs by key, least recently used first. */
  readonly #graphs = new CacheEntries<K, CapturedGraph>();
  #stats = { hits: 0, misses: 0, captures: 0, captureMs: 0, evictions: 0, eager: 0 };
  #disposed = false;

  /**
   * @throws InvalidArgumentError for a non-Stream, a capture that is not a function, buckets that
   *   are not ascending positive integers, an unknown overflow or option, a bad maxGraphs or warmup.
   */
  constructor(options: GraphCacheOptions<K>) {
    const op = 'GraphCache';
    if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options { stream, capture } are required');
    const o = requireOptions<GraphCacheOptions<K>>(op, options, ['stream', 'capture', 'buckets', 'overflow', 'pool', 'maxGraphs', 'warmup']);
    this.stream = requireInstance(op, 'stream', o.stream, brands.Stream);
    this.stream.handleFor(op);
    if (typeof o.capture !== 'function') throw new InvalidArgumentError(op, 'capture', `capture must be a function (stream, key) => void, got ${describe(o.capture)}`);
    this.#capture = o.capture;
    this.#buckets = o.buckets === undefined ? null : checkBuckets(op, o.buckets);
    this.#overflow = o.overflow === undefined ? 'refuse' : requireOneOf(op, 'overflow', o.overflow, ['refuse', 'eager'] as const);
    this.#maxGraphs = o.maxGraphs === undefined ? Number.MAX_SAFE_INTEGER : requireInt(op, 'maxGraphs', o.maxGraphs, 1, Number.MAX_SAFE_INTEGER);
    this.#warmup = o.warmup === undefined ? 1 : requireInt(op, 'warmup', o.warmup, 0, 1000);
    if (o.pool === undefined || o.pool === true) {
      this.#pool = new CapturePool();
      this.#ownsPool = true;
    } else if (o.pool === false) {
      this.#pool = null;
      this.#ownsPool = false;
    } else {
      this.#pool = requireInstance(op, 'pool', o.pool, brands.CapturePool);
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
   * bucket runs eagerly instead. Returns the key it ran as (pad the inputs to it) and the graph.
   * @throws InvalidArgumentError for a bad key, or one above the largest bucket (`overflow:
   *   'refuse'`); DisposedError after `dispose`; whatever `capture` throws (nothing is cached then);
   *   the errors of `makeGraphed` and `CapturedGraph.launch`.
   */
  launch(key: K): CacheLaunch<K> {
    const op = 'GraphCache.launch';
    this.#alive(op);
    const k = this.#resolve(op, key);
    if (k === null) {
      if (this.#overflow === 'refuse') {
        throw new InvalidArgumentError(op, 'key', `key ${describe(key)} is above the largest bucket (${this.#buckets!.at(-1)}); add a bucket, or make the cache with overflow: 'eager'`);
      }
      this.#runEagerly(op, key);
      this.#stats.eager++;
      return { key, graph: null, hit: false };
    }
    let found = this.#graphs.use(k);
    if (found !== undefined && found.disposed) {
      // The program disposed a graph the cache handed out: capture it again.
      this.#graphs.delete(k);
      found = undefined;
    }
    if (found !== undefined) this.#stats.hits++;
    const graph = found ?? this.#add(op, k);
    graph.launch(this.stream);
    return { key: k, graph, hit: found !== undefined };
  }

  /**
   * Captures the graphs of `keys` now (at start-up, before the first request), skipping cached
   * ones; returns the keys they run as. All keys are checked first.
   * @throws as `launch`.
   */
  prepare(keys: readonly K[]): K[] {
    const op = 'GraphCache.prepare';
    this.#alive(op);
    const resolved = resolveCacheKeys<K>(op, keys, this.#buckets);
    for (const k of resolved) if (!this.#graphs.has(k)) this.#add(op, k);
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

  /** Captures the graph of `k` (a miss), caches it, and evicts beyond `maxGraphs`. */
  #add(op: string, k: K): CapturedGraph {
    this.#stats.misses++;
    const t0 = performance.now();
    const graph = makeGraphed(this.stream, (s) => this.#body(op, s, k), { warmup: this.#warmup, ...(this.#pool !== null ? { pool: this.#pool } : {}) });
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
  }
}
