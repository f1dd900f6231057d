/**
 * Hostile names (line breaks, quotes, backticks, brackets, `%%` directives, `click`, `<script>`,
 * entities, escape sequences) in node names, kernel names, labels, titles and file names: every
 * output format shows them as written and none can add a statement, a line or markup.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { ComputeGraph, MemcpyDir, NodeId, StreamId, type GraphNode } from '../../src/index.js';
import { describeWork } from '../../src/model/dot.js';
import { toMermaid } from '../../src/cli/mermaid.js';
import { dotToSvg, toDot } from '../../src/cli/picture.js';
import { cudagraph, inTempDir } from './helpers.js';

const HOSTILE = [
  'two\nlines\nflowchart LR\nclick n0 call alert(1)',
  'say "hi"',
  "it's",
  'back`tick`',
  '`**markdown**`',
  'close] [bracket',
  'semi;colon; n0 --> n1',
  '%% a comment',
  '%%{init: {"securityLevel": "loose"}}%%',
  'click n0 href "javascript:alert(1)"',
  '<script>alert(1)</script>',
  '{braces} (parens) {{hex}} ([stadium])',
  '&lt;entity&gt; &amp; #35; &#65; #quot;',
  'C:\\path\\N \\n',
  'tab\there\r\nand CR',
  '\u001b[31mred\u001b[0m \u009b2J',
  'rtl \u202eevil\u202c txt',
  '--- front matter ---',
  'end',
  ']]> -- <!-- -->',
];
const TITLE = 'title\n---\nflowchart LR\n%%{init: {"theme": "dark"}}%%\nclick n0 call alert(1) "quoted" `tick` <b>&amp;</b> #35; \\ end';

/** A graph with each hostile name as a node name, a kernel's function, a host callback's label or a copy's name. */
function hostileGraph(): ComputeGraph {
  const g = new ComputeGraph();
  HOSTILE.forEach((name, i) => {
    const stream = i % 3 === 2 ? undefined : StreamId(i % 3);
    const common = { name, ...(stream === undefined ? {} : { stream }) };
    switch (i % 4) {
      case 0:
        g.addNode({ kind: 'empty', ...common });
        break;
      case 1:
        g.addNode({ kind: 'kernel', functionName: name, grid: 1, block: 32, ...common });
        break;
      case 2:
        g.addNode({ kind: 'hostCallback', label: name, ...common });
        break;
      default:
        g.addNode({ kind: 'memcpy', dir: MemcpyDir.PeerToPeer(0, 1), sizeBytes: 64, ...common });
    }
  });
  g.addEdges(HOSTILE.slice(1).map((_, i) => [NodeId(i), NodeId(i + 1)] as const));
  return g;
}

/** What a label shows for a node: its name and what it does, control characters other than line breaks as spaces. */
function shown(node: GraphNode): string {
  return `${node.name}\n${describeWork(node)}`.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, ' ');
}

// Every statement toMermaid may write; a hostile name must not add any other.
const LABEL = String.raw`"(?:[^"%\x60<>&#\u0000-\u001f]|#\d+;|<br>)*"`;
const MERMAID_LINE = [
  /^---$/,
  /^title: "(?:[^"\\%#<>&`\u0000-\u001f\u007f-\u009f]|\\u[0-9a-f]{4})*"$/,
  /^flowchart TB$/,
  /^ {2}classDef \w+ fill:#[0-9a-f]{6},stroke:#555555,color:#000000$/,
  /^ {2}subgraph stream\d+\["stream \d+"\]$/,
  /^ {4}direction TB$/,
  new RegExp(String.raw`^ {2,4}n\d+(?:\[${LABEL}\]|\[\/${LABEL}\/\]|\{\{${LABEL}\}\}|\(\[${LABEL}\]\)|\{${LABEL}\}):::\w+$`),
  /^ {2}end$/,
  /^ {2}style stream\d+ fill:none,stroke:#[0-9a-f]{6},stroke-dasharray:5 5$/,
  /^ {2}n\d+ (?:-->|-\.->) n\d+$/,
  /^ {2}style n\d+ stroke:#d62728,stroke-width:3px$/,
  /^ {2}linkStyle [\d,]+ stroke:#d62728,stroke-width:3px$/,
];

