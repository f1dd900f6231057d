/**
 * The wire format of `tcpRendezvous`: length-prefixed frames behind a magic and a version, so a
 * program that is not a rendezvous peer (an HTTP probe, a port scanner, another protocol version)
 * is recognised from its first bytes and refused instead of being read as a rank.
 *
 *   offset 0  magic 'CGRV' (4 bytes)
 *          4  version (u8)
 *          5  frame type (u8)
 *          6  reserved, 0 (u16)
 *          8  body length (u32, big-endian)
 *         12  body
 *
 * Frames: HELLO (peer → rank 0: rank u32, world size u32), PAYLOAD (rank 0 → peer: the bytes),
 * ACK (peer → rank 0: empty), REFUSE (rank 0 → peer: a reason code u8, then UTF-8 text). The
 * header layout does not change between versions, so a peer of another version can still be told
 * why it is refused.
 */

/** The first four bytes of every frame: 'CGRV'. */
export const RENDEZVOUS_MAGIC = Uint8Array.of(0x43, 0x47, 0x52, 0x56);
/** The protocol version this build speaks. */
export const RENDEZVOUS_VERSION = 1;
/** Bytes of a frame header. */
export const HEADER_BYTES = 12;
/** The largest payload rank 0 hands out (16 MiB: far above the 128 bytes of an ncclUniqueId, small enough that a bad length cannot make a peer allocate much). */
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;
/** The largest REFUSE text. */
const MAX_REFUSE_BYTES = 4096;

/** Frame types. */
export const FrameType = { hello: 1, payload: 2, ack: 3, refuse: 4 } as const;
type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

/** Why rank 0 refuses a peer (the REFUSE frame's first byte). */
export const RefuseReason = { worldSize: 1, duplicateRank: 2, rankRange: 3, version: 4, hostFailed: 5, protocol: 6 } as const;
/** A REFUSE reason code. */
export type RefuseReasonCode = (typeof RefuseReason)[keyof typeof RefuseReason];

/** One decoded frame. */
export type Frame =
  | { readonly type: 'hello'; readonly version: number; readonly rank: number; readonly worldSize: number }
  | { readonly type: 'payload'; readonly version: number; readonly payload: Uint8Array }
  | { readonly type: 'ack'; readonly version: number }
  | { readonly type: 'refuse'; readonly version: number; readonly reason: number; readonly text: string };

/** A byte stream that is not this protocol; `bytes` are the first bytes seen (for the message). */
export class ProtocolViolation extends Error {
  /** What was wrong. */
  readonly reason: 'magic' | 'version' | 'frame';
  /** The first bytes received, for the message. */
  readonly bytes: Uint8Array;
  /** The version the other side speaks, for `reason` 'version'. */
  readonly version: number;

  constructor(reason: 'magic' | 'version' | 'frame', message: string, bytes: Uint8Array, version = RENDEZVOUS_VERSION) {
    super(message);
    this.reason = reason;
    this.bytes = bytes;
    this.version = version;
  }
}

function frame(type: FrameTypeCode, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + body.length);
  out.set(RENDEZVOUS_MAGIC, 0);
  const v = new DataView(out.buffer);
  v.setUint8(4, RENDEZVOUS_VERSION);
  v.setUint8(5, type);
  v.setUint16(6, 0);
  v.setUint32(8, body.length);
  out.set(body, HEADER_BYTES);
  return out;
}

/** A HELLO frame: the peer's rank and the world size it holds. */
export function encodeHello(rank: number, worldSize: number): Uint8Array {
  const body = new Uint8Array(8);
  const v = new DataView(body.buffer);
  v.setUint32(0, rank);
  v.setUint32(4, worldSize);
  return frame(FrameType.hello, body);
}

/** A PAYLOAD frame. */
export function encodePayload(payload: Uint8Array): Uint8Array {
  return frame(FrameType.payload, payload);
}

/** An ACK frame. */
export function encodeAck(): Uint8Array {
  return frame(FrameType.ack, new Uint8Array(0));
}

