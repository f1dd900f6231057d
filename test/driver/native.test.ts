/**
 * The Node-API addon of the hot calls (native/cudagraph_hot.c, src/driver/hot.ts), on the CPU:
 * it loads here without libcuda, the environment and every load failure fall back to koffi, and
 * both paths make the same driver calls. The driver calls are checked against a small recording
 * library compiled here with gcc (it stands in for libcuda's cuLaunchKernel and cuGraphLaunch and
 * writes down the arguments it receives); test/gpu runs the same paths on the real driver.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CudaError } from '../../src/errors/cuda-error.js';
import {
  loadNativeAddon,
  nativeAddon,
  nativeStatus,
  prebuiltAddonPath,
  setNativeAddonForTesting,
  NATIVE_ABI,
  mailboxOf,
  MAILBOX,
  bindNativeSymbol,
} from '../../src/driver/hot.js';
import { resetLibrariesForTesting } from '../../src/driver/sys.js';
import { setCaptureErrorListener } from '../../src/driver/result/check.js';
import { launch as ln, graph as gr, graphBuild as gb, execUpdate as xu } from '../../src/driver/result/index.js';
import type { KoffiLibrary } from '../../src/driver/koffi.js';
import { bindings } from '../support/bindings.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
// The addon tests run wherever a prebuilt file exists for this platform and architecture (linux-x64,
// linux-arm64; the arm64 one under emulation too: native/README.md).
const here = `${process.platform}-${process.arch}`;
const noPrebuilt = !existsSync(prebuiltAddonPath()) && `no prebuilt addon for ${here}`;
// The compiler of the recording library: $CC (a cross compiler when this node runs under emulation), else gcc.
const cc = process.env['CC'] ?? 'gcc';
const noCc = spawnSync(cc, ['--version']).status !== 0 && `${cc} is absent`;

test('the prebuilt addon loads without libcuda, and names no CUDA library', { skip: noPrebuilt }, () => {
  const { addon, status } = loadNativeAddon({});
  assert.deepEqual(status, { active: true, path: prebuiltAddonPath(), reason: 'loaded' });
  assert.ok(addon !== null);
  assert.equal(addon.abi, NATIVE_ABI);
  for (const f of ['launch', 'launchKernel', 'launchSequence', 'graphLaunch', 'register', 'release', 'registered', 'bind', 'addKernelNodes', 'addKernelNodeFromMailbox', 'execKernelParamsFromMailbox', 'nodeSetEnabledFromMailbox', 'waiterStart', 'waitEvent', 'waitStream', 'eventRecord', 'eventQuery', 'waitsPending'] as const) {
    assert.equal(typeof addon[f], 'function', f);
  }
  // The driver's addresses come from the loader: the file must not link or dlopen libcuda itself.
  const bytes = readFileSync(prebuiltAddonPath());
  assert.equal(bytes.includes('libcuda'), false);
  assert.equal(bytes.includes('dlopen'), false);
  if (process.env['CUDAGRAPH_NATIVE'] === undefined) assert.equal(nativeStatus().active, true);
});

test('every prebuilt addon was built from the current source (scripts/build-native.sh)', () => {
  const root = join(prebuiltAddonPath(), '..', '..');
  // The hash of native/*.h then native/*.c, in name order (as scripts/build-native.sh writes it).
  const dir = join(root, '..');
  const files = readdirSync(dir).filter((f) => f.endsWith('.h')).sort().concat(readdirSync(dir).filter((f) => f.endsWith('.c')).sort());
  const source = createHash('sha256').update(Buffer.concat(files.map((f) => readFileSync(join(dir, f))))).digest('hex');
  const builds = readdirSync(root).filter((d) => existsSync(join(root, d, 'cudagraph_hot.node')));
  assert.deepEqual(builds.sort(), ['linux-arm64', 'linux-x64'], 'the prebuilt folders');
  for (const d of builds) {
    const recorded = readFileSync(join(root, d, 'cudagraph_hot.node.source-sha256'), 'utf8').trim();
    assert.equal(recorded, source, `native/prebuilt/${d} is stale: run scripts/build-native.sh`);
  }
});

test('CUDAGRAPH_NATIVE=0, a platform without a prebuilt, a broken file or another ABI: koffi, silently', () => {
  for (const flag of ['0', 'false', 'off']) {
    const r = loadNativeAddon({ CUDAGRAPH_NATIVE: flag });
    assert.equal(r.addon, null);
    assert.deepEqual(r.status, { active: false, path: null, reason: `CUDAGRAPH_NATIVE=${flag}` });
  }
  const other = loadNativeAddon({}, 'darwin', 'arm64');
  assert.equal(other.addon, null);
  assert.equal(other.status.reason, 'no prebuilt addon for darwin-arm64');
  const dir = mkdtempSync(join(tmpdir(), 'cg-native-'));
  try {
    const broken = join(dir, 'cudagraph_hot.node');
    writeFileSync(broken, 'not an ELF file');
    const b = loadNativeAddon({}, 'linux', 'x64', broken);
    assert.equal(b.addon, null);
    assert.equal(b.status.active, false);
    assert.equal(b.status.path, broken);
    assert.ok(b.status.reason.length > 0);
    const stale = join(dir, 'stale.cjs');
    writeFileSync(stale, 'module.exports = { abi: 99 };');
    const s = loadNativeAddon({ CUDAGRAPH_NATIVE: '1' }, 'linux', 'x64', stale);
    assert.equal(s.addon, null);
    assert.equal(s.status.reason, `the addon's ABI is 99, expected ${NATIVE_ABI}`);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('registered launches: ids are reused after release; unbound functions, unknown ids and bad arguments are reported', { skip: noPrebuilt }, () => {
  const hot = loadNativeAddon({}).addon!;
  hot.bind('cuLaunchKernel', 0n);
  hot.bind('cuGraphLaunch', 0n);
  const before = hot.registered();
  const a = hot.register(1n, 1, 1, 1, 32, 1, 1, 0, 0n);
  const b = hot.register(2n, 1, 1, 1, 32, 1, 1, 0, 0n);
  assert.notEqual(a, b);
  assert.equal(hot.registered(), before + 2);
  assert.equal(hot.launch(a, 0n), hot.NOT_BOUND);
  assert.equal(hot.graphLaunch(1n, 0n), hot.NOT_BOUND);
  assert.equal(hot.launchKernel(1n, 1, 1, 1, 32, 1, 1, 0, 0n, 0n), hot.NOT_BOUND);
  assert.equal(hot.release(a), true);
  assert.equal(hot.release(a), false);
  assert.equal(hot.registered(), before + 1);
  assert.equal(hot.register(3n, 1, 1, 1, 32, 1, 1, 0, 0n), a, 'a released id is reused');
  assert.equal(hot.release(a), true);
  assert.equal(hot.release(b), true);
  // Bound to a harmless address only to get past the NOT_BOUND check: BAD_ID comes before any call.
  assert.equal(hot.bind('cuLaunchKernel', 8n), true);
  try {
    assert.equal(hot.launch(b, 0n), hot.BAD_ID);
    assert.equal(hot.launch(1e6, 0n), hot.BAD_ID);
  } finally {
    hot.bind('cuLaunchKernel', 0n);
  }
  assert.equal(hot.bind('cuMemAlloc_v2' as 'cuLaunchKernel', 8n), false);
  assert.throws(() => hot.launch(0, 5 as unknown as bigint), TypeError);
  assert.throws(() => hot.launch(0, -1n), TypeError, 'a negative handle is refused');
  assert.throws(() => hot.graphLaunch(1 as unknown as bigint, 0n), TypeError);
  assert.throws(() => hot.register(1n, 1, 1, 1, 32, 1, 1, 0, 'x' as unknown as bigint), TypeError);
});

test('addKernelNodes: unbound, arrays that describe no batch and wrong types are reported before any driver call', { skip: noPrebuilt }, () => {
  const hot = loadNativeAddon({}).addon!;
  hot.bind('cuGraphAddKernelNode_v2', 0n);
  const blocks = new Uint8Array(72);
  const out = new BigUint64Array(2);
  const done = new Uint32Array([99]);
  const call = (blockOf: number[], depStart: number[], depIndex: number[]): number =>
    hot.addKernelNodes(1n, blocks, Uint32Array.from(blockOf), Uint32Array.from(depStart), Int32Array.from(depIndex), new BigUint64Array(depIndex.length), out, done);
  assert.equal(call([0, 0], [0, 0, 1], [0]), hot.NOT_BOUND);
  assert.equal(done[0], 0);
  // Bound to a harmless address only to get past the NOT_BOUND check: BAD_ID comes before any call.
  assert.equal(hot.bind('cuGraphAddKernelNode_v2', 8n), true);
  try {
    assert.equal(call([0, 1], [0, 0, 0], []), hot.BAD_ID, 'a launch index past the blocks');
    assert.equal(call([0, 0], [0, 1, 1], [0]), hot.BAD_ID, 'node 0 depending on itself');
    assert.equal(call([0, 0], [0, 0, 1], [1]), hot.BAD_ID, 'node 1 depending on itself');
    assert.equal(call([0, 0], [0, 0, 2], [0]), hot.BAD_ID, 'depStart past depIndex');
    assert.equal(call([0, 0], [1, 1, 1], [0]), hot.BAD_ID, 'depStart not starting at 0');
    assert.equal(call([0, 0], [0, 1, 0], [-1]), hot.BAD_ID, 'depStart decreasing');
  } finally {
    hot.bind('cuGraphAddKernelNode_v2', 0n);
  }
  assert.throws(() => hot.addKernelNodes(1n, blocks, new Uint32Array(2), new Uint32Array(2), new Int32Array(0), new BigUint64Array(0), out, done), TypeError, 'depStart must have n + 1 entries');
  assert.throws(() => hot.addKernelNodes(1n, blocks, new Uint32Array(3), new Uint32Array(4), new Int32Array(0), new BigUint64Array(0), out, done), TypeError, 'out too short');
  assert.throws(() => hot.addKernelNodes(1n, blocks, new Uint32Array(1), new Uint32Array(2), new Int32Array(1), new BigUint64Array(0), out, done), TypeError, 'depHandle as long as depIndex');
  assert.throws(() => hot.addKernelNodes(1 as unknown as bigint, blocks, new Uint32Array(1), new Uint32Array(2), new Int32Array(0), new BigUint64Array(0), out, done), TypeError);
});

test('the mailbox: one buffer per environment; the mailbox calls report NOT_BOUND and BAD_ID in it as the argument forms return them', { skip: noPrebuilt }, async () => {
  const hot = loadNativeAddon({}).addon!;
  const box = mailboxOf(hot);
  assert.equal(hot.mailbox(), hot.mailbox(), 'the same ArrayBuffer every time');
  assert.equal(box.u32.buffer, hot.mailbox());
  assert.equal(box.u32.byteLength, 64);
  hot.bind('cuLaunchKernel', 0n);
  hot.bind('cuGraphLaunch', 0n);
  const a = hot.register(1n, 1, 1, 1, 32, 1, 1, 0, 0n);
  try {
    box.u32[MAILBOX.ID] = a;
    box.u64[MAILBOX.STREAM] = 0n;
    box.i32[MAILBOX.RESULT] = 12345;
    assert.equal(hot.launchFromMailbox(), undefined);
    assert.equal(box.i32[MAILBOX.RESULT], hot.NOT_BOUND);
    box.u64[MAILBOX.EXEC] = 1n;
    box.i32[MAILBOX.RESULT] = 12345;
    hot.graphLaunchFromMailbox();
    assert.equal(box.i32[MAILBOX.RESULT], hot.NOT_BOUND);
    hot.bind('cuGraphAddKernelNode_v2', 0n);
    hot.bind('cuGraphExecKernelNodeSetParams_v2', 0n);
    box.i32[MAILBOX.RESULT] = 12345;
    box.u64[MAILBOX.NODE] = 99n;
    hot.addKernelNodeFromMailbox();
    assert.deepEqual([box.i32[MAILBOX.RESULT], box.u64[MAILBOX.NODE]], [hot.NOT_BOUND, 0n], 'no node on a failure');
    box.i32[MAILBOX.RESULT] = 12345;
    hot.execKernelParamsFromMailbox();
    assert.equal(box.i32[MAILBOX.RESULT], hot.NOT_BOUND);
    hot.bind('cuGraphNodeSetEnabled', 0n);
    box.i32[MAILBOX.RESULT] = 12345;
    hot.nodeSetEnabledFromMailbox();
    assert.equal(box.i32[MAILBOX.RESULT], hot.NOT_BOUND);
    // Bound to a harmless address only to get past the NOT_BOUND check: BAD_ID comes before any call.
    hot.bind('cuLaunchKernel', 8n);
    try {
      box.u32[MAILBOX.ID] = 1e6;
      hot.launchFromMailbox();
      assert.equal(box.i32[MAILBOX.RESULT], hot.BAD_ID);
      hot.release(a);
      box.u32[MAILBOX.ID] = a;
      hot.launchFromMailbox();
      assert.equal(box.i32[MAILBOX.RESULT], hot.BAD_ID, 'a released id');
    } finally {
      hot.bind('cuLaunchKernel', 0n);
    }
  } finally {
    hot.release(a);
  }
  // A worker thread is another environment: its own mailbox, and the calls do nothing before it exists.
  const { Worker } = await import('node:worker_threads');
  const path = prebuiltAddonPath();
  const worker = new Worker(
    `const { createRequire } = require('node:module');
     const { parentPort } = require('node:worker_threads');
     const hot = createRequire(${JSON.stringify(path)})(${JSON.stringify(path)});
     hot.launchFromMailbox();
     hot.graphLaunchFromMailbox();
     hot.addKernelNodeFromMailbox();
     hot.execKernelParamsFromMailbox();
     hot.nodeSetEnabledFromMailbox();
     const box = new Int32Array(hot.mailbox());
     box[1] = 7;
     parentPort.postMessage([box[1], new Int32Array(hot.mailbox())[1]]);`,
    { eval: true },
  );
  const seen = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.deepEqual(seen, [7, 7], 'the worker sees its own writes');
  assert.notEqual(box.i32[MAILBOX.RESULT], 7, "the worker's mailbox is not this thread's");
});

const RECORDER = `
#include <stddef.h>
#include <stdint.h>
#include <string.h>
/* rec[0] launches, [1] f, [2..8] grid, block, shared memory, [9] stream, [10] params, [11] extra,
   [12] graph launches, [13] exec, [14] stream */
