/**
 * The binary graph form (graph-binary-format.ts) written a piece at a time. Most of a file is the
 * store's own columns: the pieces are views of them (no copy, no per-node work), cut to at most
 * 1 MiB so that a Writable's backpressure has pieces to act on. Only the small sections (streams,
 * the sparse maps, strings, nested graphs) are built.
 */
import { GraphError } from '../errors/graph-error.js';
import { GraphErrorCode } from './error-codes.js';
import { crc32 } from './crc32.js';
import { BINARY_MAGIC, BINARY_VERSION, HEADER_BYTES, LITTLE_ENDIAN, SECTION_HEAD_BYTES, SECTIONS, swapBytes, tagBytes, type SectionTag } from './graph-binary-format.js';
import { documentNode } from './graph-json-stream.js';
import { KIND_CHILD, KIND_CONDITIONAL } from './node.js';
import type { GraphStore } from './graph-store.js';
import { pairEnds } from './edge-pairs.js';

/** The most bytes one piece holds. */
const PIECE_BYTES = 1 << 20;

type Column = Uint8Array | Int32Array | Uint32Array | Float64Array;

/** The bytes of `a` in the format's order: a view on little-endian hosts, a swapped copy elsewhere. */
function bytesOf(a: Column): Uint8Array {
  const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  if (LITTLE_ENDIAN || a.BYTES_PER_ELEMENT === 1) return b;
  const c = b.slice();
  swapBytes(c, a.BYTES_PER_ELEMENT);
  return c;
}

function u32Bytes(values: readonly number[]): Uint8Array {
  return bytesOf(Uint32Array.from(values));
}

/** A UTF-16 code unit of a surrogate pair standing alone (a unicode regex sees a whole pair as one code point). */
const LONE_SURROGATE = /\p{Cs}/u;

/** The `TEXT` section: the store's interned strings (see graph-binary-format.ts). */
function textSection(strings: readonly string[]): Uint8Array[] {
  // UTF-8 cannot carry a lone surrogate (it would come back as U+FFFD): such a table goes as UTF-16.
  const utf16 = strings.some((s) => LONE_SURROGATE.test(s));
  const head = new Uint32Array(2 + strings.length);
  head[0] = strings.length;
  head[1] = utf16 ? 1 : 0;
  for (let i = 0; i < strings.length; i++) head[2 + i] = strings[i]!.length;
  const body = Buffer.from(strings.join(''), utf16 ? 'utf16le' : 'utf8');
  return [bytesOf(head), body];
}

/** The fields of a node's record that its columns hold, so that a `NEST` record leaves them out. */
export const NEST_COLUMN_FIELDS: readonly string[] = ['id', 'name', 'stream', 'cost'];

/**
 * The `NEST` record of child graph or conditional node `id` of `store`: its JSON record, less what
 * the columns hold (`NEST_COLUMN_FIELDS`). The one text a record may have: the reader refuses
 * any other.
 */
export function nestRecordText(store: GraphStore, id: number): string {
  const own = { ...documentNode(store.readNode(id)) } as Record<string, unknown>;
  for (const field of NEST_COLUMN_FIELDS) delete own[field];
  return JSON.stringify(own);
}

/** The `NEST` section: each child graph and conditional node's record (`nestRecordText`). */
function nestSection(store: GraphStore): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let count = 0;
  const ids = [...store.children.keys(), ...store.conditionals.keys()].sort((a, b) => a - b);
  for (const id of ids) {
    const kind = store.kind[id];
    if (kind !== KIND_CHILD && kind !== KIND_CONDITIONAL) continue;
    const text = Buffer.from(nestRecordText(store, id), 'utf8');
    parts.push(u32Bytes([id, text.length]), text);
    count++;
  }
  return [u32Bytes([count]), ...parts];
}

/** Sorted [key, ...values] records of a map of number arrays, flattened. */
function records(map: ReadonlyMap<number, readonly number[]>): Uint8Array {
  const out: number[] = [];
  for (const key of [...map.keys()].sort((a, b) => a - b)) out.push(key, ...map.get(key)!);
  return u32Bytes(out);
}

/** Each section's payload, as one or more byte arrays. */
function payloads(store: GraphStore): Record<SectionTag, Uint8Array[]> {
  const { n, m } = store;
  const codes: number[] = [];
  for (const e of [...store.edgeCodes.keys()].sort((a, b) => a - b)) codes.push(e - 1, store.edgeCodes.get(e)!);
  return {
    KIND: [bytesOf(store.kind.subarray(0, n))],
    STRM: [u32Bytes(store.streamIds)],
    SLOT: [bytesOf(store.slot.subarray(0, n))],
    NAME: [bytesOf(store.name.subarray(0, n))],
    COST: store.cost === null ? [] : [bytesOf(store.cost.subarray(0, n))],
    PARM: [bytesOf(store.param.subarray(0, 4 * n))],
    DIMS: [records(store.dims)],
    PEER: [records(store.peers)],
    TEXT: textSection(store.strings),
    NEST: nestSection(store),
    EFRM: [bytesOf(pairEnds(store.ins, m))],
    ETOS: [bytesOf(pairEnds(store.outs, m))],
    ECOD: [u32Bytes(codes)],
  };
}

function u32le(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

/**
 * The pieces of the binary form of `store`; `op` names the call in a refusal. The graph must not
 * change while the pieces are read (they are views of its columns): a piece read after a change
 * throws GraphError `GRAPH_BUSY`.
 */
export function* graphBinaryChunks(store: GraphStore, op: string): Generator<Uint8Array, void, undefined> {
  const version = store.version;
  const check = (): void => {
    if (store.version !== version) {
      throw new GraphError('Internal', GraphErrorCode.Busy, `${op}: the graph changed while its binary form was being read; read the pieces to the end before changing it`);
    }
  };
  const head = new Uint8Array(HEADER_BYTES);
  head.set(BINARY_MAGIC);
  head[6] = BINARY_VERSION & 0xff;
  head[7] = BINARY_VERSION >>> 8;
  u32le(head, 8, store.n);
  u32le(head, 12, store.m);
  u32le(head, 20, crc32(head.subarray(0, 20)));
  yield head;
  const all = payloads(store);
  for (const tag of SECTIONS) {
    const parts = all[tag];
    const length = parts.reduce((sum, p) => sum + p.length, 0);
    const sh = new Uint8Array(SECTION_HEAD_BYTES);
    sh.set(tagBytes(tag));
    u32le(sh, 4, length % 2 ** 32);
    u32le(sh, 8, Math.floor(length / 2 ** 32));
    u32le(sh, 12, crc32(sh.subarray(0, 12)));
    yield sh;
    check();
    let crc = 0;
    for (const part of parts) {
      for (let at = 0; at < part.length; at += PIECE_BYTES) {
        const piece = part.subarray(at, Math.min(part.length, at + PIECE_BYTES));
        crc = crc32(piece, crc);
        yield piece;
        check();
      }
    }
    const tail = new Uint8Array(4);
    u32le(tail, 0, crc);
    yield tail;
    check();
  }
}

/** The whole binary form of `store` in one array. */
export function graphBinaryBytes(store: GraphStore, op: string): Uint8Array {
  const bytes = Buffer.concat([...graphBinaryChunks(store, op)]);
  // A plain Uint8Array of its own memory, not a Buffer (whose `slice` shares memory, and which a
  // small concat takes from a shared pool).
  return bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes);
}
