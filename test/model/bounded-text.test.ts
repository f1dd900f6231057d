/** The functions that keep messages short: listText and nameText. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listText, nameText, NAME_MAX } from '../../src/model/bounded-text.js';

test('listText keeps the first and last few items and counts the rest; short lists are whole', () => {
  assert.equal(listText(3, String), '0, 1, 2');
  assert.equal(listText(9, String), '0, 1, 2, 3, 4, 5, 6, 7, 8');
  assert.equal(listText(1_000_000, String, ' → '), '0 → 1 → 2 → 3 → 4 → … 999,992 more … → 999997 → 999998 → 999999');
  let built = 0;
  listText(1_000_000, (i) => (built++, String(i)));
  assert.equal(built, 8, 'only the items shown are built');
  assert.equal(nameText('short'), 'short');
  const cut = nameText('x'.repeat(10_000));
  assert.equal(cut.length, NAME_MAX);
  assert.ok(cut.endsWith('…'));
  // An astral character is never cut in half.
  assert.doesNotMatch(nameText('😀'.repeat(100)), /[\ud800-\udbff](?![\udc00-\udfff])/);
});
