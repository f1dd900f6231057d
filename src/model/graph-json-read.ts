/**
 * Reading a graph document (graph-json.ts) from pieces of text as they arrive: a file, a Readable,
 * any iterable of byte or string pieces. Memory is the graph being built plus about one piece:
 * the text is never held whole (V8 refuses strings past 512 MiB, which a document reaches at about
 * 3.5 million nodes), nor is the parsed document.
 *
 * Why a parser of our own, for this one schema, and no dependency: the document is an object of
 * four fields whose two large ones are arrays of small items. The parser walks the bytes only to
 * find where items end (structural characters are ASCII, so UTF-8 needs no decoding for that; a
 * string is skipped with `indexOf` of its closing quote), then hands a run of whole nodes to
 * `JSON.parse` at once, and reads `[from, to]` pairs itself. Each node is then checked by the same
 * code as `addNode` and `fromJSON` (node-spec.ts), so a streamed document is accepted exactly when
 * `fromJSON` accepts it, and refused with the same `GRAPH_JSON_INVALID` messages naming the field.
 *
 * The bytes are the text as `fromJSON` takes it (json-text.ts): decoded strictly, a byte order
 * mark refused. Differences from `fromJSON`, which sees the whole document before it checks
 * anything: the first problem met in the order of the text is the one reported (a document with
 * two problems may be refused for the other one), and a field given twice is refused
 * (`JSON.parse` keeps the last).
 *
 * Why the cost stays linear in the text however it is cut: the bytes not yet used are kept in a
 * buffer that grows by doubling (a piece is appended, not the rest copied again with it), and a
 * value or a run of nodes split over pieces is scanned on from where the last piece ended, inside
 * a string included, never again from its start.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { GraphError } from '../errors/graph-error.js';
import { describe, isU32, requireOneOf, requireU32 } from '../util/validate.js';
import { GraphErrorCode } from './error-codes.js';
import { nameText } from './bounded-text.js';
import { endpointProblem, readEdgeSpec, PLAIN_EDGE } from './edge-data.js';
import { GRAPH_JSON_FORMAT, GRAPH_JSON_VERSIONS } from './graph-json.js';
import { appendNodeSpec, type SpecSource } from './node-spec.js';
import { NODE_KINDS, NODE_KINDS_V1 } from './node.js';
import { GraphStore } from './graph-store.js';
import { addEdgeColumns } from './edge-columns.js';
import { cycleText } from './cycle-text.js';
import { BOM_PROBLEM, decodeJsonText, NOT_UTF8_PROBLEM } from './json-text.js';
import { sourcePieces } from './source-pieces.js';

/** What a reader takes: a file path, a Readable, or any (async) iterable of byte or string pieces. */
export type GraphSource = string | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;

/** Options of `ComputeGraph.readJSON`. */
export interface ReadGraphOptions {
  /** Called after each piece with the bytes read so far (a progress bar's input). */
  readonly onProgress?: (bytes: number) => void;
}

const KNOWN_FIELDS = ['format', 'version', 'nodes', 'edges'];
const WS_SPACE = 0x20;
const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

const isWs = (c: number): boolean => c === WS_SPACE || c === 0x0a || c === 0x0d || c === 0x09;

// Where the parser is in the document.
const BEGIN = 0;
const KEY = 1;
const VALUE = 2;
const AFTER_VALUE = 3;
const NODES_OPEN = 4;
const NODES = 5;
const EDGES_OPEN = 6;
const EDGES = 7;
const TRAILING = 8;
const COLON_AFTER_KEY = 9;
/** The least room the reader's own buffer is given when it grows. */
const MIN_CAPACITY = 1 << 16;
const BOM = [0xef, 0xbb, 0xbf];

/**
 * Reads the graph document in `source` into a store (`ComputeGraph.readJSON` wraps it); `op` names the call in refusals.
 * @throws GraphError `GRAPH_JSON_INVALID` as `fromJSON` (see the file comment); InvalidArgumentError
 *   for a piece that is neither bytes nor a string; the source's own errors (a missing file) as they are.
 */
export async function readGraphJson(source: GraphSource, op: string, options: ReadGraphOptions = {}): Promise<GraphStore> {
  const reader = new GraphJsonReader(op);
  let bytes = 0;
  for await (const piece of sourcePieces(source, op, { strings: true, highWaterMark: 1 << 20 })) {
    reader.feed(piece);
    bytes += piece.length;
    options.onProgress?.(bytes);
  }
  return reader.finish();
}

