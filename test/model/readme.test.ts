import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// dist/test/model/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));

test("the README's first example runs as written and prints what it says", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.includes("from 'cudagraph'"));
  assert.ok(block, 'README has a ```ts example importing cudagraph');
  // The example is TypeScript without type annotations, so it runs as JavaScript once the
  // package name points at the build.
  const code = block.replace("from 'cudagraph'", `from '${pathToFileURL(join(root, 'dist/src/index.js')).href}'`);
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-readme-'));
  try {
    const file = join(dir, 'example.mjs');
    writeFileSync(file, code);
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const promised = /\n\/\/ (\[.*)\n$/.exec(block)?.[1];
    assert.ok(promised, 'the example ends with a comment showing its output');
    assert.equal(r.stdout.trim(), promised);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
