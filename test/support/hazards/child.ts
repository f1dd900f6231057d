/**
 * Running hazard scenarios in child processes (each can hang or end its process on purpose), and
 * building the hazard stand-in driver they run against on machines without a GPU.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const gcc = spawnSync('gcc', ['--version']).status === 0;

/**
 * Builds the hazard stand-in driver (test/support/stand-in/hazard-driver.c); null without gcc.
 * Linked with `-z nodelete`: its GPU thread may still run its code when koffi closes the library.
 */
export function buildHazardDriver(): string | null {
  if (!gcc) return null;
  const dir = mkdtempSync(join(tmpdir(), 'cg-hazard-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const so = join(dir, 'libcuda-hazard.so');
  const source = fileURLToPath(new URL('../../../../test/support/stand-in/hazard-driver.c', import.meta.url));
  const cc = spawnSync('gcc', ['-O1', '-fPIC', '-shared', '-pthread', '-Wl,-z,nodelete', '-o', so, source], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  return so;
}

/** Runs scenario `name` in a child process with `env`; returns its exit code and output. */
export function runScenario(name: string, env: NodeJS.ProcessEnv, timeoutMs: number): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const script = fileURLToPath(new URL('./run-scenario.js', import.meta.url));
  const r = spawnSync(process.execPath, ['--expose-gc', script, name], { env, encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL' });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** The assertion a scenario run must pass: exit 0 with its `ok` line; a hang or a stand-in deadlock fails it by name. */
export function assertScenarioPassed(name: string, r: ReturnType<typeof runScenario>): void {
  if (r.signal === 'SIGKILL') assert.fail(`${name}: hung (killed after the timeout)\n${r.stderr}`);
  if (r.status === 86) assert.fail(`${name}: deadlocked in the driver\n${r.stderr}`);
  assert.equal(r.status, 0, `${name} failed:\n${r.stderr}\n${r.stdout}`);
  assert.match(r.stdout, new RegExp(`"ok":"${name}"`));
}

