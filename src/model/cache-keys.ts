/**
 * The keys and buckets of graph caches, one set of rules for both: the model's `ModelGraphCache`
 * and the driver-backed `GraphCache`. A key is a finite number, a string, or a tuple of up to 8 of
 * them; with buckets, a numeric key runs as the smallest bucket at or above it.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt } from '../util/validate.js';

/** A cache key: a number, a string, or a small tuple of them (at most 8). */
export type CacheKey = number | string | readonly (number | string)[];

/** What to do with a numeric key above the largest bucket: refuse it, or run the work eagerly (not cached). */
export type CacheOverflow = 'refuse' | 'eager';

/** The most elements a tuple key may have. */
export const MAX_TUPLE_KEY = 8;

/** Checks a cache key: a finite number, a string, or a tuple of 1..8 of them. */
export function checkCacheKey(op: string, name: string, key: unknown): void {
  const scalar = (v: unknown): boolean => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'string';
  if (scalar(key)) return;
  if (Array.isArray(key) && key.length >= 1 && key.length <= MAX_TUPLE_KEY) {
    // Every index: `every` would skip a hole, and [1, , 2] would run as [1, null, 2].
    let ok = true;
    for (let i = 0; i < key.length && ok; i++) ok = scalar(key[i]);
    if (ok) return;
  }
  throw new InvalidArgumentError(op, name, `${name} must be a finite number, a string, or an array of 1 to ${MAX_TUPLE_KEY} of them, got ${describe(key)}`);
}

/** The text a key is stored under: distinct for 1 and '1' and [1]. */
export function cacheKeyText(key: CacheKey): string {
  return typeof key === 'number' ? `n${key}` : typeof key === 'string' ? `s${key}` : `t${JSON.stringify(key)}`;
}

/** Checks buckets: ascending positive integers, at least one; a frozen copy. */
export function checkBuckets(op: string, buckets: unknown): readonly number[] {
  if (!Array.isArray(buckets) || buckets.length === 0) throw new InvalidArgumentError(op, 'buckets', `buckets must be a non-empty array of ascending positive integers, got ${describe(buckets)}`);
  // Every index, holes included (forEach would skip one).
  const out: number[] = [];
  for (let i = 0; i < buckets.length; i++) {
    const b = requireInt(op, `buckets[${i}]`, buckets[i], 1, Number.MAX_SAFE_INTEGER);
    if (i > 0 && b <= out[i - 1]!) throw new InvalidArgumentError(op, `buckets[${i}]`, `buckets must ascend: buckets[${i}] (${b}) is not above buckets[${i - 1}] (${out[i - 1]})`);
    out.push(b);
  }
  return Object.freeze(out);
}

/**
 * The key `key` runs as: itself without buckets, else its bucket (the smallest at or above it),
 * or null above the largest.
 * @throws InvalidArgumentError for a key that is not a cache key, or not a number with buckets.
 */
export function resolveCacheKey<K extends CacheKey>(op: string, name: string, key: unknown, buckets: readonly number[] | null): K | null {
  // A tuple is copied, then checked: the caller's array may change after the call (or a getter
  // answer otherwise the second time), the key the graph ran as may not.
  const k = Array.isArray(key) && key.length <= MAX_TUPLE_KEY ? Object.freeze([...(key as unknown[])]) : key;
  checkCacheKey(op, name, k);
  if (buckets === null) return k as K;
  if (typeof key !== 'number') throw new InvalidArgumentError(op, name, `${name} must be a number: the cache pads numeric keys up to its buckets, got ${describe(key)}`);
  const bucket = buckets.find((b) => b >= key);
  return bucket === undefined ? null : (bucket as K);
}

/**
 * `keys` (the argument of a cache's `prepare`) resolved as `resolveCacheKey` resolves one, every
 * key checked before any is used.
 * @throws InvalidArgumentError naming `keys[i]` for a bad key or one above the largest bucket.
 */
export function resolveCacheKeys<K extends CacheKey>(op: string, keys: unknown, buckets: readonly number[] | null): K[] {
  if (!Array.isArray(keys)) throw new InvalidArgumentError(op, 'keys', `keys must be an array of cache keys, got ${describe(keys)}`);
  // Every index, holes included (map would skip one, and leave it in the result).
  const out: K[] = [];
  for (let i = 0; i < keys.length; i++) {
    const key: unknown = keys[i];
    const k = resolveCacheKey<K>(op, `keys[${i}]`, key, buckets);
    if (k === null) throw new InvalidArgumentError(op, `keys[${i}]`, `keys[${i}] (${describe(key)}) is above the largest bucket (${buckets!.at(-1)})`);
    out.push(k);
  }
  return out;
}

/**
 * The entries of a graph cache, by key, in least-recently-used order (a Map keeps insertion order:
 * a use moves an entry to the end, eviction takes from the front).
 */
export class CacheEntries<K extends CacheKey, V> {
  readonly #map = new Map<string, { readonly key: K; readonly value: V }>();

  /** The value of `key`, now the most recently used; undefined when absent. */
  use(key: K): V | undefined {
    const text = cacheKeyText(key);
    const e = this.#map.get(text);
    if (e === undefined) return undefined;
    this.#map.delete(text);
    this.#map.set(text, e);
    return e.value;
  }

  has(key: K): boolean {
    return this.#map.has(cacheKeyText(key));
  }

  delete(key: K): void {
    this.#map.delete(cacheKeyText(key));
  }

  /** Adds `value` as the most recently used, then evicts from the least recently used down to `max` entries; returns what went. */
  add(key: K, value: V, max: number): V[] {
    this.#map.set(cacheKeyText(key), { key, value });
    const evicted: V[] = [];
    while (this.#map.size > max) {
      const [oldest, e] = this.#map.entries().next().value as [string, { value: V }];
      this.#map.delete(oldest);
      evicted.push(e.value);
    }
    return evicted;
  }

  /** Keys and values, least recently used first. */
  entries(): Array<[K, V]> {
    return [...this.#map.values()].map((e) => [e.key, e.value]);
  }

  get size(): number {
    return this.#map.size;
  }

  clear(): void {
    this.#map.clear();
  }
}
