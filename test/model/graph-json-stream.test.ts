/**
 * The streaming JSON writer and reader (graph-json-stream.ts, graph-json-read.ts) against the
 * in-memory ones: the pieces are `JSON.stringify`'s text byte for byte, compact and indented, and
 * reading them back — split anywhere — gives the graph `fromJSON` gives, with the same refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import fc from 'fast-check';
import { ComputeGraph, GraphError, InvalidArgumentError, NodeId } from '../../src/index.js';
import { build, KINDS, NAMES, program } from './graph-programs.js';

/** The bytes of `text` cut at the given fractions of its length (anywhere, also inside a character). */
function cut(text: string, cuts: number[]): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const x of at) {
    out.push(bytes.subarray(from, x));
    from = x;
  }
  out.push(bytes.subarray(from));
  return out;
}

const join2 = (pieces: Iterable<string>): string => [...pieces].join('');

test('property: the pieces are JSON.stringify(graph) byte for byte, compact and indented', () => {
  fc.assert(
    fc.property(program, fc.constantFrom<number | string | undefined>(undefined, 0, 1, 2, 4, 20, '\t', '--', ''), (p, space) => {
      const g = build(p);
      const pieces = g.toJSONChunks(space === undefined ? undefined : { space });
      assert.equal(join2(pieces), JSON.stringify(g, null, space));
    }),
    { numRuns: 300 },
  );
});

test('property: readJSON of the pieces, cut anywhere, is the graph fromJSON reads: nodes, names, streams, costs, edge data', async () => {
  await fc.assert(
    fc.asyncProperty(program, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }), fc.constantFrom<number | undefined>(undefined, 1), async (p, cuts, space) => {
      const g = build(p);
      const text = JSON.stringify(g, null, space);
      const back = await ComputeGraph.readJSON(cut(text, cuts));
      const ref = ComputeGraph.fromJSON(text);
      assert.equal(JSON.stringify(back), JSON.stringify(g));
      assert.deepEqual(JSON.parse(JSON.stringify(back.nodes())), JSON.parse(JSON.stringify(ref.nodes())));
      assert.deepEqual(back.edgeRecords(), g.edgeRecords());
      assert.deepEqual(back.streams(), g.streams());
      if (g.nodeCount() > 0) assert.deepEqual(back.topologicalOrder(), ref.topologicalOrder());
      // String pieces too, as toJSONChunks yields them.
      assert.equal(JSON.stringify(await ComputeGraph.readJSON(g.toJSONChunks())), JSON.stringify(g));
    }),
    { numRuns: 200 },
  );
});

