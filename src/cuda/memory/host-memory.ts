/**
 * Host memory checks shared by the copy methods: a view's bytes, and the rule that a capturing
 * stream may only copy to or from pinned memory the graph can keep alive.
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe } from '../../util/validate.js';
import type { Lifetime } from '../core/lifetime.js';

/** ArrayBuffers of live `PinnedHostBuffer`s → their lifetime. */
const pinned = new WeakMap<ArrayBufferLike, Lifetime>();

/** Marks `buffer` as pinned memory owned by `life`. */
export function registerPinned(buffer: ArrayBufferLike, life: Lifetime): void {
  pinned.set(buffer, life);
}

/** The lifetime of the pinned buffer `view` lies in, or null for ordinary (pageable) JS memory. */
export function pinnedLifetimeOf(view: ArrayBufferView): Lifetime | null {
  const life = pinned.get(view.buffer);
  return life === undefined || life.disposed ? null : life;
}

/** @throws InvalidArgumentError unless `value` is a TypedArray, DataView or Buffer. */
export function requireView(op: string, name: string, value: unknown): ArrayBufferView {
  if (!ArrayBuffer.isView(value)) {
    throw new InvalidArgumentError(op, name, `${name} must be a TypedArray, DataView or Buffer, got ${describe(value)}`);
  }
  return value;
}

/**
 * During capture the copy is recorded with the host address and replayed later: pageable JS
 * memory could be collected by then, so only pinned memory (which the graph then keeps alive) is
 * accepted. @returns the pinned buffer's lifetime.
 */
export function requirePinnedForCapture(op: string, name: string, view: ArrayBufferView): Lifetime {
  const life = pinnedLifetimeOf(view);
  if (life === null) {
    throw new InvalidArgumentError(
      op,
      name,
      `the stream is capturing, so ${name} must lie in a PinnedHostBuffer: the copy replays with every ` +
        'launch of the graph, and ordinary JS memory could be garbage-collected before then',
    );
  }
  return life;
}
