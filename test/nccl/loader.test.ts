/**
 * The NCCL loader on the CPU: where it looks, the error when nothing loads (this machine has no
 * libnccl), a library without NCCL's symbols, and the NVLink-multicast default it sets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NcclError, NcclUniqueId, NcclComm, loadNccl, ncclAvailable, ncclCandidates, InvalidArgumentError } from '../../src/index.js';
import { NCCL_SYSTEM_FOLDERS } from '../../src/nccl/loader.js';
import { ensureNcclEnvironment, resetNcclForTesting } from '../../src/nccl/sys.js';
import { forgetNcclVersion } from '../../src/nccl/version.js';

const probe = ncclAvailable();
const noNccl = probe.ok ? `libnccl loads on this machine (${probe.path}); the not-found path cannot be observed here` : false;

function reset(): void {
  resetNcclForTesting();
  forgetNcclVersion();
}

test('candidates: the loadNccl path, then $NCCL_LIBRARY, then the loader search, the Python wheels, the system folders', () => {
  const c = ncclCandidates({ NCCL_LIBRARY: '/opt/n/libnccl.so.2' }, '/explicit/libnccl.so.2');
  assert.deepEqual(
    c.slice(0, 4).map((x) => [x.path, x.source]),
    [
      ['/explicit/libnccl.so.2', 'loadNccl({ path })'],
      ['/opt/n/libnccl.so.2', '$NCCL_LIBRARY'],
      ['libnccl.so.2', 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)'],
      ['libnccl.so', 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)'],
    ],
  );
  const paths = c.map((x) => x.path);
  for (const dir of NCCL_SYSTEM_FOLDERS) assert.ok(paths.includes(join(dir, 'libnccl.so.2')), dir);
  // The device machine's PyTorch venv is named even where it does not exist.
  assert.ok(paths.some((p) => p.startsWith('/opt/torch/.venv/lib/python3') && p.endsWith('nvidia/nccl/lib/libnccl.so.2')));
  assert.equal(ncclCandidates({})[0]!.path, 'libnccl.so.2');
});

test('ncclCandidates refuses an env that is not one, a variable it reads that is not a string, and a bad path', () => {
  // Each threw a raw TypeError from inside the search (reading a property of null, `endsWith` of a number).
  const cases: [unknown, unknown, RegExp][] = [
    [null, undefined, /^ncclCandidates: env must be an object of environment variables \(as process\.env\), got null$/],
    [{}, 7, /^ncclCandidates: path must be a non-empty string, got 7$/],
    [{}, '', /^ncclCandidates: path must be a non-empty string/],
    [{ NCCL_LIBRARY: 5 }, undefined, /^ncclCandidates: env\.NCCL_LIBRARY must be a string or unset, got 5$/],
    [{ VIRTUAL_ENV: {} }, undefined, /^ncclCandidates: env\.VIRTUAL_ENV must be a string or unset/],
    [{ CONDA_PREFIX: ['/opt'] }, undefined, /^ncclCandidates: env\.CONDA_PREFIX must be a string or unset/],
  ];
  for (const [env, path, message] of cases) {
    assert.throws(() => ncclCandidates(env as never, path as never), (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message), message.source);
  }
  assert.equal(ncclCandidates({ NCCL_LIBRARY: '', OTHER: 5 } as never)[0]!.path, 'libnccl.so.2', 'an empty or unread variable is no candidate and no refusal');
});

test('a folder given as $NCCL_LIBRARY or path means libnccl.so.2 in it; a wheel in $VIRTUAL_ENV is found', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-nccl-'));
  try {
    const site = join(dir, 'lib', 'python3.12', 'site-packages', 'nvidia', 'nccl', 'lib');
    mkdirSync(site, { recursive: true });
    const c = ncclCandidates({ NCCL_LIBRARY: dir, VIRTUAL_ENV: dir }, '/nowhere/');
    assert.equal(c[0]!.path, '/nowhere/libnccl.so.2');
    assert.equal(c[1]!.path, join(dir, 'libnccl.so.2'));
    const wheel = c.find((x) => x.path === join(site, 'libnccl.so.2'));
    assert.ok(wheel, 'the wheel folder under $VIRTUAL_ENV is a candidate');
    assert.equal(wheel.source, 'Python nvidia-nccl wheel');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('without NCCL every entry point throws NcclError NCCL_NOT_LOADED naming the operation and every path tried', { skip: noNccl }, () => {
  reset();
  const saved = process.env['NCCL_LIBRARY'];
  process.env['NCCL_LIBRARY'] = '/definitely/missing/libnccl.so.2';
  try {
    const calls: Array<[string, () => unknown]> = [
      ['NcclUniqueId.create', () => NcclUniqueId.create()],
      ['NcclComm.uniqueId', () => NcclComm.uniqueId()],
      ['loadNccl', () => loadNccl()],
    ];
    for (const [name, call] of calls) {
      let error: unknown;
      try {
        call();
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof NcclError, `${name} threw ${String(error)}`);
      assert.equal(error.code, 'NCCL_NOT_LOADED');
      assert.equal(error.result, -1);
      assert.match(error.message, /^(NcclUniqueId\.create|loadNccl): NCCL_NOT_LOADED: the NCCL library \(libnccl\.so\.2\) is not available/);
      for (const c of ncclCandidates(process.env)) assert.ok(error.message.includes(c.path), `${name}: the message lists ${c.path}`);
      assert.match(error.message, /\/definitely\/missing\/libnccl\.so\.2 \(\$NCCL_LIBRARY\): no such file/);
      assert.match(error.message, /NCCL_LIBRARY/);
      assert.match(error.message, /pip install nvidia-nccl-cu13/);
    }
    const a = ncclAvailable();
    assert.equal(a.ok, false);
  } finally {
    if (saved === undefined) delete process.env['NCCL_LIBRARY'];
    else process.env['NCCL_LIBRARY'] = saved;
    reset();
  }
});

test('a library that loads but is not NCCL fails the first call with NCCL_SYMBOL_MISSING naming the symbol', () => {
  reset();
  try {
    let error: unknown;
    try {
      loadNccl({ path: 'libc.so.6' });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof NcclError, String(error));
    assert.equal(error.code, 'NCCL_SYMBOL_MISSING');
    assert.equal(error.ncclCall, 'ncclGetVersion');
    assert.match(error.message, /^loadNccl: NCCL_SYMBOL_MISSING: the symbol ncclGetVersion is missing from libc\.so\.6/);
    // Once loaded, another file is refused rather than silently ignored.
    assert.throws(() => loadNccl({ path: '/other/libnccl.so.2' }), (e: unknown) => e instanceof NcclError && e.code === 'NCCL_ALREADY_LOADED');
  } finally {
    reset();
  }
});

test('loadNccl refuses bad options before loading anything', () => {
  assert.throws(() => loadNccl({ path: '' }), InvalidArgumentError);
  assert.throws(() => loadNccl({ library: 'x' } as never), /unknown option 'library'/);
});

test('NCCL_NVLS_ENABLE defaults to 0 before NCCL initialises, and a value the program chose is kept', () => {
  const env: NodeJS.ProcessEnv = {};
  ensureNcclEnvironment(env);
  assert.equal(env['NCCL_NVLS_ENABLE'], '0');
  const chosen: NodeJS.ProcessEnv = { NCCL_NVLS_ENABLE: '1' };
  ensureNcclEnvironment(chosen);
  assert.equal(chosen['NCCL_NVLS_ENABLE'], '1');
  // Any load attempt sets it in the real environment (which NCCL and child processes read).
  const saved = process.env['NCCL_NVLS_ENABLE'];
  delete process.env['NCCL_NVLS_ENABLE'];
  reset();
  try {
    ncclAvailable();
    assert.equal(process.env['NCCL_NVLS_ENABLE'], '0');
  } finally {
    if (saved === undefined) delete process.env['NCCL_NVLS_ENABLE'];
    else process.env['NCCL_NVLS_ENABLE'] = saved;
    reset();
  }
});

test('a $NCCL_LIBRARY file that is not a library is reported with the loader\'s reason', { skip: noNccl }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-nccl-'));
  const saved = process.env['NCCL_LIBRARY'];
  reset();
  try {
    const bogus = join(dir, 'libnccl.so.2');
    writeFileSync(bogus, 'not an ELF file');
    process.env['NCCL_LIBRARY'] = dir;
    const a = ncclAvailable();
    assert.equal(a.ok, false);
    if (!a.ok) {
      assert.ok(a.error.message.includes(`${bogus} ($NCCL_LIBRARY):`));
      assert.doesNotMatch(a.error.message, new RegExp(`${bogus.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(\\$NCCL_LIBRARY\\): no such file`));
    }
  } finally {
    if (saved === undefined) delete process.env['NCCL_LIBRARY'];
    else process.env['NCCL_LIBRARY'] = saved;
    rmSync(dir, { recursive: true });
    reset();
  }
});
