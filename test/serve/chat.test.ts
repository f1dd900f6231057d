/**
 * POST /v1/chat/completions over the fake engine (and once over the CPU reference engine): the chat
 * template, the chat.completion object, the chunk stream as OpenAI's clients read it, every
 * refusal, stop strings and the end-of-turn marker, disconnects, errors, metrics.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { InvalidArgumentError } from '../../src/errors/base.js';
import { llamaConfig } from '../../src/llm/config.js';
import type { DecodeEntry } from '../../src/llm/engine.js';
import { CpuDecodeEngine } from '../../src/llm/reference-engine.js';
import { EOS, encode } from '../../src/llm/tokenizer.js';
import { syntheticWeights } from '../../src/llm/weights.js';
import { CHAT_MARKERS, END_OF_TURN, checkMessages, renderChat, type ChatMessage } from '../../src/serve/chat.js';
import { CompletionServer } from '../../src/serve/http.js';
import { Scheduler } from '../../src/serve/scheduler.js';
import { SSE_DONE, readSse } from '../../src/serve/sse.js';
import { defaultNext } from './fake-engine.js';
import { chat, complete, eventually, expectedText, metric, withServer } from './helpers.js';

const T = { timeout: 15_000 };

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hi' },
];
const RENDERED = '<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n';

/** A chunk of the stream, as OpenAI documents `chat.completion.chunk`. */
interface Chunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: { index: number; delta: { role?: string; content?: string }; logprobs: null; finish_reason: string | null }[];
  usage?: unknown;
  error?: { code: string; message: string };
}

/** The events of a stream, read as an OpenAI client reads them: each JSON chunk, and whether `[DONE]` ended it. */
async function chunks(res: Response): Promise<{ chunks: Chunk[]; done: boolean }> {
  const out: Chunk[] = [];
  let done = false;
  for await (const data of readSse(res.body!)) {
    assert.equal(done, false, 'nothing after [DONE]');
    if (data === SSE_DONE) done = true;
    else out.push(JSON.parse(data) as Chunk);
  }
  return { chunks: out, done };
}

/**
 * What OpenAI's clients build from the chunks (the `openai` package's stream accumulator): the
 * role and the content of choice 0, its finish reason; each missing one is an error there.
 */
function accumulate(cs: readonly Chunk[]): { role: string; content: string; finish: string } {
  let role: string | undefined;
  let content = '';
  let finish: string | undefined;
  for (const c of cs) {
    for (const choice of c.choices) {
      assert.equal(choice.index, 0);
      if (choice.delta.role !== undefined) role = choice.delta.role;
      content += choice.delta.content ?? '';
      if (choice.finish_reason !== null) finish = choice.finish_reason;
    }
  }
  assert.ok(role !== undefined, 'missing role for choice 0');
  assert.ok(finish !== undefined, 'missing finish_reason for choice 0');
  return { role, content, finish };
}

