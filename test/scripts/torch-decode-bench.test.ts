/**
 * scripts/torch-decode-bench.py without PyTorch (python3 -S: no site-packages): bad arguments exit
 * 2, a missing torch exits 3 and says what to install. And bench/serve-compare.ts's table: rows
 * from both benches' JSON, ratios to cudagraph graphed, ranges over rounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cudagraphRows, formatStepTable, torchRows } from '../../bench/serve-compare.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = join(root, 'scripts', 'torch-decode-bench.py');
const noPython = spawnSync('python3', ['-c', 'pass']).status !== 0 ? 'python3 is not on PATH' : false;
const run = (args: readonly string[]) => spawnSync('python3', ['-S', script, ...args], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: '' }, timeout: 30_000 });

test('torch-decode-bench.py: bad arguments exit 2 with the rule; no torch exits 3 naming what to install', { skip: noPython }, () => {
  for (const bad of [['--batches', '0'], ['--batches', 'x'], ['--modes', 'eager,fast'], ['--position', '0'], ['--reps', '-1']]) {
    const r = run(['/nonexistent', '/tmp/out.json', ...bad]);
    assert.equal(r.status, 2, `${bad.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^torch-decode-bench\.py: --batches takes positive integers/);
  }
  const r = run(['/nonexistent', '/tmp/out.json']);
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /install PyTorch and transformers/);
});

test('serve-compare: the rows of both benches and one table, ratios to cudagraph graphed', () => {
  const cg = cudagraphRows({ perStep: { 'eager B=1': [300, 280, 290], 'graphed B=1': [200, 190, 210], 'graphed without PDL B=1': [220], 'eager B=4': [], junk: [1] } });
  assert.deepEqual(cg.map((r) => [r.impl, r.batch, r.us, r.lo, r.hi]), [
    ['cudagraph eager', 1, 290, 280, 300],
    ['cudagraph graphed', 1, 200, 190, 210],
    ['cudagraph graphed without PDL', 1, 220, 220, 220],
  ]);
  const tr = torchRows({ rows: [{ batch: 1, mode: 'cuda-graph', perRound: [800, 900, 1000] }, { batch: 4, mode: 'eager', perRound: [4000] }] });
  assert.deepEqual(tr.map((r) => [r.impl, r.batch, r.us]), [['torch cuda-graph', 1, 900], ['torch eager', 4, 4000]]);
  const table = formatStepTable([...cg, ...tr]);
  assert.match(table, /\| 1 \| cudagraph graphed \| 200\.0 \[190\.0–210\.0\] \| 200\.0 \| 1\.00× \|/);
  assert.match(table, /\| 1 \| torch cuda-graph \| 900\.0 \[800\.0–1000\.0\] \| 900\.0 \| 4\.50× \|/);
  // No cudagraph graphed row at batch 4: no ratio.
  assert.match(table, /\| 4 \| torch eager \| 4000\.0 \[4000\.0–4000\.0\] \| 1000\.0 \| — \|/);
});
