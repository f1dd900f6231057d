/**
 * Stop strings: the matcher against a plain reference on text cut into random pieces, the field's
 * refusals, and the server ending a generation at a stop string (streamed and not) with the text
 * before it, finish reason "stop", and no more steps than it needed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { StopMatcher, stopProblem } from '../../src/serve/stop-strings.js';
import { chat, complete, expectedText, metric, streamed, withServer } from './helpers.js';

/** The text up to the first place any stop string starts in it. */
function reference(text: string, stops: readonly string[]): { text: string; stopped: boolean } {
  let cut = -1;
  for (const s of stops) {
    const at = text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut)) cut = at;
  }
  return cut < 0 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}

test('property: what the matcher emits, piece by piece, then flushes, is the text cut at the first piece that completes a stop string; nothing emitted is taken back', () => {
  const alphabet = fc.constantFrom('a', 'b', 'c', 'é', '😀');
  const str = (max: number) => fc.array(alphabet, { minLength: 1, maxLength: max }).map((a) => a.join(''));
  fc.assert(
    fc.property(str(40), fc.array(str(4), { minLength: 1, maxLength: 4 }), fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 40 }), (text, stops, cuts) => {
      const m = new StopMatcher(stops);
      let out = '';
      let at = 0;
      const chars = [...text];
      const pieces: string[] = [];
      for (const n of [...cuts, chars.length]) {
        if (at >= chars.length) break;
        pieces.push(chars.slice(at, at + n).join(''));
        at += n;
      }
      // The generation ends at the first piece after which the text holds a stop string: cut there.
      let want = { text, stopped: false };
      let seen = '';
      for (const p of pieces) {
        seen += p;
        const r = reference(seen, stops);
        if (r.stopped) {
          want = r;
          break;
        }
      }
      for (const p of pieces) {
        out += m.push(p);
        // Never more than the answer, at any point.
        assert.ok(want.text.startsWith(out), `${JSON.stringify(out)} is a beginning of the answer`);
      }
      out += m.flush();
      assert.equal(out, want.text);
      assert.equal(m.hasStopped(), want.stopped);
    }),
    { numRuns: 2000 },
  );
});

test('stopProblem: a string or 1 to 4 non-empty, well-formed strings of at most 256', () => {
  assert.equal(stopProblem('\n'), null);
  assert.equal(stopProblem(['a', 'bb', 'c', 'd']), null);
  assert.match(stopProblem([])!, /a list of 1 to 4 strings/);
  assert.match(stopProblem(['a', 'b', 'c', 'd', 'e'])!, /a list of 1 to 4 strings/);
  assert.match(stopProblem(5)!, /a list of 1 to 4 strings/);
  assert.match(stopProblem([''])!, /^stop\[0\] must be a non-empty string/);
  assert.match(stopProblem(['a', 3])!, /^stop\[1\]/);
  assert.match(stopProblem(['x'.repeat(257)])!, /at most 256/);
  assert.match(stopProblem(['\uD800'])!, /lone surrogates/);
});

test('HTTP: a stop string ends the generation with the text before it, finish "stop", streamed or not; fewer steps', { timeout: 30_000 }, async () => {
  await withServer({ engine: { slots: 2 } }, async ({ url, engine }) => {
    const full = expectedText('Hello there', 40).text;
    // A stop string taken from the middle of what the model would say.
    const stop = full.slice(12, 15);
    const want = full.slice(0, full.indexOf(stop));
    assert.ok(want.length < full.length - 3);
    const before = engine.stepCount;
    const plain = (await (await complete(url, { prompt: 'Hello there', max_tokens: 40, stop: [stop, 'never appears'] })).json()) as { choices: { text: string; finish_reason: string }[] };
    assert.equal(plain.choices[0]!.text, want);
    assert.equal(plain.choices[0]!.finish_reason, 'stop');
    assert.ok(engine.stepCount - before < 'Hello there'.length + 1 + 40, 'the generation ended early');
    const res = await complete(url, { prompt: 'Hello there', max_tokens: 40, stream: true, stop });
    let text = '';
    let finish: string | null = null;
    for (const line of (await res.text()).split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const c = JSON.parse(line.slice(6)) as { choices: { text: string; finish_reason: string | null }[] };
      text += c.choices[0]?.text ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, want);
    assert.equal(finish, 'stop');
    // A stop string that never comes: the whole text, finish "length".
    const none = (await (await complete(url, { prompt: 'Hello there', max_tokens: 40, stop: 'zzzz' })).json()) as { choices: { text: string; finish_reason: string }[] };
    assert.equal(none.choices[0]!.text, full);
    assert.equal(none.choices[0]!.finish_reason, 'length');
    // /metrics counts the two ended by a stop string as stops, not cancellations.
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="stop"}'), 2);
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="cancelled"}'), 0);
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="length"}'), 1);
    const bad = await complete(url, { prompt: 'x', stop: ['', 'a'] });
    assert.equal(bad.status, 400);
    const { error } = (await bad.json()) as { error: { code: string; param: string; message: string } };
    assert.equal(error.code, 'invalid_stop');
    assert.equal(error.param, 'stop');
    assert.match(error.message, /^stop\[0\] must be a non-empty string/);
  });
});

