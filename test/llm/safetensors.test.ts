/**
 * `.safetensors`: what is written has the format's byte layout (checked by reading the bytes
 * here, not only by reading them back), F32 round-trips exactly and BF16 as the nearest bfloat16
 * (checked against a plain nearest-value search), F16 and BF16 files made by hand read as their
 * values, every malformed file is refused with a FileFormatError naming the call and the file, and
 * a decoder's weights save and load.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { FileFormatError } from '../../src/errors/file-format-error.js';
import {
  bf16Bits,
  encodeSafetensors,
  fromBf16Bits,
  fromF16Bits,
  loadLlamaWeights,
  parseSafetensors,
  readSafetensors,
  saveLlamaWeights,
  writeSafetensors,
} from '../../src/llm/safetensors.js';
import { syntheticWeights, type WeightTensor } from '../../src/llm/weights.js';
import { refused } from '../support/refused.js';
import { TINY } from './helpers.js';

/** A temporary folder for one test, removed after. */
function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-safetensors-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The bytes of a file: the 8-byte header length (`length`, or the header's own), the header text, then `data`. */
function file(header: unknown, data: ArrayLike<number> = [], length?: number): Uint8Array {
  const text = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + data.length);
  const view = new DataView(out.buffer);
  const n = length ?? text.length;
  view.setUint32(0, n % 2 ** 32, true);
  view.setUint32(4, Math.floor(n / 2 ** 32), true);
  out.set(text, 8);
  out.set(data, 8 + text.length);
  return out;
}

/** Little-endian bytes of float32 values. */
function f32Bytes(values: readonly number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  values.forEach((v, i) => new DataView(out.buffer).setFloat32(4 * i, v, true));
  return out;
}

const tensors = (entries: [string, number[], number[]][]): Map<string, WeightTensor> =>
  new Map(entries.map(([name, shape, values]) => [name, { shape, data: Float32Array.from(values) }]));

test('the bytes written are the format: u64 LE header length, JSON header padded to 8, little-endian data at its offsets', () => {
  const bytes = encodeSafetensors(tensors([['a', [2, 2], [1, 2, 3, 4]], ['b', [3], [-1, 0.5, 1e-3]], ['s', [], [7]]]), { metadata: { format: 'pt' } });
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const n = view.getUint32(0, true);
  assert.equal(view.getUint32(4, true), 0);
  assert.equal((8 + n) % 8, 0, 'the data starts 8-aligned');
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
  assert.match(text, /^\{.*\} *$/);
  const header = JSON.parse(text);
  assert.deepEqual(header, {
    __metadata__: { format: 'pt' },
    a: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] },
    b: { dtype: 'F32', shape: [3], data_offsets: [16, 28] },
    s: { dtype: 'F32', shape: [], data_offsets: [28, 32] },
  });
  assert.equal(bytes.length, 8 + n + 32);
  const data = (i: number): number => view.getFloat32(8 + n + 4 * i, true);
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map(data), [1, 2, 3, 4, -1, 0.5, Math.fround(1e-3), 7]);

  const bf = encodeSafetensors(tensors([['a', [2], [1, -2]]]), { dtype: 'BF16' });
  const m = new DataView(bf.buffer).getUint32(0, true);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(bf.subarray(8, 8 + m))), { a: { dtype: 'BF16', shape: [2], data_offsets: [0, 4] } });
  assert.deepEqual([...bf.subarray(8 + m)], [0x80, 0x3f, 0x00, 0xc0]);
});

const shapes = fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 });
const named = fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s !== '__metadata__'), shapes), { selector: ([n]) => n, maxLength: 5 });

/** Tensors of the given names and shapes, with values from `f` (the element index in, a number out). */
function build(list: readonly (readonly [string, number[]])[], values: readonly number[]): Map<string, WeightTensor> {
  let k = 0;
  return new Map(
    list.map(([name, shape]) => {
      const n = shape.reduce((a, b) => a * b, 1);
      const data = Float32Array.from({ length: n }, () => values[k++ % values.length] ?? 0);
      return [name, { shape, data }];
    }),
  );
}

