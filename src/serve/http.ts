/**
 * The HTTP face of the scheduler (node:http, no dependency): OpenAI-style completions and chat
 * completions, streaming or not, the model list, a health check and Prometheus metrics.
 * docs/serve.md is its reference.
 *
 *   POST /v1/completions       { prompt: string, …the shared fields } (completions.ts)
 *   POST /v1/chat/completions  { messages: [{ role, content }], max_completion_tokens?: int, n?: 1,
 *                                …the shared fields } (chat-completions.ts; the template: chat.ts)
 *       the shared fields:     max_tokens?: int, stream?: boolean, stream_options?: { include_usage?:
 *                              boolean }, model?: string, temperature?: number, top_p?: number,
 *                              top_k?: int, seed?: int, stop?: string | string[] (request-fields.ts)
 *   GET  /v1/models            { object: "list", data: [{ id: model, object: "model", created, owned_by }] }
 *   GET  /health               { status: "ok", engine, model, running, queued } (503 while shutting down)
 *   GET  /metrics              Prometheus text: the scheduler's figures, HTTP requests and responses,
 *                              the event loop's delay, the engine's stats()
 *
 * Refusals are JSON `{ error: { message, type, param, code } }` (api-error.ts): 400 for a bad
 * request (bad JSON, a missing or bad prompt or messages, a max_tokens that is not an integer from
 * 1 to the limit, a temperature, top_p, top_k or seed out of its range, a bad stop, a field this
 * server does not implement, a prompt + max_tokens beyond the context), 413 for a body over the
 * limit, 404 for an unknown path, 405 for a wrong method (with `Allow`), 429 when the queue is full,
 * 503 while shutting down, 500 when a decode step failed (`engine_error`) or the server itself
 * threw (`internal_error`); and for what Node's parser rejects, 400
 * (bad HTTP), 408 (a request not in before its timeout) and 431 (headers too large), each with the
 * connection closed. Both generation endpoints run through one
 * path (`#generate`): the same stop strings, the same cancellation when a client goes away (its
 * slot is free at the next step boundary), the same errors; only the objects they answer differ.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { InvalidArgumentError } from '../errors/base.js';
import { encode, TokenDecoder } from '../llm/tokenizer.js';
import { describe, requireInt, requireOptions } from '../util/validate.js';
import { ApiError, errorBody, refusal, shuttingDown } from './api-error.js';
import { parseChat } from './chat-completions.js';
import { parseCompletion } from './completions.js';
import { usageOf, type ChoiceFinish, type EndpointRequest } from './endpoint.js';
import { PROMETHEUS_CONTENT_TYPE, PrometheusText } from './prometheus.js';
import { parseJsonObject, type TokenLimits } from './request-fields.js';
import type { Generation, GenerationResult, Scheduler } from './scheduler.js';
import { SSE_DONE, sseEvent } from './sse.js';
import { StopMatcher } from './stop-strings.js';

/** Options of `new CompletionServer(options)`. */
export interface CompletionServerOptions {
  /** The scheduler requests go to; the server closes it on `close()` (the engine stays the caller's). */
  readonly scheduler: Scheduler;
  /** The model name the responses carry (default 'cudagraph'). */
  readonly model?: string;
  /** The most `max_tokens` a request may ask for (default and upper bound: `engine.maxPositions − 1`). */
  readonly maxTokensLimit?: number;
  /** `max_tokens` when a request gives none (default 64, at most `maxTokensLimit`). */
  readonly defaultMaxTokens?: number;
  /** The largest request body in bytes; a larger one is refused with 413 (default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Milliseconds a client has to send a request's headers; later, 408 and the connection closed (default 10 s). */
  readonly headersTimeoutMs?: number;
  /**
   * Milliseconds a client has to send a whole request, body included (at least `headersTimeoutMs`;
   * default 30 s); later, 408 and the connection closed. The response is not timed: a stream runs
   * as long as its generation.
   */
  readonly requestTimeoutMs?: number;
  /** Open connections at most; one more is closed at once (default 1024). */
  readonly maxConnections?: number;
}

