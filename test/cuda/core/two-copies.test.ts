/**
 * Two installed copies of cudagraph in one process (a dependency tree with two versions) share
 * the process-wide state: the current-context mirror, the frees held back by a capture and the
 * host-call gate (src/driver/process-state.ts). The package is installed twice into a temporary
 * folder (its built `dist/src` and `native/`, each with its own package.json) and a child process
 * imports both, against the hazard stand-in driver with two devices.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, symlinkSync, writeFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { buildHazardDriver } from '../../support/hazards/child.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** Installs the built package as `<dir>/node_modules/<name>`; returns the path of its entry point. */
function install(dir: string, name: string): string {
  const pkg = join(dir, 'node_modules', name);
  mkdirSync(pkg, { recursive: true });
  cpSync(join(root, 'dist', 'src'), join(pkg, 'dist', 'src'), { recursive: true });
  cpSync(join(root, 'native'), join(pkg, 'native'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name, version: '0.0.0', type: 'module', main: './dist/src/index.js' }));
  return join(pkg, 'dist', 'src', 'index.js');
}

const so = buildHazardDriver();

test('two installed copies share the context mirror, capture deferral and host-call gate, and refuse each other\'s objects', { skip: so === null && 'gcc is absent' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-two-copies-'));
  try {
    // Both copies find koffi (and each other's dependencies) through one node_modules above them.
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    symlinkSync(join(root, 'node_modules', 'koffi'), join(dir, 'node_modules', 'koffi'), 'dir');
    const a = install(dir, 'cudagraph-a');
    const b = install(dir, 'cudagraph-b');
    const child = fileURLToPath(new URL('./two-copies-child.js', import.meta.url));
    const r = spawnSync(process.execPath, [child, a, b], {
      env: { ...process.env, CUDA_DRIVER_PATH: so!, STAND_IN_DEVICES: '2' },
      encoding: 'utf8',
      timeout: 30_000,
      killSignal: 'SIGKILL',
    });
    if (r.signal === 'SIGKILL') assert.fail(`hung\n${r.stderr}`);
    assert.equal(r.status, 0, `${r.stderr}\n${r.stdout}`);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { context: 'shared', captureDeferral: 'shared', gate: 'shared', mixing: 'refused' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