uint64_t rec[16];
/* every launch in order: f, stream, params (the first 64 launches) */
uint64_t launch_log[3 * 64];
int next_rc;
int cuInit(unsigned flags) { (void)flags; return 0; }
/* the launch numbered fail_at (1-based; 0: none) answers fail_rc instead of next_rc */
int fail_at, fail_rc;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shm, void *stream, void **params, void **extra) {
  uint64_t k = rec[0]++;
  rec[1] = (uintptr_t)f;
  rec[2] = gx; rec[3] = gy; rec[4] = gz; rec[5] = bx; rec[6] = by; rec[7] = bz; rec[8] = shm;
  rec[9] = (uintptr_t)stream; rec[10] = (uintptr_t)params; rec[11] = (uintptr_t)extra;
  if (k < 64) {
    launch_log[3 * k] = (uintptr_t)f; launch_log[3 * k + 1] = (uintptr_t)stream; launch_log[3 * k + 2] = (uintptr_t)params;
  }
  return fail_at != 0 && (uint64_t)fail_at == k + 1 ? fail_rc : next_rc;
}
int cuGraphLaunch(void *exec, void *stream) {
  rec[12]++; rec[13] = (uintptr_t)exec; rec[14] = (uintptr_t)stream;
  return next_rc;
}
/* Kernel node calls: kn[0] nodes added, [1] graph, [2] dependencies, [3] the first, [4] the last,
   [5] func, [6] gridDimX, [7] kernelParams of the last add; [8] exec updates, [9] exec, [10] node,
   [11] func, [12] gridDimX, [13] kernelParams of the last update. A node added is 0x4e000 + its number. */
