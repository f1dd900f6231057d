/**
 * Turns the samples of a `bench:gpu` run into results: a summary per row and implementation,
 * ratios to C, the issue's targets for cudagraph, and the text/Markdown tables.
 */
import { STEPS, TABLE_ROWS, runsStep, type TableRow } from './plan.js';
import { beyondSpread, compare, median, summarize, type Comparison, type Summary } from './stats.js';

/** The reference every ratio is taken against. */
export const BASELINE = 'c';
/** The implementation the targets are about. */
export const SUBJECT = 'cudagraph';
/** The goal for every host-cost row: within this factor of C. */
export const GOAL_RATIO_TO_C = 1.1;
/** The earlier, looser target, still reported beside the goal. */
export const MAX_RATIO_TO_C = 1.25;

/** How a target came out: met; a tie (an "ahead of" whose difference lies within the run's spread); missed. */
export type TargetOutcome = 'met' | 'tie' | 'missed';

/** An implementation and what became of it in this run. */
export interface ImplStatus {
  readonly id: string;
  readonly label: string;
  readonly status: 'ran' | 'skipped';
  readonly reason?: string;
  readonly version?: string;
  readonly device?: string;
  readonly driverVersion?: number;
}

/** Samples gathered for one implementation: per plan step, one entry per round. */
export interface StepSamples {
  /** One entry per round that answered: the round index and metric → samples (µs). */
  readonly rounds: { readonly round: number; readonly samples: Readonly<Record<string, readonly number[]>> }[];
  readonly errors: string[];
}

export interface RowResult {
  readonly key: string;
  readonly label: string;
  readonly n: number;
  readonly hostCost: boolean;
  /** The ratio targets to C of a host-cost row. */
  readonly bounds: readonly number[];
  /** A cudagraph-only row (no target); C's column is C's per-call row (`TableRow.cStep`). */
  readonly extra: boolean;
  /** The harness's own cost in each language (`TableRow.harness`): shown, never judged. */
  readonly harness?: boolean;
  /** Per implementation: the summary, or why there is none. */
  readonly results: Readonly<Record<string, Summary | { readonly error: string }>>;
  /** Per implementation other than C: the comparison with C, where both have a summary. */
  readonly vsC: Readonly<Record<string, Comparison>>;
}

export interface TargetCheck {
  readonly key: string;
  readonly label: string;
  readonly n: number;
  readonly target: string;
  /** `outcome === 'met'`. */
  readonly pass: boolean;
  readonly outcome: TargetOutcome;
  readonly detail: string;
}

export interface BenchResults {
  /** 2: adds `steps` and `raw` (schema 1, the first device run, had neither). */
  readonly schema: 2;
  readonly date: string;
  readonly gpu: string;
  readonly driverVersion: number | null;
  readonly options: Readonly<Record<string, unknown>>;
  readonly implementations: readonly ImplStatus[];
  readonly roundsRun: number;
  readonly stoppedEarly: string | null;
  readonly elapsedSeconds: number;
  readonly rows: readonly RowResult[];
  readonly targets: readonly TargetCheck[];
  /** The plan's steps, in order: `raw[impl][k]` holds the samples of step k. */
  readonly steps: readonly { readonly row: string; readonly n: number; readonly reps: number; readonly only?: readonly string[] }[];
  /** Every timed sample (µs) by implementation, step and round, for re-analysis. */
  readonly raw: Readonly<Record<string, readonly StepSamples[]>>;
}

export function isSummary(x: Summary | { readonly error: string } | undefined): x is Summary {
  return x !== undefined && 'median' in x;
}

function metricRounds(metric: string, samples: StepSamples | undefined): { round: number; xs: readonly number[] }[] {
  return (samples?.rounds ?? []).flatMap((r) => {
    const xs = r.samples[metric];
    return xs !== undefined && xs.length > 0 ? [{ round: r.round, xs }] : [];
  });
}

/** The summary of `row` (its `metric`, unless another is given) for one implementation from its step samples. */
export function rowSummary(row: TableRow, samples: StepSamples | undefined, metric: string = row.metric): Summary | { error: string } {
  const rounds = metricRounds(metric, samples);
  if (rounds.length === 0) return { error: samples?.errors[0] ?? 'no samples' };
  return summarize(rounds.map((r) => r.xs));
}

/** Round index → that round's median, for the paired comparison. */
function roundMedianMap(metric: string, samples: StepSamples | undefined): Map<number, number> {
  return new Map(metricRounds(metric, samples).map((r) => [r.round, median(r.xs)]));
}

