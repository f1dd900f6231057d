/**
 * The package's subpaths: `cudagraph/model` reaches no binding code (the import graph from its
 * entry, walked over the built files, stays inside the model, the errors and the utilities), and
 * `cudagraph`, `cudagraph/model` and `cudagraph/driver` resolve through the package's `exports`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

const dist = fileURLToPath(new URL('../../src/', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Every built file `entry` imports, directly or not (relative imports only; packages are listed apart). */
function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { files, packages };
}

test('cudagraph/model loads no binding code: its import graph stays in the model, the errors and the utilities', () => {
  const { files, packages } = importGraph(join(dist, 'entries', 'model.js'));
  const outside = [...files].map((f) => relative(dist, f)).filter((f) => !/^(model|errors|util|entries)\//.test(f));
  assert.deepEqual(outside, [], 'files of other layers');
  assert.deepEqual([...packages].filter((p) => !p.startsWith('node:')), [], 'packages (koffi, …)');
  assert.ok(files.size > 10);
});

test('the package exports ".", "./model" and "./driver", each resolvable by name', { skip: !existsSync(join(root, 'package.json')) && 'no package.json' }, () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, { import: string; types: string }> };
  assert.deepEqual(Object.keys(pkg.exports), ['.', './model', './driver']);
  for (const e of Object.values(pkg.exports)) {
    assert.ok(existsSync(join(root, e.import)), e.import);
    assert.ok(existsSync(join(root, e.types)), e.types);
  }
  // A child resolving the package by its own name (self-reference through "exports").
  const probe = `
    const m = await import('cudagraph/model');
    const d = await import('cudagraph/driver');
    const all = await import('cudagraph');
    console.log(JSON.stringify([typeof m.StreamCapture, typeof m.GraphError, typeof m.Device, typeof d.result, typeof all.Device]));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['function', 'function', 'undefined', 'object', 'function']);
});
