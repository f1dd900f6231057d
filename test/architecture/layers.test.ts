/**
 * The layout shows the architecture, and this test keeps it so, over the built files: imports point
 * down the layers (errors and utilities at the bottom; the model beside the binding, needing none of
 * it; the object layer above the binding's checked calls, never its raw declarations; NCCL's layer
 * above the object layer; the CLI and the entry points on top), and no value import runs in a circle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.js')) out.push(p);
  }
  return out;
}

/** Each built file and the files it imports at run time (compiled JS keeps value imports only). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of walk(src)) {
    const text = readFileSync(f, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]|(?:^|\n)\s*import\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
      deps.push(resolve(dirname(f), m[1] ?? m[2] ?? m[3]!));
    }
    g.set(f, deps);
  }
  return g;
}

/** The layer of a file: its top folder under src, with the binding split into result and the rest. */
function layer(file: string): string {
  const r = relative(src, file);
  // The binding's own index (the `cudagraph/driver` subpath) sits on its checked calls.
  if (r.startsWith('driver/result/') || r === 'driver/index.js') return 'driver/result';
  return r.includes('/') ? r.slice(0, r.indexOf('/')) : r;
}

/** What each layer may import (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  errors: [],
  util: ['errors'],
  model: ['errors', 'util'],
  driver: ['errors', 'util'],
  'driver/result': ['errors', 'util', 'driver'],
  cuda: ['errors', 'util', 'model', 'driver/result', 'driver'],
  nccl: ['errors', 'util', 'model', 'driver/result', 'driver', 'cuda'],
  // The decoder (its CPU reference and its GPU engines) on the object layer; the server on the decoder's engine interface.
  llm: ['errors', 'util', 'driver', 'cuda'],
  serve: ['errors', 'util', 'llm'],
  cli: ['errors', 'util', 'model', 'driver/result', 'driver', 'cuda', 'nccl', 'llm', 'serve', 'index.js'],
  entries: ['errors', 'util', 'model', 'driver/result', 'driver', 'cuda', 'nccl'],
  'index.js': ['errors', 'model', 'cuda', 'nccl'],
};

/** Files of the binding's raw layer the object layer must not reach past `result` for. */
const RAW = /^driver\/(sys|koffi|native|loader)\.js$/;
/** NCCL's own raw layer, which builds on the driver's (its lazy library slot and loader). */
const NCCL_RAW = /^nccl\/(sys|loader)\.js$/;

test('imports point down the layers, and the object layer reaches the binding only through result', () => {
  const wrong: string[] = [];
  for (const [file, deps] of graph()) {
    const from = layer(file);
    const allowed = ALLOWED[from];
    assert.ok(allowed !== undefined, `a layer for ${relative(src, file)}`);
    for (const dep of deps) {
      const to = layer(dep);
      const rawReach = (from === 'cuda' || from === 'nccl') && RAW.test(relative(src, dep)) && !NCCL_RAW.test(relative(src, file));
      if ((to !== from && !allowed.includes(to)) || rawReach) wrong.push(`${relative(src, file)} → ${relative(src, dep)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('no value import runs in a circle', () => {
  const g = graph();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        c.push(relative(src, w));
      } while (w !== v);
      if (c.length > 1) circles.push(c.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  assert.deepEqual(circles, []);
});