test('F32 round-trips exactly: names, shapes, values (−0, infinities and NaN included), metadata', () => {
  const value = fc.oneof(fc.float(), fc.constantFrom(-0, Infinity, -Infinity, NaN, 3.4028234663852886e38, 1e-45));
  fc.assert(
    fc.property(named, fc.array(value, { minLength: 1, maxLength: 50 }), fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }), (list, values, metadata) => {
      const t = build(list, values);
      const back = parseSafetensors(encodeSafetensors(t, { metadata }));
      assert.deepEqual([...back.tensors.keys()].sort(), [...t.keys()].sort());
      for (const [name, x] of t) {
        assert.deepEqual(back.tensors.get(name)!.shape, x.shape);
        assert.deepEqual(new Uint32Array(back.tensors.get(name)!.data.buffer), new Uint32Array(x.data.buffer), name);
        assert.equal(back.dtypes.get(name), 'F32');
      }
      assert.deepEqual({ ...back.metadata }, { ...metadata });
    }),
  );
});

/** A float32 value's bits. */
function bitsOf(x: number): number {
  return new Uint32Array(Float32Array.of(x).buffer)[0]!;
}

/** The value of 16 bfloat16 bits as if the exponent had no top (0x7f80 → 2^128), so rounding up to it can be compared. */
function unbounded(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 7) & 0xff;
  const m = h & 0x7f;
  return sign * (e === 0 ? m * 2 ** -133 : (1 + m / 128) * 2 ** (e - 127));
}

/** The nearest bfloat16 to a finite float32, by comparing the two candidates around it (ties to the even one). */
function nearestBf16(x: number): number {
  const lo = bitsOf(x) >>> 16;
  const hi = lo + 1;
  const dlo = Math.abs(x - unbounded(lo));
  const dhi = Math.abs(x - unbounded(hi));
  return dlo < dhi || (dlo === dhi && (lo & 1) === 0) ? lo : hi;
}

test('bf16Bits rounds to the nearest bfloat16, ties to even, overflow to infinity, as a plain search does', () => {
  const finite = fc.integer({ min: 0, max: 0xffffffff }).map((b) => new Float32Array(new Uint32Array([b]).buffer)[0]!).filter(Number.isFinite);
  fc.assert(fc.property(finite, (x) => bf16Bits(x) === nearestBf16(x)), { numRuns: 20000 });
  // Halfway cases, both ways, and the edges.
  assert.equal(bf16Bits(new Float32Array(new Uint32Array([0x3f808000]).buffer)[0]!), 0x3f80, 'a tie rounds down to even');
  assert.equal(bf16Bits(new Float32Array(new Uint32Array([0x3f818000]).buffer)[0]!), 0x3f82, 'a tie rounds up to even');
  assert.equal(bf16Bits(new Float32Array(new Uint32Array([0x3f808001]).buffer)[0]!), 0x3f81, 'above the tie rounds up');
  assert.equal(bf16Bits(3.4028234663852886e38), 0x7f80, 'the largest float32 rounds to infinity');
  assert.equal(bf16Bits(-Infinity), 0xff80);
  assert.equal(bf16Bits(-0), 0x8000);
  assert.ok(Number.isNaN(fromBf16Bits(bf16Bits(NaN))));
  assert.equal(bf16Bits(-NaN) & 0x7fc0, 0x7fc0, 'NaN stays a quiet NaN');
  assert.equal(fromBf16Bits(0x3f80), 1);
  assert.equal(fromBf16Bits(0xc049), -3.140625);
});

test('BF16 round-trips as the nearest bfloat16 of each value', () => {
  fc.assert(
    fc.property(named, fc.array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 50 }), (list, values) => {
      const t = build(list, values);
      const back = parseSafetensors(encodeSafetensors(t, { dtype: 'BF16' }));
      for (const [name, x] of t) {
        assert.equal(back.dtypes.get(name), 'BF16');
        assert.deepEqual([...back.tensors.get(name)!.data], [...x.data].map((v) => fromBf16Bits(bf16Bits(v))), name);
      }
    }),
  );
});