test('HTTP: a stop string completed only by the decoder\'s last bytes (a character max_tokens cut off, as U+FFFD) ends as one completed by a token: the text before it, finish "stop", counted as a stop; streamed or not, completion or chat', { timeout: 30_000 }, async () => {
  // The model says "ab" and the first byte of a two-byte character, then "x": after any prompt
  // ending in "x" (a completion) or "\n" (the chat template's last byte).
  const chain: Record<number, number> = { 120: 97, 10: 97, 97: 98, 98: 0xc3 };
  const next = (e: { token: number }): number => chain[e.token] ?? 120;
  await withServer({ engine: { slots: 2, next } }, async ({ url }) => {
    type Answer = { text: string; finish: string | null };
    const ask = async (endpoint: 'completions' | 'chat', stream: boolean, maxTokens: number, stop: string): Promise<Answer> => {
      const body = { ...(endpoint === 'chat' ? { messages: [{ role: 'user', content: 'hi' }] } : { prompt: 'x' }), max_tokens: maxTokens, stop, stream };
      const res = await (endpoint === 'chat' ? chat : complete)(url, body);
      assert.equal(res.status, 200);
      if (!stream) {
        const j = (await res.json()) as { choices: { text?: string; message?: { content: string }; finish_reason: string }[] };
        return { text: j.choices[0]!.text ?? j.choices[0]!.message!.content, finish: j.choices[0]!.finish_reason };
      }
      const s = await streamed(res);
      assert.ok(s.done);
      const chunks = s.chunks as unknown as { choices: { text?: string; delta?: { content?: string }; finish_reason: string | null }[] }[];
      return {
        text: chunks.map((c) => c.choices[0]?.text ?? c.choices[0]?.delta?.content ?? '').join(''),
        finish: chunks.at(-1)!.choices[0]!.finish_reason,
      };
    };
    let stops = 0;
    for (const endpoint of ['completions', 'chat'] as const) {
      for (const stream of [false, true]) {
        const what = `${endpoint}${stream ? ', streamed' : ''}`;
        // Without a stop string: "ab" and the cut-off character.
        assert.deepEqual(await ask(endpoint, stream, 3, 'zz'), { text: 'ab\uFFFD', finish: 'length' }, what);
        // "b\uFFFD" completed by the 4th token (the "x" that shows the character was cut), and by the decoder's end at max_tokens 3.
        assert.deepEqual(await ask(endpoint, stream, 4, 'b\uFFFD'), { text: 'a', finish: 'stop' }, `${what}: by a token`);
        assert.deepEqual(await ask(endpoint, stream, 3, 'b\uFFFD'), { text: 'a', finish: 'stop' }, `${what}: by the decoder's end`);
        assert.deepEqual(await ask(endpoint, stream, 3, '\uFFFD'), { text: 'ab', finish: 'stop' }, `${what}: the cut-off character alone`);
        stops += 3;
      }
    }
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="stop"}'), stops, 'every one ended by a stop string counts as a stop');
    assert.equal(await metric(url, 'cudagraph_serve_requests_total{outcome="length"}'), 4);
  });
});
