/**
 * What `npm run bench:gpu` runs: the steps sent to the workers each round, and the table rows
 * read from their samples (the reference rows measured on the H200, plus the 2-argument variants, plus two
 * cudagraph-only rows of `LaunchSequence` shown beside C's per-call rows).
 */
import { DEFAULT_REPLAY_LAUNCHES, rowCommand, type RowCommand, type RowName } from './protocol.js';

/**
 * One command of a round; `repsDivisor` thins the repetitions of the slow 10 000-node capture,
 * `repsMultiplier` multiplies those of the short round trips (one repetition is one round trip).
 */
export interface Step {
  readonly row: RowName;
  readonly n: number;
  readonly repsDivisor: number;
  readonly repsMultiplier?: number;
  /** The implementations that run this step; every one when absent. */
  readonly only?: readonly string[];
}

/** The workers that know the `-seq` rows: cudagraph, on the addon and forced onto koffi. */
export const SEQUENCE_IMPLS: readonly string[] = ['cudagraph', 'cudagraph-koffi'];

/** The workers with explicit graph construction: C and cudagraph. */
export const EXPLICIT_IMPLS: readonly string[] = ['c', ...SEQUENCE_IMPLS];

/** The workers with a wait that leaves the caller's event loop free: all but C. */
export const AWAIT_IMPLS: readonly string[] = [...SEQUENCE_IMPLS, 'cupy', 'torch'];

/** Whether implementation `id` runs `step`. */
export function runsStep(step: Step, id: string): boolean {
  return step.only === undefined || step.only.includes(id);
}

/** One line of the results table: metric `metric` of step `step`. */
export interface TableRow {
  /** Stable key in the JSON results, e.g. `capture-args/instantiate/1000`. */
  readonly key: string;
  readonly label: string;
  readonly n: number;
  readonly step: number;
  readonly metric: string;
  /** Host-cost rows carry the ratio targets to C (`bounds`). `replay` is device time. */
  readonly hostCost: boolean;
  /** The ratio targets to C of a host-cost row; default `[1.10, 1.25]` (report.ts). */
  readonly bounds?: readonly number[];
  /**
   * Not one of the target rows (a cudagraph-only form: `LaunchSequence`): shown with its ratio to C
   * but never checked against the targets. C's column is then C's per-call row, step `cStep`.
   */
  readonly extra: boolean;
  /** The step whose samples fill C's column (`step` unless set). */
  readonly cStep?: number;
  /** The metric of C's column (`metric` unless set): the awaited round trip reads C's blocking one. */
  readonly cMetric?: string;
  /**
   * The harness's own cost, not a library's (the `timer` metric: the first clock read after a
   * wait, in each language): shown for every implementation, never judged.
   */
  readonly harness?: boolean;
}

export const STEPS: readonly Step[] = [
  { row: 'eager', n: 1000, repsDivisor: 1 },
  { row: 'eager-args', n: 1000, repsDivisor: 1 },
  { row: 'capture', n: 1000, repsDivisor: 1 },
  { row: 'capture-args', n: 1000, repsDivisor: 1 },
  { row: 'capture', n: 10000, repsDivisor: 3 },
  { row: 'launch', n: 10, repsDivisor: 1 },
  { row: 'launch', n: 1000, repsDivisor: 1 },
  { row: 'launch', n: 10000, repsDivisor: 1 },
  { row: 'replay', n: 1000, repsDivisor: 1 },
  // cudagraph only, after the rows (their step indices, and the JSON's raw arrays, stay put).
  { row: 'eager-seq', n: 1000, repsDivisor: 1, only: SEQUENCE_IMPLS },
  { row: 'capture-seq', n: 1000, repsDivisor: 1, only: SEQUENCE_IMPLS },
  // Graphs built node by node: C and cudagraph only.
  { row: 'build', n: 10000, repsDivisor: 3, only: EXPLICIT_IMPLS },
  { row: 'update', n: 10000, repsDivisor: 1, only: EXPLICIT_IMPLS },
  // The same chain in one batch call: cudagraph only, judged against C's per-node loop (step 11).
  { row: 'build-batch', n: 10000, repsDivisor: 3, only: SEQUENCE_IMPLS },
  // Round trips: launch, then wait (blocking; then leaving the event loop free, beside C's blocking one).
  { row: 'roundtrip', n: 10, repsDivisor: 1, repsMultiplier: 10 },
  { row: 'roundtrip', n: 100, repsDivisor: 1, repsMultiplier: 10 },
  { row: 'roundtrip-await', n: 10, repsDivisor: 1, repsMultiplier: 10, only: AWAIT_IMPLS },
  { row: 'roundtrip-await', n: 100, repsDivisor: 1, repsMultiplier: 10, only: AWAIT_IMPLS },
];

