/**
 * The clique's collectives are all or nothing: every rank's call is checked before the group opens,
 * so one rank's refusal enqueues no rank's (NCCL would run the others' alone, each waiting for a
 * peer that never comes). Run against the recording stand-in for libnccl.so.2
 * (test/nccl/fixtures/recording-nccl.c), which writes down every group and collective call, with a
 * clique of two ranks on one GPU: real streams and buffers, no communication.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Device, DeviceBuffer, DisposedError, InvalidArgumentError, NcclClique, NcclComm, loadNccl, type Stream } from '../../src/index.js';
import { INTERNAL } from '../../src/cuda/core/internal.js';
import { resetNcclForTesting } from '../../src/nccl/sys.js';
import { forgetNcclVersion } from '../../src/nccl/version.js';
import { gpuSuite } from './gpu.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const gcc = spawnSync('gcc', ['--version']).status === 0;
const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'nccl', 'fixtures', 'recording-nccl.c');

gpuSuite('NcclClique against the recording NCCL: a rank refused enqueues no rank', () => {
  const skip = gcc ? false : 'gcc is not available to build the recording library';
  let dir = '';
  let calls: () => string = () => '';
  let clear: () => void = () => {};
  let clique: NcclClique;
  let streams: Stream[];
  let xs: DeviceBuffer[];

  before(() => {
    if (!gcc) return;
    dir = mkdtempSync(join(tmpdir(), 'cg-nccl-clique-'));
    const lib = join(dir, 'libnccl.so.2');
    const r = spawnSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib, source], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    resetNcclForTesting();
    forgetNcclVersion();
    assert.equal(loadNccl({ path: dir }).path, lib);
    const k = koffi.load(lib);
    calls = k.func('const char *rec_calls(void)') as () => string;
    clear = k.func('void rec_clear(void)') as () => void;
    // Two ranks of one communicator on one device, as the stand-in answers for any handle.
    const device = Device.get(0);
    const comms = [0, 1].map((rank) => new NcclComm(INTERNAL, device, BigInt(0x2000 + rank), rank, 2, 2));
    clique = new NcclClique(INTERNAL, comms);
    streams = [device.createStream(), device.createStream()];
    xs = [DeviceBuffer.alloc(device, 1024), DeviceBuffer.alloc(device, 1024)];
  });

  after(() => {
    clique?.dispose();
    for (const b of xs ?? []) b.dispose();
    for (const s of streams ?? []) s.dispose();
    resetNcclForTesting();
    forgetNcclVersion();
    if (dir) rmSync(dir, { recursive: true });
  });

  test('a refusal on rank 1 names the clique call and the rank, and no group or collective reaches NCCL', { skip }, () => {
    const cases: [string, () => void, typeof InvalidArgumentError | typeof DisposedError, RegExp][] = [
      [
        'a count rank 1\'s buffer cannot hold',
        () => clique.allReduce(streams, (r) => ({ send: xs[r]!, count: r === 1 ? 512 : 256, type: 'f32', op: 'sum' })),
        InvalidArgumentError,
        /^NcclClique\.allReduce: rank 1: allReduce of count 512 × f32 needs 2048 bytes of send at offset 0, but the buffer holds 1024 bytes$/,
      ],
      [
        'a hole for rank 1\'s stream',
        () => clique.broadcast([streams[0]!, , ] as never, (r) => ({ recv: xs[r]!, count: 256, type: 'f32', root: 0 })),
        InvalidArgumentError,
        /^NcclClique\.broadcast: rank 1: stream must be a Stream, got undefined/,
      ],
      [
        'an unknown option on rank 1',
        () => clique.allGather(streams, (r) => ({ recv: xs[r]!, count: 128, type: 'f32', ...(r === 1 ? { root: 0 } : {}) })),
        InvalidArgumentError,
        /^NcclClique\.allGather: rank 1: unknown option 'root'/,
      ],
    ];
    for (const [what, call, type, message] of cases) {
      clear();
      assert.throws(call, (e: unknown) => e instanceof type && message.test((e as Error).message), what);
      assert.equal(calls(), '', `${what}: nothing reached NCCL`);
    }
    const gone = DeviceBuffer.alloc(Device.get(0), 1024);
    gone.dispose();
    clear();
    assert.throws(
      () => clique.reduce(streams, (r) => ({ send: r === 1 ? gone : xs[r]!, count: 256, type: 'f32', op: 'sum', root: 0 })),
      (e: unknown) => e instanceof DisposedError && /^NcclClique\.reduce: rank 1: /.test(e.message) && / has been disposed$/.test(e.message),
    );
    assert.equal(calls(), '', 'a disposed buffer on rank 1: nothing reached NCCL');
    // Accepted: one group holding both ranks' calls.
    clear();
    clique.allReduce(streams, (r) => ({ send: xs[r]!, count: 256, type: 'f32', op: 'sum' }));
    assert.equal(calls(), 'ncclGroupStart\nncclAllReduce\nncclAllReduce\nncclGroupEnd\n');
  });
});