/** A REFUSE frame: reason code and text (cut to 4 KiB). */
export function encodeRefuse(reason: RefuseReasonCode, text: string): Uint8Array {
  let t = Buffer.from(text, 'utf8');
  if (t.length > MAX_REFUSE_BYTES - 1) t = t.subarray(0, MAX_REFUSE_BYTES - 1);
  const body = new Uint8Array(1 + t.length);
  body[0] = reason;
  body.set(t, 1);
  return frame(FrameType.refuse, body);
}

/** The body limit of each frame type; a length above it is a violation before any byte of the body is buffered. */
function bodyLimit(type: number): number {
  switch (type) {
    case FrameType.hello:
      return 8;
    case FrameType.payload:
      return MAX_PAYLOAD_BYTES;
    case FrameType.ack:
      return 0;
    case FrameType.refuse:
      return MAX_REFUSE_BYTES;
    default:
      return -1;
  }
}

/**
 * Decodes frames from chunks as they arrive (TCP delivers bytes, not messages: a frame can be
 * split anywhere, several can come in one chunk). `push` returns the frames completed so far and
 * throws `ProtocolViolation` as soon as the bytes cannot be this protocol: the magic is checked
 * byte by byte, so a stray client is told apart from its first byte, not after 12.
 */
export class FrameReader {
  #buf: Buffer = Buffer.alloc(0);
  #first: Uint8Array | null = null;

  /** Frames completed by `chunk`. @throws ProtocolViolation */
  push(chunk: Uint8Array): Frame[] {
    if (this.#first === null) this.#first = Uint8Array.from(chunk.subarray(0, 32));
    this.#buf = this.#buf.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#buf, chunk]);
    const out: Frame[] = [];
    for (;;) {
      const b = this.#buf;
      const seen = Math.min(b.length, 4);
      for (let i = 0; i < seen; i++) {
        if (b[i] !== RENDEZVOUS_MAGIC[i]) throw new ProtocolViolation('magic', 'not a rendezvous frame (wrong magic)', this.#first);
      }
      if (b.length < HEADER_BYTES) return out;
      const version = b.readUInt8(4);
      const type = b.readUInt8(5);
      const length = b.readUInt32BE(8);
      if (version !== RENDEZVOUS_VERSION && type !== FrameType.refuse) {
        throw new ProtocolViolation('version', `protocol version ${version}, this build speaks ${RENDEZVOUS_VERSION}`, this.#first, version);
      }
      const limit = bodyLimit(type);
      if (limit < 0) throw new ProtocolViolation('frame', `unknown frame type ${type}`, this.#first);
      if (length > limit || (type === FrameType.hello && length !== 8) || (type === FrameType.refuse && length < 1)) {
        throw new ProtocolViolation('frame', `frame type ${type} with a body of ${length} bytes`, this.#first);
      }
      if (b.length < HEADER_BYTES + length) return out;
      const body = Uint8Array.from(b.subarray(HEADER_BYTES, HEADER_BYTES + length));
      this.#buf = b.subarray(HEADER_BYTES + length);
      out.push(decodeBody(type, version, body));
    }
  }

  /** Bytes received and not yet part of a whole frame. */
  get pending(): number {
    return this.#buf.length;
  }
}

function decodeBody(type: number, version: number, body: Uint8Array): Frame {
  const v = new DataView(body.buffer, body.byteOffset, body.byteLength);
  switch (type) {
    case FrameType.hello:
      return { type: 'hello', version, rank: v.getUint32(0), worldSize: v.getUint32(4) };
    case FrameType.payload:
      return { type: 'payload', version, payload: body };
    case FrameType.ack:
      return { type: 'ack', version };
    default:
      return { type: 'refuse', version, reason: body[0]!, text: Buffer.from(body.subarray(1)).toString('utf8') };
  }
}

/** The first bytes of a stream as text for a message: printable ASCII kept, the rest as `\xNN`, at most 24 bytes. */
export function printable(bytes: Uint8Array): string {
  let s = '';
  for (const c of bytes.subarray(0, 24)) s += c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return bytes.length > 24 ? `${s}…` : s;
}
