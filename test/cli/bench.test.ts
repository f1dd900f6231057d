import { test } from 'node:test';
import assert from 'node:assert/strict';
import { driverAvailable } from '../../src/index.js';
import { formatTable, type BenchRow } from '../../src/cli/bench.js';
import { ProgressBar } from '../../src/cli/progress.js';
import { assertUserError, cudagraph } from './helpers.js';

const noDriver = !driverAvailable().ok;

test('bench without a GPU: one line saying why (and where to look), status 1', { skip: noDriver ? false : 'a CUDA driver loads here' }, () => {
  for (const args of [['bench'], ['bench', '--json'], ['bench', '--quick']]) {
    assertUserError(cudagraph(args), /^cudagraph: bench measures a GPU and none is usable here: no CUDA driver: .*\(`cudagraph doctor` says what to check\)\n$/, args.join(' '));
  }
});

test('bench: bad option values are refused before anything runs', () => {
  const cases: [string[], RegExp][] = [
    [['bench', '--sizes', '0'], /^cudagraph: --sizes must be an integer from 1 to 100000, got '0'/],
    [['bench', '--sizes', '10,,100'], /^cudagraph: --sizes must be a comma-separated list of integers, got '10,,100'/],
    [['bench', '--sizes', 'ten'], /^cudagraph: --sizes must be an integer from 1 to 100000, got 'ten'/],
    [['bench', '--rounds', '-1'], /^cudagraph: --rounds must be an integer from 1 to 1000, got '-1'/],
    [['bench', '--reps', '1e3'], /^cudagraph: --reps must be an integer from 1 to 100000, got '1e3'/],
  ];
  for (const [args, message] of cases) assertUserError(cudagraph(args), message, args.join(' '));
});

test('the progress bar is drawn only on a terminal, and erased at the end', () => {
  const written: string[] = [];
  const pipe = new ProgressBar({ out: () => {}, err: (t) => void written.push(t), errIsTTY: false }, 4);
  pipe.tick('a');
  pipe.done();
  assert.equal(written.length, 0);

  const tty = new ProgressBar({ out: () => {}, err: (t) => void written.push(t), errIsTTY: true }, 4, 8);
  tty.tick('size 10');
  tty.tick('size 100');
  tty.done();
  assert.deepEqual(written, ['\r\x1b[K[##------]  25% size 10', '\r\x1b[K[####----]  50% size 100', '\r\x1b[K']);
});

test('the table: one row per size, medians with the spread, the speedup', () => {
  const f = (median: number, lo = median, hi = median): BenchRow['eagerSubmit'] => ({ median, lo, hi });
  const row: BenchRow = {
    kernels: 100,
    eagerSubmit: f(512.3, 500, 530),
    eagerPerKernel: f(5.123),
    eagerDone: f(530),
    graphLaunch: f(4.5, 4.1, 5.2),
    graphDone: f(106),
    speedup: 5,
    captureInstantiate: f(250.4),
  };
  const lines = formatTable([row]);
  assert.equal(lines.length, 3);
  assert.match(lines[0]!, /^\| kernels \|\s+eager submit µs \| µs\/kernel \| eager until done µs \| graph launch call µs \| graph until done µs \| speedup \| capture\+instantiate µs \|$/);
  assert.match(lines[1]!, /^\|-+:\|/);
  assert.match(lines[2]!, /\|\s+100 \| 512\.3 \(500\.0–530\.0\) \|\s+5\.12 \|.*\|\s+4\.50 \(4\.10–5\.20\) \|.*\|\s+5\.0× \|/);
  // Every line has the same width (aligned columns).
  assert.equal(new Set(lines.map((l) => l.length)).size, 1);
});
