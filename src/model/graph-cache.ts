/**
 * `ModelGraphCache`: the CPU model's side of `GraphCache`. The same keys and buckets, but each
 * entry is the `ComputeGraph` a recording function makes with `StreamCapture`, so what a cache
 * would hold can be inspected, drawn and compared without a GPU (`cudagraph inspect` / `render`
 * read each graph's `toJSON()`).
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt, requireOneOf, requireOptions } from '../util/validate.js';
import { CacheEntries, checkBuckets, resolveCacheKey, resolveCacheKeys, type CacheKey, type CacheOverflow } from './cache-keys.js';
import type { ComputeGraph } from './compute-graph.js';
import { StreamId } from './ids.js';
import { StreamCapture } from './stream-capture.js';

/** Options of `new ModelGraphCache`. */
export interface ModelGraphCacheOptions<K extends CacheKey> {
  /** Records the work for `key` on `stream` of `capture` (begun on it; fork and join back as CUDA requires). */
  readonly record: (capture: StreamCapture, stream: StreamId, key: K) => void;
  /** Sizes numeric keys are padded up to (ascending positive integers). Default: none. */
  readonly buckets?: readonly number[];
  /** A numeric key above the largest bucket: `'refuse'` (the default) or `'eager'` (recorded, not kept). */
  readonly overflow?: CacheOverflow;
  /** Graphs kept at most; the least recently used goes first. Default: no bound. */
  readonly maxGraphs?: number;
}

/** What `graph` gave. */
export interface ModelCacheEntry<K extends CacheKey> {
  /** The key the work ran as: the one given, or its bucket. */
  readonly key: K;
  readonly graph: ComputeGraph;
  /** True when the graph was already cached; false for a new recording (or an eager one, not kept). */
  readonly hit: boolean;
  /** True when the key overflowed and the graph was recorded but not kept (`overflow: 'eager'`). */
  readonly eager: boolean;
}

/** A cache of recorded `ComputeGraph`s keyed by shape, with `GraphCache`'s keys, buckets and eviction. */
export class ModelGraphCache<K extends CacheKey = CacheKey> {
  readonly #record: (capture: StreamCapture, stream: StreamId, key: K) => void;
  readonly #buckets: readonly number[] | null;
  readonly #overflow: CacheOverflow;
  readonly #maxGraphs: number;
  readonly #graphs = new CacheEntries<K, ComputeGraph>();
  #stats = { hits: 0, misses: 0, recordings: 0, evictions: 0, eager: 0 };

  /** @throws InvalidArgumentError for a record that is not a function, bad buckets, an unknown overflow or option, a bad maxGraphs. */
  constructor(options: ModelGraphCacheOptions<K>) {
    const op = 'ModelGraphCache';
    if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options { record } are required');
    const o = requireOptions<ModelGraphCacheOptions<K>>(op, options, ['record', 'buckets', 'overflow', 'maxGraphs']);
    if (typeof o.record !== 'function') throw new InvalidArgumentError(op, 'record', `record must be a function (capture, stream, key) => void, got ${describe(o.record)}`);
    this.#record = o.record;
    this.#buckets = o.buckets === undefined ? null : checkBuckets(op, o.buckets);
    this.#overflow = o.overflow === undefined ? 'refuse' : requireOneOf(op, 'overflow', o.overflow, ['refuse', 'eager'] as const);
    this.#maxGraphs = o.maxGraphs === undefined ? Number.MAX_SAFE_INTEGER : requireInt(op, 'maxGraphs', o.maxGraphs, 1, Number.MAX_SAFE_INTEGER);
  }

  /**
   * The graph of `key`: cached, or recorded now (and kept, evicting the least recently used one
   * beyond `maxGraphs`). A key above the largest bucket is refused, or recorded and not kept.
   * @throws InvalidArgumentError for a bad key or (`overflow: 'refuse'`) one above the buckets;
   *   whatever `record` or the capture throws (nothing is cached then).
   */
  graph(key: K): ModelCacheEntry<K> {
    const op = 'ModelGraphCache.graph';
    const k = resolveCacheKey<K>(op, 'key', key, this.#buckets);
    if (k === null) {
      if (this.#overflow === 'refuse') throw new InvalidArgumentError(op, 'key', `key ${describe(key)} is above the largest bucket (${this.#buckets!.at(-1)}); add a bucket, or make the cache with overflow: 'eager'`);
      const graph = this.#recordOne(key);
      this.#stats.eager++;
      return { key, graph, hit: false, eager: true };
    }
    const found = this.#graphs.use(k);
    if (found !== undefined) {
      this.#stats.hits++;
      return { key: k, graph: found, hit: true, eager: false };
    }
    this.#stats.misses++;
    const graph = this.#recordOne(k);
    this.#stats.evictions += this.#graphs.add(k, graph, this.#maxGraphs).length;
    return { key: k, graph, hit: false, eager: false };
  }

  /** Records the graphs of `keys` now, skipping cached ones; returns the keys they run as. @throws as `graph`. */
  prepare(keys: readonly K[]): K[] {
    const resolved = resolveCacheKeys<K>('ModelGraphCache.prepare', keys, this.#buckets);
    for (const k of resolved) if (!this.#graphs.has(k)) this.graph(k);
    return resolved;
  }

  /** The cached keys and graphs, least recently used first. */
  entries(): Array<[K, ComputeGraph]> {
    return this.#graphs.entries();
  }

  /** The counters (a copy) and the number of graphs kept. */
  get stats(): { hits: number; misses: number; recordings: number; evictions: number; eager: number; graphs: number } {
    return { ...this.#stats, graphs: this.#graphs.size };
  }

  #recordOne(key: K): ComputeGraph {
    const cap = new StreamCapture({ semantics: 'cuda' });
    const s = StreamId(0);
    cap.beginCapture(s);
    this.#record(cap, s, key);
    const graph = cap.endCapture(s, { requireJoined: true });
    this.#stats.recordings++;
    return graph;
  }
}
