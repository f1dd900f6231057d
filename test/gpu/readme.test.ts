/**
 * The README's driver-backed capture example, and the graph built node by node that continues it,
 * and docs/graph-cache.md's worked example, run as written on the GPU: compiled with the project's
 * tsc (they use `using` and top-level await) and checked against the output each one's last
 * comment promises.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gpuSuite } from './gpu.js';

// dist/test/gpu/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Compiles `code` (a README example importing 'cudagraph') with the project's tsc in dist/<name>, runs it, returns its output. */
function runExample(code: string, name: string): string {
  const dir = join(root, 'dist', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const index = join(root, 'dist', 'src', 'index.js');
    writeFileSync(join(dir, 'example.ts'), code.replaceAll("from 'cudagraph'", `from ${JSON.stringify(index)}`));
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '--target', 'ES2022', '--module', 'NodeNext',
        '--moduleResolution', 'NodeNext', '--lib', 'ES2022,ESNext.Disposable', '--types', 'node', '--strict',
        '--skipLibCheck', '--ignoreConfig', '--outDir', dir, join(dir, 'example.ts')],
      { encoding: 'utf8', cwd: root },
    );
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    const run = spawnSync(process.execPath, [join(dir, 'example.js')], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    return run.stdout.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

gpuSuite("README's driver-backed capture example", () => {
  test('compiles and prints what it promises', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .find((code) => code.includes('StreamGraphCapture.begin(stream'));
    assert.ok(block, 'README has the driver-backed capture example');
    const next = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.includes('Graph.create(device)'));
    assert.ok(next, 'README has the example of a graph built node by node');
    const promisedOf = (code: string): string | undefined => /\n\/\/ (.*)\n$/.exec(code)?.[1];
    assert.ok(promisedOf(block) && promisedOf(next), 'each example ends with a comment showing its output');
    const promised = `${promisedOf(block)}\n${promisedOf(next)}`;
    // Inside the project, so tsc finds @types/node; the package name points at the build.
    assert.equal(runExample(`${block}\n${next}`, 'readme-example'), promised);
  });
});

gpuSuite("README's conditional-node example", () => {
  test('compiles and prints what it promises', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.includes('captureWhile('));
    assert.ok(block, 'README has the conditional-node example');
    const promised = /\n\/\/ (.*)\n$/.exec(block)?.[1];
    assert.equal(promised, '10');
    assert.equal(runExample(block, 'readme-conditional'), promised);
  });
});

gpuSuite("docs/graph-cache.md's worked example", () => {
  test('compiles and prints what it promises', () => {
    const doc = readFileSync(join(root, 'docs', 'graph-cache.md'), 'utf8');
    const block = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.includes("from 'cudagraph'"));
    assert.ok(block, 'docs/graph-cache.md has an example importing cudagraph');
    const promised = /\n\/\/ (.*)\n$/.exec(block)?.[1];
    assert.equal(promised, '7 100 148.5 149.5');
    assert.equal(runExample(block, 'graph-cache-example'), promised);
  });
});

gpuSuite('examples/conditional-loop.mjs', () => {
  test('runs and prints the rounds of each start', () => {
    const run = spawnSync(process.execPath, [join(root, 'examples', 'conditional-loop.mjs')], { encoding: 'utf8', cwd: root });
    assert.equal(run.status, 0, run.stderr);
    // A WHILE body runs at least once (the default is 1): 0.5 is halved once.
    assert.equal(run.stdout.trim(), ['x = 1000: 10 rounds', 'x = 3: 2 rounds', 'x = 0.5: 1 rounds'].join('\n'));
  });
});
