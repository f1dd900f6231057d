/**
 * `cudagraph serve`: an OpenAI-style completions server (docs/serve.md) over a decode engine. The
 * options are checked before anything is built; then the engine, the scheduler and the HTTP
 * server; then it serves until SIGINT or SIGTERM, and shuts down gracefully (the requests in
 * flight finish within 10 s; a second signal cancels them at once).
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import type { DecodeEngine } from '../llm/engine.js';
import { GEMV_BATCHES } from '../llm/gpu-kernels.js';
import { CONNECTION_DEFAULTS, CompletionServer } from '../serve/http.js';
import { Scheduler } from '../serve/scheduler.js';
import { createEngine, MODEL_CONFIGS, type ConfigName, type EngineFactory, type EngineKind } from './engine-factory.js';
import { intOption } from './options.js';
import type { Output } from './output.js';
import { terminalText } from './terminal-text.js';
import { OptionError, fileErrorReason, UsageError } from './usage-error.js';

/** The option values as commander hands them over (strings, unchecked). */
export interface ServeArgs {
  readonly port: string;
  readonly host: string;
  readonly engine: EngineKind;
  readonly slots: string;
  readonly maxBatch?: string;
  readonly prefillChunk?: string;
  readonly queue: string;
  readonly maxTokens?: string;
  readonly headersTimeout?: string;
  readonly requestTimeout?: string;
  readonly maxConnections?: string;
  readonly config: ConfigName;
  readonly weights?: string;
  readonly seed: string;
}

/** The defaults of `cudagraph serve`'s options. */
export const SERVE_DEFAULTS = Object.freeze({ port: 8000, host: '127.0.0.1', engine: 'cpu', slots: 8, queue: 64, maxTokens: 256, config: 'default', seed: 0, graceMs: 10_000, ...CONNECTION_DEFAULTS } as const);

/** What tests and other front ends may replace. */
export interface ServeHooks {
  /** Builds the engine (default `createEngine`). */
  readonly createEngine?: EngineFactory;
  /** Stops the server when aborted, instead of SIGINT/SIGTERM. */
  readonly signal?: AbortSignal;
}

/** The checked options. */
interface ServePlan {
  port: number;
  host: string;
  engine: EngineKind;
  slots: number;
  maxBatch: number;
  prefillChunk: number;
  queue: number;
  maxTokens: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
  config: ConfigName;
  weights?: string;
  seed: number;
}

