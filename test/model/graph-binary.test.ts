/**
 * The binary graph form (graph-binary-*.ts): JSON → graph → binary → graph gives the JSON back for
 * random graphs of every node kind, through memory, a file and a stream cut anywhere; a truncated
 * or corrupted file is refused with a FileFormatError naming the file and the section, never
 * loaded as another graph; and files that frame correctly but describe a graph `addNode` would
 * refuse are refused by the column checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { once } from 'node:events';
import fc from 'fast-check';
import { ComputeGraph, FileFormatError, InvalidArgumentError, MemcpyDir, NodeId, StreamCapture, StreamId } from '../../src/index.js';
import { crc32, crc32Portable } from '../../src/model/crc32.js';
import { build, program } from './graph-programs.js';

const json = (g: ComputeGraph): string => JSON.stringify(g.toJSON());

/** The byte offsets where the header and each section (head, payload, checksum) end. */
function boundaries(bytes: Uint8Array): number[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = [24];
  let at = 24;
  while (at < bytes.length) {
    const len = dv.getUint32(at + 4, true) + dv.getUint32(at + 8, true) * 2 ** 32;
    out.push(at + 16, at + 16 + len, at + 20 + len);
    at += 20 + len;
  }
  return out;
}

/** Rewrites one section's payload (and its checksums) of a file: a file that frames correctly but says something else. */
function patch(input: Uint8Array, tag: string, edit: (payload: Uint8Array) => Uint8Array): Uint8Array {
  // A copy of its own: a Buffer's slice is a view, and a pooled Buffer's `.buffer` is shared, so the
  // DataViews below (which start at offset 0) would write into another buffer's bytes.
  const bytes = Uint8Array.from(input);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 24;
  for (;;) {
    const len = dv.getUint32(at + 4, true);
    const t = String.fromCharCode(...bytes.subarray(at, at + 4));
    if (t === tag) {
      const payload = edit(bytes.slice(at + 16, at + 16 + len));
      const head = bytes.slice(at, at + 16);
      const hv = new DataView(head.buffer);
      hv.setUint32(4, payload.length, true);
      hv.setUint32(12, crc32(head.subarray(0, 12)), true);
      const tail = new Uint8Array(4);
      new DataView(tail.buffer).setUint32(0, crc32(payload), true);
      return Uint8Array.from(Buffer.concat([bytes.subarray(0, at), head, payload, tail, bytes.subarray(at + 20 + len)]));
    }
    at += 20 + len;
  }
}

function refusedWith(f: () => unknown, pattern: RegExp): void {
  assert.throws(f, (e: unknown) => e instanceof FileFormatError && pattern.test(e.message));
}

test('property: JSON → graph → binary → graph gives the same toJSON, every node kind', () => {
  fc.assert(
    fc.property(program, (p) => {
      const g = ComputeGraph.fromJSON(json(build(p)));
      const back = ComputeGraph.fromBinary(g.toBinary());
      assert.equal(json(back), json(g));
      // The loaded graph is a working graph: its binary form is the same bytes, and it takes more nodes.
      assert.deepEqual(back.toBinary(), g.toBinary());
      back.addNode({ kind: 'empty' });
      assert.equal(back.nodeCount(), g.nodeCount() + 1);
    }),
    { numRuns: 300 },
  );
});

