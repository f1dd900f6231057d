/**
 * The conformance suite against real CUDA stream capture: every case and random 8-stream programs
 * recorded on the device, read back with `Graph.toComputeGraph()`, compared with the reference and
 * directly with the model (`StreamCapture({ semantics: 'cuda' })`). Each case's report (expected,
 * actual, differences) goes to `$CONFORMANCE_OUT/conformance.json` when that is set.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gpuSuite } from './gpu.js';
import { defineConformanceSuite, type CaseReport } from '../conformance/suite.js';
import { GpuRecorder, GpuResources } from '../conformance/gpu-recorder.js';
import { ModelRecorder } from '../conformance/model-recorder.js';
import { CASES, randomScript } from '../conformance/cases.js';
import { runScript } from '../conformance/run.js';
import { compareOutcomes, signature } from '../conformance/compare.js';
import { describeOutcome } from '../conformance/outcome.js';

const SEEDS = [1, 2, 3, 4, 5, 6];
const reports: Array<CaseReport & { cleanupError?: string }> = [];
let res: GpuResources | null = null;
const resources = (): GpuResources => (res ??= new GpuResources());
let lastRecorder: GpuRecorder | null = null;
const recorder = (): GpuRecorder => (lastRecorder = new GpuRecorder(resources()));

gpuSuite('conformance: real CUDA stream capture follows the reference rules', () => {
  defineConformanceSuite({
    recorder,
    seeds: SEEDS,
    report: (r) => {
      const e = lastRecorder?.cleanupError;
      reports.push(e ? { ...r, cleanupError: e instanceof Error ? e.message : String(e) } : r);
    },
  });

  test('device and model agree directly, case by case (the same nodes and reachability, or the same error)', () => {
    const failures: string[] = [];
    for (const script of [...CASES.map((c) => c.script), ...SEEDS.map((s) => randomScript(s))]) {
      const gpu = runScript(recorder(), script);
      const model = runScript(new ModelRecorder('cuda'), script);
      const d = compareOutcomes(gpu, model);
      if (d.length > 0) failures.push(`${script.name}: device ${describeOutcome(gpu)}, model ${describeOutcome(model)}: ${d.join('; ')}`);
    }
    assert.deepEqual(failures, []);
  });

  test('what CUDA reports for each kind of node: copy directions, fill element size, host labels, kernel names', () => {
    const mix = CASES.find((c) => c.script.name === 'memcpy/memset/host mix')!.script;
    const out = runScript(recorder(), mix);
    assert.equal(out.kind, 'graph');
    if (out.kind !== 'graph') return;
    const nodes = out.graph.nodes();
    const summary = nodes.map(signature).sort();
    reports.push({ recorder: 'node kinds', script: mix.name, expected: '', actual: JSON.stringify(nodes), differences: [] });
    assert.deepEqual(summary, [
      'host h1',
      'host h2',
      'host h3',
      'kernel k_b <<<[8,1,1],[128,1,1],0>>>',
      'kernel k_c <<<[9,1,1],[64,1,1],128>>>',
      'memcpy DeviceToDevice 2048',
      'memcpy DeviceToHost 1028',
      'memcpy HostToDevice 1024',
      'memset 256 = 0',
      'memset 512 = 7',
    ]);
  });

  after(() => {
    const dir = process.env['CONFORMANCE_OUT'];
    if (dir) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'conformance.json'), JSON.stringify(reports, null, 1));
    }
    res?.dispose();
  });
});
