/** The answers' stream events: `pieceEvent` is `sseEvent(piece(text))`, for any text and model name. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { chatAnswer } from '../../src/serve/chat-completions.js';
import { completionAnswer } from '../../src/serve/completions.js';
import { pieceEvents } from '../../src/serve/endpoint.js';
import { sseEvent } from '../../src/serve/sse.js';

const text = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('', '\u0000piece\u0000', '"', '\\', '\n', '\r\n', '\u2028', '\ud800'));

test('property: a piece\'s event, made from the template, is the event of the piece\'s object', () => {
  fc.assert(
    fc.property(text, fc.string({ unit: 'binary' }), fc.boolean(), (piece, model, usage) => {
      for (const answer of [completionAnswer(model, usage), chatAnswer(model, usage)]) {
        assert.equal(answer.pieceEvent(piece), sseEvent(answer.piece(piece)));
      }
    }),
    { numRuns: 300 },
  );
});

test('pieceEvents: a model name that holds the marker falls back to the plain way', () => {
  const model = '\u0000piece\u0000';
  const answer = completionAnswer(model, false);
  assert.equal(answer.pieceEvent('a'), sseEvent(answer.piece('a')));
  const odd = pieceEvents((t) => ({ a: t, b: t }));
  assert.equal(odd('x"y'), sseEvent({ a: 'x"y', b: 'x"y' }));
});

test('sseEvent: an object is one data line; a string keeps its lines as data lines', () => {
  assert.equal(sseEvent({ a: 'x\ny' }), 'data: {"a":"x\\ny"}\n\n');
  assert.equal(sseEvent('a\r\nb\nc'), 'data: a\ndata: b\ndata: c\n\n');
});