test('property: readBinary from a file and from a stream cut anywhere gives the same graph', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-bin-'));
  try {
    await fc.assert(
      fc.asyncProperty(program, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }), async (p, cuts) => {
        const g = build(p);
        const file = join(dir, 'g.cgraph');
        const written = await g.writeBinary(file);
        const bytes = g.toBinary();
        assert.equal(written, bytes.length);
        assert.equal(json(await ComputeGraph.readBinary(file)), json(g));
        const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((x, i, all) => bytes.subarray(x, i + 1 < all.length ? all[i + 1] : bytes.length));
        assert.equal(json(await ComputeGraph.readBinary(Readable.from(pieces))), json(g));
        assert.equal(json(await ComputeGraph.readBinary(bytes)), json(g));
      }),
      { numRuns: 60 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('property: a file cut at any section boundary, or anywhere, is refused naming the part it ends in', async () => {
  await fc.assert(
    fc.asyncProperty(program, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), async (p, x) => {
      const bytes = build(p).toBinary();
      const cuts = [...boundaries(bytes).filter((b) => b < bytes.length), Math.floor(x * bytes.length)];
      for (const at of cuts) {
        refusedWith(() => ComputeGraph.fromBinary(bytes.subarray(0, at)), /^ComputeGraph\.fromBinary: <bytes>: .*(the file ends inside|not a binary graph)/);
        await assert.rejects(ComputeGraph.readBinary(Readable.from([bytes.subarray(0, at)])), (e: unknown) => e instanceof FileFormatError && /<stream>: .*(ends inside|not a binary graph)/.test(e.message));
      }
    }),
    { numRuns: 60 },
  );
});

test('property: any flipped byte is refused (a checksum or a check names the section), never a crash or another graph', () => {
  fc.assert(
    fc.property(program, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.integer({ min: 1, max: 255 }), (p, x, mask) => {
      const bytes = build(p).toBinary();
      const bad = bytes.slice();
      bad[Math.floor(x * bytes.length)]! ^= mask;
      refusedWith(() => ComputeGraph.fromBinary(bad), /^ComputeGraph\.fromBinary: <bytes>: (the header|section '|the head of section|not a binary|format version|.*fails its checksum|expected section)/);
    }),
    { numRuns: 400 },
  );
});

test('bytes after the last section, and a wrong version, are refused', () => {
  const g = new ComputeGraph();
  g.addNode({ kind: 'empty' });
  const bytes = g.toBinary();
  refusedWith(() => ComputeGraph.fromBinary(Buffer.concat([bytes, Uint8Array.of(0)])), /1 byte\(s\) follow the last section/);
  const v2 = bytes.slice();
  v2[6] = 2;
  new DataView(v2.buffer).setUint32(20, crc32(v2.subarray(0, 20)), true);
  refusedWith(() => ComputeGraph.fromBinary(v2), /format version 2; this build reads version 1/);
});

/** A graph of one node of each plain kind, joined in a chain, for the column checks. */
function sample(): ComputeGraph {
  const g = new ComputeGraph();
  const k = g.addNode({ kind: 'kernel', functionName: 'k', grid: 4, block: 32, stream: 1 as never });
  const c = g.addNode({ kind: 'memcpy', dir: MemcpyDir.HostToDevice, sizeBytes: 8 });
  const s = g.addNode({ kind: 'memset', sizeBytes: 8, value: 3, elementSize: 2 });
  const a = g.addNode({ kind: 'memAlloc', sizeBytes: 64 });
  const f = g.addNode({ kind: 'memFree', alloc: a });
  g.addEdges([
    [k, c],
    [c, s],
    [s, a],
    [a, f],
  ]);
  return g;
}

const u32s = (values: number[]): Uint8Array => new Uint8Array(Uint32Array.from(values).buffer);

test('the column checks refuse what addNode and addEdges refuse, naming the section and node', () => {
  const bytes = sample().toBinary();
  const param = (v: number, slot: number, x: number) => (p: Uint8Array) => (new DataView(p.buffer).setUint32(16 * v + 4 * slot, x, true), p);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'KIND', (p) => ((p[2] = 11), p))), /section 'KIND': node 2 has kind 11/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'SLOT', (p) => (new DataView(p.buffer).setInt32(4, 5, true), p))), /section 'SLOT': node 1 has stream slot 5/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'NAME', (p) => (new DataView(p.buffer).setUint32(0, 99, true), p))), /section 'NAME': node 0 names string 99/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(0, 0, 0))), /section 'PARM': node 0 \(a 'kernel' node\) has grid x 0/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(0, 1, 2000))), /has block x 2000/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(1, 0, 3))), /section 'PEER': node 1 is a peer-to-peer copy without an entry/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(1, 0, 4))), /direction code 4/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(2, 3, 3))), /element size 3/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(2, 0, 70000))), /value 70000, too large for 2-byte elements/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(2, 1, 7))), /size 7, not a multiple/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(3, 1, 0))), /node 3 \(a 'memAlloc' node\) has size 0/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(4, 0, 1))), /node 4 \(a 'memFree' node\) frees node 0, which is a 'kernel' node/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'PARM', param(4, 0, 6))), /frees node 5; an allocation node comes before its free node/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'COST', () => new Uint8Array(new Float64Array([1, -1, 1, 1, 1]).buffer))), /section 'COST': node 1 has cost -1/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'COST', () => new Uint8Array(new Float64Array([1, 1, NaN, 1, 1]).buffer))), /node 2 has cost NaN/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'STRM', () => u32s([1, 1]))), /section 'STRM': stream 1 is listed twice/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'DIMS', () => u32s([0, 1, 1, 1, 1]))), /section 'DIMS': node 0's entry is all 1s/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'DIMS', () => u32s([0, 1, 1, 64, 1]))), /has 32·64·1 threads a block/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'DIMS', () => u32s([1, 2, 1, 1, 1]))), /section 'DIMS': entry 0 names node 1, which is not a kernel/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'EFRM', () => u32s([0, 1, 2, 3]).map((x, i) => (i === 0 ? 9 : x)))), /section 'EFRM': edge 0 leaves node 9, but the graph has 5/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'ETOS', () => u32s([0, 2, 3, 4]))), /section 'EFRM': edge 0 \[0, 0\] closes a cycle/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'ETOS', () => u32s([1, 2, 3, 0]))), /edge 3 \[3, 0\] closes a cycle/);
  refusedWith(() => ComputeGraph.fromBinary(patch(patch(bytes, 'EFRM', () => u32s([0, 0, 2, 3])), 'ETOS', () => u32s([1, 1, 3, 4]))), /section 'EFRM': edge 1 \[0, 1\] repeats an earlier edge/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'ECOD', () => u32s([0, 4]))), /section 'ECOD': edge 0 \[0, 1\] \(programmatic\): a programmatic edge joins two kernel nodes/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'ECOD', () => u32s([0, 1]))), /edge 0 has data code 1, which is no valid edge data/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'TEXT', (p) => ((p[p.length - 1] = 0xff), p))), /section 'TEXT': the strings are not UTF-8/);
});