/** Checks a Mermaid text line by line; returns the decoded labels by node id and the title. */
function checkMermaid(text: string): { labels: Map<number, string>; title: string | null } {
  const lines = text.replace(/\n$/, '').split('\n');
  for (const [i, line] of lines.entries()) {
    assert.ok(MERMAID_LINE.some((re) => re.test(line)), `line ${i} is not a statement toMermaid writes: ${JSON.stringify(line)}`);
  }
  assert.equal(lines.filter((l) => l === 'flowchart TB').length, 1, 'one flowchart');
  assert.ok(!text.includes('%'), 'no % anywhere: no comment, no directive');
  assert.ok(!/^\s*click\b/m.test(text), 'no click statement');
  const fence = lines.filter((l) => l === '---').length;
  assert.ok(fence === 0 || (fence === 2 && lines[0] === '---' && lines[2] === '---'), 'front matter only at the top');
  const labels = new Map<number, string>();
  for (const m of text.matchAll(/^ +n(\d+)[[{(/]+"([^"]*)"/gm)) {
    labels.set(Number(m[1]), m[2]!.replace(/<br>/g, '\n').replace(/#(\d+);/g, (_, c: string) => String.fromCodePoint(Number(c))));
  }
  const title = lines[1]?.startsWith('title: ') ? (JSON.parse(lines[1].slice(7)) as string) : null;
  return { labels, title };
}

test('Mermaid: hostile node names, kernel names, labels and titles add no statement and read back as written', () => {
  const g = hostileGraph();
  const { labels, title } = checkMermaid(toMermaid(g, { title: TITLE, highlight: g.criticalPath().nodes }));
  assert.equal(title, TITLE, 'the title reads back exactly');
  assert.equal(labels.size, g.nodeCount());
  for (const node of g.nodes()) assert.equal(labels.get(node.id), shown(node), `node ${node.id}`);
});

test('DOT and SVG: hostile names add no node or attribute, and are drawn as written', async () => {
  const g = hostileGraph();
  const dot = toDot(g, { title: TITLE });
  const gv = await Graphviz.load();
  const parsed = JSON.parse(gv.dot(dot, 'json')) as { label?: string; objects: { name: string; label?: string }[]; edges?: unknown[] };
  const nodes = parsed.objects.filter((o) => !o.name.startsWith('cluster_'));
  const byName = new Map(nodes.map((o) => [o.name, o]));
  assert.deepEqual([...byName.keys()].sort(), g.nodes().map((n) => `n${n.id}`).sort(), "exactly the graph's nodes");
  assert.equal(parsed.edges?.length, g.edgeCount());
  // Graphviz's label escapes: \n ends a line, \\ is a backslash; &amp; is an entity it decodes.
  const decode = (s: string): string => s.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c)).replace(/&amp;/g, '&');
  for (const node of g.nodes()) assert.equal(decode(byName.get(`n${node.id}`)!.label!), shown(node), `node ${node.id}`);
  assert.equal(decode(parsed.label!), TITLE.replace(/[\u0000-\u0009\u000b-\u001f]/g, ' '));

  const svg = await dotToSvg(dot);
  assert.ok(!/<script/i.test(svg), 'no script element');
  assert.equal((svg.match(/<g id="node\d+" class="node">/g) ?? []).length, g.nodeCount());
  const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) =>
    m[1]!.replace(/&#(\d+);/g, (_, c: string) => String.fromCodePoint(Number(c))).replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&'),
  );
  for (const name of ['<script>alert(1)</script>', '&lt;entity&gt; &amp; #35; &#65; #quot;', 'C:\\path\\N \\n', 'say "hi"', '%%{init: {"securityLevel": "loose"}}%%']) {
    assert.ok(texts.includes(name), `${JSON.stringify(name)} is drawn as written`);
  }
});

test('render and inspect: a hostile file name (the default title) and hostile node names', () => {
  inTempDir((dir) => {
    const file = join(dir, 'evil\nflowchart LR\nclick n0 call alert(1) %%{init}%% "q" `t`.json');
    writeFileSync(file, JSON.stringify(hostileGraph()));
    const mmd = join(dir, 'g.mmd');
    const r = cudagraph(['render', file, '-o', mmd]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.split('\n').length, 2, 'the report is one line');
    const { title, labels } = checkMermaid(readFileSync(mmd, 'utf8'));
    assert.match(title!, /^evil\nflowchart LR\nclick n0 call alert\(1\) %%\{init\}%% "q" `t`\.json: 20 nodes on 2 streams; critical path thick and red$/);
    assert.equal(labels.size, HOSTILE.length);

    const i = cudagraph(['inspect', file]);
    assert.equal(i.status, 0, i.stderr);
    assert.ok(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/.test(i.stdout), 'no control character reaches the terminal');
    const lines = i.stdout.replace(/\n$/, '').split('\n');
    assert.match(lines[0]!, /^\S*evil\\u000aflowchart LR\\u000aclick .*: 20 nodes, 19 edges$/);
    assert.ok(lines.includes('sources:        "two\\nlines\\nflowchart LR\\nclick n0 call alert(1)"'), 'an unsafe name is shown quoted, escaped');
    assert.ok(i.stdout.includes('"\\u001b[31mred\\u001b[0m \\u009b2J"'));
    assert.ok(i.stdout.includes('"rtl \\u202eevil\\u202c txt"'));
    assert.ok(i.stdout.includes(' → <script>alert(1)</script> → '), 'a name without control characters is shown as it is');
    // The fixed lines of the report, then one line per cross-stream join: nothing forged.
    const joins = Number(/^cross-stream joins \((\d+)\):$/m.exec(i.stdout)![1]);
    assert.equal(lines.length, 11 + joins);

    const err = cudagraph(['inspect', join(dir, 'missing\nsecond line.json')]);
    assert.equal(err.status, 1);
    assert.equal(err.stderr.split('\n').length, 2, `one line: ${err.stderr}`);
    assert.match(err.stderr, /missing\\u000asecond line\.json: no such file/);
  });
});
