/**
 * `.safetensors` files, the format Hugging Face keeps weights in: an 8-byte little-endian header
 * length N, N bytes of JSON (`{ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__"?:
 * { string: string } }`, space-padded), then the tensors' bytes, little-endian, row-major, each at
 * its offsets from the end of the header. Reads F32, BF16 and F16 into float32; writes F32 and
 * BF16. Reading checks what the format's own implementation checks, so a file refused here is one
 * transformers would refuse too: the header inside the file, UTF-8 JSON, known dtypes, each
 * tensor's bytes matching its shape, and the tensors tiling the data exactly (no overlap, no gap,
 * nothing after).
 */
import { closeSync, constants, fstatSync, openSync, readSync, writeFileSync, type Stats } from 'node:fs';
import { constants as bufferConstants } from 'node:buffer';
import { InvalidArgumentError } from '../errors/base.js';
import { FileFormatError } from '../errors/file-format-error.js';
import { describe, requireName, requireOneOf, requireOptions } from '../util/validate.js';
import { requireLlamaConfig, type LlamaConfig } from './config.js';
import { weightsProblem, type LlamaWeights, type WeightTensor } from './weights.js';

/** The dtypes read: float32, bfloat16 (the top half of a float32) and IEEE half. */
export type SafetensorsDtype = 'F32' | 'BF16' | 'F16';
/** The dtypes written. */
export type SafetensorsWriteDtype = 'F32' | 'BF16';

/** What a `.safetensors` file holds, its tensors widened to float32. */
export interface SafetensorsContents {
  /** Tensor name → tensor, in the order of their data in the file. */
  readonly tensors: Map<string, WeightTensor>;
  /** Tensor name → the dtype it was stored in. */
  readonly dtypes: Map<string, SafetensorsDtype>;
  /** The header's `__metadata__` (`{}` when absent). */
  readonly metadata: Readonly<Record<string, string>>;
}

const ITEM_SIZE: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, BF16: 2, F16: 2 };
/** The dtypes the format defines that are not read here, so they are refused as unsupported rather than unknown. */
const OTHER_DTYPES = ['BOOL', 'U8', 'I8', 'U16', 'I16', 'U32', 'I32', 'U64', 'I64', 'F64', 'F8_E4M3', 'F8_E5M2', 'F8_E8M0', 'F4', 'F6_E2M3', 'F6_E3M2', 'C64'];
/** The format's limit on the header (the reference implementation refuses larger ones). */
const MAX_HEADER = 100_000_000;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The bfloat16 nearest `x` (round to nearest, ties to even; NaN stays a quiet NaN of its sign), as
 * its 16 bits: the top half of the float32 nearest `x`, rounded as PyTorch rounds.
 */
export function bf16Bits(x: number): number {
  const bits = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x0040;
  // Adding 0x7fff rounds halves down, plus the kept part's lowest bit rounds them to even.
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The value of bfloat16 bits (exact: a bfloat16 is a float32 with its low 16 bits zero). */
export function fromBf16Bits(h: number): number {
  return new Float32Array(new Uint32Array([(h & 0xffff) << 16]).buffer)[0]!;
}

/** The value of IEEE half-precision bits (subnormals, infinities and NaN included). */
export function fromF16Bits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** `bytes[begin, end)` as float32 values of `dtype`, into a fresh array. */
function decode(bytes: Uint8Array, begin: number, end: number, dtype: SafetensorsDtype): Float32Array {
  const n = (end - begin) / ITEM_SIZE[dtype];
  const out = new Float32Array(n);
  // Copied into aligned memory first: a tensor's offset in the file need not be a multiple of 4.
  const raw = bytes.slice(begin, end);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(raw);
    else for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  } else if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) bits[i] = view.getUint16(2 * i, true) << 16;
  } else {
    for (let i = 0; i < n; i++) out[i] = fromF16Bits(view.getUint16(2 * i, true));
  }
  return out;
}

/** `[1, 2]`. */
function showShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** A non-negative safe integer. */
function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * What is wrong with the start of a file of `size` bytes whose first bytes are `head` (at least
 * 8 of them, unless the file is shorter): too short, or a header length past the limit or the end.
 * Checked before anything else is read, so a bad length never makes a reader wait for bytes that
 * are not there. Returns the header length when all is well.
 */
