import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { ComputeGraph, NodeId } from '../../src/index.js';

// dist/test/cli/ → the package root, where bin/cudagraph.js lives.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const bin = join(root, 'bin', 'cudagraph.js');

function cudagraph(args: string[], cwd = root): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'cudagraph-cli-'));
}

test('cudagraph demo: says it ran on the CPU model and why, prints the summary, writes DOT and JSON', async () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', '--out', out]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^cudagraph demo: ran on the CPU model: this build has no GPU support yet/);
    const field = (name: string): string => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    assert.match(field('nodes'), /^29 \(kernel 14, memcpy 11, memset 3, hostCallback 1\)$/);
    assert.match(field('streams'), /^3 \(stream 0: 13, stream 1: 8, stream 2: 8\)$/);
    assert.match(field('levels'), /^\d+ \(widest: level \d+, \d+ nodes can run at once\)$/);
    assert.match(field('critical path'), /^\d+ nodes, cost \d+: upload .* → report accuracy$/);
    const dotPath = join(out, 'demo.dot');
    assert.ok(lines.some((l) => l.startsWith('DOT written to: ') && l.includes(dotPath)));

    // The JSON is a loadable graph that matches the printed summary.
    const graph = ComputeGraph.fromJSON(readFileSync(join(out, 'demo.json'), 'utf8'));
    assert.equal(graph.nodeCount(), 29);
    assert.deepEqual(graph.streams(), [0, 1, 2]);
    assert.equal(field('levels').split(' ')[0], String(graph.levels().length));
    const path = graph.criticalPath().nodes;
    assert.match(field('critical path'), new RegExp(`: ${path.map((id) => graph.node(id).name).join(' → ')}$`));
    // Forked work is joined back: the loss depends on both side streams.
    const loss = graph.nodes().find((n) => n.name === 'mean loss')!.id;
    for (const name of ['layer1.relu a', 'layer1.relu b', 'argmax rows 0-31', 'argmax rows 32-63']) {
      assert.ok(graph.isReachable(graph.nodes().find((n) => n.name === name)!.id, loss), name);
    }

    // The DOT is valid Graphviz with every node, one cluster per stream, the critical path in red.
    const graphviz = await Graphviz.load();
    const parsed = JSON.parse(graphviz.dot(readFileSync(dotPath, 'utf8'), 'json')) as { objects: { name: string; color?: string }[] };
    const nodes = parsed.objects.filter((o) => /^n\d+$/.test(o.name));
    assert.equal(nodes.length, 29);
    assert.deepEqual(parsed.objects.filter((o) => o.name.startsWith('cluster_')).map((o) => o.name).sort(), ['cluster_s0', 'cluster_s1', 'cluster_s2']);
    const red = nodes.filter((o) => o.color === '#d62728').map((o) => Number(o.name.slice(1))).sort((a, b) => a - b);
    assert.deepEqual(red, [...path].sort((a, b) => a - b));
    assert.ok(graph.isReachable(NodeId(path[0]!), NodeId(path.at(-1)!)));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('cudagraph demo --json prints the summary as data', () => {
  const out = tempDir();
  try {
    const r = cudagraph(['demo', '--json', '-o', out]);
    assert.equal(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout) as { mode: string; reason: string; nodes: number; edges: number; streams: unknown[]; files: { dot: string } };
    assert.equal(s.mode, 'cpu-model');
    assert.match(s.reason, /no GPU support/);
    assert.equal(s.nodes, 29);
    assert.equal(s.streams.length, 3);
    assert.ok(existsSync(s.files.dot));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('cudagraph demo writes to ./cudagraph-out by default', () => {
  const cwd = tempDir();
  try {
    const r = cudagraph(['demo'], cwd);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(join(cwd, 'cudagraph-out', 'demo.dot')));
    assert.ok(existsSync(join(cwd, 'cudagraph-out', 'demo.json')));
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('--help works for the program and for demo', () => {
  const top = cudagraph(['--help']);
  assert.equal(top.status, 0);
  assert.match(top.stdout, /Usage: cudagraph/);
  assert.match(top.stdout, /demo \[options\]/);
  const demo = cudagraph(['demo', '--help']);
  assert.equal(demo.status, 0);
  assert.match(demo.stdout, /--out <dir>/);
  assert.match(demo.stdout, /--json/);
});

test('user mistakes: one line on stderr, no stack trace, exit status 1', () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const cases: [string[], RegExp][] = [
      [['demo', '--bogus'], /^cudagraph: unknown option '--bogus'/],
      [['frobnicate'], /^cudagraph: unknown command 'frobnicate'/],
      [['demo', 'extra'], /^cudagraph: too many arguments/],
      [['demo', '--out', join(file, 'sub')], /^cudagraph: cannot write the demo's files to .*a-file.sub \(ENOTDIR\)/],
    ];
    for (const [args, message] of cases) {
      const r = cudagraph(args);
      assert.equal(r.status, 1, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, message, args.join(' '));
      assert.doesNotMatch(r.stderr, /^\s+at /m, `no stack trace for ${args.join(' ')}`);
    }
    // No command at all: the usage, on stderr.
    const none = cudagraph([]);
    assert.equal(none.status, 1);
    assert.match(none.stderr, /Usage: cudagraph/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
