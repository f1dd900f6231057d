/**
 * The Node-API addon of the hot calls (native/cudagraph_hot.c, src/driver/native.ts), on the CPU:
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
  type HotAddon,
} from '../../src/driver/native.js';
import { resetLibrariesForTesting } from '../../src/driver/sys.js';
import { setCaptureErrorListener } from '../../src/driver/check.js';
import { launch as ln, graph as gr } from '../../src/driver/result/index.js';
import type { KoffiLibrary } from '../../src/driver/koffi.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
const gcc = spawnSync('gcc', ['--version']).status === 0;

test('the prebuilt addon loads on linux-x64 without libcuda, and names no CUDA library', { skip: !linuxX64 && 'not linux-x64' }, () => {
  const { addon, status } = loadNativeAddon({});
  assert.deepEqual(status, { active: true, path: prebuiltAddonPath(), reason: 'loaded' });
  assert.ok(addon !== null);
  assert.equal(addon.abi, NATIVE_ABI);
  for (const f of ['launch', 'launchKernel', 'graphLaunch', 'register', 'release', 'registered', 'bind'] as const) {
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
  const source = createHash('sha256').update(readFileSync(join(root, '..', 'cudagraph_hot.c'))).digest('hex');
  const builds = readdirSync(root).filter((d) => existsSync(join(root, d, 'cudagraph_hot.node')));
  assert.ok(builds.includes('linux-x64'), `prebuilt folders: ${builds.join(', ')}`);
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

test('registered launches: ids are reused after release; unbound functions, unknown ids and bad arguments are reported', { skip: !linuxX64 && 'not linux-x64' }, () => {
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

const RECORDER = `
#include <stdint.h>
/* rec[0] launches, [1] f, [2..8] grid, block, shared memory, [9] stream, [10] params, [11] extra,
   [12] graph launches, [13] exec, [14] stream */
uint64_t rec[16];
int next_rc;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shm, void *stream, void **params, void **extra) {
  rec[0]++; rec[1] = (uintptr_t)f;
  rec[2] = gx; rec[3] = gy; rec[4] = gz; rec[5] = bx; rec[6] = by; rec[7] = bz; rec[8] = shm;
  rec[9] = (uintptr_t)stream; rec[10] = (uintptr_t)params; rec[11] = (uintptr_t)extra;
  return next_rc;
}
int cuGraphLaunch(void *exec, void *stream) {
  rec[12]++; rec[13] = (uintptr_t)exec; rec[14] = (uintptr_t)stream;
  return next_rc;
}
`;

/** Runs `body` with the recording library standing in for libcuda; `load` may wrap koffi's library. */
function withRecorder(
  body: (rec: BigUint64Array, setRc: (rc: number) => void) => void,
  wrap: (lib: KoffiLibrary) => KoffiLibrary = (lib) => lib,
): void {
  const dir = mkdtempSync(join(tmpdir(), 'cg-recorder-'));
  const saved = nativeAddon();
  try {
    writeFileSync(join(dir, 'recorder.c'), RECORDER);
    const so = join(dir, 'librecorder.so');
    const cc = spawnSync('gcc', ['-O1', '-fPIC', '-shared', '-o', so, join(dir, 'recorder.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const lib = koffi.load(so);
    const rec = new BigUint64Array(koffi.view(lib.symbol('rec') as bigint, 16 * 8));
    const rcAt = lib.symbol('next_rc') as bigint;
    resetLibrariesForTesting((p) => wrap(koffi.load(p)));
    process.env['CUDA_DRIVER_PATH'] = so;
    body(rec, (rc) => koffi.encode(rcAt, 'int', rc));
  } finally {
    delete process.env['CUDA_DRIVER_PATH'];
    resetLibrariesForTesting(null);
    setNativeAddonForTesting(saved);
    rmSync(dir, { recursive: true });
  }
}

/** Which binding to run a check on: the addon (where it loads) and koffi. */
function bindings(): Array<[string, HotAddon | null]> {
  const hot = loadNativeAddon({}).addon;
  return hot === null ? [['koffi', null]] : [['addon', hot], ['koffi', null]];
}

test('both bindings pass every argument of cuLaunchKernel and cuGraphLaunch through unchanged', { skip: !gcc && 'gcc is absent' }, () => {
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

test('a failed launch is the same CudaError on both bindings, and capture errors reach the capture listener', { skip: !gcc && 'gcc is absent' }, () => {
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

test('with the addon, a library that gives no symbol addresses still launches, through koffi', { skip: (!gcc && 'gcc is absent') || (!linuxX64 && 'not linux-x64') }, () => {
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
});

test('with the addon, a driver that lacks the symbol fails the launch with the same 801 as koffi', { skip: !linuxX64 && 'not linux-x64' }, () => {
  const saved = nativeAddon();
  for (const [name, hot] of bindings()) {
    // libc stands in for an old driver without cuLaunchKernel and cuGraphLaunch.
    resetLibrariesForTesting(() => koffi.load('libc.so.6'));
    try {
      setNativeAddonForTesting(hot);
      const call = ln.prepareLaunch(1n, [1, 1, 1], [32, 1, 1], 0, 0n);
      for (const [sym, run] of [
        ['cuLaunchKernel', () => call.launch('PreparedLaunch.launch', 0n)],
        ['cuGraphLaunch', () => gr.graphLaunch('GraphExec.launch', 1n, 0n)],
      ] as const) {
        assert.throws(run, (e: unknown) => e instanceof CudaError && e.code === 801 && e.driverCall === sym && e.message.includes(`The symbol ${sym} is missing`), `${name} ${sym}`);
      }
      call.release();
    } finally {
      resetLibrariesForTesting(null);
      setNativeAddonForTesting(saved);
    }
  }
});