test('duplicate edges and nested records are checked as the JSON reader checks them', () => {
  const g = new ComputeGraph();
  const a = g.addNode({ kind: 'empty' });
  const b = g.addNode({ kind: 'empty' });
  g.addEdge(a, b);
  const one = g.toBinary();
  const twice = patch(patch(one, 'EFRM', () => u32s([0, 0])), 'ETOS', () => u32s([1, 1]));
  // The header says one edge: the longer edge sections no longer fit.
  refusedWith(() => ComputeGraph.fromBinary(twice), /section 'EFRM' is 8 bytes long, which does not fit 2 node\(s\) and 1 edge\(s\)/);
  const h = new ComputeGraph();
  h.addNode({ kind: 'childGraph', graph: g });
  const nested = h.toBinary();
  assert.equal(json(ComputeGraph.fromBinary(nested)), json(h));
  const withAlloc = patch(nested, 'NEST', (p) => {
    const text = JSON.stringify({ kind: 'childGraph', graph: { format: 'cudagraph.ComputeGraph', version: 2, nodes: [{ id: 0, kind: 'memAlloc', sizeBytes: 8 }], edges: [] } });
    return Buffer.concat([u32s([1, 0, Buffer.byteLength(text)]), Buffer.from(text)]);
  });
  refusedWith(() => ComputeGraph.fromBinary(withAlloc), /section 'NEST': node 0: .*CUDA does not clone a graph holding allocation or free nodes/);
  refusedWith(() => ComputeGraph.fromBinary(patch(nested, 'NEST', () => u32s([0]))), /section 'NEST': holds 0 record\(s\); the graph has 1/);
});

