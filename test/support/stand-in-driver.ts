/**
 * The no-op stand-in driver (fixtures/stand-in-driver.c) for CPU tests: built with gcc into a
 * temporary folder and made this process's driver, before cudagraph loads one (it loads lazily;
 * each test file runs in its own process). Its counters are read through `counter(name)`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;

/** The loaded stand-in: a view of `length` u64 values at its exported symbol `name`. */
export interface StandIn {
  u64s(name: string, length?: number): BigUint64Array;
  /** The current value of the u64 counter `name`. */
  counter(name: string): () => number;
}

/**
 * Builds and loads the stand-in (`tag` names its folder) with $CC (else gcc), or returns null when that compiler is absent.
 * `defines` turn on its optional parts (`['STAND_IN_POOLS', 'STAND_IN_KERNEL_ARGS']`, see the C file).
 */
export function loadStandIn(tag: string, defines: readonly string[] = []): StandIn | null {
  const compiler = process.env['CC'] ?? 'gcc';
  if (spawnSync(compiler, ['--version']).status !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), `cg-${tag}-`));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const so = join(dir, 'libcuda-stand-in.so');
  const source = fileURLToPath(new URL('../../../fixtures/stand-in-driver.c', import.meta.url));
  const cc = spawnSync(compiler, ['-O1', '-fPIC', '-shared', ...defines.map((d) => `-D${d}`), '-o', so, source], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  process.env['CUDA_DRIVER_PATH'] = so;
  const lib = koffi.load(so);
  const u64s = (name: string, length = 1): BigUint64Array => new BigUint64Array(koffi.view(lib.symbol(name) as bigint, 8 * length));
  return {
    u64s,
    counter: (name) => {
      const v = u64s(name);
      return () => Number(v[0]);
    },
  };
}
