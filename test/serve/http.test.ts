/** The HTTP server over the fake engine: responses, streaming, every refusal, disconnects, batching, health, metrics, shutdown. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { EOS } from '../../src/llm/tokenizer.js';
import { CompletionServer } from '../../src/serve/http.js';
import { Scheduler } from '../../src/serve/scheduler.js';
import { FakeEngine, defaultNext } from './fake-engine.js';
import { chat, complete, eventually, expectedText, raw, streamed, withServer } from './helpers.js';

const T = { timeout: 15_000 };

test('POST /v1/completions: an OpenAI-style text completion with usage', T, async () => {
  await withServer({ server: { model: 'tiny' } }, async ({ url }) => {
    const res = await complete(url, { prompt: 'Hello', max_tokens: 7 });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    const want = expectedText('Hello', 7);
    assert.match(body.id as string, /^cmpl-[0-9a-f]{24}$/);
    assert.equal(body.object, 'text_completion');
    assert.equal(body.model, 'tiny');
    assert.ok(Math.abs((body.created as number) - Date.now() / 1000) < 5);
    assert.deepEqual(body.choices, [{ text: want.text, index: 0, logprobs: null, finish_reason: 'length' }]);
    assert.deepEqual(body.usage, { prompt_tokens: 6, completion_tokens: 7, total_tokens: 13 });
    // Without max_tokens: the default (64 unless set).
    const d = (await (await complete(url, { prompt: 'Hi', model: 'anything', stream: false, max_tokens: null })).json()) as { usage: { completion_tokens: number } };
    assert.equal(d.usage.completion_tokens, 64);
  });
  // EOS: finish_reason "stop", the EOS counted in completion_tokens, not in the text.
  const next = (e: DecodeEntry): number => (e.position === 5 ? EOS : defaultNext(e));
  await withServer({ engine: { next }, server: { defaultMaxTokens: 10 } }, async ({ url }) => {
    const body = (await (await complete(url, { prompt: 'abc' })).json()) as { choices: { text: string; finish_reason: string }[]; usage: { completion_tokens: number } };
    const want = expectedText('abc', 10, next);
    assert.equal(want.finish, 'stop');
    assert.equal(body.choices[0]!.finish_reason, 'stop');
    assert.equal(body.choices[0]!.text, want.text);
    assert.equal(body.usage.completion_tokens, want.tokens);
  });
});

test('stream: server-sent events, one chunk per token, a last chunk with finish_reason, then [DONE]', T, async () => {
  await withServer({ engine: { delayMs: 1 } }, async ({ url }) => {
    const res = await complete(url, { prompt: 'Stream me', max_tokens: 12, stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const { chunks, done } = await streamed(res);
    assert.ok(done);
    const last = chunks.at(-1)!;
    assert.equal(last.choices[0]!.finish_reason, 'length');
    assert.ok(chunks.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null));
    const text = chunks.map((c) => c.choices[0]!.text).join('');
    assert.equal(text, expectedText('Stream me', 12).text);
    for (const c of chunks) assert.equal((c as unknown as { object: string }).object, 'text_completion');
  });
});

test('stream_options.include_usage: usage null in every chunk, then a chunk with no choices and the usage', T, async () => {
  await withServer({}, async ({ url }) => {
    const { chunks, done } = await streamed(await complete(url, { prompt: 'abc', max_tokens: 6, stream: true, stream_options: { include_usage: true } }));
    assert.ok(done);
    const last = chunks.at(-1)! as unknown as { choices: unknown[]; usage: unknown };
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
    for (const c of chunks.slice(0, -1)) assert.equal((c as unknown as { usage: unknown }).usage, null);
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'length');
    // Without it, no usage field at all.
    const plain = await streamed(await complete(url, { prompt: 'abc', max_tokens: 2, stream: true, stream_options: null }));
    assert.ok(plain.chunks.every((c) => !('usage' in c)));
  });
});

test('stream: multi-byte characters come out whole, however the bytes fall into steps', T, async () => {
  const bytes = [...new TextEncoder().encode('ü€😀 a')];
  const next = (e: DecodeEntry): number => bytes[e.position % bytes.length]!;
  await withServer({ engine: { next, delayMs: 1 } }, async ({ url }) => {
    // An empty prompt is BOS alone, so the first generated token is bytes[0].
    const res = await complete(url, { prompt: '', max_tokens: bytes.length * 3, stream: true });
    const { chunks } = await streamed(res);
    const texts = chunks.map((c) => c.choices[0]!.text);
    assert.equal(texts.join(''), 'ü€😀 a'.repeat(3));
    assert.ok(texts.every((t) => !t.includes('\uFFFD')), JSON.stringify(texts));
    assert.deepEqual(texts.slice(0, 5), ['ü', '€', '😀', ' ', 'a']);
    // Cut inside a character: the end says so with U+FFFD rather than dropping it.
    const cut = await streamed(await complete(url, { prompt: '', max_tokens: 5, stream: true }));
    assert.equal(cut.chunks.map((c) => c.choices[0]!.text).join(''), 'ü€');
    const cut2 = await streamed(await complete(url, { prompt: '', max_tokens: 3, stream: true }));
    assert.equal(cut2.chunks.map((c) => c.choices[0]!.text).join(''), 'ü\uFFFD');
  });
});

test('400: bad JSON, a bad prompt, bad max_tokens, unknown fields, bad stream or model, a prompt beyond the context', T, async () => {
  await withServer({ engine: { maxPositions: 64 }, server: { maxTokensLimit: 32 } }, async ({ url, engine }) => {
    const cases: [string | object, string, RegExp, string | null][] = [
      ['{"prompt": "x"', 'invalid_json', /not valid JSON/, null],
      ['', 'invalid_json', /not valid JSON/, null],
      ['[1,2]', 'invalid_json', /must be a JSON object, got an array/, null],
      ['null', 'invalid_json', /must be a JSON object, got null/, null],
      [{}, 'invalid_prompt', /prompt is required/, 'prompt'],
      [{ prompt: 5 }, 'invalid_prompt', /prompt must be a string .* got 5/, 'prompt'],
      [{ prompt: ['a', 'b'] }, 'invalid_prompt', /got an array/, 'prompt'],
      [{ prompt: 'x', max_tokens: -1 }, 'invalid_max_tokens', /max_tokens must be an integer from 1 to 32, got -1/, 'max_tokens'],
      [{ prompt: 'x', max_tokens: 0 }, 'invalid_max_tokens', /got 0/, 'max_tokens'],
      [{ prompt: 'x', max_tokens: 2.5 }, 'invalid_max_tokens', /got 2\.5/, 'max_tokens'],
      [{ prompt: 'x', max_tokens: '8' }, 'invalid_max_tokens', /got "8"/, 'max_tokens'],
      [{ prompt: 'x', max_tokens: 33 }, 'invalid_max_tokens', /from 1 to 32, got 33/, 'max_tokens'],
      ['{"prompt": "x", "max_tokens": 1e400}', 'invalid_max_tokens', /got Infinity/, 'max_tokens'],
      [{ prompt: 'x', logprobs: 2 }, 'unknown_field', /unknown field "logprobs": this server takes only prompt, max_tokens, stream, stream_options, model, temperature, top_p, top_k, seed/, 'logprobs'],
      [{ prompt: 'x', temperature: 2.5 }, 'invalid_sampling', /^temperature must be a number from 0 to 2, got 2\.5/, 'temperature'],
      [{ prompt: 'x', temperature: 1, top_p: 0 }, 'invalid_sampling', /^top_p must be a number in \(0, 1\]/, 'top_p'],
      [{ prompt: 'x', temperature: 1, top_k: 1.5 }, 'invalid_sampling', /^top_k must be an integer ≥ 0/, 'top_k'],
      [{ prompt: 'x', seed: 'a' }, 'invalid_sampling', /^seed must be a safe integer/, 'seed'],
      ['{"prompt": "x", "__proto__": {}}', 'unknown_field', /unknown field "__proto__"/, '__proto__'],
      [{ prompt: 'x', stream: 'yes' }, 'invalid_stream', /stream must be a boolean/, 'stream'],
      [{ prompt: 'x', model: 5 }, 'invalid_model', /model must be a string/, 'model'],
      [{ prompt: 'x', stream_options: { include_usage: true } }, 'invalid_stream_options', /only taken with "stream": true/, 'stream_options'],
      [{ prompt: 'x', stream: true, stream_options: { include_usage: 1 } }, 'invalid_stream_options', /include_usage must be a boolean/, 'stream_options'],
      [{ prompt: 'x', stream: true, stream_options: { other: true } }, 'unknown_field', /unknown field of stream_options "other"/, 'stream_options'],
      [{ prompt: 'x', stream: true, stream_options: [] }, 'invalid_stream_options', /must be an object/, 'stream_options'],
      [{ prompt: 'x'.repeat(40), max_tokens: 30 }, 'context_length_exceeded', /^the model's context is 64 tokens, but 71 were asked for \(41 in the prompt, 30 to generate\); shorten the prompt or lower max_tokens$/, 'prompt'],
      [{ prompt: 'x'.repeat(5000), max_tokens: 1 }, 'context_length_exceeded', /5001 in the prompt/, 'prompt'],
    ];
    for (const [body, code, message, param] of cases) {
      const res = await complete(url, body);
      const what = `${typeof body === 'string' ? body : JSON.stringify(body).slice(0, 60)}`;
      assert.equal(res.status, 400, what);
      assert.match(res.headers.get('content-type')!, /^application\/json/);
      const { error } = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
      assert.equal(error.code, code, what);
      assert.equal(error.type, 'invalid_request_error', what);
      assert.equal(error.param, param, what);
      assert.match(error.message, message, what);
    }
    assert.equal(engine.stepCount, 0);
  });
});

test('400 invalid_json: a body nesting arrays and objects deeper than 64 is refused before it is parsed; brackets in strings do not count', T, async () => {
  await withServer({}, async ({ url }) => {
    const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const refused = async (body: string): Promise<{ status: number; code: string; message: string }> => {
      const res = await complete(url, body);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      return { status: res.status, code: error?.code, message: error?.message };
    };
    // 64 levels (the object and 63 arrays) parse: the refusal is of the unknown field.
    assert.equal((await refused(`{"prompt": "x", "x": ${nested(63)}}`)).code, 'unknown_field');
    const deep = await refused(`{"prompt": "x", "x": ${nested(64)}}`);
    assert.deepEqual(deep, { status: 400, code: 'invalid_json', message: 'the body nests arrays and objects deeper than 64 levels, the most this server parses' });
    // Nearly 1 MiB of brackets: the same refusal.
    assert.equal((await refused(`{"prompt":"a","x":${nested(500_000)}}`)).code, 'invalid_json');
    // Brackets inside strings are text, an escaped quote does not end a string, an escaped backslash does not escape the quote after it.
    const inString = await complete(url, { prompt: `${'['.repeat(100)}"${'{'.repeat(100)}`, max_tokens: 1 });
    assert.equal(inString.status, 200);
    assert.equal((await refused(`{"prompt": "\\\\", "x": ${nested(64)}}`)).code, 'invalid_json');
  });
});

test('400: ill-formed Unicode is refused, not replaced by U+FFFD: a lone surrogate in prompt or a chat content, bytes that are not UTF-8', T, async () => {
  await withServer({}, async ({ url, port, engine }) => {
    const error = async (res: Response): Promise<{ status: number; code: string; param: string | null; message: string }> => {
      const { error: e } = (await res.json()) as { error: { code: string; param: string | null; message: string } };
      return { status: res.status, code: e.code, param: e.param, message: e.message };
    };
    const lone = await error(await complete(url, '{"prompt": "a\\ud800b", "max_tokens": 1}'));
    assert.deepEqual(lone, { status: 400, code: 'invalid_prompt', param: 'prompt', message: 'prompt must be well-formed Unicode (it holds a lone surrogate, such as an unpaired \\ud800 escape)' });
    assert.equal((await error(await complete(url, '{"prompt": "\\udc00"}'))).code, 'invalid_prompt');
    const content = await error(await chat(url, '{"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "x\\udbff"}]}'));
    assert.deepEqual([content.status, content.code, content.param], [400, 'invalid_messages', 'messages[1].content']);
    assert.match(content.message, /^messages\[1\]\.content must be well-formed Unicode/);
    assert.equal(engine.stepCount, 0, 'nothing refused reaches the engine');
    // A pair written as two escapes is one character, and taken.
    assert.equal((await complete(url, '{"prompt": "\\ud83d\\ude00", "max_tokens": 1}')).status, 200);
    // Bytes that are not UTF-8 (a lone continuation byte, an overlong encoding): the body is not JSON.
    for (const bad of [[0xff], [0x80], [0xc0, 0xaf]]) {
      const body = Buffer.concat([Buffer.from('{"prompt": "a'), Buffer.from(bad), Buffer.from('", "max_tokens": 1}')]);
      const r = await raw(port, { method: 'POST', path: '/v1/completions', headers: { 'Content-Type': 'application/json' }, body });
      assert.equal(r.status, 400, String(bad));
      assert.deepEqual(JSON.parse(r.text), { error: { message: 'the body is not valid JSON: it is not valid UTF-8', type: 'invalid_request_error', param: null, code: 'invalid_json' } });
    }
  });
});

test('413: a body over the limit, declared or sent chunked', T, async () => {
  await withServer({ server: { maxBodyBytes: 1024 } }, async ({ port, url }) => {
    // Declared: refused from the headers, before any body is read.
    const declared = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', headers: { 'Content-Length': 10_000_000 } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(declared.status, 413);
    assert.match(declared.text, /"code":"body_too_large"/);
    assert.match(declared.text, /larger than 1024 bytes/);
    const chunked = await raw(port, { method: 'POST', path: '/v1/completions', headers: { 'Transfer-Encoding': 'chunked' }, body: JSON.stringify({ prompt: 'x'.repeat(2000) }) });
    assert.equal(chunked.status, 413);
    assert.equal(chunked.headers.connection, 'close');
    // Just under the limit is fine.
    const padded = JSON.stringify({ prompt: 'x', max_tokens: 1, model: '' });
    assert.equal((await complete(url, { prompt: 'x', max_tokens: 1, model: 'm'.repeat(1024 - padded.length) })).status, 200);
  });
});

test('404 for unknown paths, 405 with Allow for wrong methods', T, async () => {
  await withServer({}, async ({ port }) => {
    for (const path of ['/', '/v1/chat', '/v1/completions/x', '/v1/chat/completions/', '/healthz']) {
      const r = await raw(port, { method: 'GET', path });
      assert.equal(r.status, 404, path);
      const { error } = JSON.parse(r.text) as { error: { code: string; message: string } };
      assert.equal(error.code, 'not_found');
      assert.match(error.message, /\(POST \/v1\/completions, POST \/v1\/chat\/completions, GET \/v1\/models, GET \/health, GET \/metrics\)$/);
    }
    const wrong: [string, string, string][] = [
      ['GET', '/v1/completions', 'POST'],
      ['PUT', '/v1/completions', 'POST'],
      ['GET', '/v1/chat/completions', 'POST'],
      ['POST', '/health', 'GET, HEAD'],
      ['DELETE', '/metrics', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of wrong) {
      const r = await raw(port, { method, path });
      assert.equal(r.status, 405, `${method} ${path}`);
      assert.equal(r.headers.allow, allow);
      assert.equal((JSON.parse(r.text) as { error: { code: string } }).error.code, 'method_not_allowed');
    }
    // A query string does not change the route.
    assert.equal((await raw(port, { method: 'GET', path: '/health?verbose=1' })).status, 200);
  });
});

test('GET /v1/models lists the one model served, as OpenAI clients expect; other methods 405', T, async () => {
  await withServer({ server: { model: 'tiny-llama' } }, async ({ port }) => {
    const r = await raw(port, { method: 'GET', path: '/v1/models' });
    assert.equal(r.status, 200);
    const body = JSON.parse(r.text) as { object: string; data: { id: string; object: string; created: number; owned_by: string }[] };
    assert.equal(body.object, 'list');
    assert.equal(body.data.length, 1);
    assert.deepEqual({ ...body.data[0]!, created: 0 }, { id: 'tiny-llama', object: 'model', created: 0, owned_by: 'cudagraph' });
    assert.ok(Math.abs(body.data[0]!.created - Date.now() / 1000) < 60);
    const post = await raw(port, { method: 'POST', path: '/v1/models' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });
});

test('429 when the queue is full, with Retry-After; the slot\'s request still completes', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 }, scheduler: { queueLimit: 0 } }, async ({ url }) => {
    const first = complete(url, { prompt: 'a', max_tokens: 30, stream: true });
    const res1 = await first;
    const reader = streamed(res1);
    const res2 = await complete(url, { prompt: 'b', max_tokens: 2 });
    assert.equal(res2.status, 429);
    assert.equal(res2.headers.get('retry-after'), '1');
    const { error } = (await res2.json()) as { error: { code: string; type: string } };
    assert.equal(error.code, 'queue_full');
    assert.equal(error.type, 'overloaded_error');
    const { done } = await reader;
    assert.ok(done);
    assert.equal((await complete(url, { prompt: 'b', max_tokens: 2 })).status, 200);
  });
});

test('500 when a decode step fails: JSON for a plain request, an error event for a stream', T, async () => {
  await withServer({ engine: { failSteps: [1, 4], delayMs: 1 } }, async ({ url }) => {
    const res = await complete(url, { prompt: 'a', max_tokens: 3 });
    assert.equal(res.status, 500);
    const { error } = (await res.json()) as { error: { code: string; type: string; message: string } };
    assert.equal(error.code, 'engine_error');
    assert.equal(error.type, 'server_error');
    assert.match(error.message, /fails on purpose/);
    const s = await streamed(await complete(url, { prompt: 'a', max_tokens: 10, stream: true }));
    assert.equal(s.done, false);
    assert.equal(s.chunks.at(-1)!.error!.code, 'engine_error');
  });
});

test('a client that disconnects mid-stream cancels its request and frees its slot', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 } }, async ({ port, url, scheduler, engine }) => {
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', headers: { 'Content-Type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (e) => (e.message === 'socket hang up' || (e as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(e)));
      req.end(JSON.stringify({ prompt: 'p', max_tokens: 200, stream: true }));
    });
    await eventually(() => scheduler.metrics().running === 0, 'the slot to be freed');
    const m = scheduler.metrics();
    assert.equal(m.requests.cancelled, 1);
    assert.ok(m.generatedTokens < 200);
    const steps = engine.stepCount;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(engine.stepCount, steps, 'no steps after the cancel');
    // The next request gets the slot.
    assert.equal((await complete(url, { prompt: 'q', max_tokens: 3 })).status, 200);
    // A plain request whose client gives up is cancelled too.
    const ac = new AbortController();
    const pending = complete(url, { prompt: 'q', max_tokens: 200 }, { signal: ac.signal });
    await eventually(() => scheduler.metrics().running === 1, 'the request to run');
    ac.abort();
    await assert.rejects(pending);
    await eventually(() => scheduler.metrics().requests.cancelled === 2 && scheduler.metrics().running === 0, 'the second cancel');
  });
});

test('concurrent requests are batched together', T, async () => {
  await withServer({ engine: { slots: 8, delayMs: 3 } }, async ({ url, engine }) => {
    const prompts = Array.from({ length: 8 }, (_, i) => `request ${i}`);
    const bodies = await Promise.all(prompts.map(async (p, i) => (await (await complete(url, { prompt: p, max_tokens: 8, stream: i % 2 === 0 })).text())));
    assert.ok(engine.largestBatch > 1, `largest batch ${engine.largestBatch}`);
    assert.ok(engine.log.filter((e) => e.length > 1).length > 5);
    bodies.forEach((b, i) => {
      const want = expectedText(prompts[i]!, 8).text;
      const text = i % 2 === 0 ? b.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => (JSON.parse(l.slice(6)) as { choices: { text: string }[] }).choices[0]!.text).join('') : (JSON.parse(b) as { choices: { text: string }[] }).choices[0]!.text;
      assert.equal(text, want, prompts[i]);
    });
  });
});

test('GET /health and GET /metrics (Prometheus text, with the engine\'s stats and the event-loop delay)', T, async () => {
  await withServer({ server: { model: 'm1' } }, async ({ url, port }) => {
    const h = await fetch(`${url}/health`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: 'ok', engine: 'fake', model: 'm1', running: 0, queued: 0 });
    await complete(url, { prompt: 'abc', max_tokens: 5 });
    await complete(url, { prompt: 5 });
    await new Promise((r) => setTimeout(r, 50)); // a few event-loop samples
    const busy = Date.now() + 60;
    while (Date.now() < busy); // the event loop blocked for 60 ms
    await new Promise((r) => setTimeout(r, 30));
    const res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    const value = (line: string): number => {
      const m = new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
      assert.ok(m, `${line} in /metrics`);
      return Number(m[1]);
    };
    assert.equal(value('cudagraph_serve_info{model="m1",engine="fake"}'), 1);
    assert.equal(value('cudagraph_serve_requests_total{outcome="length"}'), 1);
    assert.equal(value('cudagraph_serve_generation_tokens_total'), 5);
    assert.equal(value('cudagraph_serve_prompt_tokens_total'), 4);
    // BOS + 'abc' in one prefill step (its answer the first token), then 4 tokens fed back.
    assert.equal(value('cudagraph_serve_steps_total'), 5);
    assert.equal(value('cudagraph_serve_http_responses_total{code="200"}'), 2);
    assert.equal(value('cudagraph_serve_http_responses_total{code="400"}'), 1);
    assert.equal(value('cudagraph_serve_batch_size_bucket{le="+Inf"}'), 5);
    assert.equal(value('cudagraph_serve_time_to_first_token_seconds_count'), 1);
    assert.ok(value('cudagraph_serve_time_to_first_token_seconds{quantile="0.5"}') > 0);
    assert.equal(value('cudagraph_serve_inter_token_seconds_count'), 4);
    assert.equal(value('cudagraph_serve_queue_depth'), 0);
    assert.equal(value('cudagraph_serve_running'), 0);
    assert.equal(value('cudagraph_serve_capacity'), 4);
    assert.equal(value('cudagraph_engine_stat{stat="steps"}'), 5);
    assert.ok(value('cudagraph_serve_event_loop_delay_seconds_count') > 0);
    // The delay is what passed the sampling interval: near 0 when idle, the 60 ms block at the top.
    assert.ok(value('cudagraph_serve_event_loop_delay_seconds{quantile="0.5"}') < 0.0095);
    assert.ok(value('cudagraph_serve_event_loop_delay_max_seconds') >= 0.04);
    // Every sample line belongs to a family declared with # TYPE.
    const families = new Set([...text.matchAll(/^# TYPE (\S+) (counter|gauge|summary|histogram)$/gm)].map((m) => m[1]));
    for (const line of text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
      const name = /^([a-z_]+)/.exec(line)![1]!;
      assert.ok(families.has(name) || families.has(name.replace(/_(sum|count|bucket)$/, '')), line);
    }
    const head = await raw(port, { method: 'HEAD', path: '/metrics' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
  });
});

test('HEAD /health, /v1/models and /metrics: the headers GET sends, Content-Length included, and no body', T, async () => {
  await withServer({}, async ({ port }) => {
    for (const path of ['/health', '/v1/models', '/metrics']) {
      const get = await raw(port, { method: 'GET', path });
      const head = await raw(port, { method: 'HEAD', path });
      assert.equal(head.status, 200, path);
      assert.equal(head.text, '', `${path}: no body`);
      assert.equal(Number(get.headers['content-length']), Buffer.byteLength(get.text), `${path}: GET's Content-Length is its body's`);
      assert.equal(get.headers['transfer-encoding'], undefined, path);
      assert.equal(head.headers['transfer-encoding'], undefined, path);
      for (const name of ['content-type', 'cache-control']) assert.equal(head.headers[name], get.headers[name], `${path}: ${name}`);
      const length = Number(head.headers['content-length']);
      if (path === '/metrics') {
        // The figures move between the two requests (request counts, memory, the event loop): about the same length.
        assert.ok(Math.abs(length - Buffer.byteLength(get.text)) < 0.02 * length, `${path}: HEAD's Content-Length ${length} against GET's ${get.text.length}`);
      } else assert.equal(length, Buffer.byteLength(get.text), `${path}: HEAD's Content-Length is GET's`);
    }
  });
});

test('graceful close: in-flight requests finish, new ones get 503, then the port is closed', T, async () => {
  const engine = new FakeEngine({ slots: 2, delayMs: 2 });
  const scheduler = new Scheduler(engine);
  const server = new CompletionServer({ scheduler });
  const { port } = await server.listen({ port: 0 });
  const url = `http://127.0.0.1:${port}`;
  const inFlight = complete(url, { prompt: 'x', max_tokens: 20, stream: true });
  const res = await inFlight;
  // A second connection with a request whose body is not all sent yet: it is answered after close began.
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const body = JSON.stringify({ prompt: 'late', max_tokens: 2 });
  socket.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => (answer += c));
  await new Promise((r) => setTimeout(r, 20));
  const closed = server.close({ graceMs: 5000 });
  const health = await new Promise<string>((resolve) => {
    socket.write(body.slice(5));
    socket.once('end', () => resolve(answer));
  });
  assert.match(health, /^HTTP\/1\.1 503 /);
  assert.match(health, /"code":"shutting_down"/);
  assert.match(health, /Connection: close/i);
  const { done, chunks } = await streamed(res);
  assert.ok(done, 'the in-flight stream finished');
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'length');
  await closed;
  await assert.rejects(fetch(`${url}/health`));
  assert.equal(scheduler.closing, true);
  assert.equal(server.address, null);
  assert.equal(await server.close(), undefined, 'close is idempotent');
});

/** A raw connection kept alive after a first `GET /health`; `exchange` sends a request and resolves with all it got back once the server closed it ('' if it was closed before). */
async function keptAlive(port: number): Promise<{ exchange(request: string): Promise<string>; readonly closed: boolean }> {
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  let got = '';
  let closed = false;
  socket.on('data', (c: string) => (got += c));
  socket.on('error', () => {});
  const ended = new Promise<void>((r) => socket.once('close', () => ((closed = true), r())));
  socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  // The whole first response: its headers and Content-Length bytes of body.
  await eventually(() => {
    const head = got.indexOf('\r\n\r\n');
    const length = /content-length: (\d+)/i.exec(got)?.[1];
    return head >= 0 && length !== undefined && got.length >= head + 4 + Number(length);
  }, 'the first response');
  assert.match(got, /^HTTP\/1\.1 200 /);
  assert.match(got, /keep-alive/i);
  return {
    async exchange(request: string): Promise<string> {
      if (closed) return '';
      got = '';
      socket.write(request);
      await ended;
      return got;
    },
    get closed() {
      return closed;
    },
  };
}