uint64_t kn[16];
static void read_params(const unsigned char *p, uint64_t *at) {
  unsigned grid;
  memcpy(&at[0], p, 8);
  memcpy(&grid, p + 8, 4);
  at[1] = grid;
  memcpy(&at[2], p + 40, 8);
}
int cuGraphAddKernelNode_v2(uint64_t *node, void *graph, const uint64_t *deps, size_t n, const unsigned char *p) {
  kn[0]++; kn[1] = (uintptr_t)graph; kn[2] = n; kn[3] = n ? deps[0] : 0; kn[4] = n ? deps[n - 1] : 0;
  read_params(p, &kn[5]);
  if (next_rc == 0) *node = 0x4e000 + kn[0];
  return next_rc;
}
int cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const unsigned char *p) {
  kn[8]++; kn[9] = (uintptr_t)exec; kn[10] = (uintptr_t)node;
  read_params(p, &kn[11]);
  return next_rc;
}
/* en[0] switches, [1] exec, [2] node, [3] the flag of the last */
uint64_t en[4];
int cuGraphNodeSetEnabled(void *exec, void *node, unsigned on) {
  en[0]++; en[1] = (uintptr_t)exec; en[2] = (uintptr_t)node; en[3] = on;
  return next_rc;
}
`;

/** What the recording library saw and how it answers. */
interface Recorder {
  /** [f, stream, params] of every launch so far, in order. */
  launches(): Array<[bigint, bigint, bigint]>;
  /** Launch number `at` (1-based, counted from the start) answers `rc`; 0 turns it off. */
  failAt(at: number, rc: number): void;
  /** What the kernel node calls received (`kn` in the C). */
  readonly kernelNodes: BigUint64Array;
  /** What `cuGraphNodeSetEnabled` received (`en` in the C). */
  readonly switches: BigUint64Array;
}

/** Runs `body` with the recording library standing in for libcuda; `load` may wrap koffi's library. */
function withRecorder(
  body: (rec: BigUint64Array, setRc: (rc: number) => void, recorder: Recorder) => void,
  wrap: (lib: KoffiLibrary) => KoffiLibrary = (lib) => lib,
): void {
  const dir = mkdtempSync(join(tmpdir(), 'cg-recorder-'));
  const saved = nativeAddon();
  try {
    writeFileSync(join(dir, 'recorder.c'), RECORDER);
    const so = join(dir, 'librecorder.so');
    const built = spawnSync(cc, ['-O1', '-fPIC', '-shared', '-o', so, join(dir, 'recorder.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    const lib = koffi.load(so);
    const rec = new BigUint64Array(koffi.view(lib.symbol('rec') as bigint, 16 * 8));
    const rcAt = lib.symbol('next_rc') as bigint;
    const log = new BigUint64Array(koffi.view(lib.symbol('launch_log') as bigint, 3 * 64 * 8));
    const failAtAddress = lib.symbol('fail_at') as bigint;
    const failRcAddress = lib.symbol('fail_rc') as bigint;
    const recorder: Recorder = {
      kernelNodes: new BigUint64Array(koffi.view(lib.symbol('kn') as bigint, 16 * 8)),
      switches: new BigUint64Array(koffi.view(lib.symbol('en') as bigint, 4 * 8)),
      launches: () => Array.from({ length: Math.min(64, Number(rec[0])) }, (_, k) => [log[3 * k]!, log[3 * k + 1]!, log[3 * k + 2]!]),
      failAt: (at, rc) => {
        koffi.encode(failAtAddress, 'int', at);
        koffi.encode(failRcAddress, 'int', rc);
      },
    };
    resetLibrariesForTesting((p) => wrap(koffi.load(p)));
    process.env['CUDA_DRIVER_PATH'] = so;
    body(rec, (rc) => koffi.encode(rcAt, 'int', rc), recorder);
  } finally {
    delete process.env['CUDA_DRIVER_PATH'];
    resetLibrariesForTesting(null);
    setNativeAddonForTesting(saved);
    rmSync(dir, { recursive: true });
  }
}


test('both bindings pass every argument of cuLaunchKernel and cuGraphLaunch through unchanged', { skip: noCc }, () => {
  for (const [name, hot] of bindings()) {
    withRecorder((rec) => {
      setNativeAddonForTesting(hot);
      const fn = 0x7f1234567890n;
      const params = 0x7fabcdef0008n;
      const stream = 0x55aa55aa1230n;
      const call = ln.prepareLaunch(fn, [7, 3, 2], [128, 2, 1], 4096, params);
      call.launch('PreparedLaunch.launch', stream);
      call.launch('PreparedLaunch.launch', stream + 16n);
      assert.deepEqual([...rec.subarray(0, 12)], [2n, fn, 7n, 3n, 2n, 128n, 2n, 1n, 4096n, stream + 16n, params, 0n], name);
      call.release();
      call.release();
      ln.launchKernel('Kernel.launch', fn + 1n, 1, 2, 3, 4, 5, 6, 0xffffffff, 0n, 0n);
      assert.deepEqual([...rec.subarray(0, 12)], [3n, fn + 1n, 1n, 2n, 3n, 4n, 5n, 6n, 0xffffffffn, 0n, 0n, 0n], name);
      gr.graphLaunch('GraphExec.launch', 0xe0e0e0e0e0n, stream);
      gr.graphLaunch('GraphExec.launch', 0xe0e0e0e0e8n, 0n);
      assert.deepEqual([...rec.subarray(12, 15)], [2n, 0xe0e0e0e0e8n, 0n], name);
    });
  }
});

test('both bindings pass every argument of cuGraphAddKernelNode_v2 and cuGraphExecKernelNodeSetParams_v2 through unchanged, and fail alike', { skip: noCc }, () => {
  for (const [name, hot] of bindings()) {
    withRecorder((_rec, setRc, recorder) => {
      setNativeAddonForTesting(hot);
      const kn = recorder.kernelNodes;
      const op = 'Graph.addKernelNode';
      const input = { func: 0x7f00aa00n, grid: [5, 1, 1], block: [64, 1, 1], sharedMem: 0, kernelParams: 0x7fbb0000n } as const;
      const node = gb.addKernelNode(op, 0x9900n, input, BigUint64Array.of(0x1110n, 0x2220n, 0x3330n));
      assert.equal(node, 0x4e001n, name);
      assert.deepEqual([...kn.subarray(0, 8)], [1n, 0x9900n, 3n, 0x1110n, 0x3330n, 0x7f00aa00n, 5n, 0x7fbb0000n], name);
      gb.addKernelNode(op, 0x9900n, { ...input, grid: [6, 1, 1], kernelParams: 0n });
      assert.deepEqual([kn[0], kn[2], kn[3], kn[6], kn[7]], [2n, 0n, 0n, 6n, 0n], `${name}: no dependencies, no arguments`);
      // More dependencies than the mailbox's block first holds.
      const many = BigUint64Array.from({ length: 40 }, (_, i) => BigInt(0x100 + i));
      assert.equal(gb.addKernelNode(op, 0x9900n, input, many), 0x4e003n, name);
      assert.deepEqual([kn[2], kn[3], kn[4]], [40n, 0x100n, 0x127n], name);
      xu.setKernelBytes('GraphExec.setKernelNodeParams', 0xe0e0n, 0x4e001n, gb.encodeKernelParams({ ...input, grid: [7, 1, 1] }));
      assert.deepEqual([...kn.subarray(8, 14)], [1n, 0xe0e0n, 0x4e001n, 0x7f00aa00n, 7n, 0x7fbb0000n], name);
      setRc(719);
      const failed = (operation: string, call: string) => (e: unknown) =>
        e instanceof CudaError && e.code === 719 && e.operation === operation && e.driverCall === call && e.message.startsWith(`${operation}: CUDA_ERROR_LAUNCH_FAILED (719)`);
      assert.throws(() => gb.addKernelNode(op, 0x9900n, input), failed(op, 'cuGraphAddKernelNode_v2'), name);
      assert.throws(() => xu.setKernelBytes('GraphExec.setKernelArgs', 1n, 2n, new Uint8Array(72)), failed('GraphExec.setKernelArgs', 'cuGraphExecKernelNodeSetParams_v2'), name);
      setRc(0);
      assert.equal(gb.addKernelNode(op, 0x9900n, input), 0x4e005n, `${name}: the next call works`);
    });
  }
});

test('argument updates of nodes in turn, with other kernel node calls between, give the driver each node\'s own parameters and pointer, on both bindings', { skip: noCc }, () => {
  for (const [name, hot] of bindings()) {
    withRecorder((_rec, _setRc, recorder) => {
      setNativeAddonForTesting(hot);
      const kn = recorder.kernelNodes;
      const op = 'GraphExec.setKernelArgs';
      const node = (func: bigint, grid: number) => {
        const params = gb.encodeKernelParams({ func, grid: [grid, 1, 1], block: [32, 1, 1], sharedMem: 0, kernelParams: 0n });
        return { params, words: new BigUint64Array(params.buffer, params.byteOffset, params.byteLength / 8) };
      };
      const a = node(0x7f00a000n, 3);
      const b = node(0x7f00b000n, 4);
      const seen = (): bigint[] => [kn[10]!, kn[11]!, kn[12]!, kn[13]!];
      // The same node twice (the second call may write the pointer alone), then the other, then back.
      const steps: Array<[typeof a, bigint, bigint, bigint, bigint]> = [
        [a, 0x4e001n, 0x7f00a000n, 3n, 0x7fcc0010n],
        [a, 0x4e001n, 0x7f00a000n, 3n, 0x7fcc0020n],
        [b, 0x4e002n, 0x7f00b000n, 4n, 0x7fcc0030n],
        [a, 0x4e001n, 0x7f00a000n, 3n, 0x7fcc0040n],
      ];
      for (const [n, handle, func, grid, pointer] of steps) {
        xu.setKernelArgs(op, 0xe0e0n, handle, n.params, n.words, pointer);
        assert.deepEqual(seen(), [handle, func, grid, pointer], `${name}: node 0x${handle.toString(16)}, pointer 0x${pointer.toString(16)}`);
      }
      // Other calls through the same C block between two updates of one node.
      gb.addKernelNode('Graph.addKernelNode', 0x9900n, { func: 0x7f00c000n, grid: [9, 1, 1], block: [32, 1, 1], sharedMem: 0, kernelParams: 0x7fdd0000n });
      xu.setKernelArgs(op, 0xe0e0n, 0x4e001n, a.params, a.words, 0x7fcc0050n);
      assert.deepEqual(seen(), [0x4e001n, 0x7f00a000n, 3n, 0x7fcc0050n], `${name}: after a node was added`);
      xu.setKernelBytes('GraphExec.setKernelNodeParams', 0xe0e0n, 0x4e002n, gb.encodeKernelParams({ func: 0x7f00d000n, grid: [7, 1, 1], block: [32, 1, 1], sharedMem: 0, kernelParams: 0x7fee0000n }));
      xu.setKernelArgs(op, 0xe0e0n, 0x4e001n, a.params, a.words, 0x7fcc0060n);
      assert.deepEqual(seen(), [0x4e001n, 0x7f00a000n, 3n, 0x7fcc0060n], `${name}: after another node's whole parameters`);
      assert.equal(kn[8], 7n, `${name}: seven updates`);
    });
  }
});

