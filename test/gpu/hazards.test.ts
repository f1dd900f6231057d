/**
 * The hazards on the GPU: every scenario of test/support/hazards/scenarios.ts (JS host functions in
 * flight, forgotten captures, wrapped and forged objects, detachable memory, random interleavings
 * of all of it) in a child process with a timeout, on both bindings, against the real driver: a
 * hang is a failure, not a stuck suite. Then the host-block probe: which driver calls block behind
 * a pending host function on this driver, and how many operations queue behind one, checked
 * against the classification the host-call gate uses (`DRIVER_WAITS`, `QUEUE_LIMIT`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DRIVER_WAITS, type DriverSymbol } from '../../src/driver/sys.js';
import { QUEUE_LIMIT, STAGED_LIMIT } from '../../src/driver/host-gate.js';
import { scenarios } from '../support/hazards/scenarios.js';
import { runScenario, assertScenarioPassed } from '../support/hazards/child.js';
import { gpuSuite } from './gpu.js';
import { nativeStatus } from '../../src/driver/hot.js';

const fixtures = fileURLToPath(new URL('../../../test/gpu/fixtures/', import.meta.url));

interface ProbeCall {
  readonly symbol: string;
  readonly case: string;
  readonly blocks: boolean;
  readonly ms: number;
  readonly rc: number;
}
interface ProbeCapacity {
  readonly capacity: string;
  readonly queued: number;
  readonly blocked: boolean;
}

/** The probe's cases that the result layer passes through the gate as waits whatever the table says. */
const DYNAMIC_WAITS = /from pageable memory|into pageable memory/;

/** The binding this run tests (the GPU runs go once with the addon and once with CUDAGRAPH_NATIVE=0). */
const binding = nativeStatus().active ? 'addon' : 'koffi';

gpuSuite('Hazards', () => {
  {
    for (const name of Object.keys(scenarios)) {
      test(`${binding}: ${name} (child process, real driver)`, () => {
        const env = { ...process.env };
        delete env['HAZARD_STAND_IN'];
        const r = runScenario(name, env, 180_000);
        assertScenarioPassed(name, r);
        process.stdout.write(`# ${binding} ${name}: ${r.stdout.trim().slice(0, 400)}\n`);
      });
    }
  }

  // More random interleavings: other seeds, and one long run.
  for (const [seed, steps] of [[1, 2000], [2, 2000], [3, 2000], [4, 10_000]] as const) {
    test(`${binding}: random-interleavings, seed ${seed}, ${steps} steps (child process, real driver)`, () => {
      const env: NodeJS.ProcessEnv = { ...process.env, HAZARD_SEED: String(seed), HAZARD_STEPS: String(steps) };
      delete env['HAZARD_STAND_IN'];
      const r = runScenario('random-interleavings', env, 300_000);
      assertScenarioPassed('random-interleavings', r);
      process.stdout.write(`# ${binding} random-interleavings seed ${seed}: ${r.stdout.trim().slice(0, 200)}\n`);
    });
  }

  test('the host-block probe: every call that blocks behind a pending host function is a wait at the gate, and the queue holds more than QUEUE_LIMIT', { skip: binding === 'koffi' && 'binding-independent: runs with the addon pass' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'cg-host-block-'));
    try {
      const exe = join(dir, 'host-block-probe');
      const cc = spawnSync('gcc', ['-O2', '-I/usr/local/cuda/include', join(fixtures, 'host-block-probe.c'), '-o', exe, '-ldl', '-lpthread'], { encoding: 'utf8' });
      assert.equal(cc.status, 0, cc.stderr);
      // Destroying a pool whose free is still pending crashed the next driver call (CUDA 13.0): run without it.
      const r = spawnSync(exe, [join(fixtures, 'kernels.ptx'), '1500', '200000'], {
        encoding: 'utf8',
        timeout: 300_000,
        killSignal: 'SIGKILL',
        env: { ...process.env, PROBE_SKIP: 'c_pool_destroy_pending' },
      });
      const out = process.env['CUDAGRAPH_PROBE_OUT'];
      if (out !== undefined) writeFileSync(out, r.stdout);
      assert.equal(r.status, 0, `the probe failed (${r.signal ?? r.status}):\n${r.stderr}`);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as ProbeCall | ProbeCapacity);
      const calls = lines.filter((l): l is ProbeCall => 'symbol' in l);
      const capacities = lines.filter((l): l is ProbeCapacity => 'capacity' in l);
      assert.ok(calls.length >= 60, `${calls.length} cases`);
      for (const c of calls) {
        if (!c.blocks) continue;
        const symbols = c.symbol.split('+').filter((s): s is DriverSymbol => s in DRIVER_WAITS);
        const gated = DYNAMIC_WAITS.test(c.case) || symbols.some((s) => DRIVER_WAITS[s] === 'gpu');
        assert.ok(gated, `${c.symbol} (${c.case}) blocked behind a pending host function but is not a wait at the gate`);
      }
      for (const name of ['cuLaunchKernel', 'cuGraphLaunch (1 node)', 'cuGraphLaunch (100 nodes)', 'cuMemsetD32Async']) {
        const c = capacities.find((x) => x.capacity === name);
        assert.ok(c !== undefined, `capacity of ${name} measured`);
        assert.ok(!c.blocked || c.queued >= QUEUE_LIMIT + 10, `${name}: ${c.queued} operations queue behind a host function; QUEUE_LIMIT ${QUEUE_LIMIT} leaves no margin`);
      }
      // Copies from pageable memory: the driver stages at least twice STAGED_LIMIT before it waits.
      const staged = capacities.find((x) => x.capacity === 'cuMemcpyHtoDAsync_v2 (4 KiB, pageable)');
      assert.ok(staged !== undefined && (!staged.blocked || staged.queued * 4096 >= 2 * STAGED_LIMIT), `pageable staging: ${JSON.stringify(staged)}`);
      const oneMiB = calls.find((c) => c.case === '1 MiB from pageable memory, on the blocked stream');
      assert.equal(oneMiB?.blocks, false, 'a 1 MiB copy from pageable memory is staged without waiting');
      const blocking = calls.filter((c) => c.blocks).map((c) => `${c.symbol} (${c.case})`);
      process.stdout.write(`# blocking: ${blocking.join('; ')}\n# capacities: ${capacities.map((c) => `${c.capacity} ${c.blocked ? c.queued : `> ${c.queued}`}`).join('; ')}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