test('the chat template: each message as its marker, its content and the end of turn; then the assistant marker', () => {
  assert.equal(renderChat(CONVERSATION), RENDERED);
  assert.equal(renderChat([{ role: 'user', content: '' }]), '<|user|>\n<|end|>\n<|assistant|>\n');
  // Any order, an assistant message last included; multi-line and non-ASCII content as it is.
  assert.equal(
    renderChat([
      { role: 'user', content: 'Say "ü"\nplease' },
      { role: 'assistant', content: 'ü' },
      { role: 'system', content: 'late' },
    ]),
    '<|user|>\nSay "ü"\nplease<|end|>\n<|assistant|>\nü<|end|>\n<|system|>\nlate<|end|>\n<|assistant|>\n',
  );
  assert.equal(renderChat(CONVERSATION), renderChat(structuredClone(CONVERSATION)), 'deterministic');
  assert.equal(END_OF_TURN, '<|end|>');
  assert.deepEqual(Object.keys(CHAT_MARKERS), ['system', 'user', 'assistant', 'end']);
  // Refusals are typed, name the function and the field, and leave the messages alone.
  const bad = [{ role: 'user', content: 'a' }, { role: 'tool', content: 'b' }];
  const copy = structuredClone(bad);
  assert.throws(
    () => renderChat(bad as never),
    (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'messages[1].role' && /^renderChat: messages\[1\]\.role must be one of "system", "user", "assistant", got "tool"$/.test(e.message),
  );
  assert.deepEqual(bad, copy);
  assert.throws(() => checkMessages('op', [{ role: 'user', content: `x${END_OF_TURN}` }]), /^InvalidArgumentError: op: messages\[0\]\.content must not contain the chat template's marker "<\|end\|>"/);
  assert.deepEqual(checkMessages('op', CONVERSATION), CONVERSATION);
});

test('POST /v1/chat/completions: an OpenAI chat.completion of the rendered conversation, with usage', T, async () => {
  await withServer({ server: { model: 'tiny' } }, async ({ url }) => {
    const res = await chat(url, { model: 'whatever', messages: CONVERSATION, max_tokens: 7 });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    const want = expectedText(RENDERED, 7);
    assert.match(body.id as string, /^chatcmpl-[0-9a-f]{24}$/);
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'tiny');
    assert.ok(Math.abs((body.created as number) - Date.now() / 1000) < 5);
    assert.deepEqual(body.choices, [{ index: 0, message: { role: 'assistant', content: want.text }, logprobs: null, finish_reason: 'length' }]);
    const prompt = encode(RENDERED).length;
    assert.deepEqual(body.usage, { prompt_tokens: prompt, completion_tokens: 7, total_tokens: prompt + 7 });
    // The same text as a completion of the rendered prompt.
    const plain = (await (await complete(url, { prompt: RENDERED, max_tokens: 7 })).json()) as { choices: { text: string }[] };
    assert.equal(plain.choices[0]!.text, want.text);
    // max_completion_tokens is the same budget; none given is the default; null is absent; n: 1 is fine.
    const mct = (await (await chat(url, { messages: CONVERSATION, max_completion_tokens: 3, n: 1 })).json()) as { usage: { completion_tokens: number } };
    assert.equal(mct.usage.completion_tokens, 3);
    const d = (await (await chat(url, { messages: CONVERSATION, max_tokens: null, max_completion_tokens: null, n: null, stream: false })).json()) as { usage: { completion_tokens: number } };
    assert.equal(d.usage.completion_tokens, 64);
  });
  // EOS ends the reply: finish "stop", the EOS counted, not in the content.
  const L = encode(RENDERED).length;
  const next = (e: DecodeEntry): number => (e.position === L + 2 ? EOS : defaultNext(e));
  await withServer({ engine: { next } }, async ({ url }) => {
    const body = (await (await chat(url, { messages: CONVERSATION, max_tokens: 10 })).json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number } };
    const want = expectedText(RENDERED, 10, next);
    assert.equal(want.finish, 'stop');
    assert.equal(body.choices[0]!.finish_reason, 'stop');
    assert.equal(body.choices[0]!.message.content, want.text);
    assert.equal(body.usage.completion_tokens, want.tokens);
  });
});

test('stream: a role chunk, then content chunks, then one with finish_reason and an empty delta, then [DONE]', T, async () => {
  await withServer({ engine: { delayMs: 1 }, server: { model: 'm' } }, async ({ url }) => {
    const res = await chat(url, { messages: CONVERSATION, max_tokens: 12, stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const text = await res.text();
    // The wire format exactly: `data: <json>` and a blank line per event, [DONE] last.
    assert.match(text, /^(data: \{[^\n]*\}\n\n)+data: \[DONE\]\n\n$/);
    const events = text.split('\n\n').filter((e) => e !== '').map((e) => e.slice('data: '.length));
    assert.equal(events.at(-1), SSE_DONE);
    const cs = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    const first = cs[0]!;
    assert.match(first.id, /^chatcmpl-[0-9a-f]{24}$/);
    assert.deepEqual(first.choices, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
    for (const c of cs) {
      assert.equal(c.id, first.id);
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.created, first.created);
      assert.equal(c.model, 'm');
      assert.ok(!('usage' in c));
    }
    const middle = cs.slice(1, -1);
    assert.ok(middle.length > 0);
    for (const c of middle) {
      assert.equal(c.choices.length, 1);
      assert.deepEqual(Object.keys(c.choices[0]!.delta), ['content']);
      assert.notEqual(c.choices[0]!.delta.content, '');
      assert.equal(c.choices[0]!.finish_reason, null);
    }
    assert.deepEqual(cs.at(-1)!.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }]);
    assert.deepEqual(accumulate(cs), { role: 'assistant', content: expectedText(RENDERED, 12).text, finish: 'length' });
  });
});