/** The defaults of the connection limits in `CompletionServerOptions`. */
export const CONNECTION_DEFAULTS = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 1024 } as const);

/**
 * The refusals of requests Node's parser rejects before the server sees them, by the parser's
 * error code: a status and the `code` of the JSON error (any other parse error is a 400).
 */
const CLIENT_ERRORS: Readonly<Record<string, { readonly status: number; readonly code: string; readonly message: string }>> = Object.freeze({
  HPE_HEADER_OVERFLOW: { status: 431, code: 'headers_too_large', message: "the request's headers are larger than the server takes" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'the request did not arrive in time' },
});

/** Where `listen` binds (defaults: port 8000 on 127.0.0.1; port 0 picks a free one). */
export interface ListenOptions {
  readonly port?: number;
  readonly host?: string;
}

/** Where the server is bound (what `listen` resolves with). */
export interface ServerAddress {
  readonly address: string;
  readonly family: string;
  readonly port: number;
}

/**
 * The paths the server answers and the methods each takes: a 404 lists them, a 405 answers the
 * methods as `Allow`, and `/metrics` counts the requests of each path (any other as `other`).
 */
export const ROUTES: Readonly<Record<string, string>> = Object.freeze({
  '/v1/completions': 'POST',
  '/v1/chat/completions': 'POST',
  '/v1/models': 'GET, HEAD',
  '/health': 'GET, HEAD',
  '/metrics': 'GET, HEAD',
});

/** How often the event-loop delay is sampled, in milliseconds. */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/** What an endpoint's request parser is: the body's object to the request it accepted, or the 400 that refuses it. */
type RequestParser = (o: Record<string, unknown>, limits: TokenLimits, model: string) => EndpointRequest | ApiError;

const OP = 'new CompletionServer';

/**
 * The completions server. `listen()` binds it, `close()` shuts it down gracefully: no new
 * connections, 503 with `Connection: close` for new requests on the open ones, the accepted
 * requests finish (or are cancelled after `graceMs`), then the connections close.
 *
 * @example
 *   const scheduler = new Scheduler(engine, { queueLimit: 64 });
 *   const server = new CompletionServer({ scheduler, model: 'llama-small' });
 *   const { port } = await server.listen({ port: 8000 });
 *   // …
 *   await server.close();
 *   engine.dispose();
 */
export class CompletionServer {
  readonly #scheduler: Scheduler;
  readonly #model: string;
  /** When the server was made, in seconds since the epoch (the model's `created`). */
  readonly #started = Math.floor(Date.now() / 1000);
  readonly #maxTokensLimit: number;
  readonly #defaultMaxTokens: number;
  readonly #maxBodyBytes: number;
  readonly #server: Server;
  readonly #loopDelay: IntervalHistogram;
  /** Responses not yet closed. */
  readonly #active = new Set<ServerResponse>();
  /** Responses sent, by status code. */
  readonly #responses = new Map<number, number>();
  /** Requests received, by path (those of `ROUTES`, then `other`). */
  readonly #requests = new Map<string, number>([...Object.keys(ROUTES), 'other'].map((path) => [path, 0]));
  #closing = false;
  #closed: Promise<void> | null = null;

