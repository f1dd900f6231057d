/**
 * `render` of summaries: a graph beyond the layout limits is drawn as its summary (one node per
 * group of ops, src/model/summary-graph.ts) with a one-line note on stderr; `--summary` asks for
 * one on any graph (SVG, PNG, DOT); `--full` keeps the refusal naming the limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CaptureEvent, ComputeGraph, MemcpyDir, StreamCapture, StreamId } from '../../src/index.js';
import { summarizeGraph } from '../../src/model/summary-graph.js';
import { mulberry32 } from '../../src/util/random.js';
import { assertUserError, cudagraph, graph50, inTempDir, pngSize, svgCounts } from './helpers.js';

/** A capture of `n` ops over 4 streams where 1 op in 500 first waits on another stream. */
function fewJoins(n: number): ComputeGraph {
  const rand = mulberry32(11);
  const cap = new StreamCapture();
  const ids = [0, 1, 2, 3].map(StreamId);
  for (const s of ids) cap.beginCapture(s);
  for (let i = 0; i < n; i++) {
    const s = Math.floor(rand() * 4);
    if (rand() < 0.002) {
      const e = CaptureEvent(i);
      cap.recordEvent(ids[(s + 1 + Math.floor(rand() * 3)) % 4]!, e);
      cap.waitEvent(ids[s]!, e);
    }
    if (rand() < 0.8) cap.recordKernel(ids[s]!, 'k', 128, 256, 0);
    else cap.recordMemcpy(ids[s]!, 'c', MemcpyDir.DeviceToDevice, 1 << 20);
  }
  return cap.endCapture(ids[0]!);
}

/** The SVG title of each drawn node and whether it is drawn thick and red. */
function drawnGroups(svg: string): { id: number; red: boolean }[] {
  return [...svg.matchAll(/<g id="node\d+" class="node">\s*<title>g(\d+)<\/title>\s*<\w+ ([^>]*)>/g)].map((m) => ({
    id: Number(m[1]),
    red: /stroke="#d62728" stroke-width="3"/.test(m[2]!),
  }));
}

test('a 20,000-op capture, beyond the limit, is drawn as its summary: a node per stream segment, lanes per stream, the critical path red, and a note', () => {
  inTempDir((dir) => {
    const g = fewJoins(20_000);
    const file = join(dir, 'big.json');
    writeFileSync(file, JSON.stringify(g));
    const summary = summarizeGraph(g);
    assert.equal(summary.by, 'segment');
    const r = cudagraph(['render', file, '-o', join(dir, 'big.svg')]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^wrote .*big\\.svg \\(SVG, summary: 20,000 nodes as ${summary.nodes.length} groups, ${summary.edges.length} edges between them, critical path through \\d+ groups highlighted\\)\\n$`));
    assert.match(
      r.stderr,
      /^cudagraph: note: .*big\.svg is a summary \(20,000 nodes are beyond what is laid out here\), each node one stream's ops between its joins; every node: write DOT \(-o <name>\.dot\) or pass --full \(refused above 5,000 nodes\)\n$/,
    );
    const svg = readFileSync(join(dir, 'big.svg'), 'utf8');
    const counts = svgCounts(svg);
    assert.equal(counts.nodes, summary.nodes.length);
    assert.equal(counts.edges, summary.edges.length);
    assert.equal(counts.clusters, 4, 'a lane per stream');
    const drawn = drawnGroups(svg);
    assert.deepEqual(
      drawn.filter((d) => d.red).map((d) => d.id).sort((a, b) => a - b),
      summary.nodes.filter((x) => x.critical).map((x) => x.id),
    );
    const first = summary.nodes[0]!;
    assert.ok(svg.includes(`${first.ops.toLocaleString('en-US')} ops: ${first.kinds.map((k) => `${k.count} ${k.kind}`).join(', ')}`), 'labelled with its ops by kind');

    const png = cudagraph(['render', file, '-o', join(dir, 'big.png'), '--scale', '0.3']);
    if (png.status === 0) {
      assert.ok(pngSize(readFileSync(join(dir, 'big.png'))).width > 0);
      assert.match(png.stderr, /^cudagraph: note: .*big\.png is a summary/);
    } else assert.match(png.stderr, /font/, 'PNG fails only for want of a font');
  });
});

test('--full keeps the refusal naming the limit; --summary with --full, or with Mermaid, is refused', () => {
  inTempDir((dir) => {
    const file = join(dir, 'big.json');
    writeFileSync(file, JSON.stringify(fewJoins(6_000)));
    assertUserError(
      cudagraph(['render', file, '--full', '-o', join(dir, 'big.svg')]),
      /^cudagraph: 6,000 nodes are too many to lay out as SVG here \(at most 5,000: .*\); write DOT instead .*, or leave out --full to draw a summary\n$/,
      '--full',
    );
    assertUserError(cudagraph(['render', file, '--full', '--summary', '-o', join(dir, 'big.svg')]), /^cudagraph: --summary and --full cannot be given together\n\(run cudagraph render --help for usage\)\n$/, 'both');
    assertUserError(cudagraph(['render', file, '--summary', '-o', join(dir, 'big.mmd')]), /^cudagraph: --summary draws \.svg, \.png or \.dot, not Mermaid\n\(run cudagraph render --help for usage\)\n$/, 'mmd');
  });
});

test('--summary on a small graph: SVG and DOT of the summary, with the note; without it DOT holds every node', () => {
  inTempDir((dir) => {
    const g = graph50();
    const file = join(dir, 'g.json');
    writeFileSync(file, JSON.stringify(g));
    const summary = summarizeGraph(g);
    const svg = cudagraph(['render', file, '--summary', '-o', join(dir, 'g.svg')]);
    assert.equal(svg.status, 0, svg.stderr);
    assert.match(svg.stderr, /^cudagraph: note: .*g\.svg is a summary, each node one stream's ops between its joins; leave out --summary for every node\n$/);
    assert.equal(svgCounts(readFileSync(join(dir, 'g.svg'), 'utf8')).nodes, summary.nodes.length);

    const dot = cudagraph(['render', file, '--summary', '-o', join(dir, 'g.dot')]);
    assert.equal(dot.status, 0, dot.stderr);
    assert.match(dot.stdout, /\(DOT, summary: 50 nodes as \d+ groups/);
    assert.match(dot.stderr, /^cudagraph: note: .*g\.dot is a summary/);
    const text = readFileSync(join(dir, 'g.dot'), 'utf8');
    assert.equal(text.match(/^\s+g\d+ \[label=/gm)?.length, summary.nodes.length);
    for (const e of summary.edges) assert.ok(text.includes(`g${e.from} -> g${e.to}`), `edge ${e.from}→${e.to}`);

    const full = cudagraph(['render', file, '-o', join(dir, 'full.dot')]);
    assert.equal(full.status, 0, full.stderr);
    assert.equal(full.stderr, '');
    assert.equal(readFileSync(join(dir, 'full.dot'), 'utf8').match(/^\s+n\d+ \[/gm)?.length, 50);
  });
});
