/**
 * The layout of the binary graph form (`ComputeGraph.toBinary`, `writeBinary`, `readBinary`), and
 * the reading of its framing: the header and the length-prefixed, checksummed sections. What the
 * sections hold is checked by graph-binary-read.ts.
 *
 * Little-endian throughout. A file is a 24-byte header, then the sections of `SECTIONS`, each
 * once and in that order, and nothing after them:
 *
 * - header: `CGRAPH` (6 bytes), format version (u16), node count n (u32), edge count m (u32),
 *   flags (u32, 0), CRC-32 of the 20 bytes before it (u32);
 * - section: tag (4 ASCII bytes), payload length (u64 as two u32, low word first), CRC-32 of those
 *   12 bytes (u32), the payload, CRC-32 of the payload (u32).
 *
 * Why a checksum on the section's head as well as on its payload: a length is believed only once
 * its checksum holds, so a flipped bit in it is refused before anything of that length is read or
 * allocated.
 *
 * A file is the one the writer writes for its graph, and a reader refuses any other (naming the
 * section), so that a file that loads writes back byte for byte and nothing in it goes unread:
 * `TEXT` holds each string once, in the order the nodes first name them (a node's name, then its
 * function name or label), none that no node names, in UTF-16LE only when a string holds a lone
 * surrogate; `COST` is empty when every cost is 1; a `NEST` record leaves out `id`, `name`,
 * `stream` and `cost` (the columns hold them) and is `JSON.stringify` of the node's record, no
 * other spelling of it. `STRM` may list streams no node is on (a capture keeps the slot of a
 * stream that began capturing and recorded nothing), in slot order; they are kept as they are.
 */
import { crc32 } from './crc32.js';

/** The magic bytes a binary graph file starts with (`CGRAPH`). */
export const BINARY_MAGIC = Uint8Array.of(0x43, 0x47, 0x52, 0x41, 0x50, 0x48);
/** The format version this build writes and reads. */
export const BINARY_VERSION = 1;
/** Bytes in the header. */
export const HEADER_BYTES = 24;
/** Bytes in a section's head (tag, length, the head's checksum). */
export const SECTION_HEAD_BYTES = 16;

/**
 * The sections, in file order, with what each payload holds (n nodes, m edges; ids are indexes):
 *
 * - `KIND` n × u8: node kinds (node.ts `KIND_*`);
 * - `STRM` k × u32: the stream ids, by slot;
 * - `SLOT` n × i32: each node's stream slot, −1 for none;
 * - `NAME` n × u32: each node's name, an index into `TEXT`;
 * - `COST` n × f64, or empty when every cost is 1;
 * - `PARM` n × 4 u32: the kind's parameter slots (graph-store.ts `PARAM_STRIDE`; unused slots 0);
 * - `DIMS` (node, grid y, grid z, block y, block z) × u32, for kernels not one-dimensional, ascending;
 * - `PEER` (node, src device, dst device) × u32, for peer-to-peer copies, ascending;
 * - `TEXT` the interned strings, in the order the nodes first name them: count s (u32), encoding
 *   (u32: 0 UTF-8, 1 UTF-16LE, used only when a string holds a lone surrogate, which UTF-8 cannot
 *   carry), s × u32 lengths in UTF-16 code units, then the strings' bytes one after another;
 * - `NEST` child graph and conditional nodes: count (u32), then per node its id (u32), a length
 *   (u32) and the node's JSON record without its id, name, stream and cost (UTF-8, as
 *   `JSON.stringify` writes it);
 * - `EFRM`, `ETOS` m × u32: edge sources and targets, edge i being the graph's edge i;
 * - `ECOD` (edge index, data code) × u32 for the edges that are not plain (edge-data.ts), ascending.
 */
export const SECTIONS = ['KIND', 'STRM', 'SLOT', 'NAME', 'COST', 'PARM', 'DIMS', 'PEER', 'TEXT', 'NEST', 'EFRM', 'ETOS', 'ECOD'] as const;

/** A section's tag. */
export type SectionTag = (typeof SECTIONS)[number];

/** The header's counts and the sections' payloads, framing checked. */
export interface BinaryParts {
  readonly n: number;
  readonly m: number;
  readonly sections: ReadonlyMap<SectionTag, Uint8Array>;
}

/** A request of the framing reader: the next `bytes` bytes, which lie inside `what` (for a refusal). */
export interface ByteRequest {
  readonly bytes: number;
  readonly what: string;
}

