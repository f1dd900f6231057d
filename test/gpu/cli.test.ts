/**
 * The GPU path of `cudagraph demo`, `doctor` and `bench`, spawning `node bin/cudagraph.js` as a
 * user would. Skipped with the reason where no driver loads; fails under CUDA_TESTS=require.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ComputeGraph } from '../../src/index.js';
import { MLP_PROGRAM } from '../../src/cli/workload.js';
import { modelGraph, sameDag } from '../../src/cli/workload-model.js';
import { gpuSuite } from './gpu.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function cudagraph(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'cudagraph.js'), ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  // Shown in the test log: what a user sees.
  process.stdout.write(`\n$ cudagraph ${args.join(' ')}\n${r.stdout}${r.stderr}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

gpuSuite('cudagraph demo on the GPU', () => {
  test('demo --mode gpu --json: eager vs graph, results checked against eager and the float64 reference, the real graph read back', () => {
    const out = mkdtempSync(join(tmpdir(), 'cudagraph-demo-'));
    try {
      const r = cudagraph(['demo', '--mode', 'gpu', '--json', '-o', out, '--rounds', '3', '--iterations', '100']);
      assert.equal(r.status, 0, r.stderr);
      const d = JSON.parse(r.stdout) as {
        mode: string;
        reason: string;
        ok: boolean;
        nodeCount: number;
        matchesProgram: boolean;
        sameAsModel: boolean;
        speedup: number;
        eager: { us: number };
        graph: { us: number };
        check: { graphEqualsEager: boolean; replays: number; probsRelativeError: number; predictionsAgreeing: number; rows: number };
        files: { json: string; svg: string };
      };
      assert.equal(d.mode, 'gpu');
      assert.match(d.reason, /^found .+ \(compute capability \d+\.\d+/);
      assert.equal(d.ok, true);
      assert.equal(d.nodeCount, 39, 'one node per kernel and copy; events are edges');
      assert.equal(d.matchesProgram, true);
      assert.equal(d.check.graphEqualsEager, true);
      assert.equal(d.check.replays, 1 + 10 + 300 + 1);
      assert.ok(d.check.probsRelativeError < 1e-4, String(d.check.probsRelativeError));
      assert.ok(d.check.predictionsAgreeing >= d.check.rows - 1);
      assert.ok(d.eager.us > 0 && d.graph.us > 0);
      // 34 small kernels: one graph launch beats 39 launches and 14 event fork/joins.
      assert.ok(d.speedup > 1, `speedup ${d.speedup}`);

      // The saved graph is the driver's read-back, with its real edges, drawn with its lanes.
      const graph = ComputeGraph.fromJSON(readFileSync(d.files.json, 'utf8'));
      assert.equal(graph.nodeCount(), 39);
      assert.deepEqual(graph.streams(), [0, 1, 2]);
      const svg = readFileSync(d.files.svg, 'utf8');
      assert.equal((svg.match(/class="node"/g) ?? []).length, 39);
      assert.equal((svg.match(/class="edge"/g) ?? []).length, graph.edgeCount());
      // Reported as it is: the same DAG as the CPU model, or not.
      assert.equal(d.sameAsModel, sameDag(graph, modelGraph(MLP_PROGRAM)));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  test('demo (text): the first line names the GPU, then timing, speedup, node count and the picture', () => {
    const out = mkdtempSync(join(tmpdir(), 'cudagraph-demo-'));
    try {
      const r = cudagraph(['demo', '-o', out]);
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.split('\n');
      assert.match(lines[0]!, /^cudagraph demo: GPU mode: found .+, driver for CUDA \d+\.\d+\.$/);
      assert.match(r.stdout, /^eager: {10}[\d.]+ µs per iteration/m);
      assert.match(r.stdout, /^graph: {10}[\d.]+ µs per iteration \(one cuGraphLaunch/m);
      assert.match(r.stdout, /^speedup: {8}[\d.]+× \(medians of 5 rounds × 200 iterations/m);
      assert.match(r.stdout, /^captured graph: 39 nodes \(cuGraphGetNodes\)/m);
      assert.match(r.stdout, /^results: {8}graph = eager, bit for bit, after 1012 replays/m);
      assert.match(r.stdout, new RegExp(`^picture: {8}${join(out, 'demo.svg').replace(/[.]/g, '\\.')}`, 'm'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

gpuSuite('cudagraph demo solver on the GPU', () => {
  test('demo solver --mode gpu --json: the WHILE solve, the host loop and a graph per iteration agree with the float64 CPU solve', () => {
    const out = mkdtempSync(join(tmpdir(), 'cudagraph-solver-'));
    try {
      const r = cudagraph(['demo', 'solver', '--mode', 'gpu', '--json', '--n', '96', '--rounds', '3', '-o', out]);
      assert.equal(r.status, 0, r.stderr);
      const j = JSON.parse(r.stdout) as {
        mode: string;
        ok: boolean;
        cpu: { iterations: number };
        gpu: Record<string, { iterations: number; relativeResidual: number; solutionVsCpu: number; msPerSolve: number }>;
        speedup: { host: number };
      };
      assert.equal(j.mode, 'gpu');
      assert.equal(j.ok, true);
      assert.deepEqual(Object.keys(j.gpu).sort(), ['graph-per-iteration', 'host', 'while']);
      for (const [v, g] of Object.entries(j.gpu)) {
        assert.ok(Math.abs(g.iterations - j.cpu.iterations) <= 1, `${v}: ${g.iterations} iterations, CPU ${j.cpu.iterations}`);
        assert.ok(g.relativeResidual < 1e-8 && g.solutionVsCpu < 1e-9, `${v}: residual ${g.relativeResidual}, vs CPU ${g.solutionVsCpu}`);
        assert.ok(g.msPerSolve > 0);
      }
      assert.ok(j.speedup.host > 0);
      const loop = ComputeGraph.fromJSON(readFileSync(join(out, 'solver.json'), 'utf8')).nodes().find((n) => n.kind === 'conditional');
      assert.ok(loop !== undefined && loop.kind === 'conditional' && loop.estimate === j.gpu['while']!.iterations);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

gpuSuite('cudagraph doctor on the GPU', () => {
  test('doctor: driver, GPUs, NVRTC, a real capture and the context contract all pass; status 0', () => {
    const r = cudagraph(['doctor']);
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /^ {2}\[ok {2}\] CUDA driver {2}libcuda loaded from \S+( \(found as \S+\))?; the driver supports CUDA \d+\.\d+$/m);
    assert.match(r.stdout, /^ {2}\[ok {2}\] GPUs {9}\d+ found: #0 .+ \(compute capability \d+\.\d+, [\d.]+ GiB, \d+ SMs\), [\d.]+ GiB free/m);
    assert.match(r.stdout, /^ {2}\[ok {2}\] NVRTC {8}.+, version \d+\.\d+$/m);
    assert.match(r.stdout, /^ {2}\[ok {2}\] capture {6}captured a memset and 2 kernels over 2 streams .*: 3 nodes, \d edges; replayed 3 times, all 1024 values right$/m);
    assert.match(r.stdout, /^ {2}\[ok {2}\] context {6}the current context is the one cudagraph made current \(0x[0-9a-f]+\); context check 'trust'$/m);
    assert.match(r.stdout, /everything works/);

    const j = cudagraph(['doctor', '--json']);
    assert.equal(j.status, 0);
    const doc = JSON.parse(j.stdout) as { ok: boolean; checks: { name: string; status: string; facts: Record<string, unknown> }[] };
    assert.equal(doc.ok, true);
    assert.deepEqual(doc.checks.map((c) => c.status), ['ok', 'ok', 'ok', 'ok', 'ok']);
    const devices = doc.checks[1]!.facts['devices'] as { name: string; totalMemory: number; computeCapability: string }[];
    assert.ok(devices.length >= 1 && devices[0]!.totalMemory > 1e9);
    assert.match(devices[0]!.computeCapability, /^\d+\.\d+$/);
  });
});

gpuSuite('cudagraph bench on the GPU', () => {
  test('bench --quick --json: a row per size; one graph launch call costs less than submitting 100 kernels', () => {
    const r = cudagraph(['bench', '--quick', '--json', '--sizes', '10,100,1000']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '', 'no progress bar when stderr is not a terminal');
    const b = JSON.parse(r.stdout) as {
      device: string;
      rounds: number;
      reps: number;
      rows: { kernels: number; eagerSubmit: { median: number }; graphLaunch: { median: number }; graphDone: { median: number }; speedup: number; captureInstantiate: { median: number } }[];
    };
    assert.deepEqual(b.rows.map((x) => x.kernels), [10, 100, 1000]);
    assert.equal(b.rounds, 3);
    assert.equal(b.reps, 5);
    for (const row of b.rows) {
      assert.ok(Number.isFinite(row.speedup) && row.speedup > 0);
      assert.ok(row.graphDone.median >= row.graphLaunch.median);
      assert.ok(row.captureInstantiate.median > 0);
    }
    const hundred = b.rows[1]!;
    assert.ok(hundred.graphLaunch.median < hundred.eagerSubmit.median, JSON.stringify(hundred));
  });

  test('bench (text): the table', () => {
    const r = cudagraph(['bench', '--quick', '--sizes', '10,100']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^cudagraph bench: launch overhead on .+, driver for CUDA \d+\.\d+$/m);
    assert.match(r.stdout, /^\| kernels \|/m);
    assert.equal((r.stdout.match(/^\|\s+(10|100) \|/gm) ?? []).length, 2);
  });
});