test('readJSON refuses every document fromJSON refuses, with the same message', async () => {
  const g = build({
    nodes: [
      { kind: 'memcpy', name: 0, stream: 0, cost: null, x: 1 },
      { kind: 'kernel', name: null, stream: 1, cost: 2, x: 3 },
      { kind: 'memset', name: null, stream: 1, cost: null, x: 4 },
      { kind: 'p2p', name: null, stream: 2, cost: null, x: 5 },
      { kind: 'childGraph', name: null, stream: null, cost: null, x: 0 },
      { kind: 'memAlloc', name: null, stream: null, cost: null, x: 0 },
      { kind: 'memFree', name: null, stream: null, cost: null, x: 0 },
    ],
    edges: [
      [0, 1, 'plain'],
      [1, 2, 'launchOrder'],
      [2, 3, 'plain'],
      [3, 4, 'plain'],
      [5, 6, 'plain'],
    ],
  });
  const good = JSON.stringify(g);
  const mutate = (f: (d: Record<string, any>) => void): string => {
    const d = JSON.parse(good);
    f(d);
    return JSON.stringify(d);
  };
  const texts = [
    'null',
    '[]',
    '"x"',
    mutate((d) => (d.format = 'other')),
    mutate((d) => delete d.format),
    mutate((d) => delete d.version),
    mutate((d) => delete d.nodes),
    mutate((d) => delete d.edges),
    mutate((d) => (d.version = 3)),
    mutate((d) => (d.extra = 1)),
    mutate((d) => (d.nodes = {})),
    mutate((d) => (d.edges = 'x')),
    mutate((d) => (d.nodes[2] = 5)),
    mutate((d) => (d.nodes[2].id = 7)),
    mutate((d) => delete d.nodes[2].id),
    mutate((d) => (d.nodes[1].kind = 'conv')),
    mutate((d) => (d.nodes[1].grid = [1, 0, 1])),
    mutate((d) => (d.nodes[1].functionName = '')),
    mutate((d) => (d.nodes[0].dir = 'Up')),
    mutate((d) => (d.nodes[3].dir = { kind: 'PeerToPeer', srcDevice: 'a', dstDevice: 1 })),
    mutate((d) => (d.nodes[2].value = 2 ** 40)),
    mutate((d) => (d.nodes[2].colour = 'red')),
    mutate((d) => (d.nodes[4].graph.nodes[0].grid = [0, 1, 1])),
    mutate((d) => (d.nodes[4].graph.version = 9)),
    mutate((d) => (d.nodes[6].alloc = 1)),
    mutate((d) => d.edges.push([0])),
    mutate((d) => d.edges.push([0, 99])),
    mutate((d) => d.edges.push([0, -1])),
    mutate((d) => d.edges.push([0, 1.5])),
    mutate((d) => d.edges.push([0, 2 ** 32])),
    mutate((d) => d.edges.push([0, 1])),
    mutate((d) => d.edges.push([4, 0])),
    mutate((d) => d.edges.push([2, 2])),
    mutate((d) => d.edges.unshift([3, 0])),
    mutate((d) => d.edges.push([0, 5, { kind: 'programmatic' }])),
    mutate((d) => d.edges.push([0, 5, { kind: 'plain', extra: 1 }])),
    mutate((d) => d.edges.push([0, 5, 3, 4])),
    mutate((d) => d.edges.push({ from: 0 })),
    mutate((d) => ((d.version = 1), (d.nodes = [{ id: 0, kind: 'eventRecord', event: 1 }]), (d.edges = []))),
    mutate((d) => ((d.version = 1), d.edges.push([0, 5, { kind: 'plain' }]))),
  ];
  for (const text of texts) {
    let want = '';
    assert.throws(() => ComputeGraph.fromJSON(text), (e: unknown) => {
      want = (e as Error).message.replace(/^ComputeGraph\.fromJSON: /, '');
      return true;
    });
    await assert.rejects(ComputeGraph.readJSON([text]), (e: unknown) => {
      assert.ok(e instanceof GraphError, String(e));
      assert.equal(e.code, 'GRAPH_JSON_INVALID');
      assert.equal(e.message, `ComputeGraph.readJSON: ${want}`, text.slice(0, 200));
      return true;
    });
  }
});

