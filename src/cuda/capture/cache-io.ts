/**
 * The copies `GraphCache.run` makes around a launch: into a graph's static input buffers before
 * it and out of its static output buffers after it, on the cache's stream, so they are ordered
 * with the launch (PyTorch's `static_input.copy_(x); g.replay(); y = static_output.clone()`).
 * Every copy of a call is checked before any is enqueued, so a refused call enqueues nothing.
 * The defaults and limits are those of the `DeviceBuffer` copy it becomes.
 */
import { DisposedError, InvalidArgumentError } from '../../errors/base.js';
import { describe, requireOptions, requireSize } from '../../util/validate.js';
import { brands } from '../core/brands.js';
import type { Stream } from '../device/stream.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';

/**
 * A copy into a graph's input buffer, before the launch: from host memory (a TypedArray, a
 * DataView, a Buffer, a `PinnedHostBuffer`'s view) or from another device buffer.
 */
export interface CacheInput {
  readonly src: ArrayBufferView | DeviceBuffer;
  /** The buffer the graph reads (allocated before the capture, with `DeviceBuffer.alloc`). */
  readonly dst: DeviceBuffer;
  /** Bytes to copy, from the start of both. Default: all of `src`, which must fit in `dst`. */
  readonly byteLength?: number;
}

/** A copy out of a graph's output buffer, after the launch: into host memory or another device buffer. */
export interface CacheOutput {
  /** The buffer the graph writes. */
  readonly src: DeviceBuffer;
  readonly dst: ArrayBufferView | DeviceBuffer;
  /**
   * Bytes to copy, from the start of both. Default: into host memory, as many as both hold (what
   * `copyToHostAsync` copies); into a device buffer, all of `src`, which must fit.
   */
  readonly byteLength?: number;
}

/** One checked copy. */
export interface PlannedCopy {
  readonly src: ArrayBufferView | DeviceBuffer;
  readonly dst: ArrayBufferView | DeviceBuffer;
  readonly byteLength: number;
}

/** `value`, a live DeviceBuffer on the stream's device. */
function liveBuffer(op: string, name: string, value: unknown, stream: Stream): DeviceBuffer {
  if (!brands.DeviceBuffer.is(value)) throw new InvalidArgumentError(op, name, `${name} must be a DeviceBuffer, got ${describe(value)}`);
  if (value.disposed) throw new DisposedError(op, `${name} (${value})`);
  if (value.device !== stream.device) throw new InvalidArgumentError(op, name, `${name} is on ${value.device}, the cache's stream on ${stream.device}`);
  return value;
}

/** `value`, host memory or a live DeviceBuffer on the stream's device. */
function hostOrBuffer(op: string, name: string, value: unknown, stream: Stream): ArrayBufferView | DeviceBuffer {
  if (ArrayBuffer.isView(value)) return value;
  if (brands.DeviceBuffer.is(value)) return liveBuffer(op, name, value, stream);
  throw new InvalidArgumentError(op, name, `${name} must be a TypedArray, DataView, Buffer or DeviceBuffer, got ${describe(value)}`);
}

/**
 * Checks the copies of `list` (the `inputs` or `outputs` of a `run`): each entry's fields, that
 * its buffers are live and on the stream's device, and that the bytes fit both sides.
 * @throws InvalidArgumentError or DisposedError naming `name[i]` and the field.
 */
export function planCopies(op: string, name: 'inputs' | 'outputs', stream: Stream, list: unknown): PlannedCopy[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new InvalidArgumentError(op, name, `${name} must be an array of { src, dst, byteLength? }, got ${describe(list)}`);
  // Array.from, not map: a hole in the array is refused as the undefined it reads as.
  return Array.from(list as unknown[], (entry: unknown, i) => {
    const at = `${name}[${i}]`;
    if (entry === undefined) throw new InvalidArgumentError(op, at, `${at} must be an object { src, dst, byteLength? }, got undefined`);
    const e = requireOptions<CacheInput & CacheOutput>(op, entry, ['src', 'dst', 'byteLength'], at);
    const src = name === 'inputs' ? hostOrBuffer(op, `${at}.src`, e.src, stream) : liveBuffer(op, `${at}.src`, e.src, stream);
    const dst = name === 'inputs' ? liveBuffer(op, `${at}.dst`, e.dst, stream) : hostOrBuffer(op, `${at}.dst`, e.dst, stream);
    const srcBytes = src.byteLength;
    const dstBytes = dst.byteLength;
    const intoHost = ArrayBuffer.isView(dst);
    const byteLength = e.byteLength === undefined ? (intoHost ? Math.min(srcBytes, dstBytes) : srcBytes) : requireSize(op, `${at}.byteLength`, e.byteLength);
    const side = (bytes: number, which: 'src' | 'dst'): void => {
      if (byteLength > bytes) {
        throw new InvalidArgumentError(op, e.byteLength === undefined ? `${at}.${which}` : `${at}.byteLength`, `${at} copies ${byteLength} bytes; its ${which} holds ${bytes}`);
      }
    };
    side(srcBytes, 'src');
    side(dstBytes, 'dst');
    return { src, dst, byteLength };
  });
}

/** Enqueues checked copies on `stream`, in order. */
export function enqueueCopies(stream: Stream, copies: readonly PlannedCopy[]): void {
  for (const c of copies) {
    if (c.byteLength === 0) continue;
    if (ArrayBuffer.isView(c.src)) (c.dst as DeviceBuffer).copyFromHostAsync(stream, c.src, { byteLength: c.byteLength });
    else if (ArrayBuffer.isView(c.dst)) c.src.copyToHostAsync(stream, c.dst, { byteLength: c.byteLength });
    else c.dst.copyFromDeviceAsync(stream, c.src, { byteLength: c.byteLength });
  }
}