/** Summaries and ratios for every table row, for the implementations that ran. */
export function buildRows(ran: readonly string[], samples: ReadonlyMap<string, readonly StepSamples[]>): RowResult[] {
  return TABLE_ROWS.map((row) => {
    // C's column of a cudagraph-only row is C's per-call row; implementations that do not run the step have no cell.
    const stepOf = (id: string): number => (id === BASELINE ? row.cStep ?? row.step : row.step);
    const metricOf = (id: string): string => (id === BASELINE ? row.cMetric ?? row.metric : row.metric);
    const shown = ran.filter((id) => id === BASELINE || runsStep(STEPS[row.step]!, id));
    const results: Record<string, Summary | { error: string }> = {};
    for (const id of shown) results[id] = rowSummary(row, samples.get(id)?.[stepOf(id)], metricOf(id));
    const vsC: Record<string, Comparison> = {};
    const base = results[BASELINE];
    // A median of 0 (a span below the clock's resolution) has no meaningful ratio.
    if (isSummary(base) && base.median > 0) {
      for (const id of shown) {
        const r = results[id];
        if (id !== BASELINE && isSummary(r)) {
          vsC[id] = compare(r, base, {
            value: roundMedianMap(metricOf(id), samples.get(id)?.[stepOf(id)]),
            baseline: roundMedianMap(metricOf(BASELINE), samples.get(BASELINE)?.[stepOf(BASELINE)]),
          });
        }
      }
    }
    return {
      key: row.key, label: row.label, n: row.n, hostCost: row.hostCost, bounds: row.bounds ?? [GOAL_RATIO_TO_C, MAX_RATIO_TO_C],
      extra: row.extra, harness: row.harness === true, results, vsC,
    };
  });
}

/**
 * The targets for cudagraph, one check per row and target: within 1.10× of C (the goal) and within
 * 1.25× (the earlier target) on every host-cost row (the row's own `bounds` where it has them: the
 * awaited round trip's 1.2× of C's blocking one), and ahead of CuPy and of PyTorch on every row.
 * "Ahead" is met only beyond the run's spread: a lower median within it is a tie, never a win.
 * Empty when cudagraph has no results.
 */
export function checkTargets(rows: readonly RowResult[], labels: Readonly<Record<string, string>>): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const row of rows) {
    const subject = row.results[SUBJECT];
    // The cudagraph-only rows are not the issue's, and the harness rows are no library's: reported, never judged.
    if (!isSummary(subject) || row.extra || row.harness === true) continue;
    const vs = row.vsC[SUBJECT];
    if (row.hostCost && vs) {
      for (const bound of row.bounds) {
        const met = vs.ratio <= bound;
        checks.push({
          key: row.key, label: row.label, n: row.n,
          target: `≤ ${bound.toFixed(2)}× C`,
          pass: met,
          outcome: met ? 'met' : 'missed',
          detail: `${vs.ratio.toFixed(2)}× C, ${significance(vs.beyondSpread, vs.sameSideEveryRound)}` +
            (vs.perRound ? `; per round ${vs.perRound.lo.toFixed(2)}–${vs.perRound.hi.toFixed(2)}×` : ''),
        });
      }
    }
    for (const [id, other] of Object.entries(row.results)) {
      // The targets compare cudagraph with the other libraries, not with its own koffi variant.
      if (id === SUBJECT || id === BASELINE || id.startsWith(`${SUBJECT}-`) || !isSummary(other)) continue;
      const beyond = beyondSpread(subject, other);
      const outcome: TargetOutcome = !beyond ? 'tie' : subject.median < other.median ? 'met' : 'missed';
      checks.push({
        key: row.key, label: row.label, n: row.n,
        target: `ahead of ${labels[id] ?? id}`,
        pass: outcome === 'met',
        outcome,
        detail: `${fmt(subject.median)} vs ${fmt(other.median)} µs, ${beyond ? 'beyond the spread' : 'within the spread: a tie'}`,
      });
    }
  }
  return checks;
}

/** `"37/49 met, 5 ties, 7 missed"`, and how each ratio target fared (`≤ 1.10× C: 12/19`). */
export function targetSummary(targets: readonly TargetCheck[]): string {
  const count = (o: TargetOutcome): number => targets.filter((t) => t.outcome === o).length;
  const ratioTargets = [...new Set(targets.map((t) => t.target).filter((t) => /^≤ [\d.]+× C$/.test(t)))];
  const bound = (t: string): number => Number(/[\d.]+/.exec(t)![0]);
  const byBound = ratioTargets.sort((a, b) => bound(a) - bound(b)).map((b) => {
    const own = targets.filter((t) => t.target === b);
    return `${b}: ${own.filter((t) => t.pass).length}/${own.length}`;
  });
  return `${count('met')}/${targets.length} met, ${count('tie')} tie${count('tie') === 1 ? '' : 's'}, ${count('missed')} missed (${byBound.join('; ')})`;
}