test('stream_options.include_usage: usage null in every chunk, then a chunk with no choices and the usage', T, async () => {
  await withServer({}, async ({ url }) => {
    const { chunks: cs, done } = await chunks(await chat(url, { messages: [{ role: 'user', content: 'a' }], max_completion_tokens: 4, stream: true, stream_options: { include_usage: true } }));
    assert.ok(done);
    const prompt = encode(renderChat([{ role: 'user', content: 'a' }])).length;
    assert.deepEqual(cs.at(-1)!.choices, []);
    assert.deepEqual(cs.at(-1)!.usage, { prompt_tokens: prompt, completion_tokens: 4, total_tokens: prompt + 4 });
    for (const c of cs.slice(0, -1)) assert.equal(c.usage, null);
    assert.equal(cs.at(-2)!.choices[0]!.finish_reason, 'length');
    assert.equal(cs[0]!.choices[0]!.delta.role, 'assistant');
  });
});

test('400: every refusal names its field, the same rules as /v1/completions; nothing reaches the engine', T, async () => {
  await withServer({ engine: { maxPositions: 64 }, server: { maxTokensLimit: 32 } }, async ({ url, engine, scheduler }) => {
    const m = [{ role: 'user', content: 'x' }];
    const cases: [string | object, string, RegExp, string | null][] = [
      ['{"messages": [', 'invalid_json', /not valid JSON/, null],
      ['[]', 'invalid_json', /must be a JSON object, got an array/, null],
      [{}, 'invalid_messages', /^messages is required \(a list of \{ role, content \} objects\)$/, 'messages'],
      [{ messages: null }, 'invalid_messages', /^messages is required/, 'messages'],
      [{ messages: 'hi' }, 'invalid_messages', /^messages must be a list of \{ role, content \} objects, got "hi"$/, 'messages'],
      [{ messages: { role: 'user', content: 'x' } }, 'invalid_messages', /^messages must be a list .* got an object/, 'messages'],
      [{ messages: [] }, 'invalid_messages', /^messages must hold at least one message$/, 'messages'],
      [{ messages: ['hi'] }, 'invalid_messages', /^messages\[0\] must be an object \{ role, content \}, got "hi"$/, 'messages[0]'],
      [{ messages: [...m, null] }, 'invalid_messages', /^messages\[1\] must be an object .* got null$/, 'messages[1]'],
      [{ messages: [{ content: 'x' }] }, 'invalid_messages', /^messages\[0\]\.role is required \(one of "system", "user", "assistant"\)$/, 'messages[0].role'],
      [{ messages: [...m, { role: 'tool', content: 'x' }] }, 'invalid_messages', /^messages\[1\]\.role must be one of "system", "user", "assistant", got "tool"$/, 'messages[1].role'],
      [{ messages: [{ role: 'User', content: 'x' }] }, 'invalid_messages', /got "User"/, 'messages[0].role'],
      [{ messages: [{ role: 1, content: 'x' }] }, 'invalid_messages', /role must be one of .* got 1$/, 'messages[0].role'],
      [{ messages: [{ role: 'user' }] }, 'invalid_messages', /^messages\[0\]\.content must be a string \(lists of content parts are not taken\), got undefined$/, 'messages[0].content'],
      [{ messages: [{ role: 'assistant', content: null }] }, 'invalid_messages', /content must be a string .* got null$/, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: 5 }] }, 'invalid_messages', /content must be a string .* got 5$/, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }, 'invalid_messages', /content must be a string .* got an array$/, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: 'a <|user|> b' }] }, 'invalid_messages', /^messages\[0\]\.content must not contain the chat template's marker "<\|user\|>"/, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: 'x', name: 'bob' }] }, 'invalid_messages', /^messages\[0\] has an unknown field "name": a message takes only role and content$/, 'messages[0].name'],
      [{ messages: m, n: 2 }, 'invalid_n', /^n must be 1 \(this server generates one choice a request\), got 2$/, 'n'],
      [{ messages: m, n: 0 }, 'invalid_n', /got 0$/, 'n'],
      [{ messages: m, n: '1' }, 'invalid_n', /got "1"$/, 'n'],
      [{ messages: m, max_tokens: 0 }, 'invalid_max_tokens', /^max_tokens must be an integer from 1 to 32, got 0$/, 'max_tokens'],
      [{ messages: m, max_tokens: 2.5 }, 'invalid_max_tokens', /got 2\.5$/, 'max_tokens'],
      [{ messages: m, max_tokens: '8' }, 'invalid_max_tokens', /got "8"$/, 'max_tokens'],
      [{ messages: m, max_completion_tokens: 33 }, 'invalid_max_tokens', /^max_completion_tokens must be an integer from 1 to 32, got 33$/, 'max_completion_tokens'],
      [{ messages: m, max_completion_tokens: -1 }, 'invalid_max_tokens', /^max_completion_tokens must be .* got -1$/, 'max_completion_tokens'],
      [{ messages: m, max_tokens: 4, max_completion_tokens: 4 }, 'invalid_max_tokens', /^give max_completion_tokens or max_tokens, not both/, 'max_completion_tokens'],
      [{ messages: m, prompt: 'x' }, 'unknown_field', /^unknown field "prompt": this server takes only messages, max_tokens, max_completion_tokens, n, stream, stream_options, model, temperature, top_p, top_k, seed, stop$/, 'prompt'],
      [{ messages: m, tools: [] }, 'unknown_field', /unknown field "tools"/, 'tools'],
      [{ messages: m, stream: 'yes' }, 'invalid_stream', /^stream must be a boolean/, 'stream'],
      [{ messages: m, stream_options: { include_usage: true } }, 'invalid_stream_options', /only taken with "stream": true/, 'stream_options'],
      [{ messages: m, model: 5 }, 'invalid_model', /^model must be a string/, 'model'],
      [{ messages: m, temperature: 2.5 }, 'invalid_sampling', /^temperature must be a number from 0 to 2, got 2\.5/, 'temperature'],
      [{ messages: m, temperature: 1, top_p: 0 }, 'invalid_sampling', /^top_p must be a number in \(0, 1\]/, 'top_p'],
      [{ messages: m, top_k: -2 }, 'invalid_sampling', /^top_k must be an integer ≥ 0/, 'top_k'],
      [{ messages: m, seed: 1.5 }, 'invalid_sampling', /^seed must be a safe integer/, 'seed'],
      [{ messages: m, stop: ['a', 'b', 'c', 'd', 'e'] }, 'invalid_stop', /^stop must be a string or a list of 1 to 4 strings/, 'stop'],
      [{ messages: m, stop: [''] }, 'invalid_stop', /^stop\[0\] must be a non-empty string/, 'stop'],
      // The rendered prompt is what must fit: BOS, 31 bytes of template and 32 of content.
      [{ messages: [{ role: 'user', content: 'x'.repeat(32) }], max_tokens: 1 }, 'context_length_exceeded', /context is 64 tokens, but 65 were asked for \(64 in the prompt, 1 to generate\); shorten the messages or lower max_tokens$/, 'messages'],
      [{ messages: [{ role: 'user', content: 'x'.repeat(32) }], max_completion_tokens: 1 }, 'context_length_exceeded', /shorten the messages or lower max_completion_tokens$/, 'messages'],
    ];
    for (const [body, code, message, param] of cases) {
      const res = await chat(url, body);
      const what = `${typeof body === 'string' ? body : JSON.stringify(body).slice(0, 80)}`;
      assert.equal(res.status, 400, what);
      assert.match(res.headers.get('content-type')!, /^application\/json/);
      const { error } = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
      assert.deepEqual({ code: error.code, type: error.type, param: error.param }, { code, type: 'invalid_request_error', param }, what);
      assert.match(error.message, message, what);
    }
    // Nothing ran, nothing waits, and only the two context refusals reached the scheduler (which refused them up front).
    assert.equal(engine.stepCount, 0);
    const s = scheduler.metrics();
    assert.equal(s.running + s.queueDepth, 0);
    assert.equal(s.refused.contextLength, 2);
    // Just inside the context is taken.
    assert.equal((await chat(url, { messages: [{ role: 'user', content: 'x'.repeat(31) }], max_tokens: 1 })).status, 200);
  });
});

