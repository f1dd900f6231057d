/**
 * The CLI on large graph files: files are read as they arrive (never whole), DOT is written as it
 * is made, `inspect --full` lists everything, and the progress bar waits a second and draws only
 * on a terminal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph, NodeId, StreamId } from '../../src/index.js';
import { run } from '../../src/cli/main.js';
import { ProgressBar } from '../../src/cli/progress.js';
import { tempDir } from './helpers.js';

/** A fan of `n` sources on two streams into one sink. */
function fan(n: number): ComputeGraph {
  const g = new ComputeGraph();
  const sink = g.addNode({ kind: 'empty', name: 'sink', stream: StreamId(0) });
  const edges: [NodeId, NodeId][] = [];
  for (let i = 0; i < n; i++) edges.push([g.addNode({ kind: 'empty', name: `src${i}`, stream: StreamId(1 + (i % 2)) }), sink]);
  g.addEdges(edges);
  return g;
}

function capture(): { out: string[]; err: string[]; io: { out: (t: string) => void; err: (t: string) => void; errIsTTY: boolean } } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (t) => void out.push(t), err: (t) => void err.push(t), errIsTTY: false } };
}

test('render -o .dot writes what toDot writes, critical path and title included, from a file read as it arrives', async () => {
  const dir = tempDir();
  try {
    const g = fan(3000);
    const file = join(dir, 'g.json');
    writeFileSync(file, JSON.stringify(g, null, 1));
    const c = capture();
    assert.equal(await run(['render', file, '-o', join(dir, 'out', 'g.dot'), '--title', 'fan'], c.io), 0, c.err.join(''));
    assert.equal(readFileSync(join(dir, 'out', 'g.dot'), 'utf8'), g.toDot({ title: 'fan', highlight: g.criticalPath().nodes }));
    assert.match(c.out.join(''), /^wrote .*g\.dot \(DOT, 3001 nodes, 3000 edges, 3 streams, critical path of 2 nodes highlighted\)\n$/);
    assert.equal(c.err.join(''), '', 'no progress bar off a terminal');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('inspect --full lists every source and join in the text; without it the lists are cut', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'g.json');
    writeFileSync(file, JSON.stringify(fan(200)));
    const cut = capture();
    assert.equal(await run(['inspect', file], cut.io), 0);
    assert.match(cut.out.join(''), /… 150 more …/);
    const full = capture();
    assert.equal(await run(['inspect', '--full', file], full.io), 0);
    const text = full.out.join('');
    assert.doesNotMatch(text, /more …|in all; --json/);
    for (let i = 0; i < 200; i++) assert.ok(text.includes(`src${i},`) || text.includes(`src${i}\n`), `src${i}`);
    assert.equal(text.split('\n').filter((l) => l.startsWith('  stream ')).length, 200, 'every join on its line');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the progress bar draws only on a terminal, and only once the work has run past its delay', () => {
  const drawn: string[] = [];
  const io = { out: () => {}, err: (t: string) => void drawn.push(t), errIsTTY: true };
  const late = new ProgressBar(io, 100, 10, 60_000);
  late.update(50, 'reading');
  late.done();
  assert.deepEqual(drawn, [], 'nothing within the delay');
  const now = new ProgressBar(io, 100, 10, 0);
  now.update(50, 'reading');
  assert.match(drawn.join(''), /\[#####-----\]  50% reading/);
  now.done();
  const off = new ProgressBar({ ...io, errIsTTY: false }, 100, 10, 0);
  drawn.length = 0;
  off.update(50, 'reading');
  off.done();
  assert.deepEqual(drawn, [], 'nothing off a terminal');
});

test("the progress bar's label (a file's path) cannot send control characters to the terminal", () => {
  const drawn: string[] = [];
  const bar = new ProgressBar({ out: () => {}, err: (t: string) => void drawn.push(t), errIsTTY: true }, 100, 10, 0);
  bar.update(50, 'reading evil\x1b]0;owned\x07\nforged line\u202e.json');
  bar.done();
  const text = drawn.join('');
  // The bar's own sequences only: carriage return and erase-line.
  assert.equal(text.replaceAll('\r\x1b[K', '').match(/[\u0000-\u001f\u007f-\u009f\u202e]/), null, JSON.stringify(text));
  assert.match(text, /reading evil\\u001b\]0;owned\\u0007\\u000aforged line\\u202e\.json/);
});
