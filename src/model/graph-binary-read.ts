/**
 * Reading the binary graph form (graph-binary-format.ts) into a store, from bytes in memory or
 * from a file or stream as it arrives, with checks as complete as the JSON reader's: a file is
 * accepted exactly when its graph is one that `addNode` / `addEdges` could have built.
 *
 * Why column by column: the JSON reader costs about a microsecond a node building and checking a
 * record; here the columns become the store's columns as they are (no copy of the kinds, slots,
 * names, costs and parameters), and one pass over them checks every node's kind, stream, name, cost
 * and parameters against the same limits (node-spec.ts), with no object per node. Edges go through
 * the readers' shared path (edge-columns.ts): range, duplicate and cycle checks as the JSON reader's.
 *
 * Child graph and conditional nodes (rare, and holding whole graphs) are stored as JSON records
 * and checked by the JSON path itself (`appendNodeSpec` into a side store, whose handle and
 * nested-size bookkeeping then carries over), so their rules live in one place.
 */
import { CudagraphError } from '../errors/base.js';
import { describe, isWellFormed } from '../util/validate.js';
import { edgeDataText, endpointProblem, EDGE_DATA_BY_CODE, PLAIN_EDGE, readEdgeSpec } from './edge-data.js';
import { addEdgeColumns } from './edge-columns.js';
import { cycleText } from './cycle-text.js';
import { BinaryRefusal, LITTLE_ENDIAN, readFraming, swapBytes, type BinaryParts, type ByteRequest } from './graph-binary-format.js';
import { GraphStore } from './graph-store.js';
import { NEST_COLUMN_FIELDS, nestRecordText } from './graph-binary-write.js';
import { appendNodeSpec, type SpecSource } from './node-spec.js';
import { DIR_P2P } from './memcpy-dir.js';
// The kinds' codes and CUDA's launch limits, as node-spec.ts checks them.
import * as limits from './node.js';

/** Where a binary reader takes its bytes from: a file path, a Readable or any (async) iterable of byte pieces, or the bytes themselves. */
export type BinarySource = string | Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

const TWO_32 = 2 ** 32;
/** The largest size a node holds (`requireSize`: a safe integer): its high word. */
const SIZE_HI_MAX = Math.floor(Number.MAX_SAFE_INTEGER / TWO_32);
const NEST_SOURCE: SpecSource = { kinds: limits.NODE_KINDS, extraKey: null, documentDepth: 1 };
// Strict, and a leading U+FEFF kept as a character: stripped, a file's bytes and its strings would differ.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Whether each data code is edge data an edge other than a plain one may carry (`readEdgeSpec` accepts it). */
const VALID_CODES = EDGE_DATA_BY_CODE.map((data, code) => {
  try {
    return code !== PLAIN_EDGE && readEdgeSpec('', '', data) === code;
  } catch {
    return false;
  }
});
/** Above this, a request from a source of unknown length is gathered as it arrives rather than allocated first. */
const ALLOCATE_FIRST_MAX = 1 << 26;

/** A typed view of a section's payload (which the framing reader allocated fresh, so it is aligned). */
function view<T>(b: Uint8Array, C: { new (buffer: ArrayBufferLike, offset: number, length: number): T; BYTES_PER_ELEMENT: number }): T {
  if (!LITTLE_ENDIAN && C.BYTES_PER_ELEMENT > 1) swapBytes(b, C.BYTES_PER_ELEMENT);
  return new C(b.buffer, b.byteOffset, b.byteLength / C.BYTES_PER_ELEMENT);
}

/** A node's kind name with its article, for messages. */
const kindText = (k: number): string => `a '${limits.NODE_KINDS[k]}' node`;

/**
 * Builds the store the checked sections describe. @throws BinaryRefusal naming the section and
 * node or edge at the first problem; a nested JSON record's refusal carries its GraphError or
 * InvalidArgumentError as the cause.
 */
