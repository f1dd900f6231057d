/**
 * The hazard scenarios (test/support/hazards/scenarios.ts) against the hazard stand-in driver, which
 * models a stream blocked by a JS host function: calls that wait for the GPU and enqueues into a
 * full queue block there as on the real driver, and the stand-in ends the process with exit code
 * 86 where the real driver would hang for ever. Each scenario runs in a child process with a
 * timeout, on both bindings. The same scenarios run on the GPU in test/gpu/hazards.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { scenarios, gpuOnly } from '../support/hazards/scenarios.js';
import { buildHazardDriver, runScenario, assertScenarioPassed } from '../support/hazards/child.js';
import { bindings } from '../support/bindings.js';

const so = buildHazardDriver();
const skip = so === null && 'gcc is absent';

for (const [binding] of bindings()) {
  for (const name of Object.keys(scenarios).filter((n) => !gpuOnly.has(n))) {
    test(`${binding}: ${name} (stand-in driver, child process)`, { skip }, () => {
      const env = { ...process.env, CUDA_DRIVER_PATH: so!, HAZARD_STAND_IN: '1', CUDAGRAPH_NATIVE: binding === 'koffi' ? '0' : '1' };
      assertScenarioPassed(name, runScenario(name, env, 30_000));
    });
  }
}

// koffi closes a library when the last handle to it is finalized, at the latest when the process's
// environment is torn down. The stand-in's GPU thread may still be running the stand-in's code then
// (its destructor waits only a bounded time for it), so the stand-in must stay mapped once loaded:
// before it did, a test process could end with SIGSEGV after all its tests passed.
test('the hazard stand-in stays mapped after every handle to it is closed (its GPU thread may still run its code)', { skip }, () => {
  const script = `
    const koffi = require('koffi');
    const { readFileSync } = require('node:fs');
    const so = ${JSON.stringify(so)};
    const a = koffi.load(so), b = koffi.load(so);
    a.func('int cuInit(unsigned int)')(0);
    a.unload(); b.unload();
    console.log(readFileSync('/proc/self/maps', 'utf8').includes(so) ? 'mapped' : 'unmapped');`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL', cwd: fileURLToPath(new URL('../../', import.meta.url)) });
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.stdout.trim(), 'mapped', r.stderr);
});