test('both bindings pass every argument of cuGraphNodeSetEnabled through unchanged, the addon through its mailbox, and fail alike', { skip: noCc }, () => {
  for (const [name, hot] of bindings()) {
    withRecorder((_rec, setRc, recorder) => {
      setNativeAddonForTesting(hot);
      const en = recorder.switches;
      const op = 'GraphExec.setNodeEnabled';
      const box = hot === null ? null : mailboxOf(hot);
      if (box !== null) box.u64[MAILBOX.EXEC] = 0n;
      gr.nodeSetEnabled(op, 0x7e0e0e0e0e8n, 0x4e0042n, false);
      assert.deepEqual([...en], [1n, 0x7e0e0e0e0e8n, 0x4e0042n, 0n], name);
      gr.nodeSetEnabled(op, 0x7e0e0e0e0f0n, 0x4e0043n, true);
      assert.deepEqual([...en], [2n, 0x7e0e0e0e0f0n, 0x4e0043n, 1n], name);
      // The addon made the call: the mailbox holds its arguments (koffi's path leaves it alone).
      if (box !== null) assert.deepEqual([box.u64[MAILBOX.EXEC], box.u64[MAILBOX.NODE], box.u32[MAILBOX.COUNT]], [0x7e0e0e0e0f0n, 0x4e0043n, 1], name);
      setRc(400);
      assert.throws(
        () => gr.nodeSetEnabled(op, 1n, 2n, true),
        (e: unknown) => e instanceof CudaError && e.code === 400 && e.operation === op && e.driverCall === 'cuGraphNodeSetEnabled' && e.message.startsWith(`${op}: CUDA_ERROR_INVALID_HANDLE (400)`),
        name,
      );
      setRc(0);
      gr.nodeSetEnabled(op, 1n, 2n, true);
      assert.equal(en[0], 4n, `${name}: the next call works`);
    });
  }
});