test('F16 and BF16 files made by hand read as their values, at any alignment', () => {
  assert.deepEqual([0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x3555, 0x8000, 0x7c00, 0xfc00].map(fromF16Bits), [
    1, -2, 65504, 2 ** -24, 2 ** -14, 0.333251953125, -0, Infinity, -Infinity,
  ]);
  assert.ok(Number.isNaN(fromF16Bits(0x7e00)));
  // A header of odd length: the tensors' data starts unaligned.
  const header = { h: { dtype: 'F16', shape: [3], data_offsets: [0, 6] }, b: { dtype: 'BF16', shape: [1, 2], data_offsets: [6, 10] }, f: { dtype: 'F32', shape: [1], data_offsets: [10, 14] } };
  let text = JSON.stringify(header);
  if (text.length % 2 === 0) text += ' ';
  const bytes = file(text, [0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35, 0x80, 0x3f, 0x49, 0xc0, ...f32Bytes([0.1])]);
  const r = parseSafetensors(bytes);
  assert.deepEqual([...r.tensors.get('h')!.data], [1, -2, Math.fround(0.333251953125)]);
  assert.deepEqual(r.tensors.get('b')!.shape, [1, 2]);
  assert.deepEqual([...r.tensors.get('b')!.data], [1, -3.140625]);
  assert.deepEqual([...r.tensors.get('f')!.data], [Math.fround(0.1)]);
  assert.deepEqual(r.dtypes, new Map([['h', 'F16'], ['b', 'BF16'], ['f', 'F32']]));
  assert.deepEqual(r.metadata, {});
  // A Node Buffer (what readFileSync gives) at an odd offset of a larger allocation reads the same.
  const inside = Buffer.alloc(bytes.length + 3);
  inside.set(bytes, 3);
  assert.deepEqual(parseSafetensors(inside.subarray(3)).tensors, r.tensors);
});

