/**
 * Command-line options of `npm run bench:gpu` (`node dist/bench/gpu.js`).
 */
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { describe } from '../../src/util/validate.js';

/**
 * The implementations, in the order they take turns and appear in the table. `cudagraph-koffi` is
 * the cudagraph worker with `CUDAGRAPH_NATIVE=0` (koffi instead of the Node-API addon for the hot
 * calls); it runs only when `--only` names it.
 */
export const IMPLS = [
  { id: 'c', label: 'C driver', byDefault: true },
  { id: 'cudagraph', label: 'cudagraph', byDefault: true },
  { id: 'cudagraph-koffi', label: 'cudagraph (koffi)', byDefault: false },
  { id: 'cupy', label: 'CuPy', byDefault: true },
  { id: 'torch', label: 'PyTorch', byDefault: true },
] as const;
export type ImplId = (typeof IMPLS)[number]['id'];

export interface GpuBenchOptions {
  /** Timed repetitions per row and round (the 10 000-node capture runs a third of them). */
  readonly reps: number;
  /** Interleaved rounds at most; fewer when the time budget runs out. */
  readonly rounds: number;
  /** No new round starts once this many seconds (from start-up) plus the last round's length would pass. */
  readonly budgetSeconds: number;
  /** The implementations to run, in table order. */
  readonly only: readonly ImplId[];
  readonly quick: boolean;
  /** Extra folder for the results files; `$OUT` when set. */
  readonly outDir: string | null;
  /** The longest a worker may take to start or to answer one command. */
  readonly timeoutSeconds: number;
  /** A CPU list for `taskset -c` (e.g. `4-7`): every worker runs on the same cores; null: no pinning. */
  readonly pin: string | null;
  readonly help: boolean;
}

export const USAGE = `usage: npm run bench:gpu -- [options]
  --reps <n>       timed repetitions per row and round (default 30; --quick 10)
  --rounds <n>     interleaved rounds (default 10; --quick 3)
  --budget <s>     start no round that would end past this many seconds (default 150; --quick 60)
  --quick          a short run: fewer repetitions and rounds
  --only <list>    comma-separated implementations: c,cudagraph,cudagraph-koffi,cupy,torch
                   (default: all but cudagraph-koffi, the cudagraph worker forced onto koffi)
  --out <dir>      also write the results files there (default: $OUT when set)
  --timeout <s>    longest start-up or answer of one worker (default 180)
  --pin <cpus>     run every worker under taskset -c <cpus> (e.g. 4-7), the same cores for all
  --help`;

const OP = 'bench:gpu';

function positiveInt(name: string, text: string | undefined, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const v = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw new InvalidArgumentError(OP, name, `--${name} must be an integer in 1..${max}, got ${describe(text)}`);
  }
  return v;
}

/** A `taskset -c` CPU list such as `3`, `4-7` or `0,2,4-6`; undefined gives null. */
function pinList(text: string | undefined): string | null {
  if (text === undefined) return null;
  if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(text)) {
    throw new InvalidArgumentError(OP, 'pin', `--pin takes a CPU list such as 4-7 or 0,2,4-6, got ${describe(text)}`);
  }
  return text;
}

/**
 * Parses the command line. Throws `InvalidArgumentError` (message starting `bench:gpu:`) on an
 * unknown option, a bad number or an unknown implementation.
 */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): GpuBenchOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        reps: { type: 'string' },
        rounds: { type: 'string' },
        budget: { type: 'string' },
        quick: { type: 'boolean', default: false },
        only: { type: 'string' },
        out: { type: 'string' },
        timeout: { type: 'string' },
        pin: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new InvalidArgumentError(OP, 'argv', (e as Error).message);
  }
  const quick = values.quick === true;
  let only: ImplId[] = IMPLS.filter((i) => i.byDefault).map((i) => i.id);
  if (values.only !== undefined) {
    const alias: Record<string, ImplId> = { pytorch: 'torch' };
    const asked = values.only.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0).map((s) => alias[s] ?? s);
    const unknown = asked.filter((s) => !IMPLS.some((i) => i.id === s));
    if (asked.length === 0 || unknown.length > 0) {
      throw new InvalidArgumentError(OP, 'only', `--only takes a comma-separated list of ${IMPLS.map((i) => i.id).join(', ')}, got ${describe(values.only)}`);
    }
    only = IMPLS.map((i) => i.id).filter((id) => asked.includes(id));
  }
  return {
    reps: positiveInt('reps', values.reps, quick ? 10 : 30, 10000),
    rounds: positiveInt('rounds', values.rounds, quick ? 3 : 10, 1000),
    budgetSeconds: positiveInt('budget', values.budget, quick ? 60 : 150, 86400),
    only,
    quick,
    outDir: values.out ?? (env.OUT ? env.OUT : null),
    timeoutSeconds: positiveInt('timeout', values.timeout, 180, 3600),
    pin: pinList(values.pin),
    help: values.help === true,
  };
}
