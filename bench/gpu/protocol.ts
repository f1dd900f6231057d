/**
 * The line protocol between the orchestrator (bench/gpu.ts) and its workers (C, CuPy, PyTorch,
 * cudagraph). A worker prints one `ReadyLine` when initialised, then answers each command line
 * with one `RowReply` JSON line. bench/gpu/c/worker.c and bench/gpu/py/common.py implement the
 * same protocol; docs/benchmark.md defines what each row times.
 */
import { InvalidArgumentError } from '../../src/errors/base.js';
import { describe, requireInt } from '../../src/util/validate.js';

/**
 * The rows a worker knows. `-args` rows launch the 2-argument kernel `add2` instead of `empty`.
 * `-seq` rows submit the N launches of `empty` as one cudagraph `LaunchSequence`; only the cudagraph
 * worker knows them (the plan sends them to no other worker). `build` and `update` work on a graph
 * built node by node (N `add2` kernel nodes in a chain); the C and cudagraph workers know them
 * (CuPy and PyTorch have no explicit graph construction); `build-batch` builds the same chain with
 * one `graph.addKernelNodes` call (cudagraph only, compared with C's `build`). `roundtrip` times a
 * launch of a graph of N empty nodes and the blocking wait for it; `roundtrip-await` the same
 * launch and a wait that leaves the event loop free (cudagraph's `await synchronizeAsync()`, Python's
 * `await loop.run_in_executor(None, synchronize)`; C has none, and is compared by its `roundtrip`).
 */
export const ROW_NAMES = ['eager', 'eager-args', 'capture', 'capture-args', 'launch', 'replay', 'eager-seq', 'capture-seq', 'build', 'update', 'build-batch', 'roundtrip', 'roundtrip-await'] as const;
export type RowName = (typeof ROW_NAMES)[number];

/**
 * Untimed repetitions before the timed ones of a `launch` or round-trip row of `n` nodes, in every worker (C,
 * Python, Node alike; bench/gpu/c/worker.c and bench/gpu/py/common.py repeat the rule): enough
 * single calls to reach a JIT's steady state on the first launch row a worker runs (10 nodes: a
 * thousand calls; V8 optimises a function after it has run for a while, not after one call, and one
 * repetition is one call), while the device time stays near 10 000 replayed nodes a row (1000
 * nodes: 10, 10 000 nodes: 1). The other rows keep one warm-up repetition: each of theirs makes a
 * thousand launches already.
 */
export function launchWarmupReps(n: number): number {
  return Math.min(1000, Math.max(1, Math.ceil(10000 / n)));
}

/**
 * Calls per repetition of the `update` row's per-call metrics (`update`, `toggle`), timed together
 * (bench/gpu/c/worker.c repeats the number): one call alone is near the clock's resolution.
 */
export const UPDATE_CALLS = 100;

/** Launches per repetition of the `replay` row when a command does not say. */
export const DEFAULT_REPLAY_LAUNCHES = 10;

/** The sample arrays each row returns, in microseconds (per node, per kernel or per call). */
export const ROW_METRICS: Readonly<Record<RowName, readonly string[]>> = {
  eager: ['eager'],
  'eager-args': ['eager'],
  capture: ['capture', 'instantiate', 'total'],
  'capture-args': ['capture', 'instantiate', 'total'],
  launch: ['launch', 'timer'],
  replay: ['replay'],
  'eager-seq': ['eager'],
  'capture-seq': ['capture', 'instantiate', 'total'],
  build: ['build'],
  update: ['update', 'toggle', 'reinstantiate'],
  'build-batch': ['build'],
  roundtrip: ['sync'],
  'roundtrip-await': ['await'],
};

/** `row <name> <n> <reps> <launches>`: run row `name` at size `n`, `reps` timed repetitions. */
export interface RowCommand {
  readonly row: RowName;
  readonly n: number;
  readonly reps: number;
  /** Graph launches per repetition; used by `replay` only. */
  readonly launches: number;
}

/** The first line a worker prints. */
export type ReadyLine =
  | { readonly ready: true; readonly impl: string; readonly device?: string; readonly driverVersion?: number; readonly version?: string }
  | { readonly ready: false; readonly impl: string; readonly error: string };

/** A worker's answer to one command. */
export type RowReply =
  | { readonly ok: true; readonly row: RowName; readonly n: number; readonly samples: Readonly<Record<string, readonly number[]>> }
  | { readonly ok: false; readonly error: string };

const MAX_REPS = 10000;