/** A push parser of one graph document: `feed` it pieces of UTF-8, then `finish`. */
export class GraphJsonReader {
  readonly #op: string;
  readonly #store = new GraphStore();
  /** The bytes not yet used, from `#pos` on: a piece as it came, or a view of `#own`. */
  #buf: Uint8Array = new Uint8Array(0);
  /** The reader's own memory that `#buf` views (from `#ownStart`), with room after it to append to; null when `#buf` is a piece. */
  #own: Uint8Array | null = null;
  #ownStart = 0;
  #pos = 0;
  /** Bytes dropped from the front of the buffer: `#base + #pos` is the offset in the whole text. */
  #base = 0;
  // The scan of the value at the cursor (offsets in the whole text), resumed with each piece until it ends.
  #valueAt = -1;
  #valueFrom = 0;
  #valueDepth = 0;
  #valueInString = false;
  #state = BEGIN;
  #firstKey = true;
  #key = '';
  readonly #seen = new Set<string>();
  #version: number | null = null;
  /** The first node (index, kind) or triple edge that a version 1 document may not hold, while the version is not known yet. */
  #v2Kind: { index: number; kind: string } | null = null;
  #v2Triple: { index: number; edge: unknown } | null = null;
  #nodes = 0;
  // Scanning a run of nodes resumes where the last piece ended (an offset in the whole text, inside
  // a string or not), so a large node costs O(its size).
  #scanFrom = 0;
  #scanDepth = 0;
  #scanInString = false;
  #afterComma = false;
  #expectEdge = true;
  #edges = 0;
  #from = new Uint32Array(1024);
  #to = new Uint32Array(1024);
  /** Edge index → data code, for the edges given as triples. */
  readonly #codes = new Map<number, number>();

  constructor(op: string) {
    this.#op = op;
  }