test('a failed launch is the same CudaError on both bindings, and capture errors reach the capture listener', { skip: noCc }, () => {
  for (const [name, hot] of bindings()) {
    withRecorder((_rec, setRc) => {
      setNativeAddonForTesting(hot);
      const heard: CudaError[] = [];
      setCaptureErrorListener((e) => heard.push(e));
      try {
        const call = ln.prepareLaunch(1n, [1, 1, 1], [32, 1, 1], 0, 0n);
        call.launch('PreparedLaunch.launch', 0n); // binds the addon on the first call
        setRc(906);
        const launchFailure = (e: unknown): boolean =>
          e instanceof CudaError &&
          e.code === 906 &&
          e.errorName === 'CUDA_ERROR_STREAM_CAPTURE_IMPLICIT' &&
          e.operation === 'PreparedLaunch.launch' &&
          e.driverCall === 'cuLaunchKernel' &&
          e.message.startsWith('PreparedLaunch.launch: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906)') &&
          (e.stack ?? '').includes('native.test');
        assert.throws(() => call.launch('PreparedLaunch.launch', 0n), launchFailure, name);
        assert.throws(
          () => gr.graphLaunch('GraphExec.launch', 1n, 0n),
          (e: unknown) => e instanceof CudaError && e.code === 906 && e.operation === 'GraphExec.launch' && e.driverCall === 'cuGraphLaunch',
          name,
        );
        assert.deepEqual(heard.map((e) => [e.operation, e.code]), [['PreparedLaunch.launch', 906], ['GraphExec.launch', 906]], name);
        setRc(1);
        assert.throws(() => ln.launchKernel('Kernel.launch', 1n, 1, 1, 1, 1, 1, 1, 0, 0n, 0n), (e: unknown) => e instanceof CudaError && e.code === 1, name);
        assert.equal(heard.length, 2, 'only 900–908 are capture errors');
        call.release();
      } finally {
        setCaptureErrorListener(null);
      }
    });
  }
});