function significance(beyond: boolean, sameSide: boolean): string {
  if (beyond) return 'beyond the spread';
  return sameSide ? 'within the spread, same side in every round' : 'within the spread';
}

/** A time in µs with about three significant digits. */
export function fmt(us: number): string {
  if (us >= 100) return us.toFixed(0);
  if (us >= 10) return us.toFixed(1);
  return us.toFixed(2);
}

function cell(r: Summary | { error: string } | undefined): string {
  if (r === undefined) return '—';
  if (!isSummary(r)) return 'error';
  return `${fmt(r.median)} [${fmt(r.lo)}–${fmt(r.hi)}]`;
}

function ratioCell(c: Comparison | undefined): string {
  if (!c) return '—';
  return `${c.ratio.toFixed(2)}×${c.beyondSpread ? '*' : c.sameSideEveryRound ? '+' : ''}`;
}

/** Header and body cells of the results table (shared by the text and Markdown forms). */
export function tableCells(res: BenchResults): { header: string[]; body: string[][] } {
  const ran = res.implementations.filter((i) => i.status === 'ran');
  const others = ran.filter((i) => i.id !== BASELINE);
  const hasC = ran.some((i) => i.id === BASELINE);
  const header = ['row (µs)', 'N', ...ran.map((i) => i.label), ...(hasC ? others.map((i) => `${i.label}/C`) : [])];
  const body = res.rows.map((row) => [
    row.extra ? `${row.label} †` : row.harness === true ? `${row.label} ‡` : row.label,
    String(row.n),
    ...ran.map((i) => cell(row.results[i.id])),
    ...(hasC ? others.map((i) => ratioCell(row.vsC[i.id])) : []),
  ]);
  return { header, body };
}

const LEGEND =
  'median of the per-round medians [min–max of the per-round medians]; ratio to C: median of the per-round ratios; ' +
  '* = the two ranges do not overlap (the difference exceeds the run-to-run spread); ' +
  '+ = the ranges overlap but the ratio is on the same side of 1 in every round (paired, ≥ 5 rounds); ' +
  "† = cudagraph only: the N launches submitted as one LaunchSequence; C's column is C's per-call row of the same N " +
  "(one cuLaunchKernel per call), and the ratio is to it; not one of the target rows (no target); " +
  '‡ = the harness, not a library: the span between the first and the second clock read after the wait, which every ' +
  "worker makes before it times a single graph launch call from the second read (docs/benchmark.md); no target";

/** The table as aligned plain text, for the terminal. */
export function formatText(res: BenchResults): string {
  const { header, body } = tableCells(res);
  const widths = header.map((h, c) => Math.max(h.length, ...body.map((r) => r[c]!.length)));
  const line = (cells: string[]): string => cells.map((x, c) => (c < 1 ? x.padEnd(widths[c]!) : x.padStart(widths[c]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line), LEGEND].join('\n');
}

/** The whole results file in Markdown: context, table, targets, skipped implementations. */
export function formatMarkdown(res: BenchResults): string {
  const { header, body } = tableCells(res);
  const out: string[] = [];
  out.push(`# GPU benchmark, ${res.date.slice(0, 10)}, ${res.gpu}`, '');
  out.push(`Driver version ${res.driverVersion ?? 'unknown'}; ${res.roundsRun} interleaved rounds in ${res.elapsedSeconds.toFixed(0)} s` +
    `${res.stoppedEarly ? ` (stopped early: ${res.stoppedEarly})` : ''}; options ${JSON.stringify(res.options)}.`);
  out.push('What each row times: docs/benchmark.md. Times in µs.', '');
  out.push('| implementation | version | status |', '|---|---|---|');
  for (const i of res.implementations) out.push(`| ${i.label} | ${i.version ?? ''} | ${i.status}${i.reason ? `: ${i.reason.replace(/\|/g, '\\|').replace(/\n/g, ' ')}` : ''} |`);
  out.push('', `| ${header.join(' | ')} |`, `|${header.map((_, c) => (c < 1 ? '---' : '---:')).join('|')}|`);
  for (const r of body) out.push(`| ${r.join(' | ')} |`);
  out.push('', LEGEND + '.', '');
  if (res.targets.length > 0) {
    out.push(`## Targets for cudagraph: ${targetSummary(res.targets)}`, '');
    out.push('| row | N | target | met | detail |', '|---|---:|---|---|---|');
    for (const t of res.targets) out.push(`| ${t.label} | ${t.n} | ${t.target} | ${t.outcome === 'met' ? 'yes' : t.outcome === 'tie' ? 'tie' : '**no**'} | ${t.detail} |`);
    out.push('');
  }
  return out.join('\n');
}