test('stop strings: the reply ends before the first one, finish "stop", streamed or not, with fewer steps', T, async () => {
  await withServer({ engine: { slots: 2 } }, async ({ url, engine }) => {
    const full = expectedText(RENDERED, 40).text;
    const stop = full.slice(10, 13);
    const want = full.slice(0, full.indexOf(stop));
    assert.ok(want.length < full.length - 3);
    const before = engine.stepCount;
    const plain = (await (await chat(url, { messages: CONVERSATION, max_tokens: 40, stop: [stop, 'never appears'] })).json()) as { choices: { message: { content: string }; finish_reason: string }[] };
    assert.deepEqual(plain.choices[0]!.message, { role: 'assistant', content: want });
    assert.equal(plain.choices[0]!.finish_reason, 'stop');
    assert.ok(engine.stepCount - before < RENDERED.length + 1 + 40, 'the generation ended early');
    const { chunks: cs, done } = await chunks(await chat(url, { messages: CONVERSATION, max_tokens: 40, stream: true, stop }));
    assert.ok(done);
    assert.deepEqual(accumulate(cs), { role: 'assistant', content: want, finish: 'stop' });
    // A stop string that never comes: the whole reply, finish "length".
    const none = (await (await chat(url, { messages: CONVERSATION, max_tokens: 40, stop: 'zzzz' })).json()) as { choices: { message: { content: string }; finish_reason: string }[] };
    assert.equal(none.choices[0]!.message.content, full);
    assert.equal(none.choices[0]!.finish_reason, 'length');
  });
});