test('with the addon, a library that gives no symbol addresses still launches, through koffi', { skip: noCc || noPrebuilt }, () => {
  const hot = loadNativeAddon({}).addon!;
  // koffi's library without `symbol`: the addon cannot be bound, so each call falls back to koffi.
  const noAddresses = (lib: KoffiLibrary): KoffiLibrary => ({ func: lib.func.bind(lib), unload: lib.unload.bind(lib) }) as unknown as KoffiLibrary;
  withRecorder((rec) => {
    setNativeAddonForTesting(hot);
    const call = ln.prepareLaunch(5n, [1, 1, 1], [64, 1, 1], 0, 0n);
    call.launch('PreparedLaunch.launch', 9n);
    call.launch('PreparedLaunch.launch', 9n);
    ln.launchKernel('Kernel.launch', 6n, 1, 1, 1, 64, 1, 1, 0, 9n, 0n);
    gr.graphLaunch('GraphExec.launch', 3n, 9n);
    assert.deepEqual([rec[0], rec[1], rec[5], rec[9], rec[12], rec[13]], [3n, 6n, 64n, 9n, 1n, 3n]);
    call.release();
  }, noAddresses);
  withRecorder((_rec, _setRc, recorder) => {
    setNativeAddonForTesting(hot);
    const input = { func: 0x51n, grid: [2, 1, 1], block: [32, 1, 1], sharedMem: 0, kernelParams: 0n } as const;
    assert.equal(gb.addKernelNode('Graph.addKernelNode', 0x77n, input, BigUint64Array.of(0x4e0n)), 0x4e001n);
    xu.setKernelBytes('GraphExec.setKernelArgs', 0x88n, 0x4e001n, gb.encodeKernelParams(input));
    assert.deepEqual([...recorder.kernelNodes.subarray(0, 4)], [1n, 0x77n, 1n, 0x4e0n], 'the node added through koffi');
    assert.deepEqual([...recorder.kernelNodes.subarray(8, 12)], [1n, 0x88n, 0x4e001n, 0x51n], 'the exec updated through koffi');
  }, noAddresses);
});

