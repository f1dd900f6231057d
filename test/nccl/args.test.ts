/**
 * NCCL's enum values and error table, unique ids, and the collective argument checks, on the CPU.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  NcclResult,
  ncclResultName,
  ncclResultDescription,
  NcclError,
  NcclUniqueId,
  NcclComm,
  NCCL_DATA_TYPES,
  NCCL_RED_OPS,
  NCCL_UNIQUE_ID_BYTES,
  decodeNcclVersion,
  checkCollective,
  captureMultiDevice,
  InvalidArgumentError,
  CudagraphError,
  type CollectiveInput,
  type CollectiveOp,
} from '../../src/index.js';
import { ncclVersionCode } from '../../src/nccl/codes.js';

test('ncclResult_t: the numbers of nccl.h and their names both ways', () => {
  const expected: Array<[string, number]> = [
    ['ncclSuccess', 0],
    ['ncclUnhandledCudaError', 1],
    ['ncclSystemError', 2],
    ['ncclInternalError', 3],
    ['ncclInvalidArgument', 4],
    ['ncclInvalidUsage', 5],
    ['ncclRemoteError', 6],
    ['ncclInProgress', 7],
    ['ncclTimeout', 8],
  ];
  assert.deepEqual(Object.entries(NcclResult), expected);
  for (const [name, code] of expected) assert.equal(ncclResultName(code), name);
  assert.equal(ncclResultName(9), 'ncclUnknownResult(9)');
  assert.equal(ncclResultName(-1), 'ncclUnknownResult(-1)');
  assert.equal(ncclResultDescription(1), 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)');
  assert.match(ncclResultDescription(42), /not defined/);
});

test('data types and reductions: nccl.h values, element sizes, and the versions that added bf16 and avg', () => {
  assert.deepEqual(
    Object.entries(NCCL_DATA_TYPES).map(([k, v]) => [k, v.code, v.bytes]),
    [
      ['i8', 0, 1],
      ['u8', 1, 1],
      ['i32', 2, 4],
      ['u32', 3, 4],
      ['i64', 4, 8],
      ['u64', 5, 8],
      ['f16', 6, 2],
      ['f32', 7, 4],
      ['f64', 8, 8],
      ['bf16', 9, 2],
    ],
  );
  assert.deepEqual(
    Object.entries(NCCL_RED_OPS).map(([k, v]) => [k, v.code]),
    [['sum', 0], ['prod', 1], ['max', 2], ['min', 3], ['avg', 4]],
  );
  assert.equal(NCCL_DATA_TYPES.bf16.since, 21000);
  assert.equal(NCCL_RED_OPS.avg.since, 21000);
  assert.equal(NCCL_UNIQUE_ID_BYTES, 128);
});

test('version codes decode both of NCCL_VERSION\'s encodings', () => {
  assert.deepEqual(decodeNcclVersion(22703), { major: 2, minor: 27, patch: 3 });
  assert.deepEqual(decodeNcclVersion(2804), { major: 2, minor: 8, patch: 4 });
  assert.equal(ncclVersionCode(2, 8, 4), 2804);
  assert.equal(ncclVersionCode(2, 9, 6), 20906);
  fc.assert(
    fc.property(fc.integer({ min: 9, max: 99 }), fc.integer({ min: 0, max: 99 }), (minor, patch) => {
      assert.deepEqual(decodeNcclVersion(ncclVersionCode(2, minor, patch)), { major: 2, minor, patch });
    }),
  );
  // Not a version code: NaN decoded to nulls, -1 to -1.-1.-1, a string of digits to a version.
  for (const code of [NaN, -1, 1.5, Infinity, 2 ** 31, '22703', null]) {
    assert.throws(
      () => decodeNcclVersion(code as never),
      (e: unknown) => e instanceof InvalidArgumentError && /^decodeNcclVersion: code must be an integer in 0\.\.2147483647, got /.test(e.message),
      String(code),
    );
  }
});

test('NcclError: a CudagraphError whose message starts with the operation', () => {
  const e = new NcclError({ result: 6, operation: 'NcclComm.allReduce', ncclCall: 'ncclAllReduce', lastError: 'peer 1 exited' });
  assert.ok(e instanceof CudagraphError);
  assert.equal(e.name, 'NcclError');
  assert.equal(e.code, 'ncclRemoteError');
  assert.equal(e.message, 'NcclComm.allReduce: ncclRemoteError (6): remote process exited or there was a network error [ncclAllReduce]\nNCCL says: peer 1 exited');
});

test('NcclUniqueId: hex and bytes round trips; anything but 128 bytes is refused', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 128, maxLength: 128 }), (bytes) => {
      const id = NcclUniqueId.fromBytes(bytes);
      assert.deepEqual(id.toBytes(), bytes);
      assert.ok(NcclUniqueId.fromHex(id.toHex()).equals(id));
      assert.ok(NcclUniqueId.fromHex(id.toHex().toUpperCase()).equals(id));
    }),
  );
  const id = NcclUniqueId.fromBytes(new Uint8Array(128).fill(0xab));
  id.toBytes()[0] = 0; // a copy
  assert.equal(id.toBytes()[0], 0xab);
  assert.equal(id.toString(), 'NcclUniqueId(abababab…)');
  for (const bad of ['', 'ab'.repeat(127), 'ab'.repeat(129), 'zz'.repeat(128), 42, null]) {
    assert.throws(() => NcclUniqueId.fromHex(bad as string), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith('NcclUniqueId.fromHex: hex must be 256 hexadecimal digits'));
  }
  for (const bad of [new Uint8Array(127), new Uint8Array(129), 'x', [1, 2]]) {
    assert.throws(() => NcclUniqueId.fromBytes(bad as never), /NcclUniqueId\.fromBytes: bytes must be an ArrayBufferView of exactly 128 bytes/);
  }
  // A view into a larger buffer takes only its own bytes.
  const big = new Uint8Array(256).map((_, i) => i & 0xff);
  assert.equal(NcclUniqueId.fromBytes(big.subarray(100, 228)).toBytes()[0], 100);
});

const base = (over: Partial<CollectiveInput>): CollectiveInput => ({
  kind: 'allReduce',
  rank: 0,
  size: 2,
  version: 22703,
  count: 256,
  type: 'f32',
  op: 'sum',
  root: undefined,
  send: { byteLength: 1024, offset: undefined },
  recv: { byteLength: 1024, offset: undefined },
  sameBuffer: false,
  ...over,
});

const OP = 'NcclComm.test';

test('counts, types, operations and roots are checked; the message starts with the operation', () => {
  const refused: Array<[Partial<CollectiveInput>, RegExp]> = [
    [{ count: -1 }, /count must be an integer in 0\.\.9007199254740991, got -1/],
    [{ count: 1.5 }, /count must be an integer/],
    [{ count: NaN }, /count must be an integer .* got NaN/],
    [{ count: Infinity }, /count must be an integer/],
    [{ count: '256' }, /count must be an integer .* got "256"/],
    [{ type: 'float32' }, /type must be one of 'i8', 'u8', 'i32', 'u32', 'i64', 'u64', 'f16', 'f32', 'f64', 'bf16', got "float32"/],
    [{ op: 'mean' }, /op must be one of 'sum', 'prod', 'max', 'min', 'avg', got "mean"/],
    [{ op: undefined }, /op must be one of/],
    [{ type: 'bf16', version: 20907 }, /type 'bf16' needs NCCL 2\.10\.0 or newer; this NCCL is 2\.9\.7/],
    [{ op: 'avg', version: 20907 }, /op 'avg' needs NCCL 2\.10\.0 or newer/],
    [{ kind: 'broadcast', root: 2 }, /root must be an integer in 0\.\.1, got 2/],
    [{ kind: 'reduce', root: undefined }, /root must be an integer in 0\.\.1, got undefined/],
  ];
  for (const [over, message] of refused) {
    assert.throws(
      () => checkCollective(OP, base(over)),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${OP}: `) && message.test(e.message),
      JSON.stringify(over),
    );
  }
  const ok = checkCollective(OP, base({ type: 'f16', op: 'max', count: 512 }));
  assert.deepEqual(ok, { count: 512, type: 'f16', datatype: 6, redOp: 2, root: 0, sendOffset: 0, recvOffset: 0, sendBytes: 1024, recvBytes: 1024 });
  // Reductions are ignored where the collective has none (allGather takes no op).
  assert.equal(checkCollective(OP, base({ kind: 'allGather', op: 'bogus', recv: { byteLength: 2048, offset: undefined } })).redOp, 0);
});

test('the fields of the input that describe the call are checked too: kind, rank of size, version, buffer sizes, sameBuffer', () => {
  const refused: Array<[unknown, RegExp]> = [
    // An unknown kind checked no range at all and returned no byte counts.
    [base({ kind: 'allToAll' as never }), /input\.kind must be one of 'allReduce', 'broadcast', 'reduce', 'allGather', 'reduceScatter', got "allToAll"/],
    [base({ rank: 2 }), /input\.rank must be an integer in 0\.\.1, got 2/],
    [base({ rank: -1 }), /input\.rank must be an integer in 0\.\.1/],
    [base({ size: 0 }), /input\.size must be an integer in 1\.\./],
    [base({ size: 1.5 }), /input\.size must be an integer/],
    [base({ version: NaN }), /input\.version must be an integer/],
    [base({ sameBuffer: 'no' as never }), /input\.sameBuffer must be a boolean, got "no"/],
    // A size that is no byte count passed every range check (NaN compares false).
    [base({ send: { byteLength: NaN, offset: undefined } }), /input\.send\.byteLength must be an integer in 0\.\.9007199254740991, got NaN/],
    [base({ recv: { byteLength: -1, offset: undefined } }), /input\.recv\.byteLength must be an integer/],
    [base({ send: undefined as never }), /input\.send must be an object \{ byteLength, offset \}, got undefined/],
    [undefined, /input must be an object, got undefined/],
  ];
  for (const [input, message] of refused) {
    assert.throws(
      () => checkCollective(OP, input as CollectiveInput),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${OP}: `) && message.test(e.message),
      String(message),
    );
  }
  assert.throws(() => checkCollective(undefined as never, base({})), (e: unknown) => e instanceof InvalidArgumentError && /^checkCollective: op must be a non-empty string, got undefined$/.test(e.message));
  assert.equal(checkCollective(OP, base({ send: { byteLength: null, offset: undefined } })).sendBytes, 1024, 'a null byteLength is an omitted buffer');
});

test('buffers must hold what the collective reads and writes, per kind and rank', () => {
  const n = 256 * 4;
  // allGather writes size·count elements; reduceScatter reads them.
  assert.throws(() => checkCollective(OP, base({ kind: 'allGather', recv: { byteLength: n, offset: undefined } })), /allGather of count 256 × f32 needs 2048 bytes of recv at offset 0, but the buffer holds 1024 bytes/);
  assert.throws(() => checkCollective(OP, base({ kind: 'reduceScatter', send: { byteLength: n, offset: undefined } })), /needs 2048 bytes of send/);
  // Broadcast: only the root reads send; reduce: only the root writes recv.
  assert.equal(checkCollective(OP, base({ kind: 'broadcast', root: 1, rank: 0, send: { byteLength: 4, offset: undefined } })).sendBytes, 0);
  assert.throws(() => checkCollective(OP, base({ kind: 'broadcast', root: 0, rank: 0, send: { byteLength: 4, offset: undefined } })), /needs 1024 bytes of send/);
  assert.equal(checkCollective(OP, base({ kind: 'reduce', root: 0, rank: 1, recv: { byteLength: 4, offset: undefined } })).recvBytes, 0);
  // Offsets: whole elements, inside the buffer.
  assert.throws(() => checkCollective(OP, base({ send: { byteLength: 2048, offset: 2 } })), /sendOffset must be a multiple of the element size \(4 bytes\), got 2/);
  assert.throws(() => checkCollective(OP, base({ send: { byteLength: 2048, offset: -4 } })), /sendOffset must be an integer/);
  assert.throws(() => checkCollective(OP, base({ recv: { byteLength: 2048, offset: 1028 } })), /needs 1024 bytes of recv at offset 1028, but the buffer holds 2048 bytes/);
  assert.equal(checkCollective(OP, base({ recv: { byteLength: 2048, offset: 1024 } })).recvOffset, 1024);
  assert.throws(() => checkCollective(OP, base({ send: { byteLength: null, offset: undefined }, recv: { byteLength: null, offset: undefined } })), /give send, recv or both/);
  assert.throws(() => checkCollective(OP, base({ send: { byteLength: null, offset: 4 }, sameBuffer: true })), /sendOffset was given without send/);
  assert.throws(() => checkCollective(OP, base({ kind: 'allGather', recv: { byteLength: null, offset: undefined }, sameBuffer: true })), /allGather needs recv/);
});

test('in place: an omitted buffer takes NCCL\'s in-place position; other overlaps of one buffer are refused', () => {
  // allGather without send reads this rank's block of recv.
  const ag = checkCollective(OP, base({ kind: 'allGather', rank: 1, send: { byteLength: null, offset: undefined }, recv: { byteLength: 2048, offset: undefined }, sameBuffer: true }));
  assert.equal(ag.sendOffset, 1024);
  // reduceScatter without recv writes this rank's block of send.
  const rs = checkCollective(OP, base({ kind: 'reduceScatter', rank: 1, send: { byteLength: 2048, offset: undefined }, recv: { byteLength: null, offset: undefined }, sameBuffer: true }));
  assert.equal(rs.recvOffset, 1024);
  // allReduce in place, then an overlap that is not in place.
  assert.equal(checkCollective(OP, base({ recv: { byteLength: null, offset: undefined }, sameBuffer: true })).recvOffset, 0);
  assert.throws(
    () => checkCollective(OP, base({ send: { byteLength: 2048, offset: 0 }, recv: { byteLength: 2048, offset: 4 }, sameBuffer: true })),
    /ranges overlap without being the in-place form \(sendOffset = recvOffset\)/,
  );
  assert.throws(
    () => checkCollective(OP, base({ kind: 'allGather', rank: 1, send: { byteLength: 2048, offset: 0 }, recv: { byteLength: 2048, offset: 0 }, sameBuffer: true })),
    /sendOffset = recvOffset \+ rank·count·4 \(1024\)/,
  );
  // Disjoint ranges of one buffer are fine.
  assert.equal(checkCollective(OP, base({ send: { byteLength: 2048, offset: 0 }, recv: { byteLength: 2048, offset: 1024 }, sameBuffer: true })).recvOffset, 1024);
});

test('property: a collective is accepted exactly when both ranges fit, and what is accepted is what NCCL touches', () => {
  const kinds: CollectiveOp[] = ['allReduce', 'broadcast', 'reduce', 'allGather', 'reduceScatter'];
  const types = Object.keys(NCCL_DATA_TYPES) as Array<keyof typeof NCCL_DATA_TYPES>;
  fc.assert(
    fc.property(
      fc.constantFrom(...kinds),
      fc.constantFrom(...types),
      fc.integer({ min: 1, max: 8 }),
      fc.nat(7),
      fc.nat(4096),
      fc.nat(64),
      fc.nat(64),
      fc.nat(40000),
      fc.nat(40000),
      (kind, type, size, rankSeed, count, so, ro, sendLen, recvLen) => {
        const rank = rankSeed % size;
        const s = NCCL_DATA_TYPES[type].bytes;
        const input = base({
          kind,
          type,
          size,
          rank,
          count,
          op: 'sum',
          root: 0,
          send: { byteLength: sendLen, offset: so * s },
          recv: { byteLength: recvLen, offset: ro * s },
        });
        const n = count * s;
        const reads = kind === 'reduceScatter' ? size * n : kind === 'broadcast' && rank !== 0 ? 0 : n;
        const writes = kind === 'allGather' ? size * n : kind === 'reduce' && rank !== 0 ? 0 : n;
        const fits = so * s + reads <= sendLen && ro * s + writes <= recvLen;
        let accepted = true;
        try {
          const c = checkCollective(OP, input);
          assert.equal(c.sendBytes, reads);
          assert.equal(c.recvBytes, writes);
          assert.equal(c.count, count);
        } catch (e) {
          assert.ok(e instanceof InvalidArgumentError, String(e));
          accepted = false;
        }
        assert.equal(accepted, fits);
      },
    ),
    { numRuns: 500 },
  );
});

test('communicator and capture entry points refuse bad input before touching NCCL or the driver', () => {
  assert.throws(() => NcclComm.initAll([]), /NcclComm\.initAll: devices must be a non-empty array/);
  assert.throws(() => NcclComm.initAll('0,1' as never), InvalidArgumentError);
  assert.throws(() => NcclComm.initAll([{}] as never), /NcclComm\.initAll: devices\[0\]: device must be a Device or an ordinal/);
  assert.throws(() => NcclComm.initRank('gpu' as never, { id: 'x', rank: 0, size: 1 }), /NcclComm\.initRank: device must be a Device or an ordinal/);
  assert.throws(() => captureMultiDevice([], () => {}), /captureMultiDevice: streams must be a non-empty array of Streams/);
  assert.throws(() => captureMultiDevice([{}] as never, () => {}), /captureMultiDevice: streams\[0\] must be a Stream/);
});