test('readJSON: any order of the fields, spacing, a version 1 document; syntax errors name the byte', async () => {
  const g = build({ nodes: [{ kind: 'kernel', name: 1, stream: 0, cost: null, x: 1 }, { kind: 'empty', name: null, stream: null, cost: null, x: 0 }], edges: [[0, 1, 'plain']] });
  const doc = g.toJSON();
  // Keys sorted, as Python's json.dumps(sort_keys=True) writes them: the nodes and edges come before the version.
  const sorted = JSON.stringify({ edges: doc.edges, format: doc.format, nodes: doc.nodes, version: doc.version }, null, 3);
  assert.equal(JSON.stringify(await ComputeGraph.readJSON([sorted])), JSON.stringify(g));
  const v1Late = JSON.stringify({ nodes: [{ id: 0, kind: 'eventRecord', event: 1 }], edges: [], format: doc.format, version: 1 });
  await assert.rejects(ComputeGraph.readJSON([v1Late]), /nodes\[0\]\.kind must be one of 'kernel', 'memcpy', 'memset', 'hostCallback', 'empty'/);
  const v1 = JSON.stringify({ ...doc, version: 1 });
  assert.equal(JSON.stringify(await ComputeGraph.readJSON([v1])), JSON.stringify(g));
  const spaced = ` \n{ "format" : "cudagraph.ComputeGraph" , "version" : 2 , "nodes" : [ ${JSON.stringify(doc.nodes[0])} , ${JSON.stringify(doc.nodes[1])} ] , "edges" : [ [ 0 , 1 ] ] }\n`;
  assert.equal(JSON.stringify(await ComputeGraph.readJSON([spaced])), JSON.stringify(g));
  for (const [text, re] of [
    ['{ not json', /not JSON text \(expected a field name, got 'n', at byte 2\)/],
    ['{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":[]', /not JSON text \(the text ends inside the document/],
    ['{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":[]} x', /unexpected text after the document, at byte 70/],
    ['{"format":"cudagraph.ComputeGraph","version":2,"nodes":[,],"edges":[]}', /not JSON text \(.*in the nodes from nodes\[0\] on/],
    [`{"format":"cudagraph.ComputeGraph","version":2,"nodes":[${JSON.stringify(doc.nodes[1]).replace('"id":1', '"id":0')},],"edges":[]}`, /not JSON text/],
    ['{"format":"cudagraph.ComputeGraph","version":2,"nodes":[],"edges":[[0,1],]}', /not JSON text/],
    ['{"format":"cudagraph.ComputeGraph","format":"x","version":2,"nodes":[],"edges":[]}', /gives the field 'format' twice/],
  ] as const) {
    await assert.rejects(ComputeGraph.readJSON([text]), (e: unknown) => e instanceof GraphError && e.code === 'GRAPH_JSON_INVALID' && re.test(e.message), text);
  }
});

test('writeJSON and readJSON through files and Readables; a Writable that asks to wait is waited for', async () => {
  const g = build({
    nodes: Array.from({ length: 3000 }, (_, i) => ({ kind: KINDS[i % 9]!, name: i % NAMES.length, stream: i % 5, cost: i % 7 === 0 ? 2.5 : null, x: i })),
    edges: Array.from({ length: 2000 }, (_, i) => [i % 30, (i * 7) % 30, 'plain'] as [number, number, 'plain']),
  });
  for (let i = 1; i < 3000; i++) if (i % 3 !== 0) g.addEdge(NodeId(i - 1), NodeId(i));
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-json-'));
  try {
    const path = join(dir, 'g.json');
    const chars = await g.writeJSON(path);
    const text = readFileSync(path, 'utf8');
    assert.equal(text, JSON.stringify(g));
    assert.equal(chars, text.length);
    assert.equal(JSON.stringify(await ComputeGraph.readJSON(path)), text);
    const progress: number[] = [];
    await ComputeGraph.readJSON(Readable.from([Buffer.from(text)]), { onProgress: (b) => progress.push(b) });
    assert.equal(progress.at(-1), Buffer.byteLength(text));
    // A sink with a tiny buffer: every write but the first asks to wait.
    const sink = new PassThrough({ highWaterMark: 16 });
    const received: Buffer[] = [];
    const reading = (async () => {
      for await (const piece of sink) {
        received.push(piece as Buffer);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await g.writeJSON(sink, { space: 1 });
    sink.end();
    await reading;
    assert.equal(Buffer.concat(received).toString('utf8'), JSON.stringify(g, null, 1));
    await assert.rejects(ComputeGraph.readJSON(join(dir, 'missing.json')), /ENOENT/);
    writeFileSync(join(dir, 'bad.json'), '{"format":"x"');
    await assert.rejects(ComputeGraph.readJSON(join(dir, 'bad.json')), /format must be 'cudagraph.ComputeGraph', got "x"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the pieces refuse a graph that changed while they were read (GRAPH_BUSY); bad arguments are refused', async () => {
  const g = new ComputeGraph();
  for (let i = 0; i < 5000; i++) g.addNode({ kind: 'kernel', functionName: `k${i}`, grid: 1, block: 1 });
  for (const pieces of [g.toJSONChunks(), g.toDotChunks()]) {
    const first = pieces.next();
    assert.equal(first.done, false);
    g.addNode({ kind: 'empty' });
    assert.throws(() => pieces.next(), (e: unknown) => e instanceof GraphError && e.code === 'GRAPH_BUSY');
  }
  assert.throws(() => g.toJSONChunks({ space: {} as never }), InvalidArgumentError);
  assert.throws(() => g.toJSONChunks({ bogus: 1 } as never), InvalidArgumentError);
  assert.throws(() => g.toDotChunks({ highlight: [99999] }), GraphError);
  await assert.rejects(g.writeJSON(42 as never), InvalidArgumentError);
  await assert.rejects(ComputeGraph.readJSON(42 as never), InvalidArgumentError);
  await assert.rejects(ComputeGraph.readJSON([], { onProgress: 1 as never }), InvalidArgumentError);
});

/** What reading gave: the graph's text, or the refusal's class and code. */
async function outcome(read: () => unknown): Promise<string> {
  try {
    return JSON.stringify(await read());
  } catch (e) {
    return e instanceof GraphError ? `refused: ${e.code}` : `threw ${String(e)}`;
  }
}

test('readJSON and fromJSON of the same bytes give the same outcome: invalid UTF-8 and a byte order mark refused by both', async () => {
  const g = build({ nodes: [{ kind: 'kernel', name: 0, stream: 0, cost: null, x: 1 }, { kind: 'empty', name: null, stream: null, cost: null, x: 0 }], edges: [[0, 1, 'plain']] });
  const text = JSON.stringify(g);
  const bytes = Buffer.from(text);
  const name = bytes.indexOf('"name":"') + 8;
  const at = (k: number, insert: number[]): Buffer => Buffer.concat([bytes.subarray(0, k), Buffer.from(insert), bytes.subarray(k)]);
  const inputs: [string, Buffer, 'accepted' | 'refused'][] = [
    ['the document', bytes, 'accepted'],
    ['a name in two-, three- and four-byte characters', Buffer.from(text.replace('"name":"', '"name":"é€😀')), 'accepted'],
    ['a byte order mark', at(0, [0xef, 0xbb, 0xbf]), 'refused'],
    ['a byte order mark before a value', at(bytes.indexOf('2,"nodes"'), [0xef, 0xbb, 0xbf]), 'refused'],
    ['a byte order mark before a node', at(bytes.indexOf('{"id":0'), [0xef, 0xbb, 0xbf]), 'refused'],
    ['a byte order mark as the only node', Buffer.from(text.replace(/"nodes":\[.*\],"edges":\[.*\]/, '"nodes":[\ufeff],"edges":[]')), 'refused'],
    ['a byte order mark in a name', at(name, [0xef, 0xbb, 0xbf]), 'accepted'],
    ['a byte 0xff in a name', at(name, [0xff]), 'refused'],
    ['a lone continuation byte in a name', at(name, [0x80]), 'refused'],
    ['an overlong encoding of "/"', at(name, [0xc0, 0xaf]), 'refused'],
    ['a surrogate encoded as UTF-8 (CESU-8)', at(name, [0xed, 0xa0, 0x80]), 'refused'],
    ['a three-byte character cut short', at(name, [0xe2, 0x82]), 'refused'],
    ['a byte 0xff in a field name', at(1, [0xff]), 'refused'],
    ['a byte 0xff in the edges', at(bytes.indexOf('[0,1]') + 1, [0xff]), 'refused'],
    ['a byte 0xff after the document', Buffer.concat([bytes, Buffer.from([0x20, 0xff])]), 'refused'],
  ];
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-json-'));
  try {
    for (const [what, input, want] of inputs) {
      const whole = await outcome(() => ComputeGraph.fromJSON(input));
      assert.equal(whole.startsWith('refused') ? 'refused' : 'accepted', want, `${what}: ${whole}`);
      if (want === 'refused') assert.equal(whole, 'refused: GRAPH_JSON_INVALID', what);
      // Cut at every byte (inside every character), in one piece, and from a file.
      for (let k = 0; k <= input.length; k++) {
        assert.equal(await outcome(() => ComputeGraph.readJSON([input.subarray(0, k), input.subarray(k)])), whole, `${what}, cut at ${k}`);
      }
      assert.equal(await outcome(() => ComputeGraph.readJSON(Array.from(input, (b) => Uint8Array.of(b)))), whole, `${what}, a byte a piece`);
      const file = join(dir, 'g.json');
      writeFileSync(file, input);
      assert.equal(await outcome(() => ComputeGraph.readJSON(file)), whole, `${what}, from a file`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const bom = /: ComputeGraph\.(fromJSON|readJSON): not JSON text \(the text starts with a byte order mark \(U\+FEFF\), which JSON text does not hold(, at byte 0)?\)$/;
  assert.throws(() => ComputeGraph.fromJSON(`\ufeff${text}`), bom);
  await assert.rejects(ComputeGraph.readJSON([`\ufeff${text}`]), bom);
  await assert.rejects(ComputeGraph.readJSON([at(name, [0xff])]), /: ComputeGraph\.readJSON: not JSON text \(the bytes are not UTF-8, in the text from byte \d+ on\)$/);
  assert.throws(() => ComputeGraph.fromJSON(at(name, [0xff])), /: ComputeGraph\.fromJSON: not JSON text \(the bytes are not UTF-8\)$/);
});

test('property: string pieces cut anywhere, inside a surrogate pair or beside a lone surrogate, read as fromJSON reads them joined', async () => {
  const g = new ComputeGraph();
  g.addNode({ kind: 'empty', name: 'a😀b' });
  // Raw lone surrogates (JSON.stringify would escape them): in a name, after an escaped backslash, after an escaping one, after the document.
  const texts = [
    JSON.stringify(g),
    JSON.stringify(g).replace('a😀b', 'a\ud83d\ude00b\ud800'),
    JSON.stringify(g).replace('a😀b', `x\ud800y\udc00`),
    JSON.stringify(g).replace('a😀b', `x\\\\\ud800`),
    JSON.stringify(g).replace('a😀b', `x\\\ud800`),
    `${JSON.stringify(g)}\ud800`,
  ];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...texts), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), async (t, cuts) => {
      const at = [...new Set(cuts.map((c) => Math.floor(c * t.length)))].sort((a, b) => a - b);
      const pieces = [0, ...at].map((x, i, all) => t.slice(x, i + 1 < all.length ? all[i + 1] : t.length));
      assert.equal(await outcome(() => ComputeGraph.readJSON(pieces)), await outcome(() => ComputeGraph.fromJSON(t)), JSON.stringify(pieces));
    }),
    { numRuns: 300 },
  );
});

test('readJSON of one large value cut in small pieces takes time linear in its size', async () => {
  const docs = {
    name: (s: string) => `{"format":"cudagraph.ComputeGraph","version":2,"nodes":[{"id":0,"kind":"empty","name":"${s}"}],"edges":[]}`,
    format: (s: string) => `{"format":"${s}","version":2,"nodes":[],"edges":[]}`,
    key: (s: string) => `{"${s}":1}`,
  };
  const time = async (doc: (s: string) => string, mib: number): Promise<number> => {
    const bytes = Buffer.from(doc('x'.repeat(mib << 20)));
    const pieces: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 4096) pieces.push(bytes.subarray(i, i + 4096));
    let best = Infinity;
    for (let r = 0; r < 3; r++) {
      const t0 = performance.now();
      await ComputeGraph.readJSON(pieces).catch(() => undefined);
      best = Math.min(best, performance.now() - t0);
    }
    return best;
  };
  for (const [what, doc] of Object.entries(docs)) {
    const one = await time(doc, 1);
    const eight = await time(doc, 8);
    // Linear: about 8×. Scanning or copying from the start with each piece is quadratic: 64× and more.
    assert.ok(eight < 24 * Math.max(one, 1), `${what}: 1 MiB in ${one.toFixed(1)} ms, 8 MiB in ${eight.toFixed(1)} ms`);
  }
});

test('readJSON refuses a piece that is neither bytes nor a string, naming it', async () => {
  const text = JSON.stringify(build({ nodes: [{ kind: 'empty', name: null, stream: null, cost: null, x: 0 }], edges: [] }));
  const pieceRefused = (index: number, got: RegExp) => (e: unknown): boolean => {
    assert.ok(e instanceof InvalidArgumentError, String(e));
    assert.equal(e.parameter, 'source');
    assert.match(e.message, /^ComputeGraph\.readJSON: source must yield byte \(Uint8Array\) or string pieces, got /);
    assert.match(e.message, got);
    assert.match(e.message, new RegExp(`as piece ${index}$`));
    return true;
  };
  await assert.rejects(ComputeGraph.readJSON([text.slice(0, 5), 5 as never, text.slice(5)]), pieceRefused(1, /got 5 /));
  await assert.rejects(ComputeGraph.readJSON([null as never]), pieceRefused(0, /got null /));
  await assert.rejects(ComputeGraph.readJSON(Readable.from([{ text }]) as never), pieceRefused(0, /an object \(Object\)/));
  // A Uint16Array's elements are not bytes: read as bytes, they would be other text.
  await assert.rejects(ComputeGraph.readJSON([Uint16Array.from(Buffer.from(text)) as never]), pieceRefused(0, /an object \(Uint16Array\)/));
  assert.equal(JSON.stringify(await ComputeGraph.readJSON([text.slice(0, 5), Buffer.from(text.slice(5))])), text);
});

test('property: the DOT pieces are toDot() exactly, highlight and title included', () => {
  fc.assert(
    fc.property(program, fc.boolean(), (p, title) => {
      const g = build(p);
      const options = { ...(title ? { title: 'a "title"' } : {}), highlight: g.nodeCount() > 0 ? g.criticalPath().nodes : [] };
      assert.equal(join2(g.toDotChunks(options)), g.toDot(options));
    }),
    { numRuns: 200 },
  );
});
