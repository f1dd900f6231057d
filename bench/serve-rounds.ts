/**
 * The server load of `npm run bench:serve`, side by side: several servers running at once (each
 * GPU engine, and a baseline checkout's when asked), each concurrency level run on every server in
 * turn, round after round, the order rotated each round, so that a drift of the machine (its clock,
 * another process) falls on all of them alike. Per server and level: tokens/s as the median of the
 * rounds [their min–max], the client's time to first token and between tokens (medians of the
 * rounds' p50 and p99); per pair of servers, the ratio of tokens/s round by round, its median and
 * range.
 */
import { median } from './gpu/stats.js';
import { loadTest, type LevelReport } from './serve-load.js';

/** A server under load: its label and its URL. */
export interface LoadTarget {
  readonly name: string;
  readonly url: string;
}

/** What `interleavedLoad` runs. */
export interface RoundsOptions {
  readonly targets: readonly LoadTarget[];
  readonly concurrency: readonly number[];
  readonly rounds: number;
  /** Requests a level at concurrency `c` (enough for the level to outlast its ramp-up and ramp-down). */
  readonly requests: (c: number) => number;
  readonly maxTokens: number;
}

/** Every round's report, per target name, per concurrency level (in `concurrency`'s order). */
export type RoundsResult = Record<string, LevelReport[][]>;

/** The default requests of a level: every client sends at least 4, and a level at least 64. */
export function defaultRequests(c: number): number {
  return Math.max(64, 4 * c);
}

/** Runs the rounds; a level's failed requests are in its reports (`errors`), never thrown away. */
export async function interleavedLoad(o: RoundsOptions): Promise<RoundsResult> {
  const out: RoundsResult = {};
  for (const t of o.targets) out[t.name] = o.concurrency.map(() => []);
  for (let round = 0; round < o.rounds; round++) {
    for (const [li, c] of o.concurrency.entries()) {
      for (let k = 0; k < o.targets.length; k++) {
        const t = o.targets[(k + round) % o.targets.length]!;
        const [report] = await loadTest({ url: t.url, concurrency: [c], requests: o.requests(c), maxTokens: o.maxTokens });
        out[t.name]![li]!.push(report!);
      }
    }
  }
  return out;
}

/** A figure over rounds: median [min–max]. */
export interface Spread {
  readonly median: number;
  readonly lo: number;
  readonly hi: number;
}

function spread(xs: readonly number[]): Spread {
  return { median: median(xs), lo: Math.min(...xs), hi: Math.max(...xs) };
}

/** One target at one level, over the rounds. */
export interface LevelSummary {
  readonly concurrency: number;
  readonly tokensPerSecond: Spread;
  /** Medians over the rounds of each round's p50 and p99, ms. */
  readonly ttftP50: number;
  readonly ttftP99: number;
  readonly interTokenP50: number;
  readonly interTokenP99: number;
  /** Requests that failed, over every round. */
  readonly failed: number;
}

/** Per target, per level. */
export function summarizeRounds(result: RoundsResult): Record<string, LevelSummary[]> {
  const out: Record<string, LevelSummary[]> = {};
  for (const [name, levels] of Object.entries(result)) {
    out[name] = levels.map((rounds) => ({
      concurrency: rounds[0]!.concurrency,
      tokensPerSecond: spread(rounds.map((r) => r.tokensPerSecond)),
      ttftP50: median(rounds.map((r) => r.timeToFirstTokenMs.p50)),
      ttftP99: median(rounds.map((r) => r.timeToFirstTokenMs.p99)),
      interTokenP50: median(rounds.map((r) => r.interTokenMs.p50)),
      interTokenP99: median(rounds.map((r) => r.interTokenMs.p99)),
      failed: rounds.reduce((a, r) => a + (r.requests - r.ok), 0),
    }));
  }
  return out;
}

/** `a`'s tokens/s over `b`'s, round by round (the rounds ran side by side), per level. */
export function pairedRatios(result: RoundsResult, a: string, b: string): Spread[] {
  return result[a]!.map((rounds, li) => spread(rounds.map((r, i) => r.tokensPerSecond / result[b]![li]![i]!.tokensPerSecond)));
}

/** The summary as a Markdown table, and each pair's ratio when `ratios` names pairs. */
export function formatRounds(result: RoundsResult, ratios: readonly (readonly [string, string])[] = []): string {
  const f = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
  const s = summarizeRounds(result);
  const rounds = Object.values(result)[0]?.[0]?.length ?? 0;
  const lines = [
    `${rounds} interleaved rounds; tokens/s median [min–max]; TTFT and between tokens: medians of the rounds' p50 / p99, ms`,
    '',
    '| server | concurrency | tokens/s | TTFT p50 / p99 | between tokens p50 / p99 | failed |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const [name, levels] of Object.entries(s)) {
    for (const l of levels) {
      const t = l.tokensPerSecond;
      lines.push(`| ${name} | ${l.concurrency} | ${f(t.median)} [${f(t.lo)}–${f(t.hi)}] | ${f(l.ttftP50)} / ${f(l.ttftP99)} | ${f(l.interTokenP50)} / ${f(l.interTokenP99)} | ${l.failed} |`);
    }
  }
  for (const [a, b] of ratios) {
    if (result[a] === undefined || result[b] === undefined) continue;
    const r = pairedRatios(result, a, b);
    lines.push('', `${a} / ${b}, tokens/s, per round: ` + r.map((x, li) => `c=${s[a]![li]!.concurrency} ${x.median.toFixed(2)}× [${x.lo.toFixed(2)}–${x.hi.toFixed(2)}]`).join(', '));
  }
  return lines.join('\n') + '\n';
}