test('the end-of-turn marker ends the reply like EOS (finish "stop"), and no part of it is ever sent', T, async () => {
  const L = encode(RENDERED).length;
  // The reply the fake writes: "Hi <|" (a false start of the marker), then the marker, then more.
  const reply = [...new TextEncoder().encode(`Hi <|there${END_OF_TURN}more text`)];
  const next = (e: DecodeEntry): number => (e.position >= L - 1 ? reply[Math.min(e.position - (L - 1), reply.length - 1)]! : defaultNext(e));
  await withServer({ engine: { next, delayMs: 1 } }, async ({ url, scheduler }) => {
    const plain = (await (await chat(url, { messages: CONVERSATION, max_tokens: 30 })).json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number } };
    assert.equal(plain.choices[0]!.message.content, 'Hi <|there');
    assert.equal(plain.choices[0]!.finish_reason, 'stop');
    assert.ok(plain.usage.completion_tokens < 30);
    const { chunks: cs, done } = await chunks(await chat(url, { messages: CONVERSATION, max_tokens: 30, stream: true, stop: 'zzz' }));
    assert.ok(done);
    assert.deepEqual(accumulate(cs), { role: 'assistant', content: 'Hi <|there', finish: 'stop' });
    assert.ok(cs.every((c) => !(c.choices[0]?.delta.content ?? '').includes('<|e')), 'the marker is held back, never sent');
    // /v1/completions knows no end of turn: the same prompt runs on past the marker.
    const raw = (await (await complete(url, { prompt: RENDERED, max_tokens: 20 })).json()) as { choices: { text: string }[] };
    assert.equal(raw.choices[0]!.text, `Hi <|there${END_OF_TURN}mor`);
    assert.equal(scheduler.metrics().running, 0);
    // The two replies ended at the marker are counted as stops, not cancellations.
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="stop"}'), 2);
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="cancelled"}'), 0);
  });
});

test('a chat client that disconnects mid-stream cancels its request and frees its slot', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 } }, async ({ port, url, scheduler, engine }) => {
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: { 'Content-Type': 'application/json' } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          seen += c;
          // Leave after the role chunk and at least one content chunk.
          if (seen.split('\n\n').length > 3) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', (e) => (e.message === 'socket hang up' || (e as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(e)));
      // The fake's context is 256 positions, of which the prompt takes 62.
      req.end(JSON.stringify({ messages: CONVERSATION, max_tokens: 190, stream: true }));
    });
    assert.match(seen, /^data: \{[^\n]*"delta":\{"role":"assistant","content":""\}/);
    await eventually(() => scheduler.metrics().running === 0, 'the slot to be freed');
    const m = scheduler.metrics();
    assert.equal(m.requests.cancelled, 1);
    assert.ok(m.generatedTokens < 190);
    const steps = engine.stepCount;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(engine.stepCount, steps, 'no steps after the cancel');
    // The slot is free for the next request.
    assert.equal((await chat(url, { messages: CONVERSATION, max_tokens: 3 })).status, 200);
    // A plain request whose client gives up is cancelled too.
    const ac = new AbortController();
    const pending = chat(url, { messages: CONVERSATION, max_tokens: 190 }, { signal: ac.signal });
    await eventually(() => scheduler.metrics().running === 1, 'the request to run');
    ac.abort();
    await assert.rejects(pending);
    await eventually(() => scheduler.metrics().requests.cancelled === 2 && scheduler.metrics().running === 0, 'the second cancel');
  });
});