  /** @throws InvalidArgumentError for bad options. */
  constructor(options: CompletionServerOptions) {
    const o = requireOptions<CompletionServerOptions>(OP, options, ['scheduler', 'model', 'maxTokensLimit', 'defaultMaxTokens', 'maxBodyBytes', 'headersTimeoutMs', 'requestTimeoutMs', 'maxConnections']);
    if (typeof o.scheduler !== 'object' || o.scheduler === null || typeof o.scheduler.submit !== 'function') {
      throw new InvalidArgumentError(OP, 'scheduler', `scheduler must be a Scheduler, got ${describe(o.scheduler)}`);
    }
    this.#scheduler = o.scheduler;
    const ceiling = o.scheduler.engine.maxPositions - 1;
    this.#maxTokensLimit = requireInt(OP, 'maxTokensLimit', o.maxTokensLimit ?? ceiling, 1, ceiling);
    this.#defaultMaxTokens = requireInt(OP, 'defaultMaxTokens', o.defaultMaxTokens ?? Math.min(64, this.#maxTokensLimit), 1, this.#maxTokensLimit);
    this.#maxBodyBytes = requireInt(OP, 'maxBodyBytes', o.maxBodyBytes ?? 1 << 20, 64, 1 << 30);
    if (o.model !== undefined && (typeof o.model !== 'string' || o.model === '')) throw new InvalidArgumentError(OP, 'model', `model must be a non-empty string, got ${describe(o.model)}`);
    this.#model = o.model ?? 'cudagraph';
    this.#loopDelay = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
    const headersTimeout = requireInt(OP, 'headersTimeoutMs', o.headersTimeoutMs ?? CONNECTION_DEFAULTS.headersTimeoutMs, 1, 24 * 3600_000);
    const requestTimeout = requireInt(OP, 'requestTimeoutMs', o.requestTimeoutMs ?? Math.max(CONNECTION_DEFAULTS.requestTimeoutMs, headersTimeout), headersTimeout, 24 * 3600_000);
    const maxConnections = requireInt(OP, 'maxConnections', o.maxConnections ?? CONNECTION_DEFAULTS.maxConnections, 1, 1_000_000);
    this.#server = createServer(
      {
        headersTimeout,
        requestTimeout,
        // Node checks the two timeouts only this often (30 s by default, which would double them).
        connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4))),
      },
      (req, res) => this.#onRequest(req, res),
    );
    this.#server.maxConnections = maxConnections;
    this.#server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) => this.#onClientError(e, socket));
  }

  /** The model name the responses carry. */
  get model(): string {
    return this.#model;
  }

  /** The most `max_tokens` a request may ask for. */
  get maxTokensLimit(): number {
    return this.#maxTokensLimit;
  }

  /** `max_tokens` when a request gives none. */
  get defaultMaxTokens(): number {
    return this.#defaultMaxTokens;
  }

  /** The bound address, `null` before `listen` resolves and after `close`. */
  get address(): ServerAddress | null {
    const a = this.#server.address();
    return a !== null && typeof a === 'object' ? { address: a.address, family: a.family, port: a.port } : null;
  }

  /**
   * Starts listening and the event-loop delay monitor.
   * @throws (as a rejection) the listen error, e.g. `EADDRINUSE`; InvalidArgumentError for a bad
   *   port or host, or after `close()`.
   */
  listen(options: ListenOptions = {}): Promise<ServerAddress> {
    const op = 'CompletionServer.listen';
    try {
      const o = requireOptions<ListenOptions>(op, options, ['port', 'host']);
      const port = requireInt(op, 'port', o.port ?? 8000, 0, 65535);
      const host = o.host ?? '127.0.0.1';
      if (typeof host !== 'string' || host === '') throw new InvalidArgumentError(op, 'host', `host must be a non-empty string, got ${describe(host)}`);
      if (this.#closing) throw new InvalidArgumentError(op, 'server', 'the server has been closed');
      return new Promise((resolve, reject) => {
        const onError = (e: Error): void => reject(e);
        this.#server.once('error', onError);
        this.#server.listen(port, host, () => {
          this.#server.off('error', onError);
          this.#loopDelay.enable();
          resolve(this.address!);
        });
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Shuts down gracefully, draining: stops accepting connections at once (the port is free; a new
   * connection is refused), while the open ones stay open until the accepted requests are done, so
   * a request that comes on a kept-alive connection meanwhile is answered — 503 `shutting_down`
   * (`/health`: 503 `"status": "shutting_down"`), with `Connection: close` — instead of finding its
   * connection reset. The scheduler refuses new work and the accepted requests finish; after
   * `graceMs` (default 10 s) what is left is cancelled (streams end with a `shutting_down` error
   * event, waiting requests get 503). Then every connection is closed and the promise resolves.
   * Idempotent: a second call returns the same promise.
   */
  close(options: { readonly graceMs?: number } = {}): Promise<void> {
    if (this.#closed !== null) return this.#closed;
    const graceMs = requireInt('CompletionServer.close', 'graceMs', options.graceMs ?? 10_000, 0, 24 * 3600_000);
    this.#closing = true;
    this.#closed = (async () => {
      const listening = this.#server.listening;
      // net.Server's close stops the listener only: http.Server's would also close the idle
      // kept-alive connections at once, so that a request sent on one meanwhile met a reset
      // connection instead of a 503. Resolves once the listener and every connection are closed.
      const serverClosed = listening ? new Promise<void>((resolve) => NetServer.prototype.close.call(this.#server, () => resolve())) : Promise.resolve();
      const drained = this.#scheduler.close();
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([drained.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)))]);
      clearTimeout(timer);
      if (late) {
        this.#scheduler.cancelAll();
        await drained;
      }
      // The last responses are written once their generations settle; then their connections are idle.
      for (let waited = 0; this.#active.size > 0 && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
      this.#server.closeIdleConnections();
      this.#server.closeAllConnections();
      await serverClosed;
      // http.Server's own close, now that nothing is left to close: it stops its timer of the
      // request timeouts.
      if (listening) this.#server.close();
      this.#loopDelay.disable();
    })();
    return this.#closed;
  }

  /** The `/metrics` exposition: scheduler, HTTP, event loop and engine figures (docs/serve.md lists them). */
  metricsText(): string {
    const m = this.#scheduler.metrics();
    const engine = this.#scheduler.engine;
    const p = new PrometheusText();
    p.gauge('cudagraph_serve_info', 'The model served and its engine (value 1).', [[{ model: this.#model, engine: engine.name }, 1]]);
    p.counter('cudagraph_serve_requests_total', 'Requests accepted by the scheduler that finished, by how they ended.', [
      [{ outcome: 'stop' }, m.requests.stop],
      [{ outcome: 'length' }, m.requests.length],
      [{ outcome: 'cancelled' }, m.requests.cancelled],
      [{ outcome: 'error' }, m.requests.failed],
    ]);
    p.counter('cudagraph_serve_requests_refused_total', 'Requests the scheduler refused, by reason.', [
      [{ reason: 'queue_full' }, m.refused.queueFull],
      [{ reason: 'context_length' }, m.refused.contextLength],
      [{ reason: 'shutting_down' }, m.refused.shuttingDown],
      [{ reason: 'invalid' }, m.refused.invalid],
    ]);
    p.counter('cudagraph_serve_http_requests_total', 'HTTP requests received, by path (any other path: "other").', [...this.#requests].map(([path, n]) => [{ path }, n] as const));
    p.counter('cudagraph_serve_http_responses_total', 'HTTP responses, by status code.', [...this.#responses].sort((a, b) => a[0] - b[0]).map(([code, n]) => [{ code: String(code) }, n] as const));
    p.gauge('cudagraph_serve_queue_depth', 'Requests waiting for a slot.', m.queueDepth);
    p.gauge('cudagraph_serve_running', 'Sequences holding a slot (prefilling or generating).', m.running);
    p.gauge('cudagraph_serve_capacity', 'Sequences stepped together at most: min(engine slots, engine max batch).', m.capacity);
    p.gauge('cudagraph_serve_queue_limit', 'Requests that may wait beyond the free slots.', m.queueLimit);
    p.counter('cudagraph_serve_steps_total', 'Decode steps run.', m.steps);
    p.counter('cudagraph_serve_failed_steps_total', 'Decode steps whose engine call failed.', m.failedSteps);
    p.counter('cudagraph_serve_prompt_tokens_total', 'Prompt tokens fed to the engine.', m.promptTokens);
    p.counter('cudagraph_serve_generation_tokens_total', 'Tokens generated (an EOS that ended a sequence included).', m.generatedTokens);
    p.gauge('cudagraph_serve_prompt_tokens_per_second', 'Prompt tokens fed per second over the last 10 s.', m.promptTokensPerSecond);
    p.gauge('cudagraph_serve_generation_tokens_per_second', 'Tokens generated per second over the last 10 s.', m.generatedTokensPerSecond);
    p.summary('cudagraph_serve_step_seconds', 'Engine step time (quantiles of the latest 1024 steps).', m.stepSeconds);
    p.histogram('cudagraph_serve_batch_size', 'Sequences per step.', m.batchSize.buckets, m.batchSize.sum, m.batchSize.count);
    p.gauge('cudagraph_serve_batch_size_recent_mean', 'Mean sequences per step over the latest 1024 steps.', m.batchSize.recentMean);
    p.summary('cudagraph_serve_time_to_first_token_seconds', 'From submission to the first generated token (quantiles of the latest 1024 requests).', m.timeToFirstTokenSeconds);
    p.summary('cudagraph_serve_inter_token_seconds', 'Between consecutive tokens of a sequence (quantiles of the latest 4096 gaps).', m.interTokenSeconds);
    // The histogram holds the intervals between the sampling timer's runs: the delay is what passed the resolution.
    const h = this.#loopDelay;
    const n = h.count;
    const res = EVENT_LOOP_RESOLUTION_MS * 1e6;
    const late = (ns: number): number => (n > 0 ? Math.max(0, ns - res) / 1e9 : 0);
    p.summary('cudagraph_serve_event_loop_delay_seconds', `How late the event loop ran a timer due every ${EVENT_LOOP_RESOLUTION_MS} ms, since the server started.`, {
      p50: late(h.percentile(50)),
      p99: late(h.percentile(99)),
      sum: late(h.mean) * n,
      count: n,
    });
    p.gauge('cudagraph_serve_event_loop_delay_max_seconds', 'The largest event-loop delay since the server started.', late(h.max));
    let stats: [string, number][] = [];
    try {
      stats = Object.entries(engine.stats()).filter((e): e is [string, number] => typeof e[1] === 'number');
    } catch {
      // An engine whose stats() fails still serves; its figures are left out.
    }
    p.gauge('cudagraph_engine_stat', "The engine's own counters (engine.stats()), by name.", stats.map(([stat, v]) => [{ stat }, v] as const));
    // The names Prometheus' Node.js client uses, so that dashboards made for it read these.
    const mem = process.memoryUsage();
    p.gauge('process_resident_memory_bytes', 'Resident memory of the server process.', mem.rss);
    p.gauge('nodejs_heap_size_used_bytes', 'V8 heap in use.', mem.heapUsed);
    p.gauge('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JS objects (buffers included).', mem.external);
    return p.toString();
  }

  /**
   * A request Node's parser rejected (a bad method or `Content-Length`, headers too large, a
   * request not in before its timeout): answered in the same JSON shape as every other refusal,
   * then the connection closed, as Node itself does. Nothing is written where a response has
   * begun on the socket (the bytes would corrupt it) or where the client has gone.
   */
  #onClientError(e: NodeJS.ErrnoException, socket: Duplex): void {
    // The response in flight on the socket, if any: Node's own handler checks the same field.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (e.code === 'ECONNRESET' || !socket.writable || (inFlight != null && inFlight.headersSent)) {
      socket.destroy();
      return;
    }
    const known = CLIENT_ERRORS[e.code ?? ''];
    const error = new ApiError(known?.status ?? 400, known?.code ?? 'bad_request', known?.message ?? `the request is not valid HTTP/1.1 (${e.code ?? e.message})`);
    const text = JSON.stringify({ error: errorBody(error) });
    const head =
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n`;
    this.#responses.set(error.status, (this.#responses.get(error.status) ?? 0) + 1);
    socket.end(head + text, () => socket.destroy());
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.#active.add(res);
    res.on('error', () => {}); // a client gone mid-write: the close handler below does the rest
    res.on('close', () => {
      this.#active.delete(res);
      if (res.headersSent) this.#responses.set(res.statusCode, (this.#responses.get(res.statusCode) ?? 0) + 1);
    });
    this.#route(req, res).catch((e: unknown) => {
      if (!res.headersSent) this.#sendError(res, new ApiError(500, 'internal_error', `internal error: ${e instanceof Error ? e.message : String(e)}`));
      else res.destroy();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    const method = req.method ?? 'GET';
    const counted = this.#requests.has(path) ? path : 'other';
    this.#requests.set(counted, this.#requests.get(counted)! + 1);
    const allow = (): boolean => {
      const methods = ROUTES[path]!;
      if (methods.split(', ').includes(method)) return true;
      res.setHeader('Allow', methods);
      this.#sendError(res, new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path} (allowed: ${methods})`));
      return false;
    };
    switch (path) {
      case '/v1/completions':
        if (allow()) await this.#generate(req, res, parseCompletion);
        return;
      case '/v1/chat/completions':
        if (allow()) await this.#generate(req, res, parseChat);
        return;
      case '/health':
        if (allow()) this.#health(res);
        return;
      case '/v1/models':
        // OpenAI's clients list the models first: the one this server serves.
        if (allow()) this.#sendJson(res, 200, { object: 'list', data: [{ id: this.#model, object: 'model', created: this.#started, owned_by: 'cudagraph' }] });
        return;
      case '/metrics':
        // HEAD makes the text too: its headers are GET's, the Content-Length of the body GET would get.
        if (allow()) this.#sendText(res, 200, PROMETHEUS_CONTENT_TYPE, this.metricsText(), { 'Cache-Control': 'no-store' });
        return;
      default: {
        const known = Object.entries(ROUTES).map(([p, methods]) => `${methods.split(', ')[0]} ${p}`);
        this.#sendError(res, new ApiError(404, 'not_found', `no such path: ${JSON.stringify(path.slice(0, 200))} (${known.join(', ')})`));
      }
    }
  }

  #health(res: ServerResponse): void {
    const m = this.#scheduler.metrics();
    this.#sendJson(res, this.#closing ? 503 : 200, {
      status: this.#closing ? 'shutting_down' : 'ok',
      engine: this.#scheduler.engine.name,
      model: this.#model,
      running: m.running,
      queued: m.queueDepth,
    });
  }

  /**
   * A generation endpoint: the body read and checked by `parse`, the generation submitted, its
   * text written as it comes (a stream) or at the end, in the objects of the endpoint's answer.
   * Nothing reaches the scheduler before the whole request is checked.
   */
  async #generate(req: IncomingMessage, res: ServerResponse, parse: RequestParser): Promise<void> {
    if (this.#closing) return this.#sendError(res, shuttingDown());
    const body = await readBody(req, this.#maxBodyBytes);
    if (body === 'aborted') return;
    if (body === 'too-large') {
      res.setHeader('Connection', 'close');
      return this.#sendError(res, new ApiError(413, 'body_too_large', `the request body is larger than ${this.#maxBodyBytes} bytes`));
    }
    // A shutdown that began while the body came in: the scheduler refuses it (503) below.
    const json = parseJsonObject(body);
    if (json instanceof ApiError) return this.#sendError(res, json);
    const params = parse(json, { maxTokensLimit: this.#maxTokensLimit, defaultMaxTokens: this.#defaultMaxTokens }, this.#model);
    if (params instanceof ApiError) return this.#sendError(res, params);
    const answer = params.answer;
    let generation: Generation | null = null;
    const decoder = new TokenDecoder();
    // With stop strings the text is watched as it comes: the first one found ends the generation
    // (stopped at the next step boundary, counted as a stop), and nothing from it on is sent.
    const stopper = params.stopAt.length > 0 ? new StopMatcher(params.stopAt) : null;
    let collected = '';
    const deliver = (piece: string): void => {
      if (piece === '') return;
      if (!params.stream) collected += piece;
      else if (writable(res)) res.write(answer.pieceEvent(piece));
    };
    let received = 0;
    // With stop strings, the text of the decoder's last bytes (a character max_tokens cut off, as
    // U+FFFD) that the matcher let through, once the last token is in; sent at the end.
    let tail: string | null = null;
    try {
      generation = this.#scheduler.submit({
        prompt: encode(params.prompt),
        maxTokens: params.maxTokens,
        sampling: params.sampling,
        onToken: (t: number) => {
          if (stopper?.hasStopped()) return;
          const text = decoder.push([t]);
          deliver(stopper === null ? text : stopper.push(text));
          // The max_tokens-th token is the last: the decoder's last bytes end the text now, so a
          // stop string they complete stops the generation here, counted as a stop as when a
          // token completes one, not as a 'length' the scheduler would settle it with.
          if (++received === params.maxTokens && stopper !== null && !stopper.hasStopped()) tail = stopper.push(decoder.end());
          if (stopper?.hasStopped()) generation?.stop();
        },
      });
    } catch (e) {
      return this.#sendError(res, refusal(e, { prompt: params.promptField, maxTokens: params.maxTokensField }));
    }
    const gen = generation;
    // A client that goes away cancels its request; the slot is free at the next step boundary.
    res.on('close', () => gen.cancel());
    if (res.destroyed) gen.cancel();
    if (params.stream) {
      if (this.#closing) res.setHeader('Connection', 'close');
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
      const first = answer.first();
      // The first chunk (chat's role) goes with the headers: the client knows at once the request runs.
      if (first !== null) res.write(sseEvent(first));
      else res.flushHeaders();
    }
    let result: GenerationResult;
    try {
      result = await gen.result;
    } catch (e) {
      const error = refusal(e, { prompt: params.promptField, maxTokens: params.maxTokensField });
      if (!params.stream) return this.#sendError(res, error);
      if (writable(res)) res.end(sseEvent({ error: errorBody(error) }));
      return;
    }
    if (!writable(res)) return;
    const byStop = stopper !== null && stopper.hasStopped();
    if (result.finishReason === 'cancelled' && !byStop) {
      // Not the client (it is gone, and nothing is written): the grace period of a shutdown ran out.
      const error = shuttingDown();
      if (!params.stream) return this.#sendError(res, error);
      res.end(sseEvent({ error: errorBody(error) }));
      return;
    }
    // The decoder's last bytes (an incomplete character), then what the stop matcher held back.
    if (tail !== null) deliver(tail + stopper!.flush());
    else if (!byStop) {
      const end = decoder.end();
      deliver(stopper === null ? end : stopper.push(end) + stopper.flush());
    }
    // A stop string (found before or in the tail) is a "stop", whatever ended the generation after it.
    const finish: ChoiceFinish = stopper?.hasStopped() === true || result.finishReason === 'stop' ? 'stop' : 'length';
    const usage = usageOf(result);
    if (params.stream) {
      res.write(sseEvent(answer.last(finish)));
      const last = answer.usage(usage);
      if (last !== null) res.write(sseEvent(last));
      res.end(sseEvent(SSE_DONE));
      return;
    }
    this.#sendJson(res, 200, answer.whole(collected, finish, usage));
  }

  #sendJson(res: ServerResponse, status: number, body: unknown): void {
    this.#sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
  }

  /** A whole response with its `Content-Length`; to a HEAD request, the same headers and no body (Node drops it). */
  #sendText(res: ServerResponse, status: number, contentType: string, text: string, headers: Readonly<Record<string, string>> = {}): void {
    if (!writable(res)) return;
    // While shutting down, a connection closes after its response instead of waiting for another.
    if (this.#closing) res.setHeader('Connection', 'close');
    res.writeHead(status, { ...headers, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  #sendError(res: ServerResponse, e: ApiError): void {
    if (e.status === 429) res.setHeader('Retry-After', '1');
    this.#sendJson(res, e.status, { error: errorBody(e) });
  }
}

function writable(res: ServerResponse): boolean {
  return !res.destroyed && !res.writableEnded;
}

/** The body, up to `limit` bytes: 'too-large' beyond it (the rest is discarded), 'aborted' if the client left. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large' | 'aborted'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve('too-large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        resolve('too-large');
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve('aborted'));
    req.on('close', () => {
      if (!req.complete) resolve('aborted');
    });
  });
}
