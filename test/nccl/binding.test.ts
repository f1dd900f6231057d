/**
 * The NCCL binding's calling convention and error path on the CPU, against a small recording
 * library compiled here with gcc (test/nccl/fixtures/recording-nccl.c): it stands in for
 * libnccl.so.2 with nccl.h's parameter lists and writes down what it receives. Checked: the
 * 128-byte ncclUniqueId travels by value intact, every collective gets its pointers, count, type,
 * operation, root, communicator and stream in the right places, NCCL's error and last-error texts
 * reach `NcclError`, and `ncclGroup` always ends the group. The real NCCL runs in test/gpu/nccl*.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  NcclError,
  NcclUniqueId,
  ncclGroup,
  ncclGroupStart,
  ncclGroupEnd,
  ncclGroupDepth,
  loadNccl,
  InvalidArgumentError,
  SuppressedCleanupError,
  NCCL_DATA_TYPES,
  NCCL_RED_OPS,
} from '../../src/index.js';
import * as nr from '../../src/nccl/result.js';
import { resetNcclForTesting } from '../../src/nccl/sys.js';
import { forgetNcclVersion } from '../../src/nccl/version.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const gcc = spawnSync('gcc', ['--version']).status === 0;
const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'nccl', 'fixtures', 'recording-nccl.c');

let dir = '';
let lib = '';
let rec: { last: () => string; depth: () => number; failGroupEnd: (on: number) => void; lastId: (out: Uint8Array) => number };

before(() => {
  if (!gcc) return;
  dir = mkdtempSync(join(tmpdir(), 'cg-nccl-rec-'));
  lib = join(dir, 'libnccl.so.2');
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib, source], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  resetNcclForTesting();
  forgetNcclVersion();
  const info = loadNccl({ path: dir });
  assert.equal(info.path, lib);
  assert.deepEqual([info.major, info.minor, info.patch, info.version], [2, 27, 3, '2.27.3']);
  const k = koffi.load(lib);
  rec = {
    last: k.func('const char *rec_last(void)') as () => string,
    depth: k.func('int rec_group_depth(void)') as () => number,
    failGroupEnd: k.func('void rec_fail_group_end(int on)') as (on: number) => void,
    lastId: k.func('int rec_last_id(void *out)') as (out: Uint8Array) => number,
  };
});

after(() => {
  resetNcclForTesting();
  forgetNcclVersion();
  if (dir) rmSync(dir, { recursive: true });
});

const skip = gcc ? false : 'gcc is not available to build the recording library';

test('ncclUniqueId: 128 bytes out of ncclGetUniqueId, through hex, and by value into ncclCommInitRank unchanged', { skip }, () => {
  const id = NcclUniqueId.create();
  const bytes = id.toBytes();
  assert.equal(bytes.length, 128);
  assert.deepEqual([...bytes.subarray(0, 4)], [3, 10, 17, 24]); // what the library wrote: i*7+3
  const hex = id.toHex();
  assert.equal(hex.length, 256);
  const back = NcclUniqueId.fromHex(hex);
  assert.ok(back.equals(id));
  const comm = nr.commInitRank('test', 2, back.bytesFor(), 1);
  assert.equal(comm, 0x1001n);
  assert.equal(rec.last(), `ncclCommInitRank nranks=2 rank=1 id0=3 id127=${(127 * 7 + 3) & 0xff}`);
  const seen = new Uint8Array(128);
  rec.lastId(seen);
  assert.deepEqual(seen, bytes);
});

test('ncclCommInitAll gets the device list; the handles come back in rank order', { skip }, () => {
  assert.deepEqual(nr.commInitAll('test', [3, 1]), [0x2000n, 0x2001n]);
  assert.equal(rec.last(), 'ncclCommInitAll ndev=2 devs=3,1,');
  assert.equal(nr.commQuery('test', 'ncclCommCount', 0x2001n), 2);
  assert.equal(nr.commQuery('test', 'ncclCommUserRank', 0x2001n), 1);
});

test('every collective passes its arguments where nccl.h puts them', { skip }, () => {
  const base = { send: 0xdead0000n, recv: 0xbeef0000n, count: 1024, datatype: NCCL_DATA_TYPES.bf16.code, op: NCCL_RED_OPS.max.code, root: 1, comm: 0x1001n, stream: 0x5000n };
  const tail = 'comm=0x1001 stream=0x5000';
  nr.collective('t', { ...base, kind: 'allReduce' });
  assert.equal(rec.last(), `ncclAllReduce send=0xdead0000 recv=0xbeef0000 count=1024 dtype=9 op=2 ${tail}`);
  nr.collective('t', { ...base, kind: 'broadcast' });
  assert.equal(rec.last(), `ncclBroadcast send=0xdead0000 recv=0xbeef0000 count=1024 dtype=9 root=1 ${tail}`);
  nr.collective('t', { ...base, kind: 'reduce' });
  assert.equal(rec.last(), `ncclReduce send=0xdead0000 recv=0xbeef0000 count=1024 dtype=9 op=2 root=1 ${tail}`);
  nr.collective('t', { ...base, kind: 'allGather' });
  assert.equal(rec.last(), `ncclAllGather send=0xdead0000 recv=0xbeef0000 count=1024 dtype=9 ${tail}`);
  nr.collective('t', { ...base, kind: 'reduceScatter', count: 2 ** 40 });
  assert.equal(rec.last(), `ncclReduceScatter send=0xdead0000 recv=0xbeef0000 count=${2 ** 40} dtype=9 op=2 ${tail}`);
});

test('a failed call is an NcclError with the result name, NCCL\'s description and its last-error text', { skip }, () => {
  let error: unknown;
  try {
    nr.collective('NcclComm.allReduce', { kind: 'allReduce', send: 1n, recv: 1n, count: 13, datatype: 7, op: 0, root: 0, comm: 0x1001n, stream: 0n });
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof NcclError);
  assert.equal(error.code, 'ncclInvalidArgument');
  assert.equal(error.result, 4);
  assert.equal(error.ncclCall, 'ncclAllReduce');
  assert.equal(error.operation, 'NcclComm.allReduce');
  assert.equal(error.description, 'recorded error string 4');
  assert.equal(error.lastError, 'the recording library refused count 13');
  assert.equal(
    error.message,
    'NcclComm.allReduce: ncclInvalidArgument (4): recorded error string 4 [ncclAllReduce]\nNCCL says: the recording library refused count 13',
  );
  assert.throws(() => nr.commInitRank('NcclComm.initRank', 99, new Uint8Array(128), 0), (e: unknown) => e instanceof NcclError && e.code === 'ncclInvalidUsage' && e.result === 5);
});

test('ncclGroup ends the group when fn returns, when it throws, and refuses a promise after ending it', { skip }, () => {
  assert.equal(ncclGroup(() => 42), 42);
  assert.equal(rec.depth(), 0);
  assert.equal(ncclGroupDepth(), 0);
  const boom = new Error('boom');
  assert.throws(() => ncclGroup(() => { throw boom; }), (e: unknown) => e === boom);
  assert.equal(rec.depth(), 0, 'the group was ended although fn threw');
  assert.equal(ncclGroupDepth(), 0);
  assert.throws(() => ncclGroup(async () => 1), /fn returned a promise/);
  assert.equal(rec.depth(), 0);
  // Nesting: only the outermost end launches; depth tracks both.
  ncclGroupStart();
  ncclGroup(() => assert.equal(ncclGroupDepth(), 2));
  assert.equal(ncclGroupDepth(), 1);
  ncclGroupEnd();
  assert.equal(rec.depth(), 0);
  assert.throws(() => ncclGroupEnd(), InvalidArgumentError);
  assert.throws(() => ncclGroup('x' as never), InvalidArgumentError);
});

test('a failing group end is an NcclError; with fn\'s own error it rides along as SuppressedCleanupError', { skip }, () => {
  rec.failGroupEnd(1);
  try {
    assert.throws(() => ncclGroup(() => 1), (e: unknown) => e instanceof NcclError && e.code === 'ncclInternalError' && e.ncclCall === 'ncclGroupEnd');
    assert.equal(ncclGroupDepth(), 0, 'NCCL leaves group mode even when the end fails');
    const boom = new Error('boom');
    assert.throws(
      () => ncclGroup(() => { throw boom; }),
      (e: unknown) => e instanceof SuppressedCleanupError && e.error === boom && e.suppressed instanceof NcclError,
    );
    assert.equal(ncclGroupDepth(), 0);
  } finally {
    rec.failGroupEnd(0);
  }
});