/** Checks every option. @throws UsageError naming the option. */
export function serveOptions(a: ServeArgs): ServePlan {
  const port = intOption('--port', a.port, 0, 65535);
  if (a.host.trim() === '' || /\s/.test(a.host)) throw new OptionError(`--host must be a host name or address, got '${terminalText(a.host)}'`);
  const slots = intOption('--slots', a.slots, 1, 4096);
  // A GPU step is padded to its batch bucket anyway, so its default fills the largest one (32),
  // the room beyond the running sequences going to prompt chunks.
  const gpuBatch: number = GEMV_BATCHES.at(-1)!;
  const maxBatch = a.maxBatch === undefined ? (a.engine === 'cpu' ? slots : gpuBatch) : intOption('--max-batch', a.maxBatch, 1, a.engine === 'cpu' ? 4096 : gpuBatch);
  const prefillChunk = a.prefillChunk === undefined ? maxBatch : intOption('--prefill-chunk', a.prefillChunk, 1, maxBatch);
  const queue = intOption('--queue', a.queue, 0, 1_000_000);
  const config = MODEL_CONFIGS[a.config];
  const ceiling = config.maxPositions - 1;
  const maxTokens = a.maxTokens === undefined ? Math.min(SERVE_DEFAULTS.maxTokens, ceiling) : intOption('--max-tokens', a.maxTokens, 1, ceiling);
  const seed = intOption('--seed', a.seed, 0, 0xffff_ffff);
  const day = 24 * 3600_000;
  const headersTimeoutMs = a.headersTimeout === undefined ? SERVE_DEFAULTS.headersTimeoutMs : intOption('--headers-timeout', a.headersTimeout, 1, day);
  // Node refuses a request timeout shorter than the headers timeout: the whole request includes its headers.
  const requestTimeoutMs = a.requestTimeout === undefined ? Math.max(SERVE_DEFAULTS.requestTimeoutMs, headersTimeoutMs) : intOption('--request-timeout', a.requestTimeout, headersTimeoutMs, day);
  const maxConnections = a.maxConnections === undefined ? SERVE_DEFAULTS.maxConnections : intOption('--max-connections', a.maxConnections, 1, 1_000_000);
  if (a.weights !== undefined) {
    try {
      if (!statSync(a.weights).isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
    } catch (e) {
      throw new UsageError(`--weights: cannot read '${terminalText(a.weights)}': ${fileErrorReason(e)}`);
    }
  }
  return { port, host: a.host, engine: a.engine, slots, maxBatch, prefillChunk, queue, maxTokens, headersTimeoutMs, requestTimeoutMs, maxConnections, config: a.config, seed, ...(a.weights !== undefined ? { weights: a.weights } : {}) };
}

/** The one-line reason of a listen failure. */
function listenProblem(e: unknown, host: string, port: number): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  const where = `${host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the port is in use (choose another with --port)`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on ${where}: no such address on this machine`;
    default:
      return `cannot listen on ${where}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/**
 * Runs the server until stopped; returns the exit status (0 after a clean shutdown).
 * @throws UsageError for a bad option, a missing engine, an address it cannot listen on.
 */
export async function serve(args: ServeArgs, io: Output, hooks: ServeHooks = {}): Promise<number> {
  const plan = serveOptions(args);
  const config = MODEL_CONFIGS[plan.config];
  const engine: DecodeEngine = await (hooks.createEngine ?? createEngine)({
    kind: plan.engine,
    config,
    slots: plan.slots,
    maxBatch: plan.maxBatch,
    seed: plan.seed,
    ...(plan.weights !== undefined ? { weights: plan.weights } : {}),
  });
  try {
    const scheduler = new Scheduler(engine, { queueLimit: plan.queue, prefillChunk: Math.min(plan.prefillChunk, engine.maxBatch) });
    const maxTokens = Math.min(plan.maxTokens, engine.maxPositions - 1);
    const model = plan.weights !== undefined ? basename(plan.weights).replace(/\.safetensors$/, '') : `cudagraph-llama-${plan.config}`;
    const server = new CompletionServer({
      scheduler,
      model,
      maxTokensLimit: maxTokens,
      defaultMaxTokens: Math.min(64, maxTokens),
      headersTimeoutMs: plan.headersTimeoutMs,
      requestTimeoutMs: plan.requestTimeoutMs,
      maxConnections: plan.maxConnections,
    });
    let address;
    try {
      address = await server.listen({ port: plan.port, host: plan.host });
    } catch (e) {
      await server.close({ graceMs: 0 });
      throw new UsageError(listenProblem(e, plan.host, plan.port), { cause: e });
    }
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    io.out(
      `cudagraph serve: listening on http://${host}:${address.port} (model ${model}, engine ${engine.name}; ` +
        `${scheduler.capacity} running at most, ${engine.maxBatch} entries a step, prompt chunks of ${scheduler.prefillChunk}, queue ${plan.queue}, max_tokens ≤ ${maxTokens}, context ${engine.maxPositions})\n`,
    );
    const stop = stopRequests(hooks.signal, (second) => {
      if (second) {
        io.out('cudagraph serve: cancelling the requests in flight\n');
        scheduler.cancelAll();
        return;
      }
      const m = scheduler.metrics();
      io.out(`cudagraph serve: shutting down (${m.running} running, ${m.queueDepth} waiting; up to ${SERVE_DEFAULTS.graceMs / 1000} s for them to finish)\n`);
    });
    try {
      await stop.stopped;
      await server.close({ graceMs: SERVE_DEFAULTS.graceMs });
    } finally {
      stop.dispose();
    }
    const m = scheduler.metrics();
    io.out(`cudagraph serve: stopped after ${m.requests.submitted} requests, ${m.generatedTokens} tokens generated\n`);
    return 0;
  } finally {
    engine.dispose();
  }
}

/**
 * `stopped` resolves at the first SIGINT or SIGTERM (or when `signal` aborts), after `onStop(false)`;
 * a second signal during the shutdown calls `onStop(true)` instead of killing the process mid-way.
 * `dispose()` removes the listeners.
 */
function stopRequests(signal: AbortSignal | undefined, onStop: (second: boolean) => void): { stopped: Promise<void>; dispose(): void } {
  if (signal !== undefined) {
    return {
      stopped: new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      }).then(() => onStop(false)),
      dispose: () => {},
    };
  }
  let count = 0;
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => (resolve = r));
  const handler = (): void => {
    count++;
    onStop(count > 1);
    if (count === 1) resolve();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    stopped,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
