/**
 * Time to first token by prompt length, with chunked prefill and token by token: the graphed
 * server started twice (`--prefill-chunk 32`, the default, and `--prefill-chunk 1`), and at each
 * prompt length a run of requests one at a time (bench/serve-load.ts), interleaved by length so
 * that drift on the machine falls on both alike. Prompts are bytes (a token each, after the BOS).
 */
import { loadTest, type LevelReport } from './serve-load.js';
import { startServer } from './serve-server.js';

/** What `prefillBench` runs. */
export interface PrefillOptions {
  /** The package root (bin/cudagraph.js). */
  readonly root: string;
  /** The first of the two ports used. */
  readonly port: number;
  /** Prompt lengths in bytes. */
  readonly lengths: readonly number[];
  /** Requests per length and server. */
  readonly requests: number;
  /** The engine and model arguments (default `--engine gpu`). */
  readonly serverArgs?: readonly string[];
}

/** One prompt length's figures: TTFT p50/p99 (ms) with chunks of 32 and token by token. */
export interface PrefillRow {
  readonly promptBytes: number;
  readonly chunked: LevelReport;
  readonly tokenByToken: LevelReport;
}

/** A prompt of `n` printable bytes (no stop string, no multi-byte character). */
function promptOf(n: number): string {
  let s = '';
  for (let i = 0; s.length < n; i++) s += String.fromCharCode(97 + ((i * 7) % 26));
  return s;
}

/** Runs both servers, each length on both in turn. */
export async function prefillBench(o: PrefillOptions): Promise<PrefillRow[]> {
  const common = [...(o.serverArgs ?? ['--engine', 'gpu']), '--slots', '8', '--max-batch', '32'];
  const chunked = await startServer(o.root, o.port, [...common, '--prefill-chunk', '32']);
  try {
    const single = await startServer(o.root, o.port + 1, [...common, '--prefill-chunk', '1']);
    try {
      const rows: PrefillRow[] = [];
      for (const n of o.lengths) {
        const run = async (url: string): Promise<LevelReport> => (await loadTest({ url, concurrency: [1], requests: o.requests, maxTokens: 4, prompts: [promptOf(n)] }))[0]!;
        // Warm both at this length once (the first request pays for nothing the others do not).
        await run(chunked.url);
        await run(single.url);
        rows.push({ promptBytes: n, chunked: await run(chunked.url), tokenByToken: await run(single.url) });
      }
      return rows;
    } finally {
      await single.stop();
    }
  } finally {
    await chunked.stop();
  }
}

/** The table: TTFT p50 [p99] for each and their ratio. */
export function formatPrefillReport(rows: readonly PrefillRow[]): string {
  const f = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
  const lines = ['| prompt bytes | TTFT chunks of 32, p50 [p99] ms | TTFT token by token, p50 [p99] ms | token by token / chunked |', '|---:|---:|---:|---:|'];
  for (const r of rows) {
    const a = r.chunked.timeToFirstTokenMs;
    const b = r.tokenByToken.timeToFirstTokenMs;
    lines.push(`| ${r.promptBytes} | ${f(a.p50)} [${f(a.p99)}] | ${f(b.p50)} [${f(b.p99)}] | ${(b.p50 / a.p50).toFixed(1)}× |`);
  }
  return lines.join('\n') + '\n';
}