/** A `TEXT` payload of `strings` in `encoding` (0 UTF-8, 1 UTF-16LE). */
function textPayload(strings: string[], encoding = 0): Uint8Array {
  return Uint8Array.from(Buffer.concat([u32s([strings.length, encoding, ...strings.map((x) => x.length)]), Buffer.from(strings.join(''), encoding === 0 ? 'utf8' : 'utf16le')]));
}

test('a file holds only what the writer writes for its graph: anything else is refused naming the section', () => {
  const g = new ComputeGraph();
  g.addNode({ kind: 'kernel', functionName: 'f', name: 'a', grid: 1, block: 1 });
  g.addNode({ kind: 'hostCallback', label: 'b', name: 'a' });
  const child = new ComputeGraph();
  child.addNode({ kind: 'empty' });
  g.addNode({ kind: 'childGraph', graph: child });
  const bytes = g.toBinary();
  assert.deepEqual(ComputeGraph.fromBinary(bytes).toBinary(), bytes);
  // The strings: each once, in the order the nodes first name them (name, then function or label), no other.
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'TEXT', () => textPayload(['a', 'f', 'b', 'childGraph', 'spare']))), /section 'TEXT': string 4 is named by no node/);
  refusedWith(() => ComputeGraph.fromBinary(patch(patch(bytes, 'TEXT', () => textPayload(['f', 'a', 'b', 'childGraph'])), 'NAME', () => u32s([1, 1, 3]))), /section 'TEXT': string 1 is first named by node 0 before string 0 is/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'TEXT', () => textPayload(['a', 'f', 'b', 'childGraph'], 1))), /section 'TEXT': encoding 1 \(UTF-16LE\) is for strings holding a lone surrogate, and none does/);
  // Costs: the section is empty when every cost is 1.
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'COST', () => new Uint8Array(new Float64Array([1, 1, 1]).buffer))), /section 'COST': every cost is 1/);
  // A nested record leaves out what the columns hold, and is written as the writer writes it.
  const record = (edit: (r: Record<string, unknown>) => unknown) => (p: Uint8Array): Uint8Array => {
    const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
    const r = JSON.parse(Buffer.from(p.subarray(12, 12 + dv.getUint32(8, true))).toString('utf8')) as Record<string, unknown>;
    const out = edit(r);
    const text = Buffer.from(typeof out === 'string' ? out : JSON.stringify(r));
    return Uint8Array.from(Buffer.concat([u32s([1, dv.getUint32(4, true), text.length]), text]));
  };
  for (const field of ['name', 'stream', 'cost']) {
    refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'NEST', record((r) => {
      r[field] = field === 'name' ? 'other' : 2;
    }))), new RegExp(`section 'NEST': node 2's record holds '${field}', which the columns hold`));
  }
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'NEST', record((r) => JSON.stringify(r, null, 1)))), /section 'NEST': node 2's record is not the text the writer writes for it/);
  refusedWith(() => ComputeGraph.fromBinary(patch(bytes, 'NEST', record((r) => JSON.stringify({ graph: r.graph, kind: r.kind })))), /node 2's record is not the text the writer writes/);
  // Streams no node is on are what a capture's idle stream leaves: kept, and written back.
  const capture = new StreamCapture();
  capture.beginCapture(StreamId(0));
  capture.beginCapture(StreamId(5));
  capture.recordKernel(StreamId(0), 'k', 1, 1, 0);
  const idle = capture.endCapture(StreamId(0)).toBinary();
  assert.deepEqual(ComputeGraph.fromBinary(idle).toBinary(), idle);
  // A name that starts with U+FEFF is a character like any other.
  const bom = new ComputeGraph();
  bom.addNode({ kind: 'empty', name: '\ufeffx' });
  assert.equal(ComputeGraph.fromBinary(bom.toBinary()).node(NodeId(0)).name, '\ufeffx');
});