test('graceful drain: close refuses new connections at once, keeps the open ones while the accepted requests finish, and answers a request on one 503 with Connection: close', T, async () => {
  const engine = new FakeEngine({ slots: 2, manual: true });
  const scheduler = new Scheduler(engine);
  const server = new CompletionServer({ scheduler });
  const { port } = await server.listen({ port: 0 });
  const url = `http://127.0.0.1:${port}`;
  // A stream whose steps are held by the test, and two connections idle after a first request.
  const stream = await complete(url, { prompt: 'x', max_tokens: 3, stream: true });
  await engine.waitForStep();
  const a = await keptAlive(port);
  const b = await keptAlive(port);
  let closedYet = false;
  const closed = server.close({ graceMs: 10_000 }).then(() => (closedYet = true));
  assert.equal(server.address, null, 'the listener is closed at once');
  await assert.rejects(
    new Promise((resolve, reject) => connect(port, '127.0.0.1').once('connect', resolve).once('error', reject)),
    /ECONNREFUSED/,
  );
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(a.closed || b.closed, false, 'the idle kept-alive connections are still open while the stream runs');
  const body = JSON.stringify({ prompt: 'late', max_tokens: 2 });
  const late = await a.exchange(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  assert.match(late, /^HTTP\/1\.1 503 /);
  assert.match(late, /\r\nConnection: close\r\n/i);
  assert.match(late, /"code":"shutting_down"/);
  const health = await b.exchange('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(health, /^HTTP\/1\.1 503 /);
  assert.match(health, /\r\nConnection: close\r\n/i);
  assert.match(health, /"status":"shutting_down"/);
  assert.equal(closedYet, false, 'close waits for the accepted stream');
  const releasing = engine.releaseUntil(closed);
  const s = await streamed(stream);
  assert.ok(s.done, 'the stream accepted before the shutdown finished');
  assert.equal(s.chunks.at(-1)!.choices[0]!.finish_reason, 'length');
  await releasing;
  await closed;
  assert.equal(scheduler.metrics().running, 0);
});

test('close after the grace period: what is left is cancelled (a stream gets an error event, a plain request 503)', T, async () => {
  const engine = new FakeEngine({ slots: 1, delayMs: 2 });
  const scheduler = new Scheduler(engine);
  const server = new CompletionServer({ scheduler });
  const { port } = await server.listen({ port: 0 });
  const url = `http://127.0.0.1:${port}`;
  const stream = await complete(url, { prompt: 'x', max_tokens: 250, stream: true });
  const plain = complete(url, { prompt: 'y', max_tokens: 5 }); // waits in the queue
  await eventually(() => scheduler.metrics().queueDepth === 1, 'the plain request to queue');
  const health = fetch(`${url}/health`); // keep-alive pool: a second connection
  assert.equal((await health).status, 200);
  await server.close({ graceMs: 30 });
  const s = await streamed(stream);
  assert.equal(s.done, false);
  assert.equal(s.chunks.at(-1)!.error!.code, 'shutting_down');
  const p = await plain;
  assert.equal(p.status, 503);
  assert.equal(((await p.json()) as { error: { code: string } }).error.code, 'shutting_down');
  assert.equal(scheduler.metrics().running, 0);
});

/** Sends `parts` on a raw socket (each after `gapMs`), and resolves with all it got back once the server closed it. */
function rawExchange(port: number, parts: readonly (string | Buffer)[], gapMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    socket.on('data', (c: Buffer) => got.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(got).toString('utf8')));
    void (async () => {
      for (const part of parts) {
        if (socket.destroyed) return;
        socket.write(part);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
  });
}

/** A raw HTTP/1.1 response: its status, headers (lower-cased) and body parsed as JSON. */
function parsedResponse(text: string): { status: number; headers: Record<string, string>; body: { error: { message: string; type: string; param: string | null; code: string } } } {
  const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  assert.equal(Number(headers['content-length']), Buffer.byteLength(body));
  return { status: Number(/^HTTP\/1\.1 (\d+) /.exec(statusLine!)![1]), headers, body: JSON.parse(body) };
}

test('requests Node\'s parser rejects get a JSON error and Connection: close: a bad method or Content-Length (400), headers too large (431)', T, async () => {
  await withServer({}, async ({ url, port }) => {
    const cases: [string, number, string][] = [
      ['FOO@ / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'bad_request'],
      ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'bad_request'],
      [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ];
    for (const [request, status, code] of cases) {
      const r = parsedResponse(await rawExchange(port, [request]));
      assert.equal(r.status, status, request.slice(0, 40));
      assert.equal(r.headers['connection'], 'close');
      assert.match(r.headers['content-type']!, /^application\/json/);
      assert.equal(r.body.error.code, code);
      assert.equal(r.body.error.type, 'invalid_request_error');
      assert.equal(r.body.error.param, null);
    }
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /^cudagraph_serve_http_responses_total\{code="400"\} 2$/m);
    assert.match(metrics, /^cudagraph_serve_http_responses_total\{code="431"\} 1$/m);
  });
});

test('a client too slow with its headers or its body gets 408 and the connection closed; a stream runs longer than the request timeout', T, async () => {
  await withServer({ engine: { delayMs: 10 }, server: { headersTimeoutMs: 200, requestTimeoutMs: 400 } }, async ({ url, port }) => {
    let t = performance.now();
    const headers = parsedResponse(await rawExchange(port, ['GET /health HTTP/1.1\r\n', 'Host: x\r\n']));
    assert.equal(headers.status, 408);
    assert.equal(headers.headers['connection'], 'close');
    assert.equal(headers.body.error.code, 'request_timeout');
    assert.ok(performance.now() - t < 2000, 'refused near the headers timeout');
    // The headers in time, the body trickling in: the request timeout ends it.
    t = performance.now();
    const body = '{"prompt": "abc", "max_tokens": 2}';
    const start = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const slow = parsedResponse(await rawExchange(port, [start, ...body.split('')], 50));
    assert.equal(slow.status, 408);
    assert.equal(slow.body.error.code, 'request_timeout');
    assert.ok(performance.now() - t < 2000);
    // A request sent at once whose streamed answer takes longer than both timeouts.
    const res = await complete(url, { prompt: 'abc', max_tokens: 80, stream: true });
    const { chunks, done } = await streamed(res);
    assert.ok(done);
    assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'length');
  });
});

test('server options and listen are checked', T, async () => {
  const scheduler = new Scheduler(new FakeEngine({ maxPositions: 100 }));
  assert.throws(() => new CompletionServer({ scheduler, maxTokensLimit: 100 }), /maxTokensLimit must be an integer in 1\.\.99/);
  assert.throws(() => new CompletionServer({ scheduler, defaultMaxTokens: 50, maxTokensLimit: 40 }), /defaultMaxTokens must be an integer in 1\.\.40/);
  assert.throws(() => new CompletionServer({ scheduler, nope: 1 } as never), /unknown option 'nope'/);
  assert.throws(() => new CompletionServer({} as never), /scheduler must be a Scheduler/);
  assert.throws(() => new CompletionServer({ scheduler, headersTimeoutMs: 0 }), /headersTimeoutMs must be an integer/);
  assert.throws(() => new CompletionServer({ scheduler, headersTimeoutMs: 5000, requestTimeoutMs: 4000 }), /requestTimeoutMs must be an integer in 5000\.\./);
  assert.throws(() => new CompletionServer({ scheduler, maxConnections: 0 }), /maxConnections must be an integer/);
  const s = new CompletionServer({ scheduler });
  assert.equal(s.defaultMaxTokens, 64);
  assert.equal(s.maxTokensLimit, 99);
  await assert.rejects(s.listen({ port: 70000 }), /port must be an integer in 0\.\.65535/);
  const { port } = await s.listen({ port: 0 });
  const other = new CompletionServer({ scheduler: new Scheduler(new FakeEngine()) });
  await assert.rejects(other.listen({ port }), /EADDRINUSE/);
  await s.close();
  await other.close();
  await assert.rejects(s.listen({ port: 0 }), /has been closed/);
});