test('malformed files are refused with a FileFormatError naming the call and the file', (t) => {
  const f = (name: string, shape: number[], offsets: number[], dtype = 'F32') => ({ [name]: { dtype, shape, data_offsets: offsets } });
  const four = f32Bytes([1, 2, 3, 4]);
  const cases: [string, Uint8Array, RegExp][] = [
    ['shorter than the length', new Uint8Array(5), /5 bytes is shorter than the 8-byte header length/],
    ['header past the end', file({}, [], 100), /header length 100 runs past the end of the file \(10 bytes\)/],
    ['header over the limit', file({}, [], 2 ** 33), /header length 8589934592 is over the format's limit/],
    ['not UTF-8', file('{"ab":1}').map((b, i) => (i === 10 ? 0xff : b)), /not UTF-8/],
    ['not JSON', file('{"a": '), /the header is not JSON/],
    ['not an object', file('[1, 2]'), /the header must be a JSON object, got an array/],
    ['entry not an object', file({ a: 3 }), /tensor 'a' must be \{ dtype, shape, data_offsets \}, got 3/],
    ['unknown dtype', file(f('a', [1], [0, 4], 'Q4')), /tensor 'a' has unknown dtype "Q4"/],
    ['dtype not read', file(f('a', [1], [0, 8], 'F64'), new Uint8Array(8)), /tensor 'a' has dtype F64, which is not read here/],
    ['no dtype', file({ a: { shape: [1], data_offsets: [0, 4] } }, four.subarray(0, 4)), /tensor 'a' has no dtype string/],
    ['bad shape', file(f('a', [-1], [0, 4]), four.subarray(0, 4)), /tensor 'a' must have a shape of non-negative integers/],
    ['fractional shape', file(f('a', [1.5], [0, 4]), four.subarray(0, 4)), /shape of non-negative integers/],
    ['bad offsets', file({ a: { dtype: 'F32', shape: [1], data_offsets: [0] } }, four.subarray(0, 4)), /data_offsets \[begin, end\]/],
    ['offsets reversed', file(f('a', [0], [4, 0]), four), /data_offsets \[4, 0\] that end before they begin/],
    ['offsets past the data', file(f('a', [4], [0, 16]), four.subarray(0, 8)), /data_offsets \[0, 16\] past the end of the data \(8 bytes after the header\)/],
    ['shape and bytes differ', file(f('a', [3], [0, 16]), four), /tensor 'a' of shape \[3\] in F32 needs 12 bytes, its data_offsets \[0, 16\] hold 16/],
    ['overlap', file({ ...f('a', [2], [0, 8]), ...f('b', [2], [4, 12]) }, new Uint8Array(12)), /tensor 'b' at \[4, 12\] overlaps tensor 'a' \[0, 8\]/],
    ['gap', file({ ...f('a', [1], [0, 4]), ...f('b', [2], [8, 16]) }, new Uint8Array(16)), /bytes 4\.\.8 between tensor 'a' \[0, 4\] and tensor 'b' belong to no tensor/],
    ['gap at the start', file(f('a', [1], [4, 8]), new Uint8Array(8)), /bytes 0\.\.4 between the start of the data and tensor 'a'/],
    ['trailing bytes', file(f('a', [1], [0, 4]), four), /bytes 4\.\.16 after tensor 'a' \[0, 4\] belong to no tensor/],
    ['bytes and no tensors', file({}, four), /bytes 0\.\.16 after the start of the data belong to no tensor/],
    ['metadata not strings', file({ __metadata__: { format: 1 } }), /__metadata__\.format must be a string, got 1/],
    ['metadata not an object', file({ __metadata__: 'pt' }), /__metadata__ must be an object of strings/],
  ];
  const dir = tempDir(t);
  for (const [what, bytes, pattern] of cases) {
    const e = refused(() => parseSafetensors(bytes, 'bad.safetensors'), FileFormatError, 'parseSafetensors', pattern) as FileFormatError;
    assert.ok(e.message.startsWith('parseSafetensors: bad.safetensors: '), `${what}: ${e.message}`);
    assert.equal(e.file, 'bad.safetensors');
    assert.equal(e.code, 'ERR_FILE_FORMAT');
    const path = join(dir, `${what.replace(/ /g, '-')}.safetensors`);
    writeFileSync(path, bytes);
    const r = refused(() => readSafetensors(path), FileFormatError, 'readSafetensors', pattern);
    assert.ok(r.message.startsWith(`readSafetensors: ${path}: `), r.message);
  }
  // What is well-formed: a null __metadata__, an empty file of no tensors, zero-size tensors, padding spaces.
  assert.deepEqual(parseSafetensors(file({ __metadata__: null })).tensors, new Map());
  assert.equal(parseSafetensors(file(`${JSON.stringify({ ...f('z', [0, 3], [0, 0]), ...f('a', [1], [0, 4]) })}      `, four.subarray(0, 4))).tensors.get('z')!.data.length, 0);
  refused(() => readSafetensors(join(dir, 'absent.safetensors')), InvalidArgumentError, 'readSafetensors', /cannot read .*absent\.safetensors/);
  refused(() => parseSafetensors('abc' as never), InvalidArgumentError, 'parseSafetensors', /bytes must be a Uint8Array/);
});

test('encodeSafetensors and writeSafetensors refuse what they cannot write, naming the call', (t) => {
  const op = 'encodeSafetensors';
  refused(() => encodeSafetensors(tensors([['a', [3], [1, 2]]])), InvalidArgumentError, op, /tensor 'a' of shape \[3\] must hold a Float32Array of 3 values, got 2 values/);
  refused(() => encodeSafetensors(new Map([['a', { shape: [1], data: [1] as never }]])), InvalidArgumentError, op, /must hold a Float32Array/);
  refused(() => encodeSafetensors(tensors([['a', [-1], []]])), InvalidArgumentError, op, /shape of non-negative integers/);
  refused(() => encodeSafetensors(tensors([['__metadata__', [1], [1]]])), InvalidArgumentError, op, /other than __metadata__/);
  refused(() => encodeSafetensors(tensors([]), { dtype: 'F16' as never }), InvalidArgumentError, op, /dtype must be one of 'F32', 'BF16'/);
  refused(() => encodeSafetensors(tensors([]), { metadata: { a: 1 } as never }), InvalidArgumentError, op, /metadata\.a must be a string/);
  refused(() => encodeSafetensors(tensors([]), { align: 8 } as never), InvalidArgumentError, op, /unknown option 'align'/);
  refused(() => encodeSafetensors([] as never), InvalidArgumentError, op, /tensors must be a Map/);
  const dir = tempDir(t);
  refused(() => writeSafetensors(join(dir, 'no', 'such', 'x.safetensors'), tensors([])), InvalidArgumentError, 'writeSafetensors', /cannot write/);
  refused(() => writeSafetensors(join(dir, 'x.safetensors'), tensors([['a', [2], [1]]])), InvalidArgumentError, 'writeSafetensors', /tensor 'a'/);
  const path = join(dir, 'ok.safetensors');
  writeSafetensors(path, tensors([['a', [2], [1, 2]]]), { dtype: 'BF16' });
  assert.deepEqual([...readSafetensors(path).tensors.get('a')!.data], [1, 2]);
});

test('saveLlamaWeights and loadLlamaWeights: F32 exactly, BF16 rounded, with the metadata transformers wants', (t) => {
  const dir = tempDir(t);
  const w = syntheticWeights(TINY, 4);
  const f32 = join(dir, 'f32.safetensors');
  saveLlamaWeights(f32, w);
  assert.deepEqual(readSafetensors(f32).metadata, { format: 'pt' });
  const back = loadLlamaWeights(f32, TINY);
  assert.deepEqual([...back.keys()], [...w.keys()]);
  for (const [name, x] of w) assert.deepEqual(back.get(name)!.data, x.data, name);

  const bf16 = join(dir, 'bf16.safetensors');
  saveLlamaWeights(bf16, w, 'BF16');
  const r = readSafetensors(bf16);
  assert.ok([...r.dtypes.values()].every((d) => d === 'BF16'));
  for (const [name, x] of loadLlamaWeights(bf16, TINY)) {
    assert.deepEqual([...x.data], [...w.get(name)!.data].map((v) => fromBf16Bits(bf16Bits(v))), name);
  }
});

test('loadLlamaWeights refuses a file that lacks a tensor or has one of another shape, naming the file', (t) => {
  const dir = tempDir(t);
  const w = syntheticWeights(TINY, 4);
  const missing = new Map(w);
  missing.delete('model.layers.1.self_attn.o_proj.weight');
  const path = join(dir, 'missing.safetensors');
  saveLlamaWeights(path, missing);
  const e = refused(() => loadLlamaWeights(path, TINY), FileFormatError, 'loadLlamaWeights', /tensor 'model\.layers\.1\.self_attn\.o_proj\.weight' \[64, 64\] is missing/);
  assert.ok(e.message.startsWith(`loadLlamaWeights: ${path}: `));
  const whole = join(dir, 'whole.safetensors');
  saveLlamaWeights(whole, w);
  refused(() => loadLlamaWeights(whole, { ...TINY, dim: 128, heads: 8 }), FileFormatError, 'loadLlamaWeights', /'model\.embed_tokens\.weight' must have shape \[258, 128\], got \[258, 64\]/);
  writeFileSync(join(dir, 'junk.safetensors'), 'not a safetensors file');
  refused(() => loadLlamaWeights(join(dir, 'junk.safetensors'), TINY), FileFormatError, 'loadLlamaWeights', /header length/);
  refused(() => saveLlamaWeights(join(dir, 'x.safetensors'), w, 'F16' as never), InvalidArgumentError, 'saveLlamaWeights', /dtype must be one of/);
});

test('readSafetensors reads only regular files: a device, a pipe or a folder is refused at once, never read without end', (t) => {
  const dir = tempDir(t);
  const fifo = join(dir, 'pipe.safetensors');
  const hasFifo = spawnSync('mkfifo', [fifo]).status === 0;
  const paths: [string, RegExp][] = [
    ['/dev/zero', /it is a character device, not a regular file/],
    [dir, /it is a folder, not a regular file/],
    ...(hasFifo ? [[fifo, /it is a pipe, not a regular file/] as [string, RegExp]] : []),
  ];
  for (const [path, pattern] of paths) {
    // In a child process with a time limit: reading /dev/zero or a pipe with no writer blocks the thread that reads.
    const module = new URL('../../src/llm/safetensors.js', import.meta.url).href;
    const script = `import(${JSON.stringify(module)}).then((m) => { try { m.readSafetensors(${JSON.stringify(path)}); console.log('read'); } catch (e) { console.log(e.name + ': ' + e.message); } })`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.signal, null, `${path}: still reading after 20 s`);
    assert.match(r.stdout, new RegExp(`^InvalidArgumentError: readSafetensors: cannot read ${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `), path);
    assert.match(r.stdout, pattern, path);
  }
});

test('readSafetensors refuses a header length the file cannot hold before reading the rest of it', (t) => {
  const dir = tempDir(t);
  // A sparse file of 2.5 GiB whose header length is past the format's limit: refused from its first 8 bytes.
  const path = join(dir, 'large.safetensors');
  writeFileSync(path, file({}, [], 2 ** 33));
  truncateSync(path, 2.5 * 2 ** 30);
  const e = refused(() => readSafetensors(path), FileFormatError, 'readSafetensors', /header length 8589934592 is over the format's limit/) as FileFormatError;
  assert.equal(e.file, path);
  const short = join(dir, 'short.safetensors');
  writeFileSync(short, Uint8Array.of(1, 0, 0));
  refused(() => readSafetensors(short), FileFormatError, 'readSafetensors', /3 bytes is shorter than the 8-byte header length/);
  refused(() => loadLlamaWeights(path, TINY), FileFormatError, 'loadLlamaWeights', /over the format's limit/);
});
