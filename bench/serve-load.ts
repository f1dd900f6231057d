/**
 * A bounded load generator for `cudagraph serve` on this machine (127.0.0.1, localhost or ::1
 * only): at each concurrency level, N streamed completions with that many in flight at once; per
 * level the tokens per second, the time to first token and between tokens (p50, p99, as the client
 * sees them), the request latency, and the errors by kind (an HTTP status, `network`, `timeout`).
 * Bounded: at most 256 in flight, 10,000 requests a level, a timeout on every request.
 *
 *   npm run bench:serve-load -- [--url http://127.0.0.1:8000] [--concurrency 1,4,16,64] [--requests 64]
 *                          [--max-tokens 32] [--prompt text] [--timeout 60] [--json]
 *   (writes $OUT/serve-load.json when OUT is set)
 *
 * `loadTest(options)` is the same run as a function, for a benchmark or a test.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readSse, SSE_DONE } from '../src/serve/sse.js';
import { nearestRank } from '../src/serve/stats.js';

/** What `loadTest` runs. */
export interface LoadOptions {
  /** The server (default http://127.0.0.1:8000); loopback hosts only. */
  readonly url?: string;
  /** The levels: requests in flight at once (default 1, 4, 16, 64; each 1–256). */
  readonly concurrency?: readonly number[];
  /** Requests per level (default 64; 1–10,000). */
  readonly requests?: number;
  /** `max_tokens` of each request (default 32). */
  readonly maxTokens?: number;
  /** Prompts, taken in turn (default a few short sentences). */
  readonly prompts?: readonly string[];
  /** Milliseconds a request may take before it counts as a `timeout` (default 60,000). */
  readonly timeoutMs?: number;
}

/** p50 and p99 in milliseconds (0 when there were no samples). */
export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
}

/** One level's figures. */
export interface LevelReport {
  readonly concurrency: number;
  readonly requests: number;
  /** Requests that streamed to `[DONE]` with a 200. */
  readonly ok: number;
  /** Failed requests by kind: an HTTP status ('429', '503'…), 'network', 'timeout', 'stream' (ended without [DONE]). */
  readonly errors: Readonly<Record<string, number>>;
  /** The level's wall time, seconds. */
  readonly wallSeconds: number;
  /** Tokens generated over the successful requests (from the streamed usage). */
  readonly completionTokens: number;
  /** `completionTokens / wallSeconds`. */
  readonly tokensPerSecond: number;
  /** Successful requests per second. */
  readonly requestsPerSecond: number;
  /** From sending the request to the first chunk of text. */
  readonly timeToFirstTokenMs: Percentiles;
  /** Between consecutive chunks of one stream (one chunk per token, but for bytes held back to complete a character). */
  readonly interTokenMs: Percentiles;
  /** From sending the request to `[DONE]`. */
  readonly latencyMs: Percentiles;
}

/** The defaults of `loadTest`. */
export const LOAD_DEFAULTS = Object.freeze({
  url: 'http://127.0.0.1:8000',
  concurrency: Object.freeze([1, 4, 16, 64]),
  requests: 64,
  maxTokens: 32,
  timeoutMs: 60_000,
  prompts: Object.freeze(['Once upon a time', 'The quick brown fox', 'CUDA graphs replay', 'In the beginning there was']),
});
/** The bounds that keep a run small. */
export const LOAD_LIMITS = Object.freeze({ concurrency: 256, requests: 10_000, maxTokens: 4096 });

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function checkInt(name: string, v: number, min: number, max: number): number {
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new RangeError(`loadTest: ${name} must be an integer from ${min} to ${max}, got ${v}`);
  return v;
}

/** What one request gave. */
interface Outcome {
  error: string | null;
  tokens: number;
  ttft: number;
  gaps: number[];
  latency: number;
}

async function one(url: string, body: string, timeoutMs: number): Promise<Outcome> {
  const start = performance.now();
  const out: Outcome = { error: null, tokens: 0, ttft: -1, gaps: [], latency: 0 };
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) {
      await res.body?.cancel();
      out.error = String(res.status);
      return out;
    }
    let last = -1;
    let done = false;
    for await (const data of readSse(res.body!)) {
      if (data === SSE_DONE) {
        done = true;
        break;
      }
      const chunk = JSON.parse(data) as { choices?: { text?: string }[]; usage?: { completion_tokens?: number } | null; error?: { code?: string } };
      if (chunk.error) {
        out.error = `stream:${chunk.error.code ?? 'error'}`;
        return out;
      }
      if (chunk.usage) out.tokens = chunk.usage.completion_tokens ?? 0;
      if (!chunk.choices?.[0]?.text) continue;
      const now = performance.now();
      if (last < 0) out.ttft = now - start;
      else out.gaps.push(now - last);
      last = now;
    }
    if (!done) out.error = 'stream';
  } catch (e) {
    out.error = (e as Error | null)?.name === 'TimeoutError' ? 'timeout' : 'network';
  }
  out.latency = performance.now() - start;
  return out;
}

function percentiles(values: number[]): Percentiles {
  const sorted = Float64Array.from(values).sort();
  return { p50: nearestRank(sorted, 0.5), p99: nearestRank(sorted, 0.99) };
}

/**
 * Runs each concurrency level in turn against a running server and reports it.
 * @throws RangeError for a host that is not this machine, or a count outside its bounds.
 */
