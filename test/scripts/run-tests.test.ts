/** scripts/run-tests.mjs: a test that hangs fails the run after the default timeout instead of stalling it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../../scripts/run-tests.mjs', import.meta.url));

function run(files: Record<string, string>, env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'cg-run-tests-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    // Without NODE_TEST_CONTEXT: the runner it starts must report as a run of its own, not to this one.
    const { NODE_TEST_CONTEXT: _, ...outer } = process.env;
    return spawnSync(process.execPath, [script, dir], { encoding: 'utf8', env: { ...outer, ...env }, timeout: 60_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a hanging test fails after RUN_TESTS_TIMEOUT_MS; the others still run and pass', { timeout: 90_000 }, () => {
  const r = run(
    {
      'hang.test.js': "import { test } from 'node:test';\ntest('hangs', () => new Promise(() => setInterval(() => {}, 1000)));\n",
      'fine.test.js': "import { test } from 'node:test';\ntest('fine', () => {});\n",
    },
    { RUN_TESTS_TIMEOUT_MS: '500' },
  );
  assert.notEqual(r.status, 0, r.stdout);
  assert.equal(r.error, undefined, 'the run ended on its own');
  assert.match(r.stdout, /timed out after 500ms/);
  assert.match(r.stdout, /ok \d+ - fine/);
  assert.match(r.stdout, /# pass 1/);
});

test('RUN_TESTS_TIMEOUT_MS must be a whole number', () => {
  const r = run({ 'fine.test.js': "import { test } from 'node:test';\ntest('fine', () => {});\n" }, { RUN_TESTS_TIMEOUT_MS: '1.5' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /RUN_TESTS_TIMEOUT_MS must be a whole number of milliseconds, got '1.5'/);
});
