/**
 * What `npm run bench:gpu` runs: the steps sent to every worker each round, and the table rows
 * read from their samples (the rows of ANCHORS.md, plus the 2-argument variants).
 */
import { DEFAULT_REPLAY_LAUNCHES, rowCommand, type RowCommand, type RowName } from './protocol.js';

/** One command of a round; `repsDivisor` thins the repetitions of the slow 10 000-node capture. */
export interface Step {
  readonly row: RowName;
  readonly n: number;
  readonly repsDivisor: number;
}

/** One line of the results table: metric `metric` of step `step`. */
export interface TableRow {
  /** Stable key in the JSON results, e.g. `capture-args/instantiate/1000`. */
  readonly key: string;
  readonly label: string;
  readonly n: number;
  readonly step: number;
  readonly metric: string;
  /** Host-cost rows carry the target: within 1.25× of C. `replay` is device time. */
  readonly hostCost: boolean;
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
];

function row(step: number, metric: string, label: string, hostCost = true): TableRow {
  const s = STEPS[step]!;
  return { key: `${s.row}/${metric}/${s.n}`, label, n: s.n, step, metric, hostCost };
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
  row(8, 'replay', 'replay back to back, per node', false),
];

/** The command for `step` with `reps` base repetitions (at least 3 after thinning). */
export function commandFor(step: Step, reps: number): RowCommand {
  const r = step.repsDivisor > 1 ? Math.max(3, Math.ceil(reps / step.repsDivisor)) : reps;
  return rowCommand(step.row, step.n, r, DEFAULT_REPLAY_LAUNCHES);
}