/** The strings and encoding of a `TEXT` payload. */
function textStrings(p: Uint8Array): { strings: string[]; encoding: number } {
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  const count = dv.getUint32(0, true);
  const encoding = dv.getUint32(4, true);
  const all = Buffer.from(p.subarray(8 + 4 * count)).toString(encoding === 0 ? 'utf8' : 'utf16le');
  const strings: string[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const len = dv.getUint32(8 + 4 * i, true);
    strings.push(all.slice(at, at + len));
    at += len;
  }
  return { strings, encoding };
}

/** Rewrites of a file that keep its graph's meaning but are not what the writer writes. */
const REWRITES: Record<string, [tag: string, rewrite: (payload: Uint8Array) => Uint8Array]> = {
  'the strings as UTF-16': ['TEXT', (p) => textPayload(textStrings(p).strings, 1)],
  'a byte order mark before the strings': [
    'TEXT',
    (p) => {
      const { strings, encoding } = textStrings(p);
      return encoding === 0 && strings.length > 0 ? Uint8Array.from(Buffer.concat([textPayload(strings).subarray(0, 8 + 4 * strings.length), Buffer.from([0xef, 0xbb, 0xbf]), textPayload(strings).subarray(8 + 4 * strings.length)])) : p;
    },
  ],
  'a nested record indented': [
    'NEST',
    (p) => {
      const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
      if (dv.getUint32(0, true) === 0) return p;
      const len = dv.getUint32(8, true);
      const text = Buffer.from(JSON.stringify(JSON.parse(Buffer.from(p.subarray(12, 12 + len)).toString('utf8')), null, 1));
      return Uint8Array.from(Buffer.concat([u32s([dv.getUint32(0, true), dv.getUint32(4, true), text.length]), text, p.subarray(12 + len)]));
    },
  ],
  'a nested record with a name': [
    'NEST',
    (p) => {
      const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
      if (dv.getUint32(0, true) === 0) return p;
      const len = dv.getUint32(8, true);
      const text = Buffer.from(Buffer.from(p.subarray(12, 12 + len)).toString('utf8').replace(/^\{/, '{"name":"x",'));
      return Uint8Array.from(Buffer.concat([u32s([dv.getUint32(0, true), dv.getUint32(4, true), text.length]), text, p.subarray(12 + len)]));
    },
  ],
};

test('property: a file rewritten anywhere (its checksums made good) is refused or is the file its graph writes', () => {
  const sections = (bytes: Uint8Array): string[] => {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const out = [];
    for (let at = 24; at < bytes.length; at += 20 + dv.getUint32(at + 4, true)) out.push(String.fromCharCode(...bytes.subarray(at, at + 4)));
    return out;
  };
  const edits = fc.record({
    which: fc.nat(),
    bytes: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
    grow: fc.integer({ min: -1, max: 1 }),
  });
  fc.assert(
    fc.property(program, fc.oneof(edits, fc.constantFrom(...Object.keys(REWRITES))), (p, change) => {
      const bytes = build(p).toBinary();
      let tag: string;
      let bad: Uint8Array;
      if (typeof change === 'string') {
        const [t, rewrite] = REWRITES[change]!;
        tag = t;
        bad = patch(bytes, t, rewrite);
      } else {
        const all = sections(bytes);
        tag = all[change.which % all.length]!;
        bad = patch(bytes, tag, (payload) => {
          let q = change.grow > 0 ? Uint8Array.from([...payload, 0, 0, 0, 0]) : change.grow < 0 && payload.length >= 4 ? payload.slice(0, payload.length - 4) : payload;
          if (q.length === 0) q = new Uint8Array(4);
          for (const [i, v] of change.bytes) q[i % q.length] = v;
          return q;
        });
      }
      let loaded: ComputeGraph;
      try {
        loaded = ComputeGraph.fromBinary(bad);
      } catch (e) {
        assert.ok(e instanceof FileFormatError, String(e));
        return;
      }
      assert.deepEqual(Buffer.from(loaded.toBinary()), Buffer.from(bad), `${typeof change === 'string' ? change : `section '${tag}' rewritten`}: accepted, but its graph writes another file`);
    }),
    { numRuns: 2000 },
  );
});

test('writeBinary waits for a slow Writable and the file names itself in refusals', async () => {
  const g = new ComputeGraph();
  for (let i = 0; i < 300_000; i++) g.addNode({ kind: 'kernel', functionName: `k${i % 7}`, grid: 1, block: 1 });
  const chunks: Buffer[] = [];
  // A slow Writable: each write completes on a later turn, so its buffer fills and it asks the writer to wait.
  const sink = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      setImmediate(done);
    },
  });
  let waits = 0;
  sink.on('drain', () => waits++);
  const n = await g.writeBinary(sink);
  // The Writable is left open: end it and wait for its last writes.
  sink.end();
  await once(sink, 'finish');
  assert.ok(waits > 0, 'the writer met backpressure');
  assert.equal(n, Buffer.concat(chunks).length);
  assert.equal(json(ComputeGraph.fromBinary(Buffer.concat(chunks))), json(g));
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-bin-'));
  try {
    const file = join(dir, 'cut.cgraph');
    writeFileSync(file, Buffer.concat(chunks).subarray(0, 1000));
    await assert.rejects(ComputeGraph.readBinary(file), (e: unknown) => e instanceof FileFormatError && e.file === file && /section 'PARM'/.test(e.message) === false && /section 'KIND'|'SLOT'|'NAME'/.test(e.message));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the portable CRC-32 gives the native values', () => {
  const data = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7919) & 0xff);
  assert.equal(crc32Portable(data), crc32(data));
  assert.equal(crc32Portable(data.subarray(500), crc32Portable(data.subarray(0, 500))), crc32(data));
  assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
});