export function buildStore(parts: BinaryParts, op: string): GraphStore {
  const { n, m, sections } = parts;
  const get = (tag: Parameters<typeof sections.get>[0]): Uint8Array => sections.get(tag)!;
  const refuse = (tag: string, message: string): never => {
    throw new BinaryRefusal(`section '${tag}': ${message}`);
  };
  // Fresh arrays of the framing reader's (never shared memory).
  const kind = get('KIND') as Uint8Array<ArrayBuffer>;
  const streams = view(get('STRM'), Uint32Array);
  const slot = view(get('SLOT'), Int32Array);
  const name = view(get('NAME'), Uint32Array);
  const costBytes = get('COST');
  const cost = costBytes.length === 0 ? null : view(costBytes, Float64Array);
  const param = view(get('PARM'), Uint32Array);
  const dims = view(get('DIMS'), Uint32Array);
  const peers = view(get('PEER'), Uint32Array);
  const store = new GraphStore();

  // Strings: decoded once as a whole (UTF-8 decodes piecewise to the same text), then cut by length.
  const textBytes = get('TEXT');
  if (textBytes.length < 8) refuse('TEXT', `${textBytes.length} bytes cannot hold its count and encoding`);
  const th = new DataView(textBytes.buffer, textBytes.byteOffset, textBytes.byteLength);
  const count = th.getUint32(0, true);
  const encoding = th.getUint32(4, true);
  if (encoding > 1) refuse('TEXT', `encoding ${encoding} is neither 0 (UTF-8) nor 1 (UTF-16LE)`);
  if (8 + 4 * count > textBytes.length) refuse('TEXT', `${count} string lengths do not fit its ${textBytes.length} bytes`);
  const body = textBytes.subarray(8 + 4 * count);
  let all: string;
  try {
    all = encoding === 0 ? utf8.decode(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf16le');
  } catch {
    return refuse('TEXT', 'the strings are not UTF-8');
  }
  if (encoding === 1 && body.length % 2 !== 0) refuse('TEXT', 'the UTF-16 strings have an odd number of bytes');
  let at = 0;
  for (let i = 0; i < count; i++) {
    const len = th.getUint32(8 + 4 * i, true);
    if (at + len > all.length) refuse('TEXT', `string ${i} runs past the end of the strings`);
    const s = all.slice(at, at + len);
    at += len;
    if (store.intern(s) !== i) refuse('TEXT', `string ${i} repeats string ${store.stringIndex.get(s)} (strings are interned)`);
  }
  if (at !== all.length) refuse('TEXT', `the strings hold ${all.length - at} code unit(s) more than their lengths add up to`);
  const strings = store.strings;
  if (encoding === 1 && strings.every(isWellFormed)) refuse('TEXT', 'encoding 1 (UTF-16LE) is for strings holding a lone surrogate, and none does (the writer uses UTF-8 then)');

  for (let s = 0; s < streams.length; s++) {
    if (store.streamSlot(streams[s]!) !== s) refuse('STRM', `stream ${streams[s]} is listed twice`);
  }
  const slotCount = store.slotCount;

  // Side tables, read into maps first: the node pass checks each against its node.
  for (let i = 0; i < dims.length; i += 5) {
    const id = dims[i]!;
    if (id >= n || kind[id] !== limits.KIND_KERNEL) refuse('DIMS', `entry ${i / 5} names node ${id}, which is not a kernel node of the ${n}`);
    if (i > 0 && id <= dims[i - 5]!) refuse('DIMS', `entry ${i / 5} (node ${id}) is not after the one before it`);
    const [gy, gz, by, bz] = [dims[i + 1]!, dims[i + 2]!, dims[i + 3]!, dims[i + 4]!];
    if (gy < 1 || gy > limits.GRID_YZ_MAX || gz < 1 || gz > limits.GRID_YZ_MAX) refuse('DIMS', `node ${id}'s grid y, z (${gy}, ${gz}) must be 1..${limits.GRID_YZ_MAX}`);
    if (by < 1 || by > limits.BLOCK_XY_MAX || bz < 1 || bz > limits.BLOCK_Z_MAX) refuse('DIMS', `node ${id}'s block y, z (${by}, ${bz}) must be 1..${limits.BLOCK_XY_MAX}, 1..${limits.BLOCK_Z_MAX}`);
    if (gy === 1 && gz === 1 && by === 1 && bz === 1) refuse('DIMS', `node ${id}'s entry is all 1s (a one-dimensional kernel has none)`);
    store.dims.set(id, [gy, gz, by, bz]);
  }
  for (let i = 0; i < peers.length; i += 3) {
    const id = peers[i]!;
    if (id >= n || kind[id] !== limits.KIND_MEMCPY || param[4 * id] !== DIR_P2P) refuse('PEER', `entry ${i / 3} names node ${id}, which is not a peer-to-peer copy of the ${n} nodes`);
    if (i > 0 && id <= peers[i - 3]!) refuse('PEER', `entry ${i / 3} (node ${id}) is not after the one before it`);
    store.peers.set(id, [peers[i + 1]!, peers[i + 2]!]);
  }

  // The node pass: every column of every node, against the limits `addNode` applies.
  const used = new Uint8Array(strings.length);
  // Strings are interned as nodes first name them (a node's name, then its function or label):
  // in any other order, or unnamed, they are not what the writer writes.
  let nextString = 0;
  const use = (s: number, v: number): void => {
    if (used[s] === 1) return;
    if (s !== nextString) refuse('TEXT', `string ${s} is first named by node ${v} before string ${nextString} is; the strings are listed in the order the nodes first name them`);
    used[s] = 1;
    nextString++;
  };
  let costNotOne = false;
  let nested = 0;
  for (let v = 0; v < n; v++) {
    const k = kind[v]!;
    if (k > limits.KIND_CONDITIONAL) refuse('KIND', `node ${v} has kind ${k}; kinds are 0..${limits.KIND_CONDITIONAL}`);
    const s = slot[v]!;
    if (s >= streams.length || s < -1) refuse('SLOT', `node ${v} has stream slot ${s}; the graph has ${streams.length} stream(s)`);
    if (s >= 0) slotCount[s]!++;
    const nm = name[v]!;
    if (nm >= strings.length) refuse('NAME', `node ${v} names string ${nm}; the graph has ${strings.length}`);
    use(nm, v);
    if (cost !== null) {
      const c = cost[v]!;
      if (!(c >= 0 && c < Infinity)) refuse('COST', `node ${v} has cost ${c}; a cost is a finite number ≥ 0`);
      if (c !== 1) costNotOne = true;
    }
    const p = 4 * v;
    const a = param[p]!;
    const b = param[p + 1]!;
    const c = param[p + 2]!;
    const d = param[p + 3]!;
    const bad = (what: string): never => refuse('PARM', `node ${v} (${kindText(k)}) ${what}`);
    switch (k) {
      case limits.KIND_KERNEL:
        if (a < 1 || a > limits.GRID_X_MAX) bad(`has grid x ${a}; it must be 1..${limits.GRID_X_MAX}`);
        if (b < 1 || b > limits.BLOCK_XY_MAX) bad(`has block x ${b}; it must be 1..${limits.BLOCK_XY_MAX}`);
        if (d >= strings.length) bad(`names function string ${d}; the graph has ${strings.length}`);
        use(d, v);
        {
          const e = store.dims.get(v);
          if (e !== undefined && b * e[2]! * e[3]! > limits.BLOCK_THREADS_MAX) bad(`has ${b}·${e[2]}·${e[3]} threads a block; CUDA allows at most ${limits.BLOCK_THREADS_MAX}`);
        }
        break;
      case limits.KIND_MEMCPY:
        if (a > DIR_P2P) bad(`has direction code ${a}; codes are 0..${DIR_P2P}`);
        if (c > SIZE_HI_MAX) bad('has a size past 2^53 − 1');
        if (d !== 0) bad('has a nonzero unused parameter');
        if (a === DIR_P2P && !store.peers.has(v)) refuse('PEER', `node ${v} is a peer-to-peer copy without an entry`);
        break;
      case limits.KIND_MEMSET: {
        if (c > SIZE_HI_MAX) bad('has a size past 2^53 − 1');
        if (d !== 1 && d !== 2 && d !== 4) bad(`has element size ${d}; it must be 1, 2 or 4`);
        const size = c * TWO_32 + b;
        if (size % d !== 0) bad(`has size ${size}, not a multiple of its element size ${d}`);
        if (d < 4 && a >= 2 ** (8 * d)) bad(`has value ${a}, too large for ${d}-byte elements`);
        break;
      }
      case limits.KIND_HOST:
        if (a !== 0 || b !== 0 || c !== 0) bad('has a nonzero unused parameter');
        if (d >= strings.length) bad(`names label string ${d}; the graph has ${strings.length}`);
        use(d, v);
        break;
      case limits.KIND_EVENT_RECORD:
      case limits.KIND_EVENT_WAIT:
        if (b !== 0 || c !== 0 || d !== 0) bad('has a nonzero unused parameter');
        break;
      case limits.KIND_MEM_ALLOC:
        if (c > SIZE_HI_MAX) bad('has a size past 2^53 − 1');
        if (b === 0 && c === 0) bad('has size 0 (CUDA allocates no empty graph memory)');
        if (d !== 0) bad('has a nonzero unused parameter');
        break;
      case limits.KIND_MEM_FREE:
        if (b !== 0 || c !== 0 || d !== 0) bad('has a nonzero unused parameter');
        if (a !== 0) {
          const alloc = a - 1;
          if (alloc >= v) bad(`frees node ${alloc}; an allocation node comes before its free node`);
          if (kind[alloc] !== limits.KIND_MEM_ALLOC) bad(`frees node ${alloc}, which is ${kindText(kind[alloc]!)}`);
          const other = store.freedBy.get(alloc);
          if (other !== undefined) bad(`frees node ${alloc}, which node ${other} frees already`);
          store.freedBy.set(alloc, v);
        }
        break;
      case limits.KIND_CHILD:
      case limits.KIND_CONDITIONAL:
        // Their parameters live in `NEST`.
        nested++;
        if (a !== 0 || b !== 0 || c !== 0 || d !== 0) bad('has a nonzero unused parameter');
        break;
      case limits.KIND_EMPTY:
        if (a !== 0 || b !== 0 || c !== 0 || d !== 0) bad('has a nonzero unused parameter');
        break;
    }
  }
  if (nextString < strings.length) refuse('TEXT', `string ${nextString} is named by no node (the writer writes only the strings nodes name)`);
  for (let i = 0; i < strings.length; i++) if (strings[i]!.length === 0) refuse('TEXT', `string ${i} is empty; names, function names and labels are not`);
  if (cost !== null && !costNotOne) refuse('COST', 'every cost is 1 (the writer leaves the section empty then)');
  readNested(store, get('NEST'), kind, n, nested, op);

  // The columns as read become the store's (capacity n: the first append after loading doubles them).
  const cap = Math.max(n, 1);
  store.kind = n > 0 ? kind : new Uint8Array(cap);
  store.slot = n > 0 ? slot : new Int32Array(cap);
  store.name = n > 0 ? name : new Uint32Array(cap);
  store.param = n > 0 ? param : new Uint32Array(4 * cap);
  store.cost = cost === null || n === 0 ? null : cost;
  store.firstOut = new Uint32Array(cap);
  store.firstIn = new Uint32Array(cap);
  store.n = n;
  store.version++;

  readEdges(store, view(get('EFRM'), Uint32Array), view(get('ETOS'), Uint32Array), view(get('ECOD'), Uint32Array), m);
  return store;
}

/** The `NEST` records, checked by the JSON node checker into a side store whose bookkeeping then moves to `store`. */
function readNested(store: GraphStore, bytes: Uint8Array, kind: Uint8Array, n: number, expected: number, op: string): void {
  const refuse = (message: string): never => {
    throw new BinaryRefusal(`section 'NEST': ${message}`);
  };
  if (bytes.length < 4) refuse(`${bytes.length} bytes cannot hold its count`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = dv.getUint32(0, true);
  if (count !== expected) refuse(`holds ${count} record(s); the graph has ${expected} child graph and conditional node(s)`);
  const side = new GraphStore();
  let at = 4;
  let last = -1;
  for (let i = 0; i < count; i++) {
    if (at + 8 > bytes.length) refuse(`record ${i} runs past the end of the section`);
    const id = dv.getUint32(at, true);
    const len = dv.getUint32(at + 4, true);
    at += 8;
    if (at + len > bytes.length) refuse(`record ${i} runs past the end of the section`);
    if (id >= n || (kind[id] !== limits.KIND_CHILD && kind[id] !== limits.KIND_CONDITIONAL) || id <= last) {
      refuse(`record ${i} names node ${id}, which is not the next child graph or conditional node`);
    }
    last = id;
    let text = '';
    let spec: unknown;
    try {
      text = utf8.decode(bytes.subarray(at, at + len));
      spec = JSON.parse(text);
    } catch (e) {
      refuse(`node ${id}'s record is not JSON text (${(e as Error).message})`);
    }
    at += len;
    const k = (spec as { kind?: unknown } | null)?.kind;
    if (k !== limits.NODE_KINDS[kind[id]!]) refuse(`node ${id}'s record is of kind ${describe(k)}; the node is ${kindText(kind[id]!)}`);
    // What the columns hold would be a second value, one the reader would ignore.
    const held = NEST_COLUMN_FIELDS.find((f) => Object.hasOwn(spec as object, f));
    if (held !== undefined) refuse(`node ${id}'s record holds '${held}', which the columns hold (a record leaves out ${NEST_COLUMN_FIELDS.join(', ')})`);
    let j: number;
    try {
      j = appendNodeSpec(side, op, `nodes[${id}].`, spec, NEST_SOURCE);
    } catch (e) {
      if (e instanceof CudagraphError) {
        const message = e.message.startsWith(`${op}: `) ? e.message.slice(op.length + 2) : e.message;
        throw new BinaryRefusal(`section 'NEST': node ${id}: ${message}`, { cause: e });
      }
      throw e;
    }
    if (nestRecordText(side, j) !== text) {
      refuse(`node ${id}'s record is not the text the writer writes for it (the record's fields in their order, written without spaces, defaults written out)`);
    }
    const child = side.children.get(j);
    if (child !== undefined) store.children.set(id, child);
    const cond = side.conditionals.get(j);
    if (cond !== undefined) {
      store.conditionals.set(id, cond);
      store.handleNodes.set(cond.handle.id, id);
    }
  }
  if (at !== bytes.length) refuse(`${bytes.length - at} byte(s) follow the last record`);
  // Only these nodes nest graphs or hold handles, so the side store's totals are the graph's.
  store.nextHandle = side.nextHandle;
  store.depth = side.depth;
  store.childNodes = side.childNodes;
}

/** The edges: ranges, data codes against their nodes, then duplicates and cycles (edge-columns.ts). */
function readEdges(store: GraphStore, from: Uint32Array, to: Uint32Array, codes: Uint32Array, m: number): void {
  const n = store.n;
  const refuse = (tag: string, message: string): never => {
    throw new BinaryRefusal(`section '${tag}': ${message}`);
  };
  for (let i = 0; i < m; i++) {
    if (from[i]! >= n) refuse('EFRM', `edge ${i} leaves node ${from[i]}, but the graph has ${n} node(s)`);
    if (to[i]! >= n) refuse('ETOS', `edge ${i} enters node ${to[i]}, but the graph has ${n} node(s)`);
  }
  for (let i = 0; i < codes.length; i += 2) {
    const e = codes[i]!;
    const code = codes[i + 1]!;
    if (e >= m || (i > 0 && e <= codes[i - 2]!)) refuse('ECOD', `entry ${i / 2} names edge ${e}, not the next of the ${m} edges`);
    if (VALID_CODES[code] !== true) refuse('ECOD', `edge ${e} has data code ${code}, which is no valid edge data other than plain`);
    const u = from[e]!;
    const v = to[e]!;
    const problem = endpointProblem(code, u, limits.NODE_KINDS[store.kind[u]!]!, v, limits.NODE_KINDS[store.kind[v]!]!);
    if (problem !== null) refuse('ECOD', `edge ${e} [${u}, ${v}] (${edgeDataText(code)}): ${problem}`);
  }
  // Room for every edge at once: appending then never grows the arrays.
  store.outs = new Uint32Array(2 * (m + 1));
  store.ins = new Uint32Array(2 * (m + 1));
  const p = addEdgeColumns(store, from, to, m);
  if (p !== null) {
    const at = `edge ${p.index} [${from[p.index]}, ${to[p.index]}]`;
    refuse('EFRM', p.repeat ? `${at} repeats an earlier edge` : `${at} closes a cycle (${cycleText(p.cycle)})`);
  }
  for (let i = 0; i < codes.length; i += 2) store.setEdgeCode(codes[i]! + 1, codes[i + 1]!);
}

/** Runs the framing reader over bytes in memory. */
export function partsOfBytes(bytes: Uint8Array): BinaryParts {
  let at = 0;
  const framing = readFraming(() => bytes.length - at);
  let step = framing.next();
  while (!step.done) {
    const req: ByteRequest = step.value;
    if (at + req.bytes > bytes.length) throw new BinaryRefusal(`the file ends inside ${req.what} (at byte ${bytes.length})`);
    // A fresh copy (a Buffer's slice would be a view): aligned for typed views, and the store owns it.
    const piece = new Uint8Array(bytes.subarray(at, at + req.bytes));
    at += req.bytes;
    step = framing.next(piece);
  }
  if (at !== bytes.length) throw new BinaryRefusal(`${bytes.length - at} byte(s) follow the last section`);
  return step.value;
}

/**
 * Runs the framing reader over pieces as they arrive; `size` is the source's length when known
 * (a file), so that no length past it is allocated. Each request is filled into one fresh array
 * when its length is known to fit, else gathered from the pieces that arrive and joined.
 */
export async function partsOfPieces(pieces: AsyncIterable<Uint8Array>, size: number | null, onProgress?: (bytes: number) => void): Promise<BinaryParts> {
  const it = pieces[Symbol.asyncIterator]();
  let cur: Uint8Array = new Uint8Array(0);
  let pos = 0;
  let read = 0;
  let consumed = 0;
  let ended = false;
  const pull = async (): Promise<boolean> => {
    if (ended) return false;
    const r = await it.next();
    if (r.done === true) {
      ended = true;
      return false;
    }
    cur = r.value;
    pos = 0;
    read += cur.length;
    onProgress?.(read);
    return true;
  };
  const take = async (count: number, what: string): Promise<Uint8Array> => {
    // A length from a source of unknown size may be a lie: past the cap, hold only what arrives.
    const gather = size === null && count > ALLOCATE_FIRST_MAX;
    const parts: Uint8Array[] = [];
    const out = gather ? null : new Uint8Array(count);
    let filled = 0;
    while (filled < count) {
      if (pos >= cur.length && !(await pull())) throw new BinaryRefusal(`the file ends inside ${what} (at byte ${consumed + filled})`);
      const k = Math.min(count - filled, cur.length - pos);
      if (out !== null) out.set(cur.subarray(pos, pos + k), filled);
      else parts.push(cur.slice(pos, pos + k));
      pos += k;
      filled += k;
    }
    consumed += count;
    return out ?? Buffer.concat(parts, count);
  };
  const framing = readFraming(size === null ? null : () => size - consumed);
  try {
    let step = framing.next();
    while (!step.done) step = framing.next(await take(step.value.bytes, step.value.what));
    while (pos >= cur.length) if (!(await pull())) return step.value;
    throw new BinaryRefusal('bytes follow the last section');
  } finally {
    if (!ended) await it.return?.();
  }
}
