/** fontProblem: what passes as a font the PNG renderer can draw with (the CLI refusals are in render.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fontProblem } from '../../src/cli/font-file.js';
import { findFont } from '../../src/cli/fonts.js';
import { minimalFont } from './helpers.js';

test('fontProblem takes a TrueType table directory with the tables the renderer needs, a collection of them, and the system font', () => {
  // What passes the check: a TrueType table directory with the tables the renderer needs; a collection of them.
  const font = minimalFont();
  assert.equal(fontProblem(font), null);
  const ttc = new Uint8Array(16 + font.length);
  ttc.set(Buffer.from('ttcf'));
  new DataView(ttc.buffer).setUint32(8, 1);
  new DataView(ttc.buffer).setUint32(12, 16);
  ttc.set(font, 16);
  assert.equal(fontProblem(ttc), null, 'a collection');
  const system = findFont();
  if (system !== null) assert.equal(fontProblem(new Uint8Array(readFileSync(system))), null, `the system font ${system}`);
});
