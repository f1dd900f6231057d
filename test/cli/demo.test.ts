import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { ComputeGraph, driverAvailable } from '../../src/index.js';
import { MLP_PROGRAM } from '../../src/cli/workload.js';
import { modelGraph, sameDag } from '../../src/cli/workload-model.js';
import { referenceForward, workloadData } from '../../src/cli/workload-data.js';
import { solveOnCpu } from '../../src/cli/solver-reference.js';
import { assertUserError, cudagraph, inTempDir, svgCounts, tempDir, upwardEdges } from './helpers.js';

const noDriver = !driverAvailable().ok;

test('demo --mode cpu: says so on its first line, reports the recorded MLP, writes JSON, DOT and SVG', async () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', '--mode', 'cpu', '--out', out]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], 'cudagraph demo: CPU model mode: --mode cpu was given; the same workload was recorded with StreamCapture instead of captured on a GPU.');
    const field = (name: string): string => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    assert.match(field('workload'), /^MLP forward \+ loss \(batch 64, 784 → 256 → 256 → 256 → 128 → 10\): 34 kernels and 5 copies on 3 streams with fork\/join$/);
    assert.equal(field('nodes'), '39 (kernel 34, memcpy 5)');
    assert.equal(field('streams'), '3 (stream 0: 9, stream 1: 15, stream 2: 15)');
    const ref = referenceForward(workloadData(MLP_PROGRAM));
    assert.equal(field('the maths'), `float64 on the CPU: loss ${ref.loss.toFixed(4)}, accuracy ${(ref.accuracy * 100).toFixed(1)} % (random weights)`);

    // The saved graph is the model's recording of the program, and the report matches it.
    const graph = ComputeGraph.fromJSON(readFileSync(join(out, 'demo.json'), 'utf8'));
    assert.ok(sameDag(graph, modelGraph(MLP_PROGRAM)));
    assert.equal(field('edges'), `${graph.edgeCount()} (14 across streams: the fork/joins)`);
    const levels = graph.levels();
    assert.match(field('levels'), new RegExp(`^${levels.length} \\(widest: level \\d+, 2 nodes can run at once\\)$`));
    // One line per level, listing its nodes.
    const names = graph.nodes().map((n) => n.name);
    levels.forEach((ids, l) => assert.ok(lines.includes(`  ${String(l).padStart(2)}  ${ids.map((id) => names[id]).join(' | ')}`), `level ${l}`));
    const path = graph.criticalPath().nodes;
    assert.equal(field('critical path'), `${path.length} nodes, cost ${path.length}: ${path.map((id) => names[id]).join(' → ')}`);
    assert.ok(field('picture').startsWith(join(out, 'demo.svg')));

    // The SVG: every node and edge, a lane per stream, the critical path thick and red.
    const svgText = readFileSync(join(out, 'demo.svg'), 'utf8');
    assert.deepEqual(svgCounts(svgText), { nodes: 39, edges: graph.edgeCount(), clusters: 3, highlighted: [...path].sort((a, b) => a - b) });
    assert.deepEqual(upwardEdges(svgText, graph.edges()), [], 'every edge points down');
    // The DOT is valid Graphviz with the same nodes.
    const parsed = JSON.parse((await Graphviz.load()).dot(readFileSync(join(out, 'demo.dot'), 'utf8'), 'json')) as { objects: { name: string }[] };
    assert.equal(parsed.objects.filter((o) => /^n\d+$/.test(o.name)).length, 39);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('demo picks its mode itself and says why on the first line; without a driver, the loader reason', () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', '--out', out, '--rounds', '1', '--iterations', '2']);
    assert.equal(r.status, 0, r.stderr);
    const first = r.stdout.split('\n')[0]!;
    assert.doesNotMatch(r.stdout, /no GPU support/);
    if (noDriver) {
      assert.match(first, /^cudagraph demo: CPU model mode: no CUDA driver: the CUDA driver library \(libcuda\) is not available.* \(tried libcuda\.so\.1 and \d+ other places\); the same workload was recorded/);
    } else {
      assert.match(first, /^cudagraph demo: (GPU mode: found .+|CPU model mode: .+)$/);
    }
    assert.ok(existsSync(join(out, 'demo.svg')));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('demo --json prints the report as data', () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', '--json', '--mode', 'cpu', '-o', out]);
    assert.equal(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout) as {
      mode: string;
      reason: string;
      workload: { kernels: number; copies: number; streams: number };
      reference: { loss: number; accuracy: number };
      nodes: number;
      edges: number;
      streams: unknown[];
      files: { json: string; dot: string; svg: string };
    };
    assert.equal(s.mode, 'cpu-model');
    assert.equal(s.reason, '--mode cpu was given');
    assert.deepEqual(s.workload, { name: 'mlp-forward', batch: 64, widths: [784, 256, 256, 256, 128, 10], kernels: 34, copies: 5, streams: 3 } as never);
    assert.equal(s.reference.loss, referenceForward(workloadData(MLP_PROGRAM)).loss);
    assert.equal(s.nodes, 39);
    assert.equal(s.streams.length, 3);
    for (const f of Object.values(s.files)) assert.ok(existsSync(f), f);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('demo writes to ./cudagraph-out by default', () => {
  const cwd = tempDir();
  try {
    const r = cudagraph(['demo', '--mode', 'cpu'], { cwd });
    assert.equal(r.status, 0, r.stderr);
    for (const f of ['demo.json', 'demo.dot', 'demo.svg']) assert.ok(existsSync(join(cwd, 'cudagraph-out', f)), f);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('demo --mode gpu without a GPU: one line saying why, status 1', { skip: noDriver ? false : 'a CUDA driver loads here' }, () => {
  const r = cudagraph(['demo', '--mode', 'gpu', '-o', tempDir()]);
  assertUserError(r, /^cudagraph: demo --mode gpu: no CUDA driver: the CUDA driver library \(libcuda\) is not available.* \(`cudagraph doctor` says what to check\)\n$/, 'demo --mode gpu');
});

test('demo: user mistakes are one line on stderr, no stack trace, status 1', () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const cases: [string[], RegExp][] = [
      [['demo', '--bogus'], /^cudagraph: unknown option '--bogus'/],
      [['demo', 'extra'], /^cudagraph: command-argument value 'extra' is invalid for argument 'job'\. Allowed choices are mlp, solver/],
      [['demo', 'solver', 'extra'], /^cudagraph: too many arguments/],
      [['demo', 'solver', '--tol', '2'], /^cudagraph: --tol must be a number in \(0, 1\), got '2'/],
      [['demo', 'solver', '--n', '1'], /^cudagraph: --n must be an integer from 2 to 2048, got '1'/],
      [['demo', '--mode', 'fast'], /^cudagraph: option '--mode <mode>' argument 'fast' is invalid\. Allowed choices are auto, gpu, cpu/],
      [['demo', '--rounds', '0'], /^cudagraph: --rounds must be an integer from 1 to 1000, got '0'/],
      [['demo', '--iterations', '2.5'], /^cudagraph: --iterations must be an integer from 1 to 1000000, got '2\.5'/],
      [['demo', '--mode', 'cpu', '--out', join(file, 'sub')], /^cudagraph: cannot write .*a-file.sub.demo\.json: a part of the path is not a folder/],
    ];
    for (const [args, message] of cases) assertUserError(cudagraph(args), message, args.join(' '));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('demo solver --mode cpu: the float64 CPU solve and the program recorded in the model, its loop a WHILE node', () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', 'solver', '--mode', 'cpu', '--n', '48', '--out', out]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], 'cudagraph demo solver: CPU model mode: --mode cpu was given; the solver was run on the CPU and its GPU program recorded with StreamCapture.');
    const field = (name: string): string => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    assert.equal(field('problem'), 'CG on 2-D Poisson, 48×48 grid (2304 unknowns, double), until ‖r‖/‖b‖ < 1e-8 (at most 960 iterations)');
    const cpu = solveOnCpu({ n: 48, tol: 1e-8, maxIterations: 960 });
    assert.match(field('CPU solve'), new RegExp(`^${cpu.iterations} iterations, `));
    assert.ok(cpu.relativeResidual < 1e-8 && cpu.iterations > 48 && cpu.iterations < 200, `${cpu.iterations} iterations`);
    assert.equal(field('loop body'), 'cg_spmv_dot → cg_update_xr → cg_update_p → cg_step (a WHILE node: the GPU runs it until cg_step clears the condition)');
    const graph = ComputeGraph.fromJSON(readFileSync(join(out, 'solver.json'), 'utf8'));
    const loop = graph.nodes().find((n) => n.kind === 'conditional');
    assert.ok(loop !== undefined && loop.kind === 'conditional' && loop.type === 'while' && loop.estimate === cpu.iterations);
    assert.ok(existsSync(join(out, 'solver.svg')) && readFileSync(join(out, 'solver.svg'), 'utf8').includes('while body'));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('demo and demo solver show a folder name with control characters escaped in their report', { skip: process.platform === 'win32' ? 'such names are not allowed here' : false }, () => {
  inTempDir((dir) => {
    const out = join(dir, 'out\x1b[31m\nforged');
    for (const args of [['demo', '--mode', 'cpu', '-o', out], ['demo', 'solver', '--mode', 'cpu', '--n', '8', '-o', out]]) {
      const r = cudagraph(args);
      assert.equal(r.status, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /\x1b|\nforged/, args.slice(0, 2).join(' '));
      assert.match(r.stdout, /^picture: +.*out\\u001b\[31m\\u000aforged/m, args.slice(0, 2).join(' '));
    }
  });
});
