/**
 * The hazard scenarios (test/hazards/scenarios.ts) against the hazard stand-in driver, which
 * models a stream blocked by a JS host function: calls that wait for the GPU and enqueues into a
 * full queue block there as on the real driver, and the stand-in ends the process with exit code
 * 86 where the real driver would hang for ever. Each scenario runs in a child process with a
 * timeout, on both bindings. The same scenarios run on the GPU in test/gpu/hazards.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scenarios } from '../hazards/scenarios.js';
import { bindings } from './bindings.js';

const gcc = spawnSync('gcc', ['--version']).status === 0;

/** Builds the hazard stand-in driver; null without gcc. */
export function buildHazardDriver(): string | null {
  if (!gcc) return null;
  const dir = mkdtempSync(join(tmpdir(), 'cg-hazard-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const so = join(dir, 'libcuda-hazard.so');
  const source = fileURLToPath(new URL('../../../test/driver/stand-in/hazard-driver.c', import.meta.url));
  const cc = spawnSync('gcc', ['-O1', '-fPIC', '-shared', '-pthread', '-o', so, source], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  return so;
}

/** Runs scenario `name` in a child process on `binding`; returns its exit code and output. */
export function runScenario(name: string, env: NodeJS.ProcessEnv, timeoutMs: number): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const script = fileURLToPath(new URL('../hazards/run-scenario.js', import.meta.url));
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

const so = buildHazardDriver();
const skip = so === null && 'gcc is absent';

for (const [binding] of bindings()) {
  for (const name of Object.keys(scenarios)) {
    test(`${binding}: ${name} (stand-in driver, child process)`, { skip }, () => {
      const env = { ...process.env, CUDA_DRIVER_PATH: so!, HAZARD_STAND_IN: '1', CUDAGRAPH_NATIVE: binding === 'koffi' ? '0' : '1' };
      assertScenarioPassed(name, runScenario(name, env, 30_000));
    });
  }
}
