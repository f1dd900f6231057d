/** Shared by the HTTP tests: a server on a free port over the fake engine, and small clients. */
import { request } from 'node:http';
import { createServer } from 'node:net';
import { TokenDecoder, encode } from '../../src/llm/tokenizer.js';
import { CompletionServer, type CompletionServerOptions } from '../../src/serve/http.js';
import { Scheduler, type SchedulerOptions } from '../../src/serve/scheduler.js';
import { SSE_DONE, readSse } from '../../src/serve/sse.js';
import { FakeEngine, expectedTokens, type FakeEngineOptions } from './fake-engine.js';
import type { DecodeEntry } from '../../src/llm/engine.js';

/** A running server and what is under it. */
export interface Served {
  engine: FakeEngine;
  scheduler: Scheduler;
  server: CompletionServer;
  url: string;
  port: number;
}

/** Runs `body` against a fresh server (closed afterwards, with no grace). */
export async function withServer(
  o: { engine?: FakeEngineOptions; scheduler?: SchedulerOptions; server?: Omit<CompletionServerOptions, 'scheduler'> },
  body: (s: Served) => Promise<void>,
): Promise<void> {
  const engine = new FakeEngine(o.engine);
  const scheduler = new Scheduler(engine, o.scheduler);
  const server = new CompletionServer({ scheduler, ...o.server });
  const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
  try {
    await body({ engine, scheduler, server, url: `http://127.0.0.1:${port}`, port });
  } finally {
    await server.close({ graceMs: 0 });
  }
}

/** POSTs `body` (an object is sent as JSON, a string as is) to /v1/completions. */
export function complete(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/** POSTs `body` (an object is sent as JSON, a string as is) to /v1/chat/completions. */
export function chat(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/** The JSON chunks of a streamed response, and whether it ended with [DONE]. */
export async function streamed(res: Response): Promise<{ chunks: { choices: { text: string; finish_reason: string | null }[]; error?: { code: string } }[]; done: boolean }> {
  const chunks = [];
  let done = false;
  for await (const data of readSse(res.body!)) {
    if (data === SSE_DONE) done = true;
    else chunks.push(JSON.parse(data));
  }
  return { chunks, done };
}

/** The text the fake generates for `prompt` (as the server encodes it). */
export function expectedText(prompt: string, maxTokens: number, next?: (e: DecodeEntry) => number): { text: string; tokens: number; finish: string } {
  const want = expectedTokens(encode(prompt), maxTokens, next);
  const d = new TokenDecoder();
  return { text: d.push(want.tokens) + d.end(), tokens: want.tokens.length + (want.finish === 'stop' ? 1 : 0), finish: want.finish };
}

/** A raw request: the status, headers and body text (for what fetch cannot send or hides). */
export function raw(port: number, o: { method: string; path: string; headers?: Record<string, string | number>; body?: string | Buffer }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: o.method, path: o.path, headers: o.headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

/** The value of one series of the server's /metrics (NaN when it is not there). */
export async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${series.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
}

/** Polls `check` every few milliseconds until it holds, or fails after `ms`. */
export async function eventually(check: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A port on 127.0.0.1 that nothing listens on (bound, then freed). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
