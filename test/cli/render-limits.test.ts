/**
 * render's limits on SVG and PNG (measured in src/cli/layout-limits.ts): a graph too large for the
 * WebAssembly layout is drawn as a summary, with a note on stderr saying so; with `--full` it is
 * refused in one line that says which format works, instead of ending in `internal error: Maximum
 * call stack size exceeded`; DOT and Mermaid have no limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph, NodeId } from '../../src/index.js';
import { dotToSvg } from '../../src/cli/picture.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { assertUserError, cudagraph, inTempDir } from './helpers.js';

/** A chain of `n` kernels on one stream, as a graph document. */
function chainJson(n: number): string {
  const nodes = Array.from({ length: n }, (_, id) => ({ id, kind: 'kernel', functionName: `k${id}`, grid: 1, block: 32, stream: 0 }));
  const edges = Array.from({ length: n - 1 }, (_, i) => [i, i + 1]);
  return JSON.stringify({ format: 'cudagraph.ComputeGraph', version: 1, nodes, edges });
}

test('a 300,000-node graph: with --full, SVG and PNG are refused in one line naming the limit and the formats that work; DOT and Mermaid are written', () => {
  inTempDir((dir) => {
    const file = join(dir, 'big.json');
    writeFileSync(file, chainJson(300_000));
    for (const out of ['big.svg', 'big.png']) {
      const started = Date.now();
      const r = cudagraph(['render', file, '--full', '-o', join(dir, out)]);
      assertUserError(
        r,
        /^cudagraph: 300,000 nodes are too many to lay out as (SVG|PNG) here \(at most 5,000: the WebAssembly Graphviz runs out of stack from about 11,000\); write DOT instead \(-o <name>\.dot; .*\) or Mermaid \(-o <name>\.mmd\), or see its shape with cudagraph inspect, or leave out --full to draw a summary\n$/,
        out,
      );
      assert.ok(Date.now() - started < 60_000, 'refused before any layout');
    }
    for (const out of ['big.dot', 'big.mmd']) {
      const r = cudagraph(['render', file, '-o', join(dir, out)]);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(statSync(join(dir, out)).size > 300_000 * 20, `${out} holds every node`);
    }
    assert.equal(readFileSync(join(dir, 'big.dot'), 'utf8').match(/^ {4}n\d+ \[/gm)?.length, 300_000);
  });
});

test('with --full, a small graph with many long edges (a long layout) is refused; a 5,000-node chain, at the limit, is drawn', () => {
  inTempDir((dir) => {
    // 300 nodes, each after 10 random earlier ones: 2,800 edges bending through ~35,000 virtual nodes (a 95 s layout).
    const g = new ComputeGraph();
    let seed = 999;
    const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 300; i++) g.addNode({ kind: 'empty' });
    const edges = new Map<string, [NodeId, NodeId]>();
    for (let v = 1; v < 300; v++) for (let j = 0; j < 10; j++) {
      const u = Math.floor(rnd() * v);
      edges.set(`${u}>${v}`, [NodeId(u), NodeId(v)]);
    }
    g.addEdges(edges.values());
    const dense = join(dir, 'dense.json');
    writeFileSync(dense, JSON.stringify(g));
    assertUserError(
      cudagraph(['render', dense, '--full', '-o', join(dir, 'dense.svg')]),
      /^cudagraph: this graph is too large to lay out as SVG here: its 300 nodes and the [\d,]+ bends of its long edges make [\d,]+ \(at most 12,000, .*\); write DOT instead/,
      'dense',
    );

    const file = join(dir, 'chain.json');
    writeFileSync(file, chainJson(5_000));
    const r = cudagraph(['render', file, '-o', join(dir, 'chain.svg')]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal((readFileSync(join(dir, 'chain.svg'), 'utf8').match(/<g id="node\d+" class="node">/g) ?? []).length, 5_000);
  });
});

test('a layout that runs out of stack anyway is a UsageError, and the next layout works', async () => {
  // 20,000 nodes in one chain, past the measured overflow (11,500), handed to the layout directly.
  const lines = ['digraph { node [shape=box];'];
  for (let i = 1; i < 20_000; i++) lines.push(`n${i - 1} -> n${i};`);
  lines.push('}');
  await assert.rejects(dotToSvg(lines.join('\n')), (e: unknown) => e instanceof UsageError && /ran out of stack .*write DOT instead/.test(e.message));
  assert.match(await dotToSvg('digraph { a -> b; }'), /<svg /);
});
