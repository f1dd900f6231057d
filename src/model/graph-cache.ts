/**
 * `ModelGraphCache`: the CPU model's side of `GraphCache`. The same keys and buckets, but each
 * entry is the `ComputeGraph` a recording function makes with `StreamCapture`, so what a cache
 * would hold can be inspected, drawn and compared without a GPU (`cudagraph inspect` / `render`
 * read each graph's `toJSON()`).
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, isAsyncFunction, isThenable, requireInt, requireOneOf, requireOptions } from '../util/validate.js';
import { CacheEntries, cacheKeyText, checkBuckets, resolveCacheKey, resolveCacheKeys, type CacheKey, type CacheOverflow } from './cache-keys.js';
import { renamed } from './call-name.js';
import { GraphErrorCode } from './error-codes.js';
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
  /** The keys (`cacheKeyText`) whose `record` is running: asking for one of them from `record` is refused. */
  readonly #recording = new Set<string>();

  /** @throws InvalidArgumentError for a record that is not a synchronous function, bad buckets, an unknown overflow or option, a bad maxGraphs. */
  constructor(options: ModelGraphCacheOptions<K>) {
    const op = 'ModelGraphCache';
    if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options { record } are required');
    const o = requireOptions<ModelGraphCacheOptions<K>>(op, options, ['record', 'buckets', 'overflow', 'maxGraphs']);
    if (typeof o.record !== 'function') throw new InvalidArgumentError(op, 'record', `record must be a function (capture, stream, key) => void, got ${describe(o.record)}`);
    if (isAsyncFunction(o.record)) throw new InvalidArgumentError(op, 'record', `record is an async function: ${SYNC_RULE}`);
    this.#record = o.record;
    this.#buckets = o.buckets === undefined ? null : checkBuckets(op, o.buckets);
    this.#overflow = o.overflow === undefined ? 'refuse' : requireOneOf(op, 'overflow', o.overflow, ['refuse', 'eager'] as const);
    this.#maxGraphs = o.maxGraphs === undefined ? Number.MAX_SAFE_INTEGER : requireInt(op, 'maxGraphs', o.maxGraphs, 1, Number.MAX_SAFE_INTEGER);
  }

  /**
   * The graph of `key`: cached, or recorded now (and kept, evicting the least recently used one
   * beyond `maxGraphs`). A key above the largest bucket is refused, or recorded and not kept.
   * @throws InvalidArgumentError for a bad key or (`overflow: 'refuse'`) one above the buckets, or
   *   when `record` returns a promise; GraphError `GRAPH_BUSY` when `record` asks for the key it is
   *   recording, and the capture's refusals at its end (`CAPTURE_UNJOINED`, …) naming this call;
   *   whatever `record` throws. Nothing is cached or counted then.
   */
  graph(key: K): ModelCacheEntry<K> {
    const op = 'ModelGraphCache.graph';
    const k = resolveCacheKey<K>(op, 'key', key, this.#buckets);
    if (k === null) {
      if (this.#overflow === 'refuse') throw new InvalidArgumentError(op, 'key', `key ${describe(key)} is above the largest bucket (${this.#buckets!.at(-1)}); add a bucket, or make the cache with overflow: 'eager'`);
      const graph = this.#recordOne(op, key);
      this.#stats.eager++;
      return { key, graph, hit: false, eager: true };
    }
    const found = this.#graphs.use(k);
    if (found !== undefined) {
      this.#stats.hits++;
      return { key: k, graph: found, hit: true, eager: false };
    }
    return { key: k, graph: this.#recordMiss(op, k), hit: false, eager: false };
  }

  /** Records the graphs of `keys` now, skipping cached ones; returns the keys they run as. @throws as `graph`. */
  prepare(keys: readonly K[]): K[] {
    const op = 'ModelGraphCache.prepare';
    const resolved = resolveCacheKeys<K>(op, keys, this.#buckets);
    for (const k of resolved) if (!this.#graphs.has(k)) this.#recordMiss(op, k);
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

  /** Records the graph of `k`, which is not cached, and keeps it; a recording that fails is not counted. */
  #recordMiss(op: string, k: K): ComputeGraph {
    const graph = this.#recordOne(op, k);
    this.#stats.misses++;
    this.#stats.evictions += this.#graphs.add(k, graph, this.#maxGraphs).length;
    return graph;
  }

  /**
   * Runs `record` for `key` in a capture of its own and ends it, for the call `op`: what `record`
   * throws passes as it is, the end's refusals name `op`. `record` may ask the cache for other
   * keys (a graph of them as a child, say), not for the key it is recording (that would never end).
   */
  #recordOne(op: string, key: K): ComputeGraph {
    const text = cacheKeyText(key);
    if (this.#recording.has(text)) {
      throw new GraphError(
        'Internal',
        GraphErrorCode.Busy,
        `${op}: key ${shownKey(key)} is being recorded: its record function asked the cache for the key it is recording, which would record it again without end`,
      );
    }
    const cap = new StreamCapture({ semantics: 'cuda' });
    const s = StreamId(0);
    cap.beginCapture(s);
    this.#recording.add(text);
    let result: unknown;
    try {
      result = this.#record(cap, s, key);
    } finally {
      this.#recording.delete(text);
    }
    if (isThenable(result)) {
      // Its rejection is answered here, so it cannot end the process as an unhandled one.
      try {
        Promise.resolve(result).catch(() => {});
      } catch {
        // A hostile thenable: nothing more to do.
      }
      throw new InvalidArgumentError(op, 'record', `record returned a promise for key ${shownKey(key)}: ${SYNC_RULE}`);
    }
    let graph: ComputeGraph;
    try {
      graph = cap.endCapture(s, { requireJoined: true });
    } catch (e) {
      if (e instanceof GraphError && e.code === GraphErrorCode.CaptureSessionEnded) {
        throw new GraphError('Internal', GraphErrorCode.CaptureSessionEnded, `${op}: record ended its own capture of key ${shownKey(key)}; the cache ends it when record returns`, { cause: e });
      }
      throw renamed(e, op, `key ${shownKey(key)}`);
    }
    this.#stats.recordings++;
    return graph;
  }
}

/** A key as messages show it: `8`, `"prefill"`, `[4, "f16"]`. */
function shownKey(key: CacheKey): string {
  return Array.isArray(key) ? `[${key.map(describe).join(', ')}]` : describe(key);
}

/** Why `record` must be synchronous (the message of both refusals). */
const SYNC_RULE =
  'a recording must be synchronous; the cache ends its capture when record returns, so what it records after an await would find the capture ended';