function headerLengthOf(head: Uint8Array, size: number): number | string {
  if (size < 8) return `${size} bytes is shorter than the 8-byte header length a .safetensors file starts with`;
  const view = new DataView(head.buffer, head.byteOffset, 8);
  const headerLength = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (headerLength > MAX_HEADER) return `header length ${headerLength} is over the format's limit of ${MAX_HEADER} bytes`;
  if (headerLength > size - 8) return `header length ${headerLength} runs past the end of the file (${size} bytes)`;
  return headerLength;
}

/** The tensors and metadata of a file's `bytes`; errors name `op` and `file`. */
function parse(op: string, file: string, bytes: Uint8Array): SafetensorsContents {
  const fail = (message: string): never => {
    throw new FileFormatError(op, file, message);
  };
  const length = headerLengthOf(bytes, bytes.length);
  if (typeof length === 'string') return fail(length);
  const headerLength = length;
  let text = '';
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLength));
  } catch {
    fail('the header is not UTF-8');
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    fail(`the header is not JSON (${(e as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) fail(`the header must be a JSON object, got ${describe(header)}`);
  const dataStart = 8 + headerLength;
  const dataLength = bytes.length - dataStart;
  let metadata: Record<string, string> = {};
  const entries: { name: string; dtype: SafetensorsDtype; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, info] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (info === null) continue;
      if (typeof info !== 'object' || Array.isArray(info)) fail(`__metadata__ must be an object of strings, got ${describe(info)}`);
      for (const [k, v] of Object.entries(info as object)) if (typeof v !== 'string') fail(`__metadata__.${k} must be a string, got ${describe(v)}`);
      metadata = { ...(info as Record<string, string>) };
      continue;
    }
    const what = `tensor '${name}'`;
    if (typeof info !== 'object' || info === null || Array.isArray(info)) fail(`${what} must be { dtype, shape, data_offsets }, got ${describe(info)}`);
    const { dtype, shape, data_offsets: offsets } = info as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof dtype !== 'string') fail(`${what} has no dtype string, got ${describe(dtype)}`);
    if (!Object.hasOwn(ITEM_SIZE, dtype as string)) {
      if (OTHER_DTYPES.includes(dtype as string)) fail(`${what} has dtype ${dtype as string}, which is not read here (F32, BF16, F16)`);
      fail(`${what} has unknown dtype ${describe(dtype)}`);
    }
    if (!Array.isArray(shape) || !shape.every(isCount)) fail(`${what} must have a shape of non-negative integers, got ${describe(shape)}`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
      fail(`${what} must have data_offsets [begin, end] of non-negative integers, got ${describe(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    if (begin > end) fail(`${what} has data_offsets [${begin}, ${end}] that end before they begin`);
    if (end > dataLength) fail(`${what} has data_offsets [${begin}, ${end}] past the end of the data (${dataLength} bytes after the header)`);
    const dims = shape as number[];
    const elements = dims.reduce((a, b) => a * b, 1);
    const size = elements * ITEM_SIZE[dtype as SafetensorsDtype];
    if (size !== end - begin) fail(`${what} of shape ${showShape(dims)} in ${dtype as string} needs ${size} bytes, its data_offsets [${begin}, ${end}] hold ${end - begin}`);
    entries.push({ name, dtype: dtype as SafetensorsDtype, shape: dims, begin, end });
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let previous = 'the start of the data';
  for (const e of entries) {
    if (e.begin < at) fail(`tensor '${e.name}' at [${e.begin}, ${e.end}] overlaps ${previous}`);
    if (e.begin > at) fail(`bytes ${at}..${e.begin} between ${previous} and tensor '${e.name}' belong to no tensor`);
    at = e.end;
    previous = `tensor '${e.name}' [${e.begin}, ${e.end}]`;
  }
  if (at !== dataLength) fail(`bytes ${at}..${dataLength} after ${previous} belong to no tensor`);
  const tensors = new Map<string, WeightTensor>();
  const dtypes = new Map<string, SafetensorsDtype>();
  for (const e of entries) {
    tensors.set(e.name, { shape: Object.freeze(e.shape), data: decode(bytes, dataStart + e.begin, dataStart + e.end, e.dtype) });
    dtypes.set(e.name, e.dtype);
  }
  return { tensors, dtypes, metadata: Object.freeze(metadata) };
}

/** What a file that is not a regular one is, for the refusal. */
function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a pipe';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * The bytes of the file at `path`. Only a regular file is read, and its header length is checked
 * against its size before the rest is read: `/dev/zero` or a pipe would never end (opened without
 * blocking, so a pipe with no writer does not wait either), and a length past the end would read
 * a file of any size for nothing.
 * @throws InvalidArgumentError naming `op` when the file cannot be read or is not a regular file;
 *   FileFormatError naming `op` and the file for a header length the file cannot hold.
 */
function readBytes(op: string, path: unknown): Uint8Array {
  const file = requireName(op, 'path', path);
  const cannot = (why: string): InvalidArgumentError => new InvalidArgumentError(op, 'path', `cannot read ${file}: ${why}`);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (e) {
    throw cannot((e as Error).message);
  }
  try {
    let size: number;
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw cannot(`it is ${fileKind(st)}, not a regular file`);
      size = st.size;
    } catch (e) {
      if (e instanceof InvalidArgumentError) throw e;
      throw cannot((e as Error).message);
    }
    if (size > bufferConstants.MAX_LENGTH) throw cannot(`its ${size} bytes are more than one buffer holds (${bufferConstants.MAX_LENGTH})`);
    const bytes = Buffer.allocUnsafe(size);
    const readAt = (from: number, to: number): number => {
      let at = from;
      try {
        while (at < to) {
          const n = readSync(fd, bytes, at, to - at, at);
          if (n === 0) break;
          at += n;
        }
      } catch (e) {
        throw cannot((e as Error).message);
      }
      return at;
    };
    const head = readAt(0, Math.min(8, size));
    const length = headerLengthOf(bytes.subarray(0, head), head < 8 ? head : size);
    if (typeof length === 'string') throw new FileFormatError(op, file, length);
    // A file that shrank while it was read is parsed as the bytes it had (and refused as short).
    return bytes.subarray(0, readAt(head, size));
  } finally {
    closeSync(fd);
  }
}

/**
 * The tensors of a `.safetensors` file's bytes (a file read elsewhere, or fetched). `file` names it in errors.
 * @throws FileFormatError naming `parseSafetensors` and `file` for anything the format does not allow.
 */
export function parseSafetensors(bytes: Uint8Array, file = '<bytes>'): SafetensorsContents {
  const op = 'parseSafetensors';
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError(op, 'bytes', `bytes must be a Uint8Array, got ${describe(bytes)}`);
  return parse(op, file, bytes);
}

/**
 * The tensors of the `.safetensors` file at `path`: a regular file (a device such as `/dev/zero`,
 * a pipe or a folder would be read without end, or not at all), its header length checked against
 * its size before the rest is read.
 * @throws InvalidArgumentError naming `readSafetensors` when the file cannot be read or is not a
 *   regular file; FileFormatError naming it and the file for anything the format does not allow.
 */
export function readSafetensors(path: string): SafetensorsContents {
  const op = 'readSafetensors';
  return parse(op, path, readBytes(op, path));
}

/** How `encodeSafetensors` and `writeSafetensors` store tensors. */
export interface SafetensorsWriteOptions {
  /** The dtype every tensor is stored in: `F32` (the default, exact) or `BF16` (rounded to nearest even). */
  readonly dtype?: SafetensorsWriteDtype;
  /** The header's `__metadata__` (string → string); transformers wants `{ format: 'pt' }`. */
  readonly metadata?: Readonly<Record<string, string>>;
}

/**
 * The bytes of a `.safetensors` file holding `tensors` in their order, the header space-padded to
 * a multiple of 8 bytes so the data starts aligned (as the format's own writer does).
 * @throws InvalidArgumentError naming `op` (default `encodeSafetensors`) for a tensor whose data
 *   is not a Float32Array of as many values as its shape says, a bad name, bad options.
 */
export function encodeSafetensors(tensors: LlamaWeights, options?: SafetensorsWriteOptions, op = 'encodeSafetensors'): Uint8Array {
  const o = requireOptions<SafetensorsWriteOptions>(op, options, ['dtype', 'metadata']);
  const dtype = requireOneOf<SafetensorsWriteDtype>(op, 'dtype', o.dtype ?? 'F32', ['F32', 'BF16']);
  const m = tensors as { get?: unknown; entries?: unknown } | null;
  if (typeof m?.get !== 'function' || typeof m.entries !== 'function') {
    throw new InvalidArgumentError(op, 'tensors', `tensors must be a Map of name → { shape, data }, got ${describe(tensors)}`);
  }
  // No prototype: a tensor named `__proto__` is a key like any other.
  const header: Record<string, unknown> = Object.create(null);
  if (o.metadata !== undefined) {
    if (typeof o.metadata !== 'object' || o.metadata === null || Array.isArray(o.metadata)) {
      throw new InvalidArgumentError(op, 'metadata', `metadata must be an object of strings, got ${describe(o.metadata)}`);
    }
    for (const [k, v] of Object.entries(o.metadata)) {
      if (typeof v !== 'string') throw new InvalidArgumentError(op, 'metadata', `metadata.${k} must be a string, got ${describe(v)}`);
    }
    header.__metadata__ = { ...o.metadata };
  }
  const size = ITEM_SIZE[dtype];
  const list: [string, WeightTensor][] = [...tensors.entries()];
  let offset = 0;
  for (const [name, t] of list) {
    if (typeof name !== 'string' || name.length === 0 || name === '__metadata__') {
      throw new InvalidArgumentError(op, 'tensors', `a tensor name must be a non-empty string other than __metadata__, got ${describe(name)}`);
    }
    const shape: unknown = t?.shape;
    if (!Array.isArray(shape) || !shape.every(isCount)) throw new InvalidArgumentError(op, 'tensors', `tensor '${name}' must have a shape of non-negative integers, got ${describe(shape)}`);
    const n = (shape as number[]).reduce((a, b) => a * b, 1);
    if (!(t.data instanceof Float32Array) || t.data.length !== n) {
      throw new InvalidArgumentError(op, 'tensors', `tensor '${name}' of shape ${showShape(shape)} must hold a Float32Array of ${n} values, got ${t.data instanceof Float32Array ? `${t.data.length} values` : describe(t.data)}`);
    }
    header[name] = { dtype, shape: [...shape], data_offsets: [offset, offset + n * size] };
    offset += n * size;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerBytes = new Uint8Array(json.length + ((8 - (json.length % 8)) % 8)).fill(0x20);
  headerBytes.set(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setUint32(0, headerBytes.length, true);
  view.setUint32(4, Math.floor(headerBytes.length / 2 ** 32), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const [, t] of list) {
    if (dtype === 'F32') {
      if (LITTLE_ENDIAN) out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
      else t.data.forEach((x, i) => view.setFloat32(at + 4 * i, x, true));
    } else {
      t.data.forEach((x, i) => view.setUint16(at + 2 * i, bf16Bits(x), true));
    }
    at += t.data.length * size;
  }
  return out;
}

/**
 * Writes `tensors` to a `.safetensors` file at `path` (see `encodeSafetensors`).
 * @throws InvalidArgumentError naming `writeSafetensors` for bad tensors or options, or when the file cannot be written.
 */
export function writeSafetensors(path: string, tensors: LlamaWeights, options?: SafetensorsWriteOptions): void {
  writeBytes('writeSafetensors', path, tensors, options);
}

/** `encodeSafetensors` then the file, errors naming `op`. */
function writeBytes(op: string, path: unknown, tensors: LlamaWeights, options: SafetensorsWriteOptions | undefined): void {
  const file = requireName(op, 'path', path);
  const bytes = encodeSafetensors(tensors, options, op);
  try {
    writeFileSync(file, bytes);
  } catch (e) {
    throw new InvalidArgumentError(op, 'path', `cannot write ${file}: ${(e as Error).message}`);
  }
}

/**
 * A decoder's weights from a `.safetensors` file (Hugging Face names; F32, BF16 or F16, widened
 * to float32), checked against `config` as `checkWeights` checks them. Tensors the decoder does not
 * use are kept. One file: a checkpoint sharded over several (`model.safetensors.index.json`) is
 * not read.
 * @throws InvalidArgumentError naming `loadLlamaWeights` for a bad config, or a file that cannot
 *   be read or is not a regular file (as `readSafetensors`);
 *   FileFormatError naming it and the file for a malformed file or one missing a tensor or with a wrong shape.
 */
export function loadLlamaWeights(path: string, config: LlamaConfig): Map<string, WeightTensor> {
  const op = 'loadLlamaWeights';
  const c = requireLlamaConfig(op, config);
  const { tensors } = parse(op, path, readBytes(op, path));
  const problem = weightsProblem(c, tensors);
  if (problem !== undefined) throw new FileFormatError(op, path, problem);
  return tensors;
}

/**
 * Writes a decoder's weights to a `.safetensors` file that transformers' `from_pretrained` loads
 * (`__metadata__` `{ format: 'pt' }`, which it requires), in `F32` (exact) or `BF16`.
 * @throws InvalidArgumentError naming `saveLlamaWeights` for bad tensors, a bad dtype, or when the file cannot be written.
 */
export function saveLlamaWeights(path: string, weights: LlamaWeights, dtype: SafetensorsWriteDtype = 'F32'): void {
  writeBytes('saveLlamaWeights', path, weights, { dtype, metadata: { format: 'pt' } });
}
