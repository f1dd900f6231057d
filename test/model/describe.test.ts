/**
 * `describe`, which quotes a refused value in every refusal, never throws: not for a parsed object
 * whose `constructor.name` is no string, a Proxy whose traps throw, a getter on `constructor` or a
 * revoked Proxy. Through the loaders, such a value gets the loader's typed refusal, not a raw
 * TypeError.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { ComputeGraph, FileFormatError, GraphError, InvalidArgumentError } from '../../src/index.js';
import { describe } from '../../src/util/validate.js';
import { configFromHuggingFace } from '../../src/llm/hf-config.js';
import { parseSafetensors } from '../../src/llm/safetensors.js';
import { run } from '../../src/cli/main.js';
import { tempDir } from '../cli/helpers.js';
import { refused } from '../support/refused.js';

/** The object `JSON.parse` makes of text that names its own constructor. */
const PARSED = '{"constructor":{"name":{"toString":1}}}';

function exotic(): [string, unknown, string][] {
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  class Named {}
  return [
    ['a parsed constructor whose name is an object', JSON.parse(PARSED), 'an object (Object)'],
    ['a constructor name that is a number', { constructor: { name: 7 } }, 'an object (Object)'],
    ['a Proxy whose get throws', new Proxy({}, { get: () => { throw new Error('trap'); } }), 'an object (Object)'],
    ['a getter on constructor that throws', Object.defineProperty({}, 'constructor', { get: () => { throw new Error('getter'); } }), 'an object (Object)'],
    ['a revoked Proxy', revocable.proxy, 'an object'],
    ['no prototype', Object.create(null), 'an object (Object)'],
    ['a class instance', new Named(), 'an object (Named)'],
    ['a long constructor name', { constructor: { name: 'N'.repeat(1000) } }, `an object (${'N'.repeat(40)}…)`],
    ['a constructor name with a line break', { constructor: { name: 'a\nb' } }, 'an object (a\\nb)'],
  ];
}

test('describe never throws, and quotes a class name only when it is a string, cut and on one line', () => {
  for (const [what, value, want] of exotic()) assert.equal(describe(value), want, what);
  fc.assert(
    fc.property(fc.anything({ withBigInt: true, withMap: true, withSet: true, withTypedArray: true, withNullPrototype: true, withObjectString: true }), (v) => {
      assert.equal(typeof describe(v), 'string');
      assert.equal(typeof describe({ constructor: { name: v } }), 'string');
    }),
    { numRuns: 300 },
  );
});

test('the loaders refuse an exotic value with their own typed error', async () => {
  // A revoked Proxy throws on any use (Array.isArray included), so only describe itself meets it.
  for (const [what, value] of exotic()) {
    if (what === 'a revoked Proxy') continue;
    const doc = { format: 'cudagraph.ComputeGraph', version: 2, nodes: [], edges: value };
    refused(() => ComputeGraph.fromJSON(doc), GraphError, 'ComputeGraph.fromJSON', /edges must be an array, got an object/);
    // A trap or getter that throws is the caller's own exception, and passes as it is.
    assert.throws(() => ComputeGraph.fromJSON({ ...doc, edges: [], nodes: [value] }), (e: unknown) => e instanceof GraphError || /^(trap|getter)$/.test((e as Error).message));
    const hf = { model_type: 'llama', hidden_size: value, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 300 };
    refused(() => configFromHuggingFace(hf), InvalidArgumentError, 'configFromHuggingFace', /hidden_size must be an integer/);
  }
  const text = `{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":${PARSED}}`;
  refused(() => ComputeGraph.fromJSON(text), GraphError, 'ComputeGraph.fromJSON', /edges must be an array, got an object \(Object\)/);
  await assert.rejects(ComputeGraph.readJSON([text]), (e: unknown) => e instanceof GraphError && /^ComputeGraph\.readJSON: edges must be an array, got an object \(Object\)$/.test(e.message));
  const header = new TextEncoder().encode(`{"a":{"dtype":"F32","shape":${PARSED},"data_offsets":[0,4]}}`);
  const bytes = new Uint8Array(8 + header.length + 4);
  new DataView(bytes.buffer).setUint32(0, header.length, true);
  bytes.set(header, 8);
  refused(() => parseSafetensors(bytes, 'x.safetensors'), FileFormatError, 'parseSafetensors', /tensor 'a' must have a shape of non-negative integers, got an object \(Object\)/);
});

test('the CLI reports a graph file holding such a value as an invalid graph file', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'g.json');
    writeFileSync(file, `{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":${PARSED}}`);
    const err: string[] = [];
    const status = await run(['inspect', file], { out: () => {}, err: (t) => void err.push(t), errIsTTY: false });
    assert.equal(status, 1, err.join(''));
    assert.match(err.join(''), /is not a cudagraph graph file: edges must be an array, got an object \(Object\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