test('readBinary refuses a piece that is not a Uint8Array, naming it, whatever the source', async () => {
  const bytes = sample().toBinary();
  const pieceRefused = (index: number, got: RegExp) => (e: unknown): boolean => {
    assert.ok(e instanceof InvalidArgumentError, String(e));
    assert.equal(e.parameter, 'source');
    assert.match(e.message, /^ComputeGraph\.readBinary: source must yield byte \(Uint8Array\) pieces, got /);
    assert.match(e.message, got);
    assert.match(e.message, new RegExp(`as piece ${index}$`));
    return true;
  };
  await assert.rejects(ComputeGraph.readBinary([bytes.subarray(0, 10), 5 as never]), pieceRefused(1, /got 5 /));
  await assert.rejects(ComputeGraph.readBinary([null as never]), pieceRefused(0, /got null /));
  // An object-mode Readable of numbers, and elements that are not bytes.
  await assert.rejects(ComputeGraph.readBinary(Readable.from([1, 2, 3]) as never), pieceRefused(0, /got 1 /));
  await assert.rejects(ComputeGraph.readBinary([new Uint16Array(bytes.length) as never]), pieceRefused(0, /an object \(Uint16Array\)/));
  await assert.rejects(ComputeGraph.readBinary([bytes.buffer as never]), pieceRefused(0, /an object \(ArrayBuffer\)/));
  // A string is not the file's bytes (a Readable that decoded them): refused, not re-encoded.
  await assert.rejects(ComputeGraph.readBinary([Buffer.from(bytes).toString('latin1') as never]), pieceRefused(0, /got "CGRAPH/));
  // Pieces that are bytes of any kind of Uint8Array load.
  assert.equal(json(await ComputeGraph.readBinary([Buffer.from(bytes.subarray(0, 7)), bytes.subarray(7)])), json(sample()));
});

test('the arguments are checked', async () => {
  assert.throws(() => ComputeGraph.fromBinary('x' as never), /bytes must be a Uint8Array/);
  await assert.rejects(ComputeGraph.readBinary(42 as never), /source must be a file path/);
  await assert.rejects(sample().writeBinary('' as never), /target must be a file path or a Writable/);
  void NodeId;
});