/** The wait that leaves the event loop free: within 1.2× of C's blocking round trip. */
export const AWAIT_RATIO_TO_C = 1.2;

function row(step: number, metric: string, label: string, hostCost = true): TableRow {
  const s = STEPS[step]!;
  return { key: `${s.row}/${metric}/${s.n}`, label, n: s.n, step, metric, hostCost, extra: false };
}

/** A cudagraph-only row beside C's per-call row `cStep` (same metric and N). */
function extraRow(step: number, metric: string, label: string, cStep: number): TableRow {
  return { ...row(step, metric, label), extra: true, cStep };
}

export const TABLE_ROWS: readonly TableRow[] = [
  row(0, 'eager', 'eager launch, host cost per kernel'),
  row(1, 'eager', 'eager launch, 2 args, per kernel'),
  row(2, 'capture', 'capture, per node'),
  row(2, 'instantiate', 'end capture + instantiate, per node'),
  row(2, 'total', 'capture+inst, per node'),
  row(3, 'capture', 'capture, 2 args, per node'),
  row(3, 'instantiate', 'end capture + instantiate, 2 args, per node'),
  row(3, 'total', 'capture+inst, 2 args, per node'),
  row(4, 'capture', 'capture, per node'),
  row(4, 'instantiate', 'end capture + instantiate, per node'),
  row(4, 'total', 'capture+inst, per node'),
  row(5, 'launch', 'graph launch, host cost of one call'),
  row(6, 'launch', 'graph launch, host cost of one call'),
  row(7, 'launch', 'graph launch, host cost of one call'),
  { ...row(5, 'timer', 'first clock read after the wait', false), harness: true },
  { ...row(7, 'timer', 'first clock read after the wait', false), harness: true },
  row(8, 'replay', 'replay back to back, per node', false),
  extraRow(9, 'eager', 'eager launch via LaunchSequence, per kernel', 0),
  extraRow(10, 'capture', 'capture via LaunchSequence, per node', 2),
  row(11, 'build', 'explicit construction (chain of kernel nodes), per node'),
  row(12, 'update', 'update 1 kernel node in place (new args), one call'),
  row(12, 'toggle', 'disable / enable 1 node, one call'),
  row(12, 'reinstantiate', 're-instantiate the whole graph instead, one call'),
  { ...row(13, 'build', 'explicit construction, one addKernelNodes batch, per node'), cStep: 11 },
  row(14, 'sync', 'launch + blocking wait, one round trip'),
  row(15, 'sync', 'launch + blocking wait, one round trip'),
  { ...row(16, 'await', "launch + await (event loop free), one round trip, vs C's blocking one"), cStep: 14, cMetric: 'sync', bounds: [AWAIT_RATIO_TO_C] },
  { ...row(17, 'await', "launch + await (event loop free), one round trip, vs C's blocking one"), cStep: 15, cMetric: 'sync', bounds: [AWAIT_RATIO_TO_C] },
];

/** The command for `step` with `reps` base repetitions (at least 3 after thinning). */
export function commandFor(step: Step, reps: number): RowCommand {
  const r = step.repsDivisor > 1 ? Math.max(3, Math.ceil(reps / step.repsDivisor)) : Math.min(10_000, reps * (step.repsMultiplier ?? 1));
  return rowCommand(step.row, step.n, r, DEFAULT_REPLAY_LAUNCHES);
}
