import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { ComputeGraph, MemcpyDir } from '../../src/index.js';
import { findFont, loadFont } from '../../src/cli/fonts.js';
import { mermaidText, toMermaid } from '../../src/cli/mermaid.js';
import { dotToSvg, formatOf, svgToPng } from '../../src/cli/picture.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { assertUserError, cudagraph, graph50, minimalFont, pngSize, svgCounts, inTempDir, tempDir, upwardEdges } from './helpers.js';

const font = findFont();

function withGraph(body: (dir: string, file: string, graph: ComputeGraph) => Promise<void> | void): () => Promise<void> {
  return async () => {
    const dir = tempDir();
    try {
      const graph = graph50();
      const file = join(dir, 'g50.json');
      writeFileSync(file, JSON.stringify(graph));
      await body(dir, file, graph);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

test('the sample graph: 50 nodes over 4 streams with cross-stream joins', () => {
  const g = graph50();
  assert.equal(g.nodeCount(), 50);
  assert.deepEqual(g.streams(), [0, 1, 2, 3]);
  assert.ok(g.edges().filter(([u, v]) => g.node(u).stream !== g.node(v).stream).length >= 8);
});

test(
  'render → SVG: every node and edge, one lane per stream, the critical path thick and red',
  withGraph((dir, file, graph) => {
    const out = join(dir, 'pics', 'g50.svg');
    const r = cudagraph(['render', file, '-o', out]);
    assert.equal(r.status, 0, r.stderr);
    const path = graph.criticalPath().nodes;
    assert.equal(r.stdout, `wrote ${out} (SVG, 50 nodes, ${graph.edgeCount()} edges, 4 streams, critical path of ${path.length} nodes highlighted)\n`);
    const svg = readFileSync(out, 'utf8');
    assert.deepEqual(svgCounts(svg), { nodes: 50, edges: graph.edgeCount(), clusters: 4, highlighted: [...path].sort((a, b) => a - b) });
    assert.match(svg, /<text[^>]*>g50\.json: 50 nodes on 4 streams; critical path thick and red<\/text>/);
    // Shapes by kind: kernels are boxes (4-point polygons), memsets hexagons (6 points).
    const memset = graph.nodes().find((n) => n.kind === 'memset')!;
    const group = new RegExp(`<title>n${memset.id}</title>\\s*<polygon [^>]*points="([^"]+)"`).exec(svg);
    assert.equal(group![1]!.trim().split(/\s+/).length, 7, 'a closed hexagon has 7 points');

    // Every edge points down (Graphviz ranks the whole graph at once, not cluster by cluster).
    assert.deepEqual(upwardEdges(svg, graph.edges()), []);

    const plain = join(dir, 'plain.svg');
    assert.equal(cudagraph(['render', file, '-o', plain, '--no-critical-path', '--title', '']).status, 0);
    const p = readFileSync(plain, 'utf8');
    assert.deepEqual(svgCounts(p).highlighted, []);
    assert.doesNotMatch(p, /critical path/);
  }),
);

test(
  'render → PNG: a valid PNG of sensible size, scaled by --scale, with its text drawn',
  { skip: font === null ? 'no font file on this machine (render then refuses PNG with a message, tested below)' : false },
  withGraph((dir, file) => {
    const out = join(dir, 'g50.png');
    const r = cudagraph(['render', file, '-o', out]);
    assert.equal(r.status, 0, r.stderr);
    const png = new Uint8Array(readFileSync(out));
    const { width, height } = pngSize(png);
    assert.match(r.stdout, new RegExp(`^wrote .*g50\\.png \\(PNG, ${width}×${height} px, 50 nodes, .* font .+\\)\\n$`));
    // A 4-lane graph of 50 nodes: wider than a phone screen, not a poster.
    assert.ok(width >= 800 && width <= 4000 && height >= 1000 && height <= 8000, `${width}×${height}`);

    const half = join(dir, 'half.png');
    assert.equal(cudagraph(['render', file, '-o', half, '--scale', '0.75']).status, 0);
    const small = pngSize(new Uint8Array(readFileSync(half)));
    assert.ok(Math.abs(small.width - width / 2) <= 1 && Math.abs(small.height - height / 2) <= 1, `${small.width}×${small.height} is half of ${width}×${height}`);
  }),
);

test('PNG text is drawn with the font: the same picture without its text differs', { skip: font === null ? 'no font file on this machine' : false }, async () => {
  const svg = await dotToSvg('digraph { a [label="kernel <<<1, 32>>>", shape=box]; b [label="memcpy HtoD 4 KiB"]; a -> b; }');
  const noText = svg.replace(/<text[^>]*>[^<]*<\/text>/g, '');
  const withText = await svgToPng(svg);
  const without = await svgToPng(noText);
  assert.deepEqual([withText.width, withText.height], [without.width, without.height]);
  assert.notDeepEqual(Buffer.from(withText.bytes), Buffer.from(without.bytes));
});

test(
  'render → DOT and Mermaid: every node and edge, lanes, the critical path',
  withGraph(async (dir, file, graph) => {
    const path = graph.criticalPath().nodes;
    const dot = join(dir, 'g.dot');
    assert.equal(cudagraph(['render', file, '-o', dot]).status, 0);
    const text = readFileSync(dot, 'utf8');
    assert.match(text, /^digraph ComputeGraph \{\n  graph \[rankdir=TB, newrank=true,/);
    const parsed = JSON.parse((await Graphviz.load()).dot(text, 'json')) as { objects: { name: string }[]; edges?: unknown[] };
    assert.equal(parsed.objects.filter((o) => /^n\d+$/.test(o.name)).length, 50);
    assert.equal(parsed.objects.filter((o) => o.name.startsWith('cluster_')).length, 4);

    const mmd = join(dir, 'g.mmd');
    assert.equal(cudagraph(['render', file, '-o', mmd]).status, 0);
    const m = readFileSync(mmd, 'utf8');
    assert.match(m, /^---\ntitle: "g50\.json: 50 nodes on 4 streams; critical path thick and red"\n---\nflowchart TB\n/);
    const nodeLines = m.split('\n').filter((l) => /^\s+n\d+[[{(]/.test(l));
    assert.equal(nodeLines.length, 50);
    const edgeLines = m.split('\n').filter((l) => /^ {2}n\d+ (-->|-\.->) n\d+$/.test(l));
    assert.equal(edgeLines.length, graph.edgeCount());
    // Cross-stream edges dashed, the others solid.
    const cross = graph.edges().filter(([u, v]) => graph.node(u).stream !== graph.node(v).stream).length;
    assert.equal(edgeLines.filter((l) => l.includes('-.->')).length, cross);
    assert.equal((m.match(/^ {2}subgraph stream\d+\["stream \d+"\]$/gm) ?? []).length, 4);
    assert.equal((m.match(/^ {2}style n\d+ stroke:#d62728,stroke-width:3px$/gm) ?? []).length, path.length);
    const linkStyle = /^ {2}linkStyle ([\d,]+) stroke:#d62728/m.exec(m);
    assert.equal(linkStyle![1]!.split(',').length, path.length - 1);
    // A memcpy is a parallelogram, a memset a hexagon.
    assert.match(m, /n0\[\/"upload input<br>memcpy HtoD 1 MiB"\/\]:::memcpy/);
    assert.match(m, /n\d+\{\{"zero_\d+<br>memset 4 KiB = 0x00"\}\}:::memset/);
  }),
);

test('Mermaid: labels are escaped, nodes without a stream sit outside the lanes, an empty graph is a flowchart', () => {
  assert.equal(mermaidText('a "b" <<<1, 2>>> #3; c&d\ne'), 'a #34;b#34; #60;#60;#60;1, 2#62;#62;#62; #35;3; c#38;d<br>e');
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'hostCallback', label: 'report' });
  const b = g.addNode({ kind: 'empty', name: 'join' });
  g.addNode({ kind: 'memcpy', name: 'p2p', dir: MemcpyDir.PeerToPeer(0, 1), sizeBytes: 2048, stream: 1 as never });
  g.addEdge(a, b);
  const m = toMermaid(g);
  assert.match(m, /^ {2}n0\(\["report<br>host callback"\]\):::hostCallback$/m);
  assert.match(m, /^ {2}n1\{"join<br>empty"\}:::empty$/m);
  assert.match(m, /^ {4}n2\[\/"p2p<br>memcpy PeerToPeer\(dev0→dev1\) 2 KiB"\/\]:::memcpy$/m);
  assert.equal(toMermaid(new ComputeGraph()).split('\n')[0], 'flowchart TB');
});

test('an empty graph renders (no critical path to draw)', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'empty.json');
    writeFileSync(file, JSON.stringify(new ComputeGraph()));
    const r = cudagraph(['render', file, '-o', join(dir, 'e.svg')]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /0 nodes, 0 edges, 0 streams\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('formatOf', () => {
  assert.equal(formatOf('a/b.SVG'), 'svg');
  assert.equal(formatOf('x.gv'), 'dot');
  assert.equal(formatOf('x.mermaid'), 'mmd');
  assert.throws(() => formatOf('x.jpg'), UsageError);
  assert.throws(() => formatOf('noext'), /cannot tell the picture format from 'noext'/);
});

test('fonts: the preferred file wins, a missing --font is one line, no font at all says what to do', () => {
  const dir = tempDir();
  try {
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    for (const f of ['a/Zapfino.ttf', 'a/b/DejaVuSans.ttf', 'a/b/DejaVuSans-Bold.ttf', 'a/LiberationSans-Regular.ttf']) writeFileSync(join(dir, f), minimalFont());
    assert.equal(findFont([dir]), join(dir, 'a', 'LiberationSans-Regular.ttf'));
    rmSync(join(dir, 'a', 'LiberationSans-Regular.ttf'));
    assert.equal(findFont([dir]), join(dir, 'a', 'b', 'DejaVuSans.ttf'));
    assert.equal(findFont([join(dir, 'nope')]), null);
    assert.throws(() => loadFont(join(dir, 'missing.ttf')), /^UsageError: cannot read the font .*missing\.ttf: no such file or folder$/);
    // $CUDAGRAPH_FONT wins over the search; --font wins over $CUDAGRAPH_FONT.
    const zapfino = join(dir, 'a', 'Zapfino.ttf');
    assert.equal(loadFont(undefined, { CUDAGRAPH_FONT: zapfino }, [join(dir, 'nope')]).path, zapfino);
    assert.equal(loadFont(join(dir, 'a', 'b', 'DejaVuSans.ttf'), { CUDAGRAPH_FONT: zapfino }).path, join(dir, 'a', 'b', 'DejaVuSans.ttf'));
    assert.throws(() => loadFont(undefined, {}, [join(dir, 'nope')]), /a PNG needs a font for its text and none was found .*pass --font <file\.ttf> .*or render to \.svg instead/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('render: user mistakes are one line on stderr, no stack trace, status 1', () => {
  const dir = tempDir();
  try {
    const good = join(dir, 'g.json');
    writeFileSync(good, JSON.stringify(graph50()));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ "format": "cudagraph.ComputeGraph", ');
    const notGraph = join(dir, 'not-graph.json');
    writeFileSync(notGraph, JSON.stringify({ format: 'cudagraph.ComputeGraph', version: 1, nodes: [{ id: 0, kind: 'kernel', functionName: 'k', grid: [0, 1, 1], block: [1, 1, 1] }], edges: [] }));
    const cyclic = join(dir, 'cyclic.json');
    writeFileSync(cyclic, JSON.stringify({ format: 'cudagraph.ComputeGraph', version: 1, nodes: [{ id: 0, kind: 'empty' }, { id: 1, kind: 'empty' }], edges: [[0, 1], [1, 0]] }));
    const cases: [string[], RegExp][] = [
      [['render', join(dir, 'missing.json'), '-o', join(dir, 'x.svg')], /^cudagraph: cannot read .*missing\.json: no such file or folder\n$/],
      [['render', dir, '-o', join(dir, 'x.svg')], /^cudagraph: cannot read .*: it is a folder\n$/],
      [['render', bad, '-o', join(dir, 'x.svg')], /^cudagraph: .*bad\.json is not JSON: /],
      [['render', notGraph, '-o', join(dir, 'x.svg')], /^cudagraph: .*not-graph\.json is not a cudagraph graph file: nodes\[0\]\.grid\[0\] must be/],
      [['render', cyclic, '-o', join(dir, 'x.svg')], /^cudagraph: .*cyclic\.json is not a cudagraph graph file: .*cycle/],
      [['render', good, '-o', join(dir, 'x.jpg')], /^cudagraph: cannot tell the picture format from '.*x\.jpg': the output must end in \.svg, \.png, \.dot or \.mmd\n\(run cudagraph render --help for usage\)\n$/],
      [['render', good], /^cudagraph: required option '-o, --output <file>' not specified/],
      [['render', '-o', join(dir, 'x.svg')], /^cudagraph: missing required argument 'graph'/],
      [['render', good, '-o', join(dir, 'x.png'), '--scale', '0'], /^cudagraph: --scale must be a number from 0\.1 to 10, got '0'/],
      [['render', good, '-o', join(dir, 'x.png'), '--font', join(dir, 'no.ttf')], /^cudagraph: cannot read the font .*no\.ttf: no such file or folder/],
      [['render', good, '-o', join(good, 'sub', 'x.svg')], /^cudagraph: cannot write .*x\.svg: a part of the path is not a folder/],
    ];
    for (const [args, message] of cases) assertUserError(cudagraph(args), message, args.join(' '));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('render refuses to write over its input, however the output is spelled (./, a symlink, a hard link)', () => {
  inTempDir((dir) => {
    const input = join(dir, 'g.dot'); // a graph file with a picture's extension
    const text = JSON.stringify(graph50());
    writeFileSync(input, text);
    symlinkSync(input, join(dir, 'link.dot'));
    linkSync(input, join(dir, 'hard.dot'));
    const cases: [string, string, string][] = [
      [dir, 'g.dot', 'g.dot'],
      [dir, 'g.dot', './g.dot'],
      [dir, './g.dot', join(dir, 'sub', '..', 'g.dot')],
      [dir, 'g.dot', 'link.dot'],
      [dir, 'link.dot', 'g.dot'],
      [dir, 'g.dot', 'hard.dot'],
    ];
    for (const [cwd, from, to] of cases) {
      const r = cudagraph(['render', from, '-o', to], { cwd });
      assertUserError(r, /^cudagraph: -o .* is the input file .*: writing the picture would destroy the graph; choose another output file\n$/, `render ${from} -o ${to}`);
      assert.equal(readFileSync(input, 'utf8'), text, `render ${from} -o ${to} left the input as it was`);
    }
    // Another file of the same name elsewhere is fine.
    const r = cudagraph(['render', 'g.dot', '-o', join(dir, 'out', 'g.dot')], { cwd: dir });
    assert.equal(r.status, 0, r.stderr);
  });
});

test('--font must be a TrueType or OpenType font: text, WOFF, WOFF2, a cut file and a folder are refused in one line, before the layout', () => {
  inTempDir((dir) => {
    const good = join(dir, 'g.json');
    writeFileSync(good, JSON.stringify(graph50()));
    const font = minimalFont();
    const files: [string, Uint8Array | string, RegExp][] = [
      ['notes.ttf', 'just some text', /is not a TrueType or OpenType font \(it starts with "just"\)/],
      ['web.woff', Buffer.concat([Buffer.from('wOFF'), Buffer.alloc(40)]), /is a WOFF web font, which the PNG renderer cannot read \(it would draw no text\)/],
      ['web.woff2', Buffer.concat([Buffer.from('wOF2'), Buffer.alloc(40)]), /is a WOFF2 web font/],
      ['cut.ttf', font.subarray(0, 40), /is a font file cut short/],
      ['tiny.ttf', 'ab', /is not a font \(2 bytes\)/],
      ['nocmap.ttf', minimalFont(['glyf', 'head', 'hhea', 'loca', 'maxp']), /is a font without the 'cmap' table the renderer needs/],
      ['bitmap.ttf', minimalFont(['cmap', 'head', 'hhea', 'maxp']), /is a font without glyph outlines/],
      ['empty.ttc', Buffer.concat([Buffer.from('ttcf'), Buffer.alloc(8)]), /is a font collection that is empty or cut short/],
    ];
    for (const [name, bytes, message] of files) {
      const path = join(dir, name);
      writeFileSync(path, bytes);
      for (const out of ['x.png', 'x.svg']) {
        const args = ['render', good, '-o', join(dir, out), '--font', path];
        assertUserError(cudagraph(args), new RegExp(`^cudagraph: --font .*${name.replace('.', '\\.')} ${message.source}.*; pass a TrueType or OpenType font \\(\\.ttf, \\.otf, \\.ttc\\)\\n$`), args.join(' '));
      }
    }
    assertUserError(cudagraph(['render', good, '-o', join(dir, 'x.png'), '--font', dir]), /^cudagraph: cannot read the font .*: it is a folder\n$/, '--font <folder>');
    const env = { ...process.env, CUDAGRAPH_FONT: join(dir, 'notes.ttf') };
    assertUserError(cudagraph(['render', good, '-o', join(dir, 'x.png')], { env }), /^cudagraph: \$CUDAGRAPH_FONT .*notes\.ttf is not a TrueType or OpenType font/, '$CUDAGRAPH_FONT');
  });
});

test('an option value quoted in an error is cut: --scale, --rounds, --sizes, --tol of 100,000 characters', () => {
  const long = '9'.repeat(100_000);
  for (const args of [['render', 'g.json', '-o', 'x.png', '--scale', long], ['demo', '--rounds', long], ['bench', '--sizes', `1,${long}x`], ['demo', 'solver', '--tol', long]]) {
    const r = cudagraph(args);
    assertUserError(r, new RegExp(`must be .*, got '9+…'\\n\\(run cudagraph ${args[0]!} --help for usage\\)\\n$`), args[0]!);
    assert.ok(r.stderr.length < 300, `${args[0]}: ${r.stderr.length} characters`);
  }
});