  /** Parses what `piece` completes. @throws GraphError `GRAPH_JSON_INVALID` at the first problem. */
  feed(piece: Uint8Array): void {
    const rest = this.#buf.length - this.#pos;
    if (rest === 0) {
      // Everything before was used: the piece itself is the buffer (no copy).
      this.#base += this.#buf.length;
      this.#buf = piece;
      this.#own = null;
    } else {
      this.#base += this.#pos;
      const own = this.#own;
      const end = this.#ownStart + this.#buf.length;
      if (own !== null && end + piece.length <= own.length) {
        own.set(piece, end);
        this.#ownStart += this.#pos;
        this.#buf = own.subarray(this.#ownStart, end + piece.length);
      } else {
        // Twice the room needed: the bytes kept are copied again only after as many more have come.
        const next = new Uint8Array(Math.max(2 * (rest + piece.length), MIN_CAPACITY));
        next.set(this.#buf.subarray(this.#pos));
        next.set(piece, rest);
        this.#own = next;
        this.#ownStart = 0;
        this.#buf = next.subarray(0, rest + piece.length);
      }
    }
    this.#pos = 0;
    this.#run(false);
  }

  /** Ends the text and returns the graph's store. @throws GraphError `GRAPH_JSON_INVALID`. */
  finish(): GraphStore {
    this.#run(true);
    if (this.#state !== TRAILING) throw this.#syntax('the text ends inside the document');
    if (!this.#seen.has('format')) throw this.#invalid(`format must be '${GRAPH_JSON_FORMAT}', got undefined`);
    if (!this.#seen.has('version')) throw this.#invalid(`version must be ${GRAPH_JSON_VERSIONS.join(' or ')} (the versions this build reads), got undefined`);
    if (!this.#seen.has('nodes')) throw this.#invalid('nodes must be an array, got undefined');
    if (!this.#seen.has('edges')) throw this.#invalid('edges must be an array, got undefined');
    return this.#build();
  }

  #invalid(message: string, cause?: unknown): GraphError {
    return new GraphError('ValidationFailed', GraphErrorCode.JsonInvalid, `${this.#op}: ${message}`, cause === undefined ? undefined : { cause });
  }

  #syntax(what: string, cause?: unknown): GraphError {
    return this.#invalid(`not JSON text (${what}, at byte ${this.#base + this.#pos})`, cause);
  }

  /** A refusal of a checker (InvalidArgumentError naming `op`) as the document's refusal. */
  #rethrow(e: unknown): never {
    if (e instanceof InvalidArgumentError) throw this.#invalid(e.message.slice(this.#op.length + 2), e);
    throw e;
  }

  #skipWs(final: boolean): boolean {
    const b = this.#buf;
    while (this.#pos < b.length && isWs(b[this.#pos]!)) this.#pos++;
    if (this.#pos < b.length) return true;
    return final;
  }

  /**
   * The index just after the closing quote of a string whose bytes from `from` on are inside it
   * (the first unescaped quote at or after `from`), or −1 when the buffer ends first.
   */
  #closeQuote(from: number): number {
    const b = this.#buf;
    let q = b.indexOf(QUOTE, from);
    while (q >= 0) {
      let slashes = 0;
      while (b[q - 1 - slashes] === BACKSLASH) slashes++;
      if (slashes % 2 === 0) return q + 1;
      q = b.indexOf(QUOTE, q + 1);
    }
    return -1;
  }

  /**
   * The index just after the JSON value starting at `at`, or −1 when the buffer ends first (unless
   * `final`). A value split over pieces is scanned on from where the last call stopped.
   */
  #valueEnd(at: number, final: boolean): number {
    const b = this.#buf;
    const base = this.#base;
    if (this.#valueAt !== base + at) {
      this.#valueAt = base + at;
      this.#valueFrom = base + at;
      this.#valueDepth = 0;
      this.#valueInString = false;
    }
    let i = this.#valueFrom - base;
    const c = b[at]!;
    if (c === QUOTE) {
      const e = this.#closeQuote(Math.max(i, at + 1));
      if (e < 0) this.#valueFrom = base + b.length;
      return e;
    }
    if (c !== OPEN_ARRAY && c !== OPEN_OBJECT) {
      while (i < b.length && !isWs(b[i]!) && b[i] !== COMMA && b[i] !== CLOSE_ARRAY && b[i] !== CLOSE_OBJECT) i++;
      this.#valueFrom = base + i;
      return i < b.length || final ? i : -1;
    }
    let depth = this.#valueDepth;
    let inString = this.#valueInString;
    while (i < b.length) {
      if (inString) {
        const e = this.#closeQuote(i);
        if (e < 0) {
          i = b.length;
          break;
        }
        i = e;
        inString = false;
        continue;
      }
      const x = b[i]!;
      if (x === QUOTE) inString = true;
      else if (x === OPEN_ARRAY || x === OPEN_OBJECT) depth++;
      else if (x === CLOSE_ARRAY || x === CLOSE_OBJECT) {
        if (--depth === 0) return i + 1;
      }
      i++;
    }
    this.#valueFrom = base + i;
    this.#valueDepth = depth;
    this.#valueInString = inString;
    return -1;
  }

  /** The text of bytes `a..b` of the buffer. @throws GraphError when they are not UTF-8. */
  #text(a: number, b: number): string {
    const text = decodeJsonText(this.#buf.subarray(a, b));
    if (text === null) throw this.#invalid(`not JSON text (${NOT_UTF8_PROBLEM}, in the text from byte ${this.#base + a} on)`);
    return text;
  }

  #parse(a: number, b: number): unknown {
    const text = this.#text(a, b);
    try {
      return JSON.parse(text);
    } catch (e) {
      this.#pos = a;
      throw this.#syntax((e as Error).message, e);
    }
  }

  /** Reads one whole value at the cursor, or returns `undefined` (and leaves the cursor) when it is not all here yet. */
  #value(final: boolean): { value: unknown } | undefined {
    const end = this.#valueEnd(this.#pos, final);
    if (end < 0) {
      if (final) throw this.#syntax('the text ends inside a value');
      return undefined;
    }
    const value = this.#parse(this.#pos, end);
    this.#pos = end;
    return { value };
  }