export async function loadTest(options: LoadOptions = {}): Promise<LevelReport[]> {
  const base = new URL(options.url ?? LOAD_DEFAULTS.url);
  if (!LOOPBACK.has(base.hostname)) throw new RangeError(`loadTest: only a server on this machine (127.0.0.1, localhost, ::1), got ${base.hostname}`);
  const levels = (options.concurrency ?? LOAD_DEFAULTS.concurrency).map((c) => checkInt('concurrency', c, 1, LOAD_LIMITS.concurrency));
  const requests = checkInt('requests', options.requests ?? LOAD_DEFAULTS.requests, 1, LOAD_LIMITS.requests);
  const maxTokens = checkInt('maxTokens', options.maxTokens ?? LOAD_DEFAULTS.maxTokens, 1, LOAD_LIMITS.maxTokens);
  const timeoutMs = checkInt('timeoutMs', options.timeoutMs ?? LOAD_DEFAULTS.timeoutMs, 1, 3_600_000);
  const prompts = options.prompts ?? LOAD_DEFAULTS.prompts;
  if (prompts.length === 0) throw new RangeError('loadTest: prompts must not be empty');
  const url = new URL('/v1/completions', base).href;
  const reports: LevelReport[] = [];
  for (const concurrency of levels) {
    const outcomes: Outcome[] = [];
    let next = 0;
    const start = performance.now();
    const worker = async (): Promise<void> => {
      for (let i = next++; i < requests; i = next++) {
        const body = JSON.stringify({ prompt: prompts[i % prompts.length], max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } });
        outcomes.push(await one(url, body, timeoutMs));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
    const wallSeconds = (performance.now() - start) / 1000;
    const good = outcomes.filter((o) => o.error === null);
    const errors: Record<string, number> = {};
    for (const o of outcomes) if (o.error !== null) errors[o.error] = (errors[o.error] ?? 0) + 1;
    const completionTokens = good.reduce((a, o) => a + o.tokens, 0);
    reports.push({
      concurrency,
      requests,
      ok: good.length,
      errors,
      wallSeconds,
      completionTokens,
      tokensPerSecond: completionTokens / wallSeconds,
      requestsPerSecond: good.length / wallSeconds,
      timeToFirstTokenMs: percentiles(good.filter((o) => o.ttft >= 0).map((o) => o.ttft)),
      interTokenMs: percentiles(good.flatMap((o) => o.gaps)),
      latencyMs: percentiles(good.map((o) => o.latency)),
    });
  }
  return reports;
}

/** The reports as a Markdown table. */
export function formatLoadReport(reports: readonly LevelReport[]): string {
  const f = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const lines = [
    '| concurrency | ok / requests | tokens/s | TTFT p50 / p99 ms | between tokens p50 / p99 ms | latency p50 / p99 ms | errors |',
    '|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of reports) {
    const errors = Object.entries(r.errors).map(([k, n]) => `${k}: ${n}`).join(', ') || 'none';
    lines.push(
      `| ${r.concurrency} | ${r.ok} / ${r.requests} | ${f(r.tokensPerSecond)} | ${f(r.timeToFirstTokenMs.p50)} / ${f(r.timeToFirstTokenMs.p99)} | ` +
        `${f(r.interTokenMs.p50)} / ${f(r.interTokenMs.p99)} | ${f(r.latencyMs.p50)} / ${f(r.latencyMs.p99)} | ${errors} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/** The command line's options. */
export function parseLoadArgs(argv: readonly string[]): LoadOptions & { json: boolean } {
  const o: { -readonly [K in keyof LoadOptions]: LoadOptions[K] } & { json: boolean } = { json: false };
  const prompts: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new RangeError(`${flag} needs a value`);
      return v;
    };
    const int = (): number => {
      const v = value();
      if (!/^\d+$/.test(v)) throw new RangeError(`${flag} must be a whole number, got '${v}'`);
      return Number(v);
    };
    switch (flag) {
      case '--url':
        o.url = value();
        break;
      case '--concurrency':
        o.concurrency = value().split(',').map((p) => {
          if (!/^\d+$/.test(p.trim())) throw new RangeError(`--concurrency must be a comma-separated list of whole numbers, got '${p}'`);
          return Number(p);
        });
        break;
      case '--requests':
        o.requests = int();
        break;
      case '--max-tokens':
        o.maxTokens = int();
        break;
      case '--timeout':
        o.timeoutMs = int() * 1000;
        break;
      case '--prompt':
        prompts.push(value());
        break;
      case '--json':
        o.json = true;
        break;
      default:
        throw new RangeError(`unknown option '${flag}' (--url, --concurrency, --requests, --max-tokens, --prompt, --timeout, --json)`);
    }
  }
  if (prompts.length > 0) o.prompts = prompts;
  return o;
}

async function main(): Promise<void> {
  const { json, ...options } = parseLoadArgs(process.argv.slice(2));
  const reports = await loadTest(options);
  const doc = { url: options.url ?? LOAD_DEFAULTS.url, maxTokens: options.maxTokens ?? LOAD_DEFAULTS.maxTokens, reports };
  if (process.env.OUT) writeFileSync(join(process.env.OUT, 'serve-load.json'), JSON.stringify(doc, null, 2) + '\n');
  process.stdout.write(json ? JSON.stringify(doc, null, 2) + '\n' : formatLoadReport(reports));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`bench:serve-load: ${e instanceof RangeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
