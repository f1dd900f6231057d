/** Shared by the CLI tests: run `node bin/cudagraph.js`, temporary folders, sample graphs, SVG counts. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaptureEvent, MemcpyDir, StreamCapture, StreamId, type ComputeGraph } from '../../src/index.js';

/** The package root (dist/test/cli/ → three levels up), where bin/cudagraph.js lives. */
export const root = fileURLToPath(new URL('../../../', import.meta.url));
const bin = join(root, 'bin', 'cudagraph.js');

/** What a run of the command gave. */
export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/cudagraph.js …args` (killed after `timeoutMs` when given). */
export function cudagraph(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; uid?: number; gid?: number } = {}): Run {
  // Large graphs print megabytes with --json: room for them (the default is 1 MiB).
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: options.cwd ?? root,
    env: options.env ?? process.env,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    // A command that should fail at once but serves instead is killed (a blocking spawn stops the test's own timeout).
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A new temporary folder. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'cudagraph-cli-'));
}

/** Runs `body` in a new temporary folder, removed afterwards whatever happens. */
export function inTempDir(body: (dir: string) => void): void {
  const dir = tempDir();
  try {
    body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A user mistake: status 1, nothing on stdout, one `cudagraph: …` line on stderr matching `message`, no stack trace. */
export function assertUserError(r: Run, message: RegExp, what: string): void {
  assert.equal(r.status, 1, `${what}: status (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '', `${what}: stdout`);
  assert.match(r.stderr, message, what);
  assert.match(r.stderr, /^cudagraph: /, what);
  assert.doesNotMatch(r.stderr, /^\s+at /m, `${what}: no stack trace`);
  assert.doesNotMatch(r.stderr, /internal error/, what);
}

/**
 * A 50-node graph over 4 streams, recorded through StreamCapture by a seeded pseudo-random program:
 * kernels (75 %), memsets and device copies, fork from stream 0, random cross-stream waits, join
 * back into stream 0 at the end.
 */
export function graph50(seed = 7): ComputeGraph {
  let s = seed;
  const rnd = (): number => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const cap = new StreamCapture();
  const S = [0, 1, 2, 3].map(StreamId);
  for (const x of S) cap.beginCapture(x);
  let ev = 0;
  const join = (from: StreamId, to: StreamId): void => {
    const e = CaptureEvent(ev++);
    cap.recordEvent(from, e);
    cap.waitEvent(to, e);
  };
  cap.recordMemcpy(S[0]!, 'upload input', MemcpyDir.HostToDevice, 1 << 20);
  for (const x of S.slice(1)) join(S[0]!, x);
  const names = ['gemm', 'bias', 'relu', 'softmax', 'norm', 'scale', 'add', 'reduce'];
  const used = new Set([0]);
  for (let n = 1; n < 49; n++) {
    const st = Math.floor(rnd() * 4);
    if (rnd() < 0.2 && n > 4) {
      const f = Math.floor(rnd() * 4);
      if (f !== st && used.has(f)) join(S[f]!, S[st]!);
    }
    const r = rnd();
    if (r < 0.75) cap.recordKernel(S[st]!, `${names[Math.floor(rnd() * names.length)]}_${n}`, 1 + Math.floor(rnd() * 64), 256, 0);
    else if (r < 0.85) cap.recordMemset(S[st]!, `zero_${n}`, 4096, 0);
    else cap.recordMemcpy(S[st]!, `copy_${n}`, MemcpyDir.DeviceToDevice, 8192);
    used.add(st);
  }
  for (const x of S.slice(1)) join(x, S[0]!);
  cap.recordMemcpy(S[0]!, 'download', MemcpyDir.DeviceToHost, 4096);
  return cap.endCapture(S[0]!, { requireJoined: true });
}

/** Node and edge groups of a Graphviz SVG, and the ids (`n<id>` titles) of nodes drawn thick and red. */
export function svgCounts(svg: string): { nodes: number; edges: number; clusters: number; highlighted: number[] } {
  const highlighted: number[] = [];
  for (const m of svg.matchAll(/<g id="node\d+" class="node">\s*<title>n(\d+)<\/title>\s*<\w+ [^>]*stroke="#d62728" stroke-width="3"/g)) {
    highlighted.push(Number(m[1]));
  }
  return {
    nodes: (svg.match(/<g id="node\d+" class="node">/g) ?? []).length,
    edges: (svg.match(/<g id="edge\d+" class="edge">/g) ?? []).length,
    clusters: (svg.match(/<g id="clust\d+" class="cluster">/g) ?? []).length,
    highlighted: highlighted.sort((a, b) => a - b),
  };
}

/** The width and height in a PNG's IHDR chunk, after checking the signature. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } {
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  assert.deepEqual([...bytes.subarray(0, 8)], sig, 'PNG signature');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  assert.equal(String.fromCharCode(...bytes.subarray(12, 16)), 'IHDR');
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** The edges `[u, v]` whose target is not drawn below its source in a Graphviz SVG (nodes titled `n<id>`). */
export function upwardEdges(svg: string, edges: readonly (readonly [number, number])[]): string[] {
  const ys = new Map<number, number>();
  for (const m of svg.matchAll(/<title>n(\d+)<\/title>\s*<\w+ [^>]*?(?:cy="(-?[\d.]+)"|points="-?[\d.]+,(-?[\d.]+))/g)) {
    ys.set(Number(m[1]), Number(m[2] ?? m[3]));
  }
  return edges.filter(([u, v]) => !(ys.get(u)! < ys.get(v)!)).map(([u, v]) => `${u}→${v}`);
}

/**
 * The smallest file `fontProblem` takes for a TrueType font: the signature and a table directory
 * listing the tables the renderer needs (all empty). Not drawable; for the font checks only.
 */
export function minimalFont(tags: readonly string[] = ['cmap', 'glyf', 'head', 'hhea', 'loca', 'maxp']): Uint8Array {
  const bytes = new Uint8Array(12 + 16 * tags.length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, 0x0001_0000);
  view.setUint16(4, tags.length);
  tags.forEach((tag, i) => {
    for (let c = 0; c < 4; c++) bytes[12 + 16 * i + c] = tag.charCodeAt(c);
    view.setUint32(12 + 16 * i + 8, bytes.length); // offset: the end of the file, length 0
  });
  return bytes;
}
