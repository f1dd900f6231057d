/**
 * The hazard scenarios (test/support/hazards/scenarios.ts) against the hazard stand-in driver, which
 * models a stream blocked by a JS host function: calls that wait for the GPU and enqueues into a
 * full queue block there as on the real driver, and the stand-in ends the process with exit code
 * 86 where the real driver would hang for ever. Each scenario runs in a child process with a
 * timeout, on both bindings. The same scenarios run on the GPU in test/gpu/hazards.test.ts.
 */
import { test } from 'node:test';
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
