/**
 * A long run against `cudagraph serve` on this machine: N requests of mixed sizes (seeded), some
 * streamed, some not, some dropped by the client after the first chunk, some refused by design
 * (a `max_tokens` past the limit), with `concurrency` in flight; the server's memory read from
 * `/metrics` (resident set, V8 heap, external memory, the device's memory in use) every
 * `sampleEvery` requests. At the end it waits for the server to free every slot, then reports the
 * samples and whether memory stayed flat: the last sample's resident set within `max(32 MiB, 10 %)`
 * of the sample after the first tenth (the warm-up: allocator pools, JIT), the heap's floor within
 * `max(16 MiB, 25 %)`, the device's memory in use the same to the MiB. The heap is judged by its
 * floors, the least of the first three samples after the warm-up against the least of the last
 * three: a sample holds whatever garbage the collector has not taken yet (tens of MiB between two
 * collections), while a leak raises the floor.
 *
 *   node dist/bench/serve-soak.js [--url http://127.0.0.1:8000] [--requests 10000] [--concurrency 64] [--json]
 *
 * `soak(options)` is the same run as a function (bench:serve runs it with `--soak N`).
 */
import { pathToFileURL } from 'node:url';
import { readSse, SSE_DONE } from '../src/serve/sse.js';
import { flag, intFlag } from './args.js';
import { mulberry32 } from '../src/util/random.js';

/** What `soak` runs. */
export interface SoakOptions {
  /** The server; loopback only. */
  readonly url: string;
  /** Requests in all (1–100,000). */
  readonly requests: number;
  /** In flight at once (1–256). */
  readonly concurrency: number;
  /** Requests between memory samples (default a tenth of `requests`). */
  readonly sampleEvery?: number;
  /** Seed of the request mix. */
  readonly seed?: number;
}

/** One reading of the server's memory. */
export interface MemorySample {
  readonly afterRequests: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  /** The device's memory in use (the whole device), when the engine reports it. */
  readonly deviceUsedBytes: number | null;
  readonly running: number;
  readonly queueDepth: number;
}

/** What a soak gave. */
export interface SoakReport {
  readonly requests: number;
  /** By outcome: `ok` (finished as asked), `dropped` (the client hung up on purpose), `refused` (a 400 by design), anything else is an error kind. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Outcomes that were not what the request's kind expects. */
  readonly unexpected: number;
  readonly wallSeconds: number;
  readonly samples: readonly MemorySample[];
  /** After the run: every slot free and nothing queued. */
  readonly drained: boolean;
  readonly flat: { readonly rss: boolean; readonly heap: boolean; readonly device: boolean | null };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

type Kind = 'stream' | 'plain' | 'drop' | 'refuse';

/** The value of the first sample of `name` (with `label` if given) in a Prometheus text. */
export function metricValue(text: string, name: string, label?: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (label === undefined ? !rest.startsWith(' ') : !rest.startsWith(`{${label}}`)) continue;
    const v = Number(rest.slice(rest.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) return v;
  }
  return null;
}

async function sample(base: string, afterRequests: number): Promise<MemorySample> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const need = (name: string): number => metricValue(text, name) ?? Number.NaN;
  return {
    afterRequests,
    rssBytes: need('process_resident_memory_bytes'),
    heapUsedBytes: need('nodejs_heap_size_used_bytes'),
    externalBytes: need('nodejs_external_memory_bytes'),
    deviceUsedBytes: metricValue(text, 'cudagraph_engine_stat', 'stat="deviceMemoryUsedBytes"'),
    running: need('cudagraph_serve_running'),
    queueDepth: need('cudagraph_serve_queue_depth'),
  };
}

/** One request of `kind`; returns its outcome. */
async function one(url: string, kind: Kind, prompt: string, maxTokens: number): Promise<string> {
  const body = JSON.stringify({ prompt, max_tokens: kind === 'refuse' ? 1_000_000 : maxTokens, stream: kind !== 'plain' });
  const ac = new AbortController();
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: AbortSignal.any([ac.signal, AbortSignal.timeout(120_000)]) });
    if (kind === 'refuse') {
      await res.body?.cancel();
      return res.status === 400 ? 'refused' : String(res.status);
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      return String(res.status);
    }
    if (kind === 'plain') {
      const json = (await res.json()) as { choices?: { text?: string }[] };
      return typeof json.choices?.[0]?.text === 'string' ? 'ok' : 'bad-body';
    }
    for await (const data of readSse(res.body!)) {
      if (kind === 'drop') {
        ac.abort();
        return 'dropped';
      }
      if (data === SSE_DONE) return 'ok';
    }
    return 'stream';
  } catch (e) {
    if (kind === 'drop' && ac.signal.aborted) return 'dropped';
    return (e as Error | null)?.name === 'TimeoutError' ? 'timeout' : 'network';
  }
}

const EXPECTED: Record<Kind, string> = { stream: 'ok', plain: 'ok', drop: 'dropped', refuse: 'refused' };

/**
 * Runs the soak (see the file's comment) against a running server.
 * @throws RangeError for a host that is not this machine or a count out of bounds.
 */
