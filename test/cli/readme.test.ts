import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph } from '../../src/index.js';
import { MLP_PROGRAM } from '../../src/cli/workload.js';
import { modelGraph, sameDag } from '../../src/cli/workload-model.js';
import { cudagraph, pngSize, root } from './helpers.js';

const readme = readFileSync(join(root, 'README.md'), 'utf8');

test('the README keeps its two set-up commands at the top, then the quick start', () => {
  const first = /```sh\n([\s\S]*?)```/.exec(readme)![1]!;
  assert.match(first, /^npm ci && npm run build && npx cudagraph demo {3}# /);
  assert.match(first, /\nnpm test {2,}# /);
  assert.ok(readme.indexOf('## Quick start') > readme.indexOf(first));
  assert.ok(readme.indexOf('## Quick start') < readme.indexOf('cudagraph has three faces'));
});

test("the quick start's commands are the CLI's, with options it accepts", () => {
  const start = readme.indexOf('## Quick start');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))![1]!;
  const commands = block.split('\n').filter((l) => l.startsWith('npx cudagraph '));
  assert.ok(commands.length >= 5);
  for (const line of commands) {
    const args = line.replace(/#.*$/, '').trim().split(/\s+/).slice(2);
    // `--help` after the arguments: commander checks the command and its options, runs nothing.
    const r = cudagraph([...args.filter((a) => !a.includes('cudagraph-out')), '--help']);
    assert.equal(r.status, 0, `${line}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^Usage: cudagraph ${args[0]}`), line);
  }
});

test("the README's picture is the captured demo graph: the program's nodes and edges, drawn", () => {
  const img = /<img src="(docs\/img\/[^"]+\.png)"/.exec(readme)![1]!;
  const png = new Uint8Array(readFileSync(join(root, img)));
  const { width, height } = pngSize(png);
  assert.ok(width > 500 && height > 1000, `${width}×${height}`);
  // Its source, read back from the driver on the H200: the same DAG the CPU model records, so the
  // picture stays true to the demo's program (change the program, re-run the demo on a GPU).
  const source = join(root, img.replace(/\.png$/, '.json'));
  assert.ok(existsSync(source));
  assert.ok(sameDag(ComputeGraph.fromJSON(readFileSync(source, 'utf8')), modelGraph(MLP_PROGRAM)));
});
