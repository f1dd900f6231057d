/**
 * The rendezvous wire format on its own: frames survive any split of the byte stream (TCP delivers
 * bytes, not messages), a stream that is not this protocol is told apart from its first byte, bad
 * lengths are refused before a body is buffered, and the rank lists of error messages read well.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  FrameReader,
  ProtocolViolation,
  RefuseReason,
  HEADER_BYTES,
  MAX_PAYLOAD_BYTES,
  encodeAck,
  encodeHello,
  encodePayload,
  encodeRefuse,
  printable,
  type Frame,
} from '../../src/nccl/rendezvous-protocol.js';
import { formatRanks } from '../../src/nccl/rendezvous.js';

test('a HELLO frame: magic CGRV, version 1, type 1, length 8, rank and world size big-endian', () => {
  assert.deepEqual([...encodeHello(3, 258)], [0x43, 0x47, 0x52, 0x56, 1, 1, 0, 0, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 1, 2]);
  assert.deepEqual([...encodeAck()], [0x43, 0x47, 0x52, 0x56, 1, 3, 0, 0, 0, 0, 0, 0]);
});

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({ rank: fc.integer({ min: 0, max: 0xffff_ffff }), worldSize: fc.integer({ min: 0, max: 0xffff_ffff }) }).map((h) => ({ type: 'hello' as const, version: 1, ...h })),
  fc.uint8Array({ maxLength: 300 }).map((payload) => ({ type: 'payload' as const, version: 1, payload })),
  fc.constant({ type: 'ack' as const, version: 1 }),
  fc.record({ reason: fc.constantFrom(...Object.values(RefuseReason)), text: fc.string({ maxLength: 50 }) }).map((r) => ({ type: 'refuse' as const, version: 1, ...r })),
);

function encode(f: Frame): Uint8Array {
  switch (f.type) {
    case 'hello':
      return encodeHello(f.rank, f.worldSize);
    case 'payload':
      return encodePayload(f.payload);
    case 'ack':
      return encodeAck();
    case 'refuse':
      return encodeRefuse(f.reason as never, f.text);
  }
}

test('property: any sequence of frames, cut into chunks anywhere, decodes to the same frames', () => {
  fc.assert(
    fc.property(fc.array(frameArb, { maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }), (frames, cuts) => {
      const bytes = Buffer.concat(frames.map((f) => encode(f)));
      const r = new FrameReader();
      const got: Frame[] = [];
      for (let at = 0, i = 0; at < bytes.length; i++) {
        const n = cuts[i % cuts.length]!;
        got.push(...r.push(bytes.subarray(at, at + n)));
        at += n;
      }
      assert.equal(r.pending, 0);
      assert.deepEqual(
        got.map((f) => (f.type === 'payload' ? { ...f, payload: [...f.payload] } : f)),
        frames.map((f) => (f.type === 'payload' ? { ...f, payload: [...f.payload] } : f)),
      );
    }),
  );
});

test('property: a stream whose first byte is not C is refused on that byte; one that starts like the magic waits for more', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 40 }), (bytes) => {
      const r = new FrameReader();
      const magic = [0x43, 0x47, 0x52, 0x56];
      const firstWrong = [...bytes.subarray(0, 4)].findIndex((b, i) => b !== magic[i]);
      if (firstWrong >= 0) {
        assert.throws(() => r.push(bytes), (e: unknown) => e instanceof ProtocolViolation && e.reason === 'magic');
      } else if (bytes.length < HEADER_BYTES) {
        assert.deepEqual(r.push(bytes), []);
      }
    }),
  );
  assert.throws(() => new FrameReader().push(Buffer.from('G')), (e: unknown) => e instanceof ProtocolViolation && e.reason === 'magic' && printable(e.bytes) === 'G');
});

test('another version, an unknown type and an oversized length are refused from the header alone', () => {
  const v2 = encodeHello(1, 2);
  v2[4] = 2;
  assert.throws(() => new FrameReader().push(v2), (e: unknown) => e instanceof ProtocolViolation && e.reason === 'version' && e.version === 2);
  // A REFUSE of another version is still read: a newer rank 0 can tell an older peer why.
  const r2 = encodeRefuse(RefuseReason.version, 'newer');
  r2[4] = 2;
  assert.deepEqual(new FrameReader().push(r2), [{ type: 'refuse', version: 2, reason: RefuseReason.version, text: 'newer' }]);
  const unknown = encodeAck();
  unknown[5] = 9;
  assert.throws(() => new FrameReader().push(unknown), (e: unknown) => e instanceof ProtocolViolation && /unknown frame type 9/.test(e.message));
  const huge = encodePayload(new Uint8Array(0));
  new DataView(huge.buffer).setUint32(8, MAX_PAYLOAD_BYTES + 1);
  assert.throws(() => new FrameReader().push(huge), (e: unknown) => e instanceof ProtocolViolation && e.reason === 'frame');
  const longHello = encodeHello(1, 2);
  new DataView(longHello.buffer).setUint32(8, 9);
  assert.throws(() => new FrameReader().push(longHello), (e: unknown) => e instanceof ProtocolViolation && /body of 9 bytes/.test(e.message));
});

test('a REFUSE text is cut to 4 KiB; printable shows control bytes as \\xNN and cuts at 24 bytes', () => {
  const [f] = new FrameReader().push(encodeRefuse(RefuseReason.hostFailed, 'x'.repeat(10_000)));
  assert.equal(f!.type, 'refuse');
  assert.equal((f as Extract<Frame, { type: 'refuse' }>).text.length, 4095);
  assert.equal(printable(Buffer.from('SSH-2.0\r\n')), 'SSH-2.0\\x0d\\x0a');
  assert.equal(printable(Buffer.alloc(30, 0x41)), `${'A'.repeat(24)}…`);
});

test('rank lists in messages: runs collapse to ranges', () => {
  assert.equal(formatRanks([]), '');
  assert.equal(formatRanks([2]), '2');
  assert.equal(formatRanks([2, 3]), '2, 3');
  assert.equal(formatRanks([1, 2, 3, 4, 7, 9, 10, 11]), '1-4, 7, 9-11');
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 200 }), { maxLength: 60 }), (xs) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const back = formatRanks(sorted)
        .split(', ')
        .filter((s) => s !== '')
        .flatMap((part) => {
          const [a, b] = part.split('-').map(Number);
          return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
        });
      assert.deepEqual(back, sorted);
    }),
  );
});