test('with the addon, a driver that lacks the symbol fails the launch (and a launch sequence) with the same 801 as koffi', { skip: noCc || noPrebuilt }, () => {
  const saved = nativeAddon();
  // An old driver without cuLaunchKernel and cuGraphLaunch (nor the node calls).
  const dir = mkdtempSync(join(tmpdir(), 'cg-old-driver-'));
  writeFileSync(join(dir, 'old.c'), 'int cuInit(unsigned f) { (void)f; return 0; }\n');
  const so = join(dir, 'libcuda-old.so');
  const built = spawnSync(cc, ['-O1', '-fPIC', '-shared', '-o', so, join(dir, 'old.c')], { encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  for (const [name, hot] of bindings()) {
    resetLibrariesForTesting(() => koffi.load(so));
    try {
      setNativeAddonForTesting(hot);
      const call = ln.prepareLaunch(1n, [1, 1, 1], [32, 1, 1], 0, 0n);
      for (const [sym, run] of [
        ['cuLaunchKernel', () => call.launch('PreparedLaunch.launch', 0n)],
        ['cuGraphLaunch', () => gr.graphLaunch('GraphExec.launch', 1n, 0n)],
        ['cuLaunchKernel', () => ln.prepareSequence([call, call], [0n, 0n]).launch('LaunchSequence.launch')],
        ['cuGraphAddKernelNode_v2', () => gb.addKernelNode('Graph.addKernelNode', 1n, { func: 1n, grid: [1, 1, 1], block: [1, 1, 1], sharedMem: 0, kernelParams: 0n })],
        ['cuGraphExecKernelNodeSetParams_v2', () => xu.setKernelBytes('GraphExec.setKernelArgs', 1n, 2n, new Uint8Array(72))],
      ] as const) {
        assert.throws(run, (e: unknown) => e instanceof CudaError && e.code === 801 && e.driverCall === sym && e.message.includes(`The symbol ${sym} is missing`), `${name} ${sym}`);
      }
      call.release();
    } finally {
      resetLibrariesForTesting(null);
      setNativeAddonForTesting(saved);
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('the addon\'s launchSequence: NOT_BOUND and BAD_ID before any launch, then every launch in order, stopping at the first failure', { skip: noCc || noPrebuilt }, () => {
  const hot = loadNativeAddon({}).addon!;
  withRecorder((rec, _setRc, recorder) => {
    setNativeAddonForTesting(hot);
    const done = new Uint32Array(1);
    const a = hot.register(0x10n, 1, 1, 1, 32, 1, 1, 0, 0xa0n);
    const b = hot.register(0x20n, 2, 1, 1, 64, 1, 1, 0, 0xb0n);
    try {
      const ids = Uint32Array.of(a, b, a);
      const streams = BigUint64Array.of(1n, 2n, 3n);
      done[0] = 7;
      assert.equal(hot.launchSequence(ids, streams, done), hot.NOT_BOUND);
      assert.equal(done[0], 0);
      assert.equal(bindNativeSymbol('test', hot, 'cuLaunchKernel'), true);
      // An unregistered id anywhere is found before the first launch.
      assert.equal(hot.launchSequence(Uint32Array.of(a, b, 99999), streams, done), hot.BAD_ID);
      assert.equal(rec[0], 0n, 'nothing was launched');
      assert.equal(hot.launchSequence(ids, streams, done), 0);
      assert.equal(done[0], 3);
      assert.deepEqual(recorder.launches(), [[0x10n, 1n, 0xa0n], [0x20n, 2n, 0xb0n], [0x10n, 3n, 0xa0n]]);
      // Registered shape of the last launch (a): grid 1, block 32.
      assert.deepEqual([rec[2], rec[5], rec[8], rec[11]], [1n, 32n, 0n, 0n]);
      // Launch number 5 (the second of the next call) fails: the first was submitted, the third not.
      recorder.failAt(5, 700);
      assert.equal(hot.launchSequence(ids, streams, done), 700);
      assert.equal(done[0], 1);
      assert.equal(rec[0], 5n);
      recorder.failAt(0, 0);
      // Views are read where they point (byteOffset honoured).
      assert.equal(hot.launchSequence(ids.subarray(1), streams.subarray(1), done), 0);
      assert.equal(done[0], 2);
      assert.deepEqual(recorder.launches().slice(5), [[0x20n, 2n, 0xb0n], [0x10n, 3n, 0xa0n]]);
      assert.equal(hot.launchSequence(new Uint32Array(0), new BigUint64Array(0), done), 0);
      assert.equal(done[0], 0);
      for (const bad of [
        () => hot.launchSequence([a] as unknown as Uint32Array, streams.subarray(0, 1), done),
        () => hot.launchSequence(Int32Array.of(a) as unknown as Uint32Array, streams.subarray(0, 1), done),
        () => hot.launchSequence(ids, BigInt64Array.of(1n, 2n, 3n) as unknown as BigUint64Array, done),
        () => hot.launchSequence(ids, streams.subarray(1), done),
        () => hot.launchSequence(ids, streams, new Uint32Array(0)),
        () => (hot.launchSequence as (...a: unknown[]) => number)(ids, streams),
      ]) {
        assert.throws(bad, TypeError);
      }
      assert.equal(rec[0], 7n, 'refused calls launch nothing');
    } finally {
      hot.release(a);
      hot.release(b);
    }
  });
});

test('a launch sequence: both bindings launch every entry in order with the same arguments and stop at the same entry', { skip: noCc }, () => {
  const logs: Array<Array<[bigint, bigint, bigint]>> = [];
  for (const [name, hot] of bindings()) {
    withRecorder((_rec, _setRc, recorder) => {
      setNativeAddonForTesting(hot);
      const a = ln.prepareLaunch(0x100n, [1, 1, 1], [32, 1, 1], 0, 0xa000n);
      const b = ln.prepareLaunch(0x200n, [2, 1, 1], [64, 1, 1], 16, 0xb000n);
      const seq = ln.prepareSequence([a, b, a, b, b], [0x51n, 0x52n, 0x53n, 0x51n, 0x52n]);
      assert.equal(seq.native, hot !== null, name);
      assert.equal(seq.length, 5);
      assert.equal(seq.launch('LaunchSequence.launch'), 0, name);
      assert.equal(seq.submitted, 5);
      // The third entry of the second submission (launch number 8) is refused.
      recorder.failAt(8, 1);
      assert.equal(seq.launch('LaunchSequence.launch'), 1, name);
      assert.equal(seq.submitted, 2, name);
      recorder.failAt(0, 0);
      assert.equal(seq.launch('LaunchSequence.launch'), 0, name);
      const log = recorder.launches();
      const once: Array<[bigint, bigint, bigint]> = [[0x100n, 0x51n, 0xa000n], [0x200n, 0x52n, 0xb000n], [0x100n, 0x53n, 0xa000n], [0x200n, 0x51n, 0xb000n], [0x200n, 0x52n, 0xb000n]];
      assert.deepEqual(log, [...once, ...once.slice(0, 3), ...once], name);
      logs.push(log);
      // Launches prepared on one binding in a sequence prepared on the other: a JS loop, same calls.
      setNativeAddonForTesting(hot === null ? loadNativeAddon({}).addon : null);
      const mixed = ln.prepareSequence([b, a], [0x60n, 0x61n]);
      assert.equal(mixed.native, false, name);
      assert.equal(mixed.launch('LaunchSequence.launch'), 0);
      assert.deepEqual(recorder.launches().slice(-2), [[0x200n, 0x60n, 0xb000n], [0x100n, 0x61n, 0xa000n]], name);
      assert.equal(ln.prepareSequence([], []).launch('LaunchSequence.launch'), 0);
      assert.throws(() => ln.prepareSequence([a], []), RangeError);
      a.release();
      b.release();
      // Back to the binding under test: leaving withRecorder unbinds the addon in use.
      setNativeAddonForTesting(hot);
    });
  }
  if (logs.length === 2) assert.deepEqual(logs[0], logs[1], 'the addon and koffi made the same calls');
});

test('with the addon, a sequence still launches through koffi where the library gives no addresses', { skip: noCc || noPrebuilt }, () => {
  const hot = loadNativeAddon({}).addon!;
  const noAddresses = (lib: KoffiLibrary): KoffiLibrary => ({ func: lib.func.bind(lib), unload: lib.unload.bind(lib) }) as unknown as KoffiLibrary;
  withRecorder((_rec, _setRc, recorder) => {
    setNativeAddonForTesting(hot);
    const a = ln.prepareLaunch(5n, [1, 1, 1], [64, 1, 1], 0, 0x50n);
    const b = ln.prepareLaunch(6n, [1, 1, 1], [64, 1, 1], 0, 0x60n);
    const seq = ln.prepareSequence([a, b, a], [9n, 10n, 11n]);
    assert.equal(seq.native, true);
    assert.equal(seq.launch('LaunchSequence.launch'), 0);
    assert.equal(seq.submitted, 3);
    recorder.failAt(5, 2);
    assert.equal(seq.launch('LaunchSequence.launch'), 2);
    assert.equal(seq.submitted, 1);
    assert.deepEqual(recorder.launches(), [[5n, 9n, 0x50n], [6n, 10n, 0x60n], [5n, 11n, 0x50n], [5n, 9n, 0x50n], [6n, 10n, 0x60n]]);
    a.release();
    b.release();
  }, noAddresses);
});