export async function soak(o: SoakOptions): Promise<SoakReport> {
  const base = new URL(o.url);
  if (!LOOPBACK.has(base.hostname)) throw new RangeError(`soak: only a server on this machine, got ${base.hostname}`);
  const int = (name: string, v: number, lo: number, hi: number): number => {
    if (!Number.isSafeInteger(v) || v < lo || v > hi) throw new RangeError(`soak: ${name} must be an integer from ${lo} to ${hi}, got ${v}`);
    return v;
  };
  const requests = int('requests', o.requests, 1, 100_000);
  const concurrency = int('concurrency', o.concurrency, 1, 256);
  const every = int('sampleEvery', o.sampleEvery ?? Math.max(1, Math.floor(requests / 10)), 1, requests);
  const rnd = mulberry32(o.seed ?? 1);
  // The mix: 70 % streamed, 18 % not, 10 % dropped after the first chunk, 2 % refused; prompts of 1–48 bytes, 1–32 tokens.
  const plan = Array.from({ length: requests }, () => {
    const r = rnd();
    const kind: Kind = r < 0.7 ? 'stream' : r < 0.88 ? 'plain' : r < 0.98 ? 'drop' : 'refuse';
    const len = 1 + Math.floor(rnd() * 48);
    const prompt = Array.from({ length: len }, () => String.fromCharCode(32 + Math.floor(rnd() * 95))).join('');
    return { kind, prompt, maxTokens: 1 + Math.floor(rnd() * 32) };
  });
  const root = `${base.protocol}//${base.host}`;
  const url = `${root}/v1/completions`;
  const outcomes: Record<string, number> = {};
  const samples: MemorySample[] = [await sample(root, 0)];
  let unexpected = 0;
  let next = 0;
  let finished = 0;
  let sampling: Promise<void> = Promise.resolve();
  const start = performance.now();
  const worker = async (): Promise<void> => {
    for (let i = next++; i < requests; i = next++) {
      const p = plan[i]!;
      const got = await one(url, p.kind, p.prompt, p.maxTokens);
      outcomes[got] = (outcomes[got] ?? 0) + 1;
      if (got !== EXPECTED[p.kind]) unexpected++;
      finished++;
      if (finished % every === 0 && finished < requests) {
        const at = finished;
        sampling = sampling.then(async () => void samples.push(await sample(root, at)));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  await sampling;
  const wallSeconds = (performance.now() - start) / 1000;
  // Dropped streams free their slots when the server sees the hang-up: give it a moment.
  let last = await sample(root, requests);
  for (let i = 0; i < 50 && (last.running > 0 || last.queueDepth > 0); i++) {
    await new Promise((r) => setTimeout(r, 100));
    last = await sample(root, requests);
  }
  samples.push(last);
  return {
    requests,
    outcomes,
    unexpected,
    wallSeconds,
    samples,
    drained: last.running === 0 && last.queueDepth === 0,
    flat: judgeFlat(samples, every),
  };
}

/**
 * Whether memory stayed flat over `samples` (the first at 0 requests, the last after the end),
 * taken every `every` requests: the file's comment gives the rules.
 */
export function judgeFlat(samples: readonly MemorySample[], every: number): SoakReport['flat'] {
  const warm = samples.find((s) => s.afterRequests >= every) ?? samples[0]!;
  const last = samples.at(-1)!;
  const MiB = 1 << 20;
  const within = (a: number, b: number, abs: number, rel: number): boolean => b - a <= Math.max(abs, rel * a);
  const at = samples.indexOf(warm);
  return {
    rss: within(warm.rssBytes, last.rssBytes, 32 * MiB, 0.1),
    heap: within(heapFloor(samples.slice(at, at + 3)), heapFloor(samples.slice(-3)), 16 * MiB, 0.25),
    device: warm.deviceUsedBytes === null || last.deviceUsedBytes === null ? null : Math.abs(last.deviceUsedBytes - warm.deviceUsedBytes) < MiB,
  };
}

/** The least heap in use among `samples`. */
function heapFloor(samples: readonly MemorySample[]): number {
  return Math.min(...samples.map((s) => s.heapUsedBytes));
}

/** The report as Markdown. */
export function formatSoakReport(r: SoakReport): string {
  const mb = (b: number | null): string => (b === null || Number.isNaN(b) ? '—' : (b / (1 << 20)).toFixed(1));
  const lines = [
    `${r.requests} requests in ${r.wallSeconds.toFixed(1)} s: ${Object.entries(r.outcomes).map(([k, n]) => `${k} ${n}`).join(', ')}; not as expected: ${r.unexpected}; drained: ${r.drained}`,
    `memory flat: resident ${r.flat.rss}, heap ${r.flat.heap}, device ${r.flat.device ?? 'not reported'}`,
    '',
    '| after requests | resident MiB | heap MiB | external MiB | device in use MiB | running | queued |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...r.samples.map((s) => `| ${s.afterRequests} | ${mb(s.rssBytes)} | ${mb(s.heapUsedBytes)} | ${mb(s.externalBytes)} | ${mb(s.deviceUsedBytes)} | ${s.running} | ${s.queueDepth} |`),
  ];
  return lines.join('\n') + '\n';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const report = await soak({
    url: flag(argv, '--url', 'http://127.0.0.1:8000'),
    requests: intFlag('serve-soak', argv, '--requests', 10_000),
    concurrency: intFlag('serve-soak', argv, '--concurrency', 64),
  });
  process.stdout.write(argv.includes('--json') ? JSON.stringify(report, null, 2) + '\n' : formatSoakReport(report));
  process.exitCode = report.unexpected === 0 && report.drained && report.flat.rss && report.flat.heap && report.flat.device !== false ? 0 : 1;
}
