// The GPU benchmark's plumbing that runs without a GPU: the worker protocol, the row loop of the
// TypeScript workers, the command line, and the results built from samples.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError } from '../../src/index.js';
import { formatCommand, parseCommand, parseReady, parseReply, rowCommand, ROW_METRICS, ROW_NAMES, launchWarmupReps } from '../../bench/gpu/protocol.js';
import { runRow, type BenchImpl } from '../../bench/gpu/worker-loop.js';
import { parseOptions } from '../../bench/gpu/options.js';
import { STEPS, TABLE_ROWS, commandFor, runsStep } from '../../bench/gpu/plan.js';
import { buildRows, checkTargets, formatMarkdown, formatText, targetSummary, type BenchResults, type StepSamples } from '../../bench/gpu/report.js';
import { linkCandidates } from '../../bench/gpu/build-c.js';

const refused = (op: string) => (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `);

test('a command survives formatCommand → parseCommand', async () => {
  for (const row of ROW_NAMES) {
    const c = rowCommand(row, 1000, 30, 10);
    assert.deepEqual(parseCommand(formatCommand(c)), c);
  }
  assert.deepEqual(parseCommand('row replay 1000 5'), rowCommand('replay', 1000, 5, 10));
  assert.equal(parseCommand('quit'), 'quit');
  assert.equal(parseCommand('   '), null);
});

test('parseCommand refuses unknown rows, bad counts and other words', async () => {
  for (const line of ['row bogus 1 1', 'row eager 0 1', 'row eager 1 0', 'row eager -1 1', 'row eager 1.5 1', 'row eager 1e3 1',
    'row eager 1', 'row eager 1 1 1 1', 'run eager 1 1', 'quit now', 'row eager 10 100000']) {
    assert.throws(() => parseCommand(line), refused('parseCommand'), line);
  }
});

test('parseReady reads ready and not-ready lines and refuses anything else', async () => {
  assert.deepEqual(parseReady('{"ready":true,"impl":"c","device":"H200","driverVersion":13000,"version":"x"}'),
    { ready: true, impl: 'c', device: 'H200', driverVersion: 13000, version: 'x' });
  assert.deepEqual(parseReady('{"ready": false, "impl": "cupy", "error": "ModuleNotFoundError: No module named \'cupy\'"}'),
    { ready: false, impl: 'cupy', error: "ModuleNotFoundError: No module named 'cupy'" });
  for (const line of ['', 'Traceback (most recent call last):', '{"ok":true}', '[1]']) {
    assert.throws(() => parseReady(line), refused('parseReady'), line);
  }
});

test('parseReply checks that the reply answers the command with one sample per repetition', async () => {
  const cmd = rowCommand('capture', 1000, 2);
  const good = { ok: true, row: 'capture', n: 1000, samples: { capture: [0.5, 0.6], instantiate: [1.7, 1.8], total: [2.2, 2.4] } };
  assert.deepEqual(parseReply(JSON.stringify(good), cmd), good);
  assert.deepEqual(parseReply('{"ok":false,"error":"boom"}', cmd), { ok: false, error: 'boom' });
  const bad = [
    { ...good, row: 'eager' },
    { ...good, n: 10 },
    { ...good, samples: { capture: [0.5], instantiate: [1.7, 1.8], total: [2.2, 2.4] } },
    { ...good, samples: { capture: [0.5, -1], instantiate: [1.7, 1.8], total: [2.2, 2.4] } },
    { ...good, samples: { capture: [0.5, 0.6], total: [2.2, 2.4] } },
  ];
  for (const b of bad) assert.throws(() => parseReply(JSON.stringify(b), cmd), refused('parseReply'), JSON.stringify(b));
  assert.throws(() => parseReply('not json', cmd), refused('parseReply'));
});

/** An implementation whose every timed span lasts a known time, and which counts its calls. */
function clockwork(): BenchImpl<{ n: number; live: boolean }> & { calls: Record<string, number>; live: number } {
  const calls: Record<string, number> = {};
  const count = (k: string): void => {
    calls[k] = (calls[k] ?? 0) + 1;
  };
  const self = {
    calls,
    live: 0,
    info: () => ({ device: 'none' }),
    eager: (n: number, withArgs: boolean) => (count(withArgs ? 'eager-args' : 'eager'), n * (withArgs ? 5000 : 4000)),
    capture: (n: number) => {
      count('capture');
      self.live++;
      return { captureNs: n * 500, instantiateNs: n * 1500, graph: { n, live: true } };
    },
    destroy: (g: { live: boolean }) => {
      assert.ok(g.live, 'a graph destroyed twice');
      g.live = false;
      self.live--;
    },
    readyGraph: (n: number) => (self.live++, { n, live: true }),
    launchOnce: (g: { live: boolean }) => (assert.ok(g.live), count('launch'), { launchNs: 3000, timerNs: 250 }),
    replay: (g: { n: number; live: boolean }, launches: number) => (assert.ok(g.live), count('replay'), g.n * launches * 600),
    roundTrip: (g: { n: number; live: boolean }) => (assert.ok(g.live), count('roundtrip'), 11_000 + g.n * 10),
    roundTripAwait: async (g: { n: number; live: boolean }) => (assert.ok(g.live), count('roundtrip-await'), 13_000 + g.n * 10),
    eagerSequence: (n: number) => (count('eager-seq'), n * 3000),
    build: (n: number) => (count('build'), n * 700),
    buildBatch: (n: number) => (count('build-batch'), n * 250),
    updateRow: (_n: number, reps: number) => (
      count('update'),
      { update: Array(reps).fill(900), toggle: Array(reps).fill(400), reinstantiate: Array(reps).fill(2_000_000) }
    ),
    captureSequence: (n: number) => {
      count('capture-seq');
      self.live++;
      return { captureNs: n * 300, instantiateNs: n * 1500, graph: { n, live: true } };
    },
  };
  return self;
}

test('runRow converts spans to µs per kernel, per node or per call, and skips its warm-up repetitions (one; launchWarmupReps(n) for launch)', async () => {
  const impl = clockwork();
  assert.deepEqual(await runRow(impl, rowCommand('eager', 1000, 3)), { ok: true, row: 'eager', n: 1000, samples: { eager: [4, 4, 4] } });
  assert.deepEqual(await runRow(impl, rowCommand('eager-args', 10, 2)), {
    ok: true, row: 'eager-args', n: 10, samples: { eager: [5, 5] },
  });
  assert.deepEqual(await runRow(impl, rowCommand('capture-args', 100, 2)), {
    ok: true, row: 'capture-args', n: 100, samples: { capture: [0.5, 0.5], instantiate: [1.5, 1.5], total: [2, 2] },
  });
  assert.deepEqual(await runRow(impl, rowCommand('launch', 10, 4)), { ok: true, row: 'launch', n: 10, samples: { launch: [3, 3, 3, 3], timer: [0.25, 0.25, 0.25, 0.25] } });
  assert.deepEqual(await runRow(impl, rowCommand('replay', 1000, 2, 10)), { ok: true, row: 'replay', n: 1000, samples: { replay: [0.6, 0.6] } });
  assert.equal(impl.calls.eager, 4); // 3 timed + 1 warm-up
  assert.equal(impl.calls.capture, 3);
  assert.equal(impl.calls.launch, 4 + 1000);
  assert.deepEqual([10, 1000, 10000, 3].map(launchWarmupReps), [1000, 10, 1, 1000]);
  assert.equal(impl.calls.replay, 3);
  assert.equal(impl.live, 0, 'every graph destroyed');
});

test('every row answered by runRow carries exactly the metrics the protocol promises', async () => {
  for (const row of ROW_NAMES) {
    const reply = await runRow(clockwork(), rowCommand(row, 10, 2));
    assert.ok(reply.ok);
    assert.deepEqual(Object.keys(reply.samples).sort(), [...ROW_METRICS[row]].sort());
    assert.deepEqual(parseReply(JSON.stringify(reply), rowCommand(row, 10, 2)), reply);
  }
});

test('the -seq rows: the sequence methods, in µs per kernel or node; a worker without them answers an error', async () => {
  const impl = clockwork();
  assert.deepEqual(await runRow(impl, rowCommand('eager-seq', 1000, 2)), { ok: true, row: 'eager-seq', n: 1000, samples: { eager: [3, 3] } });
  assert.deepEqual(await runRow(impl, rowCommand('capture-seq', 100, 2)), {
    ok: true, row: 'capture-seq', n: 100, samples: { capture: [0.3, 0.3], instantiate: [1.5, 1.5], total: [1.8, 1.8] },
  });
  assert.equal(impl.calls['eager-seq'], 3);
  assert.equal(impl.calls['capture-seq'], 3);
  assert.equal(impl.live, 0);
  const plain: BenchImpl<{ n: number; live: boolean }> = { ...clockwork(), eagerSequence: undefined, captureSequence: undefined };
  for (const row of ['eager-seq', 'capture-seq']) {
    await assert.rejects(() => runRow(plain, rowCommand(row, 10, 2)), /this implementation has no launch sequence/);
  }
});

test('runRow destroys the graph of a launch row even when a launch throws', async () => {
  const impl = clockwork();
  impl.launchOnce = () => {
    throw new Error('launch failed');
  };
  await assert.rejects(() => runRow(impl, rowCommand('launch', 10, 2)), /launch failed/);
  assert.equal(impl.live, 0);
});

test('parseOptions: defaults, --quick, explicit values win, --only keeps table order', async () => {
  const d = parseOptions([], {});
  assert.equal(d.reps, 30);
  assert.equal(d.rounds, 10);
  assert.equal(d.budgetSeconds, 150);
  assert.deepEqual(d.only, ['c', 'cudagraph', 'cupy', 'torch']);
  assert.equal(d.outDir, null);
  const q = parseOptions(['--quick', '--reps', '7'], { OUT: '/tmp/o' });
  assert.equal(q.reps, 7);
  assert.equal(q.rounds, 3);
  assert.equal(q.outDir, '/tmp/o');
  assert.deepEqual(parseOptions(['--only', 'pytorch,c'], {}).only, ['c', 'torch']);
  assert.deepEqual(parseOptions(['--only', 'cupy,cudagraph-koffi,cudagraph,c'], {}).only, ['c', 'cudagraph', 'cudagraph-koffi', 'cupy']);
  assert.equal(d.pin, null);
  assert.equal(parseOptions(['--pin', '0,2,4-7'], {}).pin, '0,2,4-7');
});

test('parseOptions refuses bad numbers, unknown implementations and unknown options', async () => {
  for (const argv of [['--reps', '0'], ['--reps', '1.5'], ['--rounds', 'x'], ['--only', 'c,jax'], ['--only', ''], ['--fast'], ['extra'], ['--pin', '4-'], ['--pin', 'all']]) {
    assert.throws(() => parseOptions(argv, {}), refused('bench:gpu'), argv.join(' '));
  }
});

test('the plan covers every reference row and thins only the 10 000-node capture and build', async () => {
  const keys = TABLE_ROWS.map((r) => r.key);
  for (const k of ['eager/eager/1000', 'capture/capture/1000', 'capture/instantiate/1000', 'capture/total/1000', 'capture/total/10000',
    'capture-args/capture/1000', 'launch/launch/10', 'launch/launch/1000', 'launch/launch/10000', 'replay/replay/1000']) {
    assert.ok(keys.includes(k), k);
  }
  assert.equal(new Set(keys).size, keys.length);
  for (const r of TABLE_ROWS) assert.ok(ROW_METRICS[STEPS[r.step]!.row].includes(r.metric), r.key);
  assert.deepEqual(STEPS.map((s) => commandFor(s, 30).reps), STEPS.map((s) => (s.n === 10000 && (s.row === 'capture' || s.row === 'build' || s.row === 'build-batch') ? 10 : s.row.startsWith('roundtrip') ? 300 : 30)));
  assert.equal(commandFor(STEPS[4]!, 1).reps, 3);
});

test('the target rows keep their steps and keys; the two LaunchSequence rows run on cudagraph only, beside C\'s per-call rows', async () => {
  // The rows the targets judge, as every committed run defines them (bench/results/2026-11-30-nvidia-h200-14.json).
  assert.deepEqual(STEPS.slice(0, 9).map((s) => `${s.row}/${s.n}/${s.only === undefined}`), [
    'eager/1000/true', 'eager-args/1000/true', 'capture/1000/true', 'capture-args/1000/true', 'capture/10000/true',
    'launch/10/true', 'launch/1000/true', 'launch/10000/true', 'replay/1000/true',
  ]);
  assert.deepEqual(TABLE_ROWS.filter((r) => !r.extra && r.harness !== true).map((r) => `${r.key}@${r.step}`), [
    'eager/eager/1000@0', 'eager-args/eager/1000@1', 'capture/capture/1000@2', 'capture/instantiate/1000@2', 'capture/total/1000@2',
    'capture-args/capture/1000@3', 'capture-args/instantiate/1000@3', 'capture-args/total/1000@3', 'capture/capture/10000@4',
    'capture/instantiate/10000@4', 'capture/total/10000@4', 'launch/launch/10@5', 'launch/launch/1000@6', 'launch/launch/10000@7',
    'replay/replay/1000@8', 'build/build/10000@11', 'update/update/10000@12', 'update/toggle/10000@12', 'update/reinstantiate/10000@12',
    'build-batch/build/10000@13', 'roundtrip/sync/10@14', 'roundtrip/sync/100@15', 'roundtrip-await/await/10@16', 'roundtrip-await/await/100@17',
  ]);
  // The batch row: cudagraph only, judged against C's per-node loop.
  const batch = TABLE_ROWS.find((r) => r.key === 'build-batch/build/10000')!;
  assert.equal(STEPS[batch.cStep!]!.row, 'build');
  assert.deepEqual(['c', 'cudagraph', 'cudagraph-koffi', 'cupy', 'torch'].map((id) => runsStep(STEPS[13]!, id)), [false, true, true, false, false]);
  // The rows of graphs built node by node run on C and cudagraph only.
  for (const step of [11, 12]) {
    assert.deepEqual(['c', 'cudagraph', 'cudagraph-koffi', 'cupy', 'torch'].map((id) => runsStep(STEPS[step]!, id)), [true, true, true, false, false]);
  }
  const extra = TABLE_ROWS.filter((r) => r.extra);
  assert.deepEqual(extra.map((r) => [r.key, r.label, STEPS[r.cStep!]!.row, STEPS[r.cStep!]!.n]), [
    ['eager-seq/eager/1000', 'eager launch via LaunchSequence, per kernel', 'eager', 1000],
    ['capture-seq/capture/1000', 'capture via LaunchSequence, per node', 'capture', 1000],
  ]);
  // The harness rows: the clock's own cost after the wait, from the launch steps, for every worker.
  assert.deepEqual(TABLE_ROWS.filter((r) => r.harness === true).map((r) => [r.key, r.hostCost, r.extra]), [
    ['launch/timer/10', false, false],
    ['launch/timer/10000', false, false],
  ]);
  for (const r of extra) {
    assert.deepEqual(['c', 'cudagraph', 'cudagraph-koffi', 'cupy', 'torch'].map((id) => runsStep(STEPS[r.step]!, id)), [false, true, true, false, false]);
  }
});

test('a LaunchSequence row: cudagraph against C\'s per-call samples, no CuPy or PyTorch cell, and no target', async () => {
  // Distinct values per step: C's per-call eager row is 4 µs, cudagraph's sequence row 3.6 µs.
  const samples = new Map<string, StepSamples[]>(
    (['c', 'cudagraph', 'cupy'] as const).map((id) => [id, STEPS.map((s, k) => ({
      rounds: runsStep(s, id)
        ? [0, 1, 2].map((r) => ({ round: r, samples: Object.fromEntries(ROW_METRICS[s.row].map((m) => [m, [id === 'c' ? 4 : k === 9 ? 3.6 : 5]])) }))
        : [],
      errors: [],
    }))]),
  );
  const rows = buildRows(['c', 'cudagraph', 'cupy'], samples);
  const seq = rows.find((r) => r.key === 'eager-seq/eager/1000')!;
  assert.equal(seq.extra, true);
  assert.equal((seq.results.c as { median: number }).median, 4);
  assert.equal((seq.results.cudagraph as { median: number }).median, 3.6);
  assert.equal(seq.results.cupy, undefined);
  assert.ok(Math.abs(seq.vsC.cudagraph!.ratio - 0.9) < 1e-12);
  const targets = checkTargets(rows, { c: 'C driver', cudagraph: 'cudagraph', cupy: 'CuPy' });
  assert.ok(targets.every((t) => !t.key.includes('-seq/')));
  const res: BenchResults = {
    schema: 2, date: '2026-11-30T12:00:00.000Z', gpu: 'g', driverVersion: null, options: {},
    implementations: [{ id: 'c', label: 'C driver', status: 'ran' }, { id: 'cudagraph', label: 'cudagraph', status: 'ran' }, { id: 'cupy', label: 'CuPy', status: 'ran' }],
    roundsRun: 3, stoppedEarly: null, elapsedSeconds: 1, rows, targets, steps: [], raw: {},
  };
  const line = formatMarkdown(res).split('\n').find((l) => l.startsWith('| eager launch via LaunchSequence'))!;
  assert.equal(line, '| eager launch via LaunchSequence, per kernel † | 1000 | 4.00 [4.00–4.00] | 3.60 [3.60–3.60] | — | 0.90×* | — |');
});

/** Samples where every implementation's every metric is `base[id]` µs, in `rounds` rounds. */
function flat(base: Record<string, number>, rounds: number): Map<string, StepSamples[]> {
  return new Map(Object.entries(base).map(([id, v]) => [id, STEPS.map((s) => ({
    rounds: Array.from({ length: rounds }, (_, r) => ({
      round: r,
      samples: Object.fromEntries(ROW_METRICS[s.row].map((m) => [m, [v + r * 0.01, v + r * 0.01]])),
    })),
    errors: [],
  }))]));
}

/** Samples whose round medians are the given values, one round per value (so each implementation has a spread). */
function spread(perRound: Record<string, readonly number[]>): Map<string, StepSamples[]> {
  return new Map(Object.entries(perRound).map(([id, vs]) => [id, STEPS.map((s) => ({
    rounds: vs.map((v, r) => ({ round: r, samples: Object.fromEntries(ROW_METRICS[s.row].map((m) => [m, [v, v]])) })),
    errors: [],
  }))]));
}

test('buildRows: ratios to C with the beyond-spread mark; an implementation without samples gets an error cell', async () => {
  const samples = flat({ c: 4, cudagraph: 4.5, cupy: 4.01 }, 3);
  samples.set('torch', STEPS.map(() => ({ rounds: [], errors: ['torch: exited'] })));
  const rows = buildRows(['c', 'cudagraph', 'cupy', 'torch'], samples);
  assert.equal(rows.length, TABLE_ROWS.length);
  const r = rows[0]!;
  assert.ok(Math.abs(r.vsC.cudagraph!.ratio - 4.51 / 4.01) < 1e-9);
  assert.equal(r.vsC.cudagraph!.beyondSpread, true);
  assert.equal(r.vsC.cupy!.beyondSpread, false);
  assert.deepEqual(r.results.torch, { error: 'torch: exited' });
  assert.equal(r.vsC.torch, undefined);
});

test('buildRows pairs rounds: a drift that moves every implementation together still shows a consistent ratio', async () => {
  // Machine state alternates slow/fast each round and moves both sides; cudagraph is 1.1× C in every round.
  const level = (r: number): number => (r % 2 === 0 ? 2 : 1);
  const steps = (f: number, skip?: number): StepSamples[] => STEPS.map((s) => ({
    rounds: Array.from({ length: 6 }, (_, r) => r).filter((r) => r !== skip).map((r) => ({
      round: r,
      samples: Object.fromEntries(ROW_METRICS[s.row].map((m) => [m, [level(r) * f]])),
    })),
    errors: [],
  }));
  // cudagraph lost round 3: pairing must go by round index, not by position.
  const rows = buildRows(['c', 'cudagraph'], new Map([['c', steps(1)], ['cudagraph', steps(1.1, 3)]]));
  const vs = rows[0]!.vsC.cudagraph!;
  assert.equal(vs.beyondSpread, false); // 1.1–2.2 overlaps 1–2
  assert.equal(vs.sameSideEveryRound, true);
  assert.equal(vs.perRound!.rounds, 5);
  assert.ok(Math.abs(vs.perRound!.lo - 1.1) < 1e-12 && Math.abs(vs.perRound!.hi - 1.1) < 1e-12);
  const res: BenchResults = {
    schema: 2, date: '2026-11-30T12:00:00.000Z', gpu: 'g', driverVersion: null, options: {},
    implementations: [{ id: 'c', label: 'C driver', status: 'ran' }, { id: 'cudagraph', label: 'cudagraph', status: 'ran' }],
    roundsRun: 6, stoppedEarly: null, elapsedSeconds: 1, rows, targets: [], steps: [], raw: {},
  };
  assert.match(formatText(res).split('\n')[2]!, /1\.10×\+$/);
});

test('checkTargets: 1.10× and 1.25× of C on host-cost rows, ahead of CuPy and PyTorch beyond the spread (a tie otherwise)', async () => {
  const labels = { c: 'C driver', cudagraph: 'cudagraph', cupy: 'CuPy', torch: 'PyTorch' };
  const good = checkTargets(buildRows(['c', 'cudagraph', 'cupy', 'torch'], flat({ c: 4, cudagraph: 4.2, cupy: 6, torch: 10 }, 3)), labels);
  // The LaunchSequence rows and the harness rows are not judged; the others are.
  const judged = TABLE_ROWS.filter((r) => !r.extra && r.harness !== true);
  // Two ratio targets per host-cost row (1.10× and 1.25×), one for the awaited round trips (1.2×).
  const ratioChecks = judged.filter((r) => r.hostCost).reduce((sum, r) => sum + (r.bounds?.length ?? 2), 0);
  // CuPy and PyTorch have no cell on the rows of graphs built node by node: nothing to be ahead of there.
  const shared = judged.filter((r) => runsStep(STEPS[r.step]!, 'cupy')).length;
  assert.equal(good.length, ratioChecks + 2 * shared, 'the ratio targets of every host-cost row');
  assert.ok(good.every((t) => t.pass && t.outcome === 'met'));
  // 1.20× C: the goal missed, the earlier target met.
  const between = checkTargets(buildRows(['c', 'cudagraph'], flat({ c: 4, cudagraph: 4.8 }, 3)), labels);
  assert.ok(between.filter((t) => t.target === '≤ 1.10× C').every((t) => t.outcome === 'missed'));
  assert.ok(between.filter((t) => t.target === '≤ 1.25× C').every((t) => t.outcome === 'met'));
  assert.match(targetSummary(between), /^\d+\/\d+ met, 0 ties, \d+ missed \(≤ 1\.10× C: 0\/\d+; ≤ 1\.20× C: \d\/2; ≤ 1\.25× C: (\d+)\/\1\)$/);
  const bad = checkTargets(buildRows(['c', 'cudagraph', 'cupy'], flat({ c: 4, cudagraph: 5.2, cupy: 5 }, 3)), labels);
  assert.ok(bad.filter((t) => t.target.startsWith('≤')).every((t) => !t.pass));
  assert.ok(bad.filter((t) => t.target === 'ahead of CuPy').every((t) => t.outcome === 'missed'));
  // A lower median within the spread is a tie, not a win.
  const close = buildRows(['c', 'cudagraph', 'cupy'], spread({ c: [4, 4], cudagraph: [4.0, 4.4], cupy: [4.1, 4.3] }));
  const ties = checkTargets(close, labels).filter((t) => t.target === 'ahead of CuPy');
  assert.ok(ties.length > 0 && ties.every((t) => t.outcome === 'tie' && !t.pass && /within the spread: a tie/.test(t.detail)));
  assert.deepEqual(checkTargets(buildRows(['c', 'cupy'], flat({ c: 4, cupy: 5 }, 3)), labels), []);
  // cudagraph's own koffi variant is a column to compare with, not a target to beat.
  const withKoffi = checkTargets(buildRows(['c', 'cudagraph', 'cudagraph-koffi', 'cupy'], flat({ c: 4, cudagraph: 4.2, 'cudagraph-koffi': 4.5, cupy: 6 }, 3)), labels);
  assert.equal(withKoffi.length, ratioChecks + shared);
  assert.ok(withKoffi.every((t) => t.pass && !t.target.includes('koffi')));
});

test('the text and Markdown tables show every row and every implementation that ran', async () => {
  const rows = buildRows(['c', 'cupy'], flat({ c: 4, cupy: 5 }, 3));
  const res: BenchResults = {
    schema: 2, date: '2026-11-30T12:00:00.000Z', gpu: 'NVIDIA H200', driverVersion: 13000, options: {},
    implementations: [
      { id: 'c', label: 'C driver', status: 'ran' },
      { id: 'cudagraph', label: 'cudagraph', status: 'skipped', reason: 'not built' },
      { id: 'cupy', label: 'CuPy', status: 'ran' },
    ],
    roundsRun: 3, stoppedEarly: null, elapsedSeconds: 12, rows, targets: [], steps: [], raw: {},
  };
  const text = formatText(res).split('\n');
  assert.match(text[0]!, /C driver\s+CuPy\s+CuPy\/C/);
  // 5.01 / 4.01, beyond spread, on every row CuPy runs (not the cudagraph-only rows).
  assert.equal(text.filter((l) => l.includes('1.25×*')).length, TABLE_ROWS.filter((r) => !r.extra && runsStep(STEPS[r.step]!, 'cupy')).length);
  const md = formatMarkdown(res);
  assert.match(md, /^# GPU benchmark, 2026-11-30, NVIDIA H200/);
  assert.match(md, /\| cudagraph \|  \| skipped: not built \|/);
  assert.equal(md.split('\n').filter((l) => l.startsWith('| ') && l.includes('[')).length, TABLE_ROWS.length);
});

test('the C worker link options: -lcuda, the toolkit stubs, then the driver library by file name', async () => {
  assert.deepEqual(linkCandidates('/usr/local/cuda', null).map((l) => l.join(' ')), [
    '-lcuda', '-L/usr/local/cuda/lib64/stubs -lcuda', '-L/usr/local/cuda/targets/x86_64-linux/lib/stubs -lcuda',
  ]);
  assert.deepEqual(linkCandidates('/opt/cuda', '/usr/lib/x86_64-linux-gnu').at(-1), ['-L/usr/lib/x86_64-linux-gnu', '-l:libcuda.so.1']);
});

test('the round-trip rows: µs per round trip after launchWarmupReps(n) untimed ones; a worker without an await answers an error', async () => {
  const impl = clockwork();
  assert.deepEqual(await runRow(impl, rowCommand('roundtrip', 10, 3)), { ok: true, row: 'roundtrip', n: 10, samples: { sync: [11.1, 11.1, 11.1] } });
  assert.deepEqual(await runRow(impl, rowCommand('roundtrip-await', 100, 2)), { ok: true, row: 'roundtrip-await', n: 100, samples: { await: [14, 14] } });
  assert.equal(impl.calls.roundtrip, 3 + 1000);
  assert.equal(impl.calls['roundtrip-await'], 2 + 100);
  assert.equal(impl.live, 0, 'every graph destroyed');
  const blockingOnly: BenchImpl<{ n: number; live: boolean }> = { ...clockwork(), roundTripAwait: undefined };
  await assert.rejects(() => runRow(blockingOnly, rowCommand('roundtrip-await', 10, 2)), /no wait that leaves the event loop free/);
});

test("the awaited round trip: every worker but C, judged at 1.2× of C's blocking round trip of the same N, and only at that", () => {
  const awaited = TABLE_ROWS.filter((r) => r.metric === 'await');
  assert.equal(awaited.length, 2);
  for (const r of awaited) {
    const step = STEPS[r.step]!;
    assert.deepEqual(step.only, ['cudagraph', 'cudagraph-koffi', 'cupy', 'torch']);
    const cStep = STEPS[r.cStep!]!;
    assert.deepEqual([cStep.row, cStep.n], ['roundtrip', step.n]);
    assert.deepEqual(r.bounds, [1.2]);
  }
  // C answers only the blocking row; cudagraph's await takes 2 µs more than its blocking round trip.
  const sample = (metrics: Record<string, number>) => ({ rounds: [0, 1, 2, 3, 4].map((round) => ({ round, samples: Object.fromEntries(Object.entries(metrics).map(([m, x]) => [m, [x]])) })), errors: [] });
  const samples = new Map<string, StepSamples[]>([
    ['c', STEPS.map((st) => sample(st.row === 'roundtrip' ? { sync: 11 } : {}))],
    ['cudagraph', STEPS.map((st) => sample(st.row === 'roundtrip' ? { sync: 11.5 } : st.row === 'roundtrip-await' ? { await: 13 } : {}))],
  ]);
  const rows = buildRows(['c', 'cudagraph'], samples);
  const targets = checkTargets(rows, {});
  const own = targets.filter((t) => t.key.startsWith('roundtrip-await/await/'));
  // cudagraph's await (13) against C's blocking round trip (11): 1.18×, within 1.2×.
  assert.deepEqual(own.map((t) => [t.target, t.outcome]), [['≤ 1.20× C', 'met'], ['≤ 1.20× C', 'met']]);
  assert.match(targetSummary(targets), /≤ 1\.10× C: \d+\/\d+; ≤ 1\.20× C: 2\/2; ≤ 1\.25× C/);
});