test('429, 500 and the stream error event: the same answers as /v1/completions', T, async () => {
  await withServer({ engine: { slots: 1, delayMs: 2 }, scheduler: { queueLimit: 0 } }, async ({ url }) => {
    const running = await chat(url, { messages: CONVERSATION, max_tokens: 30, stream: true });
    const full = await chat(url, { messages: CONVERSATION, max_tokens: 2 });
    assert.equal(full.status, 429);
    assert.equal(full.headers.get('retry-after'), '1');
    assert.equal(((await full.json()) as { error: { code: string } }).error.code, 'queue_full');
    assert.ok((await chunks(running)).done);
  });
  // Prompts token by token: step 40 falls inside the second request's reply.
  await withServer({ engine: { failSteps: [1, 40], delayMs: 1 }, scheduler: { prefillChunk: 1 } }, async ({ url }) => {
    const res = await chat(url, { messages: CONVERSATION, max_tokens: 3 });
    assert.equal(res.status, 500);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'engine_error');
    // A stream that already began: the role chunk, maybe content, then an error event and no [DONE].
    const s = await chunks(await chat(url, { messages: CONVERSATION, max_tokens: 10, stream: true }));
    assert.equal(s.done, false);
    assert.equal(s.chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.equal(s.chunks.at(-1)!.error!.code, 'engine_error');
  });
});

test('/metrics counts chat requests by path; GET /v1/models is unchanged', T, async () => {
  await withServer({ server: { model: 'm2' } }, async ({ url }) => {
    await chat(url, { messages: CONVERSATION, max_tokens: 2 });
    await chat(url, { messages: [] });
    await complete(url, { prompt: 'x', max_tokens: 1 });
    await fetch(`${url}/nowhere`);
    const text = await (await fetch(`${url}/metrics`)).text();
    const value = (series: string): number => Number(new RegExp(`^${series.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    assert.equal(value('cudagraph_serve_http_requests_total{path="/v1/chat/completions"}'), 2);
    assert.equal(value('cudagraph_serve_http_requests_total{path="/v1/completions"}'), 1);
    assert.equal(value('cudagraph_serve_http_requests_total{path="other"}'), 1);
    assert.equal(value('cudagraph_serve_http_requests_total{path="/metrics"}'), 1);
    assert.equal(value('cudagraph_serve_http_responses_total{code="400"}'), 1);
    assert.equal(value('cudagraph_serve_requests_total{outcome="length"}'), 2);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(models.data.map((d) => d.id), ['m2']);
  });
});

test('over the CPU reference engine: a chat reply is the completion of the rendered conversation, streamed or not', { timeout: 60_000 }, async () => {
  const config = llamaConfig('chat-test', { layers: 2, dim: 64, heads: 4, kvHeads: 2, hidden: 128, maxPositions: 256 });
  const engine = new CpuDecodeEngine(config, syntheticWeights(config, 3), { slots: 2 });
  const scheduler = new Scheduler(engine);
  const server = new CompletionServer({ scheduler, model: 'ref' });
  const { port } = await server.listen({ port: 0 });
  const url = `http://127.0.0.1:${port}`;
  try {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Once upon a time' }];
    const prompt = renderChat(messages);
    const want = (await (await complete(url, { prompt, max_tokens: 16 })).json()) as { choices: { text: string; finish_reason: string }[]; usage: unknown };
    const got = (await (await chat(url, { messages, max_tokens: 16 })).json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: unknown };
    // The end-of-turn stop only cuts the chat reply where the completion holds the marker.
    const cut = want.choices[0]!.text.split(END_OF_TURN)[0]!;
    assert.equal(got.choices[0]!.message.content, cut);
    if (cut === want.choices[0]!.text) assert.deepEqual(got.usage, want.usage);
    const s = await chunks(await chat(url, { messages, max_tokens: 16, stream: true, seed: null }));
    assert.ok(s.done);
    assert.equal(accumulate(s.chunks).content, cut);
  } finally {
    await server.close({ graceMs: 0 });
    engine.dispose();
  }
});
