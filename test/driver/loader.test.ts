import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Device, CudaError, NvrtcError, driverAvailable, nvrtcVersion } from '../../src/index.js';
import { driverCandidates, nvrtcCandidates, loadFirst, DRIVER_FOLDERS_LINUX } from '../../src/driver/loader.js';
import { resetLibrariesForTesting, driverSymbol } from '../../src/driver/sys.js';

const probe = driverAvailable();
const cc = process.env['CC'] ?? 'gcc';
const noCc = spawnSync(cc, ['--version']).status !== 0 && `${cc} is absent`;
const noDriver = probe.ok ? 'a CUDA driver loads on this machine; the no-driver path cannot be observed here' : false;

test('driver candidates: $CUDA_DRIVER_PATH first, then the loader search, then the driver folders; never the stub', () => {
  const c = driverCandidates({ CUDA_DRIVER_PATH: '/opt/x/libcuda.so.1' }, 'linux');
  assert.equal(c[0]!.path, '/opt/x/libcuda.so.1');
  assert.equal(c[0]!.source, '$CUDA_DRIVER_PATH');
  const paths = c.map((x) => x.path);
  assert.ok(paths.indexOf('libcuda.so.1') === 1 && paths.includes('libcuda.so'));
  for (const dir of ['/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/local/nvidia/lib64', '/usr/lib/wsl/lib']) {
    assert.ok(paths.includes(`${dir}/libcuda.so.1`), dir);
  }
  assert.equal(paths.length, 3 + DRIVER_FOLDERS_LINUX.length);
  assert.ok(!paths.some((p) => p.includes('stubs')));
  assert.equal(driverCandidates({}, 'linux')[0]!.path, 'libcuda.so.1');
  assert.deepEqual(
    driverCandidates({}, 'win32').map((x) => x.path),
    ['nvcuda.dll'],
  );
});