function isRowName(x: unknown): x is RowName {
  return typeof x === 'string' && (ROW_NAMES as readonly string[]).includes(x);
}

/** Builds a validated command. Throws `InvalidArgumentError` on an unknown row or a bad count. */
export function rowCommand(row: string, n: number, reps: number, launches = DEFAULT_REPLAY_LAUNCHES): RowCommand {
  const op = 'rowCommand';
  if (!isRowName(row)) throw new InvalidArgumentError(op, 'row', `row must be one of ${ROW_NAMES.join(', ')}, got ${describe(row)}`);
  return {
    row,
    n: requireInt(op, 'n', n, 1, 1_000_000),
    reps: requireInt(op, 'reps', reps, 1, MAX_REPS),
    launches: requireInt(op, 'launches', launches, 1, 10_000),
  };
}

/** The command's text line, without the newline. */
export function formatCommand(c: RowCommand): string {
  return `row ${c.row} ${c.n} ${c.reps} ${c.launches}`;
}

/**
 * Parses one command line as a worker reads it: a `RowCommand`, or `'quit'`, or `null` for a blank
 * line. Throws `InvalidArgumentError` (message starting `parseCommand:`) on anything else.
 */
export function parseCommand(line: string): RowCommand | 'quit' | null {
  const parts = line.trim().split(/\s+/).filter((p) => p.length > 0);
  if (parts.length === 0) return null;
  if (parts[0] === 'quit' && parts.length === 1) return 'quit';
  if (parts[0] !== 'row' || (parts.length !== 4 && parts.length !== 5)) {
    throw new InvalidArgumentError('parseCommand', 'line', `expected "row <name> <n> <reps> [<launches>]" or "quit", got ${describe(line)}`);
  }
  const num = (s: string | undefined): number => (s !== undefined && /^\d+$/.test(s) ? Number(s) : NaN);
  try {
    return rowCommand(parts[1]!, num(parts[2]), num(parts[3]), parts.length === 5 ? num(parts[4]) : DEFAULT_REPLAY_LAUNCHES);
  } catch (e) {
    if (e instanceof InvalidArgumentError) throw new InvalidArgumentError('parseCommand', e.parameter, e.message.slice('rowCommand: '.length));
    throw e;
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Parses a worker's first line. Throws `InvalidArgumentError` when it is not a ready line. */
export function parseReady(line: string): ReadyLine {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new InvalidArgumentError('parseReady', 'line', `not JSON: ${describe(line)}`);
  }
  if (!isObject(v) || typeof v.ready !== 'boolean' || typeof v.impl !== 'string') {
    throw new InvalidArgumentError('parseReady', 'line', `expected {"ready":…,"impl":…}, got ${describe(line)}`);
  }
  if (!v.ready) return { ready: false, impl: v.impl, error: typeof v.error === 'string' ? v.error : 'no reason given' };
  return {
    ready: true,
    impl: v.impl,
    ...(typeof v.device === 'string' ? { device: v.device } : {}),
    ...(typeof v.driverVersion === 'number' ? { driverVersion: v.driverVersion } : {}),
    ...(typeof v.version === 'string' ? { version: v.version } : {}),
  };
}

/**
 * Parses a worker's reply to `cmd` and checks it carries the metrics that row promises, one
 * finite sample per repetition. Throws `InvalidArgumentError` on a malformed reply (an `ok:false`
 * reply is returned, not thrown).
 */
export function parseReply(line: string, cmd: RowCommand): RowReply {
  const op = 'parseReply';
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new InvalidArgumentError(op, 'line', `not JSON: ${describe(line)}`);
  }
  if (!isObject(v) || typeof v.ok !== 'boolean') throw new InvalidArgumentError(op, 'line', `expected {"ok":…}, got ${describe(line)}`);
  if (!v.ok) return { ok: false, error: typeof v.error === 'string' ? v.error : 'no reason given' };
  if (v.row !== cmd.row || v.n !== cmd.n || !isObject(v.samples)) {
    throw new InvalidArgumentError(op, 'line', `reply does not answer "${formatCommand(cmd)}": ${describe(line)}`);
  }
  const samples: Record<string, readonly number[]> = {};
  for (const metric of ROW_METRICS[cmd.row]) {
    const xs = v.samples[metric];
    if (!Array.isArray(xs) || xs.length !== cmd.reps || !xs.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0)) {
      throw new InvalidArgumentError(op, 'line', `samples.${metric} must hold ${cmd.reps} finite non-negative numbers`);
    }
    samples[metric] = xs as number[];
  }
  return { ok: true, row: cmd.row, n: cmd.n, samples };
}