  #run(final: boolean): void {
    for (;;) {
      if (!this.#skipWs(final)) return;
      const b = this.#buf;
      if (this.#pos >= b.length && this.#state !== TRAILING) return;
      switch (this.#state) {
        case BEGIN: {
          // A byte order mark is refused as fromJSON refuses it, with a message that names it.
          if (this.#base + this.#pos === 0 && b[0] === BOM[0]) {
            const k = Math.min(b.length, BOM.length);
            let matches = true;
            for (let j = 1; j < k; j++) matches &&= b[j] === BOM[j];
            if (matches && k === BOM.length) throw this.#syntax(BOM_PROBLEM);
            // The first piece may end inside the mark: wait for the rest.
            if (matches && !final) return;
          }
          if (b[this.#pos] === OPEN_OBJECT) {
            this.#pos++;
            this.#state = KEY;
            continue;
          }
          const v = this.#value(final);
          if (v === undefined) return;
          throw this.#invalid(`the document must be an object, got ${describe(v.value)}`);
        }
        case KEY: {
          const c = b[this.#pos];
          if (c === CLOSE_OBJECT && this.#firstKey) {
            this.#pos++;
            this.#state = TRAILING;
            continue;
          }
          if (c !== QUOTE) throw this.#syntax(`expected a field name, got '${String.fromCharCode(c!)}'`);
          const end = this.#valueEnd(this.#pos, final);
          if (end < 0) {
            if (final) throw this.#syntax('the text ends inside a field name');
            return;
          }
          // A field name is a JSON string (it starts with a quote and ends at its closing one).
          this.#key = this.#parse(this.#pos, end) as string;
          this.#pos = end;
          this.#state = COLON_AFTER_KEY;
          continue;
        }
        case COLON_AFTER_KEY: {
          const key = this.#key;
          if (b[this.#pos] !== COLON) throw this.#syntax(`expected ':' after the field name ${JSON.stringify(nameText(key))}`);
          if (!KNOWN_FIELDS.includes(key)) throw this.#invalid(`unknown field '${nameText(key)}' (known: ${KNOWN_FIELDS.join(', ')})`);
          if (this.#seen.has(key)) throw this.#invalid(`the document gives the field '${key}' twice`);
          this.#seen.add(key);
          this.#firstKey = false;
          this.#pos++;
          this.#state = key === 'nodes' ? NODES_OPEN : key === 'edges' ? EDGES_OPEN : VALUE;
          continue;
        }
        case VALUE: {
          const v = this.#value(final);
          if (v === undefined) return;
          if (this.#key === 'format') this.#checkFormat(v.value);
          else this.#checkVersion(v.value);
          this.#state = AFTER_VALUE;
          continue;
        }
        case AFTER_VALUE: {
          const c = b[this.#pos];
          this.#pos++;
          if (c === COMMA) this.#state = KEY;
          else if (c === CLOSE_OBJECT) this.#state = TRAILING;
          else {
            this.#pos--;
            throw this.#syntax(`expected ',' or '}' after the field '${this.#key}', got '${String.fromCharCode(c!)}'`);
          }
          continue;
        }
        case NODES_OPEN:
        case EDGES_OPEN: {
          const field = this.#state === NODES_OPEN ? 'nodes' : 'edges';
          if (b[this.#pos] === OPEN_ARRAY) {
            this.#pos++;
            this.#state = field === 'nodes' ? NODES : EDGES;
            this.#afterComma = false;
            this.#expectEdge = true;
            this.#scanFrom = this.#base + this.#pos;
            this.#scanDepth = 0;
            this.#scanInString = false;
            continue;
          }
          const v = this.#value(final);
          if (v === undefined) return;
          throw this.#invalid(`${field} must be an array, got ${describe(v.value)}`);
        }
        case NODES:
          if (!this.#nodeRun(final)) return;
          continue;
        case EDGES:
          if (!this.#edgeRun(final)) return;
          continue;
        case TRAILING:
          if (this.#pos < b.length) throw this.#syntax('unexpected text after the document');
          return;
      }
    }
  }

  #checkFormat(value: unknown): void {
    if (value !== GRAPH_JSON_FORMAT) throw this.#invalid(`format must be '${GRAPH_JSON_FORMAT}', got ${describe(value)}`);
  }

  #checkVersion(value: unknown): void {
    if (!(GRAPH_JSON_VERSIONS as readonly unknown[]).includes(value)) {
      throw this.#invalid(`version must be ${GRAPH_JSON_VERSIONS.join(' or ')} (the versions this build reads), got ${describe(value)}`);
    }
    this.#version = value as number;
    if (value !== 1) return;
    // The nodes and edges came before the version: refuse what version 1 does not hold, as if it had come first.
    if (this.#v2Kind !== null) {
      try {
        requireOneOf(this.#op, 'kind', this.#v2Kind.kind, NODE_KINDS_V1);
      } catch (e) {
        if (e instanceof InvalidArgumentError) throw this.#invalid(`nodes[${this.#v2Kind.index}].${e.message.slice(this.#op.length + 2)}`, e);
        throw e;
      }
    }
    if (this.#v2Triple !== null) throw this.#invalid(`edges[${this.#v2Triple.index}] must be a pair [from, to], got ${describe(this.#v2Triple.edge)}`);
  }

  /**
   * Reads the whole nodes that have arrived: finds the last separator at depth 0 (a comma between
   * nodes, or the array's end), parses the nodes before it at once, checks and appends each.
   * Returns false when it needs more text.
   */
  #nodeRun(final: boolean): boolean {
    const b = this.#buf;
    let i = this.#scanFrom - this.#base;
    let depth = this.#scanDepth;
    let inString = this.#scanInString;
    let last = -1;
    let closed = false;
    while (i < b.length) {
      if (inString) {
        const e = this.#closeQuote(i);
        if (e < 0) {
          i = b.length;
          break;
        }
        i = e;
        inString = false;
        continue;
      }
      const c = b[i]!;
      if (c === QUOTE) {
        inString = true;
        i++;
        continue;
      }
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
      else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (depth === 0) {
          last = i;
          closed = true;
          break;
        }
        depth--;
      } else if (c === COMMA && depth === 0) last = i;
      i++;
    }
    if (last < 0) {
      // Resume where the buffer ended, inside a string or not.
      this.#scanFrom = this.#base + i;
      this.#scanDepth = depth;
      this.#scanInString = inString;
      if (final) throw this.#syntax('the text ends inside the nodes');
      return false;
    }
    const text = this.#text(this.#pos, last);
    // JSON's own whitespace only: `trim()` would also drop a byte order mark, which JSON.parse refuses.
    if (/^[ \t\n\r]*$/.test(text)) {
      if (!(closed && this.#nodes === 0 && !this.#afterComma)) throw this.#syntax('expected a node');
    } else {
      let nodes: unknown[];
      try {
        nodes = JSON.parse(`[${text}]`) as unknown[];
      } catch (e) {
        throw this.#syntax(`${(e as Error).message}; in the nodes from nodes[${this.#nodes}] on`, e);
      }
      for (const node of nodes) this.#appendNode(node);
    }
    this.#pos = last + 1;
    this.#scanFrom = this.#base + this.#pos;
    this.#scanDepth = 0;
    this.#scanInString = false;
    this.#afterComma = !closed;
    if (closed) this.#state = AFTER_VALUE;
    return true;
  }

  #appendNode(node: unknown): void {
    const i = this.#nodes;
    if (typeof node === 'object' && node !== null && (node as { id?: unknown }).id !== i) {
      throw this.#invalid(`nodes[${i}].id must be ${i} (ids are the node's index), got ${describe((node as { id?: unknown }).id)}`);
    }
    const v1 = this.#version === 1;
    const source: SpecSource = v1 ? V1_SOURCE : V2_SOURCE;
    try {
      appendNodeSpec(this.#store, this.#op, `nodes[${i}].`, node, source);
    } catch (e) {
      this.#rethrow(e);
    }
    if (this.#version === null && this.#v2Kind === null) {
      const kind = (node as { kind: string }).kind;
      if (!(NODE_KINDS_V1 as readonly string[]).includes(kind)) this.#v2Kind = { index: i, kind };
    }
    this.#nodes++;
  }

  /**
   * Reads the edges that have arrived: `[from, to]` pairs by hand, anything else (a triple, odd
   * spacing, a bad item) as one JSON value checked as `fromJSON` checks it. Returns false when it
   * needs more text.
   */
  #edgeRun(final: boolean): boolean {
    const b = this.#buf;
    const len = b.length;
    for (;;) {
      let p = this.#pos;
      while (p < len && isWs(b[p]!)) p++;
      if (p >= len) {
        this.#pos = p;
        if (final) throw this.#syntax('the text ends inside the edges');
        return false;
      }
      this.#pos = p;
      const c = b[p]!;
      if (!this.#expectEdge) {
        // After an edge: a comma or the end of the array.
        this.#pos = p + 1;
        if (c === COMMA) {
          this.#expectEdge = true;
          this.#afterComma = true;
          continue;
        }
        if (c === CLOSE_ARRAY) {
          this.#state = AFTER_VALUE;
          return true;
        }
        this.#pos = p;
        throw this.#syntax(`expected ',' or ']' after edges[${this.#edges - 1}]`);
      }
      if (c === CLOSE_ARRAY && !this.#afterComma) {
        this.#pos = p + 1;
        this.#state = AFTER_VALUE;
        return true;
      }
      // The common item, `[from,to]` without spaces, read digit by digit.
      if (c === OPEN_ARRAY) {
        let q = p + 1;
        let u = 0;
        const u0 = q;
        while (q < len && b[q]! >= DIGIT_0 && b[q]! <= DIGIT_9) u = u * 10 + (b[q++]! - DIGIT_0);
        const uDigits = q - u0;
        if (q < len && b[q] === COMMA && uDigits > 0 && uDigits <= 10 && !(uDigits > 1 && b[u0] === DIGIT_0)) {
          q++;
          let v = 0;
          const v0 = q;
          while (q < len && b[q]! >= DIGIT_0 && b[q]! <= DIGIT_9) v = v * 10 + (b[q++]! - DIGIT_0);
          const vDigits = q - v0;
          if (q < len && b[q] === CLOSE_ARRAY && vDigits > 0 && vDigits <= 10 && !(vDigits > 1 && b[v0] === DIGIT_0) && u <= 0xffff_ffff && v <= 0xffff_ffff) {
            this.#pushEdge(u, v);
            this.#pos = q + 1;
            this.#expectEdge = false;
            this.#afterComma = false;
            continue;
          }
        }
        if (q >= len && !final) return false;
      }
      const item = this.#value(final);
      if (item === undefined) return false;
      this.#edgeItem(item.value);
      this.#expectEdge = false;
      this.#afterComma = false;
    }
  }

  #pushEdge(u: number, v: number): void {
    const k = this.#edges;
    if (k >= this.#from.length) {
      const from = new Uint32Array(this.#from.length * 2);
      from.set(this.#from);
      this.#from = from;
      const to = new Uint32Array(this.#to.length * 2);
      to.set(this.#to);
      this.#to = to;
    }
    this.#from[k] = u;
    this.#to[k] = v;
    this.#edges = k + 1;
  }

  /** One edge item that is not a plain `[from,to]`: checked with `fromJSON`'s rules and messages. */
  #edgeItem(edge: unknown): void {
    const i = this.#edges;
    const name = `edges[${i}]`;
    const v1 = this.#version === 1;
    const triple = !v1 && Array.isArray(edge) && edge.length === 3;
    if (!Array.isArray(edge) || (edge.length !== 2 && !triple)) {
      throw this.#invalid(`${name} must be ${v1 ? 'a pair [from, to]' : 'a pair [from, to] or a triple [from, to, { kind, port }]'}, got ${describe(edge)}`);
    }
    try {
      const u = isU32(edge[0]) ? edge[0] : requireU32(this.#op, `${name}[0]`, edge[0]);
      const v = isU32(edge[1]) ? edge[1] : requireU32(this.#op, `${name}[1]`, edge[1]);
      if (triple) {
        const code = readEdgeSpec(this.#op, `${name}[2]`, edge[2]);
        if (code !== PLAIN_EDGE) this.#codes.set(i, code);
        if (this.#version === null) this.#v2Triple ??= { index: i, edge };
      }
      this.#pushEdge(u, v);
    } catch (e) {
      this.#rethrow(e);
    }
  }

  /** Checks the edges against the nodes and adds them, as `fromJSON` does. */
  #build(): GraphStore {
    const store = this.#store;
    const n = store.n;
    const m = this.#edges;
    const from = this.#from;
    const to = this.#to;
    for (let i = 0; i < m; i++) {
      const u = from[i]!;
      const v = to[i]!;
      if (u >= n || v >= n) throw this.#invalid(`edges[${i}] [${u}, ${v}] names node ${u >= n ? u : v}, but the document has ${n} node(s)`);
      const code = this.#codes.get(i);
      if (code !== undefined) {
        const problem = endpointProblem(code, u, NODE_KINDS[store.kind[u]!]!, v, NODE_KINDS[store.kind[v]!]!);
        if (problem !== null) throw this.#invalid(`edges[${i}] [${u}, ${v}]: ${problem}`);
      }
    }
    const p = addEdgeColumns(store, from, to, m);
    if (p !== null) {
      const at = `edges[${p.index}] [${from[p.index]}, ${to[p.index]}]`;
      throw this.#invalid(p.repeat ? `${at} repeats an earlier edge` : `${at} closes a cycle (${cycleText(p.cycle)})`);
    }
    // No duplicates, so edge i is edge number i + 1.
    for (const [i, code] of this.#codes) store.setEdgeCode(i + 1, code);
    return store;
  }
}

const V2_SOURCE: SpecSource = { kinds: NODE_KINDS, extraKey: 'id', documentDepth: 1 };
const V1_SOURCE: SpecSource = { kinds: NODE_KINDS_V1, extraKey: 'id', documentDepth: 1 };