test('a $CUDA_DRIVER_PATH naming a folder means libcuda.so.1 in it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  try {
    assert.equal(driverCandidates({ CUDA_DRIVER_PATH: dir }, 'linux')[0]!.path, join(dir, 'libcuda.so.1'));
    assert.equal(driverCandidates({ CUDA_DRIVER_PATH: '/nowhere/' }, 'linux')[0]!.path, '/nowhere/libcuda.so.1');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('NVRTC candidates: $NVRTC_PATH first, then versioned names for the loader search', () => {
  const c = nvrtcCandidates({ NVRTC_PATH: '/opt/n/libnvrtc.so.13' }, 'linux').map((x) => x.path);
  assert.equal(c[0], '/opt/n/libnvrtc.so.13');
  assert.deepEqual(c.slice(1, 5), ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so.11.2', 'libnvrtc.so']);
});

test('loadFirst returns the first library that loads and every failed attempt before it', () => {
  const fake = { fake: true } as never;
  const out = loadFirst(
    [
      { path: 'liba.so', source: 's1' },
      { path: '/definitely/missing/libb.so', source: 's2' },
      { path: 'libc.so', source: 's3' },
      { path: 'libd.so', source: 's4' },
    ],
    (p) => {
      if (p === 'libc.so') return fake;
      throw new Error(`cannot open ${p}`);
    },
  );
  assert.equal(out.ok, true);
  if (!out.ok) return;
  assert.equal(out.loaded.path, 'libc.so');
  assert.equal(out.loaded.lib, fake);
  assert.deepEqual(
    out.attempts.map((a) => [a.path, a.error]),
    [
      ['liba.so', 'cannot open liba.so'],
      ['/definitely/missing/libb.so', 'no such file'],
    ],
  );
  const none = loadFirst([{ path: 'x.so', source: 's' }], () => {
    throw new Error('nope');
  });
  assert.equal(none.ok, false);
  assert.equal(none.attempts.length, 1);
});

test('without a driver: CudaError 3 CUDA_ERROR_NOT_INITIALIZED naming the operation, every path tried and what to check', { skip: noDriver }, () => {
  assert.equal(probe.ok, false);
  for (const call of [() => Device.count(), () => Device.get(0), () => Device.driverVersion()]) {
    assert.throws(call, (e: unknown) => {
      assert.ok(e instanceof CudaError);
      assert.equal(e.code, 3);
      assert.equal(e.errorName, 'CUDA_ERROR_NOT_INITIALIZED');
      assert.match(e.message, /^Device\.(count|get|driverVersion): CUDA_ERROR_NOT_INITIALIZED \(3\): /);
      for (const p of driverCandidates()) assert.ok(e.message.includes(p.path), `message lists ${p.path}`);
      assert.match(e.message, /CUDA_DRIVER_PATH/);
      assert.match(e.message, /LD_LIBRARY_PATH/);
      assert.match(e.message, /nvidia-smi/);
      return true;
    });
  }
});

test('$CUDA_DRIVER_PATH that does not load is reported first, then the search goes on', { skip: noDriver }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  const bogus = join(dir, 'libcuda.so.1');
  writeFileSync(bogus, 'not an ELF file');
  const saved = process.env['CUDA_DRIVER_PATH'];
  process.env['CUDA_DRIVER_PATH'] = bogus;
  resetLibrariesForTesting(null);
  try {
    assert.throws(
      () => Device.count(),
      (e: unknown) =>
        e instanceof CudaError &&
        e.code === 3 &&
        e.message.includes(`${bogus} ($CUDA_DRIVER_PATH)`) &&
        e.message.indexOf(bogus) < e.message.indexOf('libcuda.so.1 (dynamic loader'),
    );
  } finally {
    if (saved === undefined) delete process.env['CUDA_DRIVER_PATH'];
    else process.env['CUDA_DRIVER_PATH'] = saved;
    resetLibrariesForTesting(null);
    rmSync(dir, { recursive: true });
  }
});

test('a symbol missing from the loaded library fails that call alone with CudaError 801 naming the symbol', { skip: noCc }, () => {
  // A driver of CUDA 11.4 that lacks the symbols: the lazy binding must load it, then refuse each
  // missing symbol on its own call.
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  writeFileSync(join(dir, 'old.c'), 'int cuInit(unsigned f) { (void)f; return 0; }\nint cuDriverGetVersion(int *v) { *v = 11040; return 0; }\n');
  const so = join(dir, 'libcuda-old.so');
  const built = spawnSync(cc, ['-shared', '-fPIC', '-o', so, join(dir, 'old.c')], { encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  resetLibrariesForTesting(() => koffi.load(so));
  try {
    for (const sym of ['cuGraphGetEdges_v2', 'cuStreamBeginCapture_v2'] as const) {
      assert.throws(
        () => driverSymbol('Graph.readBack', sym),
        (e: unknown) =>
          e instanceof CudaError &&
          e.code === 801 &&
          e.errorName === 'CUDA_ERROR_NOT_SUPPORTED' &&
          e.operation === 'Graph.readBack' &&
          e.driverCall === sym &&
          e.details['symbol'] === sym &&
          e.message.startsWith('Graph.readBack: CUDA_ERROR_NOT_SUPPORTED (801)') &&
          new RegExp(`The symbol ${sym} is missing from \\S+ \\(driver reports CUDA 11\\.4\\): this driver predates the call`).test(e.message),
      );
    }
  } finally {
    resetLibrariesForTesting(null);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without NVRTC: NvrtcError NVRTC_NOT_LOADED listing where it looked', { skip: nvrtcLoads() }, () => {
  assert.throws(
    () => nvrtcVersion(),
    (e: unknown) =>
      e instanceof NvrtcError &&
      e.code === 'NVRTC_NOT_LOADED' &&
      e.message.startsWith('nvrtcVersion: NVRTC_NOT_LOADED') &&
      e.message.includes('libnvrtc.so.13') &&
      e.message.includes('NVRTC_PATH'),
  );
});

function nvrtcLoads(): string | false {
  try {
    nvrtcVersion();
    return 'NVRTC loads on this machine';
  } catch {
    return false;
  }
}

// ── paths that are not library files ───────────────────────────────────────────────────────────

test('loadFirst never hands a FIFO, a folder, a socket, a device or a dangling symlink to the loader: each is an attempt with its reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  const server = createServer();
  try {
    const fifo = join(dir, 'libcuda.so.1');
    execFileSync('mkfifo', [fifo]);
    const link = join(dir, 'link-to-fifo.so');
    symlinkSync(fifo, link);
    const dangling = join(dir, 'dangling.so');
    symlinkSync(join(dir, 'nothing-here'), dangling);
    const folder = join(dir, 'folder.so');
    mkdirSync(folder);
    const socket = join(dir, 'socket.so');
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const loaded: string[] = [];
    const out = loadFirst(
      [fifo, link, dangling, folder, socket, '/dev/null'].map((path) => ({ path, source: 'test' })),
      (p) => {
        loaded.push(p);
        throw new Error('not reached');
      },
    );
    assert.equal(out.ok, false);
    assert.deepEqual(loaded, [], 'none reached the dynamic loader');
    assert.deepEqual(
      out.attempts.map((a) => a.error),
      [
        'a FIFO (named pipe), not a library file: opening it would block until something writes to it',
        'a symlink to a FIFO (named pipe), not a library file: opening it would block until something writes to it',
        'a symlink to nothing (no such file)',
        'a folder, not a library file',
        'a socket, not a library file',
        'a device, not a library file',
      ],
    );
    // A bare name that LD_LIBRARY_PATH resolves to a FIFO is refused the same way; elsewhere it goes to the loader.
    const bare = loadFirst([{ path: 'libcuda.so.1', source: 'search' }], () => ({}) as never, { LD_LIBRARY_PATH: `/nowhere:${dir}` });
    assert.equal(bare.ok, false);
    assert.match(bare.attempts[0]!.error, /^the dynamic loader would open .*libcuda\.so\.1 \(from LD_LIBRARY_PATH\), which is a FIFO \(named pipe\)/);
    assert.equal(loadFirst([{ path: 'libcuda.so.1', source: 'search' }], () => ({}) as never, { LD_LIBRARY_PATH: '/nowhere' }).ok, true);
    // A regular file, directly or through a symlink, is loaded.
    const file = join(dir, 'real.so');
    writeFileSync(file, 'x');
    symlinkSync(file, join(dir, 'link-to-file.so'));
    for (const p of [file, join(dir, 'link-to-file.so')]) assert.equal(loadFirst([{ path: p, source: 't' }], () => ({}) as never).ok, true, p);
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('CUDA_DRIVER_PATH, NVRTC_PATH and LD_LIBRARY_PATH naming FIFOs: the public calls fail at once instead of blocking', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  try {
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo, join(dir, 'libcuda.so.1'), join(dir, 'libnvrtc.so'), join(dir, 'libnvrtc.so.13')]);
    const index = new URL('../../src/index.js', import.meta.url).href;
    // A child process with a deadline: if a FIFO reached dlopen it would block for ever, and the
    // deadline turns that into a failure of this test instead of a hung suite.
    const script = `
      const { Device, nvrtcVersion } = await import(${JSON.stringify(index)});
      const out = {};
      for (const [name, call] of [['driver', () => Device.count()], ['nvrtc', () => nvrtcVersion()]]) {
        try { call(); out[name] = 'loaded'; } catch (e) { out[name] = e.message; }
      }
      console.log(JSON.stringify(out));`;
    for (const env of [
      { CUDA_DRIVER_PATH: fifo, NVRTC_PATH: fifo },
      { CUDA_DRIVER_PATH: dir, NVRTC_PATH: dir },
      { LD_LIBRARY_PATH: dir },
    ]) {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, CUDA_DRIVER_PATH: '', NVRTC_PATH: '', LD_LIBRARY_PATH: '', ...env },
        encoding: 'utf8',
        timeout: 20_000,
      });
      const what = JSON.stringify(env);
      assert.equal(r.error, undefined, `${what}: the child ran (${r.error?.message}): a FIFO reached dlopen and blocked`);
      assert.equal(r.status, 0, `${what}: ${r.stderr}`);
      const out = JSON.parse(r.stdout) as { driver: string; nvrtc: string };
      for (const [name, message] of Object.entries(out)) {
        // On a machine with CUDA the search goes on and finds the real library; the FIFO is still named.
        if (message !== 'loaded') assert.match(message, /FIFO \(named pipe\), not a library file/, `${what} ${name}: ${message}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('driverAvailable(): the error it carries names driverAvailable, the call that was made', () => {
  // A loader that loads nothing: the failure is the same on a machine with a driver.
  resetLibrariesForTesting(() => {
    throw new Error('cannot open');
  });
  try {
    const r = driverAvailable();
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.error.operation, 'driverAvailable');
    assert.match(r.error.message, /^driverAvailable: CUDA_ERROR_NOT_INITIALIZED \(3\): /);
    // The calls after it still name themselves.
    assert.throws(() => Device.count(), (e: unknown) => e instanceof CudaError && /^Device\.count: /.test(e.message));
  } finally {
    resetLibrariesForTesting(null);
  }
});

test('LD_LIBRARY_PATH read as the dynamic loader reads it (an empty entry is the current folder; semicolons separate too): a FIFO there fails at once', () => {
  // `export LD_LIBRARY_PATH=/opt/x/lib:$LD_LIBRARY_PATH` with the variable unset leaves a trailing
  // colon, which the dynamic loader searches as the current folder.
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  try {
    execFileSync('mkfifo', [join(dir, 'libcuda.so.1')]);
    const index = new URL('../../src/index.js', import.meta.url).href;
    const script = `
      const { driverAvailable } = await import(${JSON.stringify(index)});
      const r = driverAvailable();
      console.log(r.ok ? 'loaded' : r.error.message);`;
    for (const ld of ['/nowhere:', ':/nowhere', '/nowhere::/nowhere2', '/nowhere;']) {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dir,
        env: { ...process.env, CUDA_DRIVER_PATH: '', LD_LIBRARY_PATH: ld },
        encoding: 'utf8',
        timeout: 20_000,
      });
      assert.equal(r.error, undefined, `LD_LIBRARY_PATH=${ld}: the child ran (${r.error?.message}): the FIFO reached dlopen and blocked`);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /libcuda\.so\.1 \(from LD_LIBRARY_PATH\), which is a FIFO \(named pipe\)/, `LD_LIBRARY_PATH=${ld}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a $CUDA_DRIVER_PATH or $NVRTC_PATH that is a bare file name in the current folder means that file', { skip: noCc }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  const cwd = process.cwd();
  try {
    writeFileSync(join(dir, 'lib.c'), 'int cuInit(unsigned f) { (void)f; return 0; }\nint nvrtcVersion(int *a, int *b) { *a = 13; *b = 0; return 0; }\n');
    const built = spawnSync(cc, ['-shared', '-fPIC', '-o', join(dir, 'libhere.so'), join(dir, 'lib.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    process.chdir(dir);
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
    for (const candidates of [driverCandidates({ CUDA_DRIVER_PATH: 'libhere.so' }, 'linux'), nvrtcCandidates({ NVRTC_PATH: 'libhere.so' }, 'linux')]) {
      const out = loadFirst(candidates.slice(0, 1), (p) => koffi.load(p));
      assert.equal(out.ok, true, JSON.stringify(out.attempts));
      if (out.ok) assert.equal(out.loaded.path, join(dir, 'libhere.so'));
    }
    // A bare name that is no file here is still the dynamic loader's to find.
    assert.equal(driverCandidates({ CUDA_DRIVER_PATH: 'libcuda.so.1' }, 'linux')[0]!.path, 'libcuda.so.1');
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without koffi: the driver and NVRTC errors say that the FFI module did not load, once, not once per library tried', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  try {
    // Makes require('koffi') fail in the child, as it does where koffi's native module is missing.
    const hook = join(dir, 'no-koffi.cjs');
    writeFileSync(hook, `const M = require('module'); const load = M._load;
M._load = function (request, ...rest) { if (request === 'koffi') throw new Error('koffi.node is missing'); return load.call(this, request, ...rest); };`);
    const index = new URL('../../src/index.js', import.meta.url).href;
    const script = `
      const { Device, nvrtcVersion } = await import(${JSON.stringify(index)});
      const out = [];
      for (const call of [() => Device.count(), () => nvrtcVersion()]) {
        try { call(); out.push('loaded'); } catch (e) { out.push({ message: e.message, cause: String(e.cause) }); }
      }
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ['--require', hook, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    const [driver, nvrtc] = JSON.parse(r.stdout) as { message: string; cause: string }[];
    for (const [what, e] of [['driver', driver!], ['NVRTC', nvrtc!]] as const) {
      const tried = e.message.split('\n').filter((l) => l.startsWith('  - ') && e.message.indexOf(l) < e.message.indexOf('\nCheck:'));
      assert.deepEqual(tried, ['  - koffi (the FFI module): the koffi FFI module could not be loaded (koffi.node is missing)'], `${what}: ${e.message}`);
      assert.match(e.cause, /koffi\.node is missing/, what);
    }
    assert.match(driver!.message, /^Device\.count: CUDA_ERROR_NOT_INITIALIZED \(3\): /);
    assert.match(nvrtc!.message, /^nvrtcVersion: NVRTC_NOT_LOADED: /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a library without cuInit (or nvrtcVersion) is not taken for the driver (or NVRTC): it is an attempt with that reason, and the search goes on', { skip: noCc }, () => {
  // The runtime library is the usual mistake: it loads, and has none of the driver's entry points.
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  const saved = { driver: process.env['CUDA_DRIVER_PATH'], nvrtc: process.env['NVRTC_PATH'] };
  try {
    writeFileSync(join(dir, 'rt.c'), 'int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n');
    const so = join(dir, 'libcudart.so.13');
    const built = spawnSync(cc, ['-shared', '-fPIC', '-o', so, join(dir, 'rt.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    process.env['CUDA_DRIVER_PATH'] = so;
    process.env['NVRTC_PATH'] = so;
    resetLibrariesForTesting(null);
    const r = driverAvailable();
    if (r.ok) assert.notEqual(r.path, so, 'a real driver found after it');
    else assert.ok(r.error.message.includes(`  - ${so} ($CUDA_DRIVER_PATH): loads, but exports no cuInit: not the CUDA driver library\n`), r.error.message);
    assert.throws(
      () => Device.count(),
      (e: unknown) => e instanceof CudaError && e.code === 3 && !e.message.includes('predates'),
    );
    let nvrtc: string;
    try {
      nvrtcVersion();
      nvrtc = 'loaded';
    } catch (e) {
      nvrtc = (e as Error).message;
    }
    if (nvrtc !== 'loaded') assert.ok(nvrtc.includes(`  - ${so} ($NVRTC_PATH): loads, but exports no nvrtcVersion: not NVRTC\n`), nvrtc);
  } finally {
    for (const [key, value] of [['CUDA_DRIVER_PATH', saved.driver], ['NVRTC_PATH', saved.nvrtc]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    resetLibrariesForTesting(null);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('on an architecture missing from the table of ELF machines, a library that fails to load is not called foreign', { skip: noCc }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  const arch = Object.getOwnPropertyDescriptor(process, 'arch')!;
  try {
    writeFileSync(join(dir, 'lib.c'), 'int cuInit(unsigned f) { (void)f; return 0; }\n');
    const so = join(dir, 'libcuda.so.1');
    const built = spawnSync(cc, ['-shared', '-fPIC', '-o', so, join(dir, 'lib.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    // A LoongArch library (e_machine 258) on a LoongArch process: its own, whatever the load said.
    const bytes = readFileSync(so);
    bytes.writeUInt16LE(258, 18);
    writeFileSync(so, bytes);
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
    Object.defineProperty(process, 'arch', { ...arch, value: 'loong64' });
    const out = loadFirst([{ path: so, source: 'test' }], (p) => koffi.load(p));
    Object.defineProperty(process, 'arch', arch);
    assert.equal(out.ok, false);
    assert.doesNotMatch(out.attempts[0]!.error, /a library for/, out.attempts[0]!.error);
  } finally {
    Object.defineProperty(process, 'arch', arch);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a library built for another architecture is reported as such, not as a missing file', { skip: noCc || (process.arch !== 'x64' && process.arch !== 'arm64' && 'not x64 or arm64') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-loader-'));
  try {
    writeFileSync(join(dir, 'lib.c'), 'int cuInit(unsigned f) { (void)f; return 0; }\n');
    const so = join(dir, 'libcuda.so.1');
    const built = spawnSync(cc, ['-shared', '-fPIC', '-o', so, join(dir, 'lib.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    // e_machine (offset 18): the other of x86-64 (62) and AArch64 (183).
    const other = process.arch === 'x64' ? { machine: 183, arch: 'arm64' } : { machine: 62, arch: 'x64' };
    const bytes = readFileSync(so);
    bytes.writeUInt16LE(other.machine, 18);
    writeFileSync(so, bytes);
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
    const out = loadFirst([{ path: so, source: 'test' }], (p) => koffi.load(p));
    assert.equal(out.ok, false);
    assert.match(out.attempts[0]!.error, new RegExp(`a library for ${other.arch}, not for this process's ${process.arch}`), out.attempts[0]!.error);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