/** A refusal of the framing or of a section's contents (the caller names the operation and file). */
export class BinaryRefusal extends Error {}

const u32At = (b: Uint8Array, at: number): number => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/** Tags as 4 ASCII bytes, to compare without decoding. */
export function tagBytes(tag: string): Uint8Array {
  return Uint8Array.from(tag, (c) => c.charCodeAt(0));
}

/** The payload length a section must have for n nodes and m edges, or its element size when it varies (negative). */
function expectedLength(tag: SectionTag, n: number, m: number): number {
  switch (tag) {
    case 'KIND':
      return n;
    case 'SLOT':
    case 'NAME':
      return 4 * n;
    case 'PARM':
      return 16 * n;
    case 'EFRM':
    case 'ETOS':
      return 4 * m;
    case 'STRM':
      return -4;
    case 'DIMS':
      return -20;
    case 'PEER':
      return -12;
    case 'ECOD':
      return -8;
    case 'COST':
      return -1; // checked below: 0 or 8n
    default:
      return -1;
  }
}

/**
 * Reads the header and the sections: yields requests for bytes and is resumed with exactly those
 * bytes (a driver reads them from memory or a stream and refuses a source that ends first).
 * `remaining` (when known) tells how many bytes the source has left, so that no length past the
 * end is ever allocated. @throws BinaryRefusal on the first problem.
 */
export function* readFraming(remaining: (() => number) | null): Generator<ByteRequest, BinaryParts, Uint8Array> {
  const head = yield { bytes: HEADER_BYTES, what: 'the header' };
  for (let i = 0; i < BINARY_MAGIC.length; i++) {
    if (head[i] !== BINARY_MAGIC[i]) throw new BinaryRefusal("not a binary graph (it does not start with 'CGRAPH')");
  }
  const crc = crc32(head.subarray(0, 20));
  if (crc !== u32At(head, 20)) throw new BinaryRefusal('the header fails its checksum (the file is corrupt)');
  const version = head[6]! | (head[7]! << 8);
  if (version !== BINARY_VERSION) throw new BinaryRefusal(`format version ${version}; this build reads version ${BINARY_VERSION}`);
  const n = u32At(head, 8);
  const m = u32At(head, 12);
  if (u32At(head, 16) !== 0) throw new BinaryRefusal(`the header's flags are ${u32At(head, 16)}; version ${BINARY_VERSION} defines none`);
  const sections = new Map<SectionTag, Uint8Array>();
  for (const tag of SECTIONS) {
    const what = `section '${tag}'`;
    const sh = yield { bytes: SECTION_HEAD_BYTES, what: `the head of ${what}` };
    const got = String.fromCharCode(sh[0]!, sh[1]!, sh[2]!, sh[3]!);
    if (crc32(sh.subarray(0, 12)) !== u32At(sh, 12)) throw new BinaryRefusal(`the head of ${what} fails its checksum (the file is corrupt)`);
    if (got !== tag) throw new BinaryRefusal(`expected ${what}, found a section tagged ${JSON.stringify(got)}`);
    const hi = u32At(sh, 8);
    const length = u32At(sh, 4) + hi * 2 ** 32;
    const expected = expectedLength(tag, n, m);
    const fits =
      tag === 'COST' ? length === 0 || length === 8 * n : expected >= 0 ? length === expected : length % -expected === 0 && Number.isSafeInteger(length);
    if (!fits) throw new BinaryRefusal(`${what} is ${length} bytes long, which does not fit ${n} node(s) and ${m} edge(s)`);
    if (remaining !== null && length + 4 > remaining()) throw new BinaryRefusal(`the file ends inside ${what} (it needs ${length + 4} more bytes, ${remaining()} are left)`);
    const payload = yield { bytes: length, what };
    const tail = yield { bytes: 4, what };
    if (crc32(payload) !== u32At(tail, 0)) throw new BinaryRefusal(`${what} fails its checksum (the file is corrupt)`);
    sections.set(tag, payload);
  }
  return { n, m, sections };
}

/** True on little-endian hosts, where typed arrays already hold the format's byte order. */
export const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/** Reverses each `size`-byte element of `b` in place (big-endian hosts only, where the format's order differs). */
export function swapBytes(b: Uint8Array, size: number): void {
  for (let i = 0; i + size <= b.length; i += size) b.subarray(i, i + size).reverse();
}
