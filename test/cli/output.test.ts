/**
 * Where the CLI writes: a reader that stops early (`cudagraph inspect --json g.json | head -1`)
 * ends the output quietly, without an uncaught EPIPE and its stack; a write that fails says why in
 * words.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph, StreamId } from '../../src/index.js';
import { assertUserError, cudagraph, graph50, inTempDir, root, tempDir } from './helpers.js';

/** Runs the command with its stdout into a pipe closed after the first chunk; resolves with its status, signal, stderr and that chunk. */
function closedEarly(args: string[]): Promise<{ status: number | null; signal: string | null; stderr: string; first: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'cudagraph.js'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let first = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => void (stderr += t));
    child.stdout.once('data', (chunk: Buffer) => {
      first = chunk.toString('utf8');
      child.stdout.destroy();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stderr, first });
    });
  });
}

test('stdout closed early (| head -1): no EPIPE error or stack trace, the command ends with its own status', async () => {
  const dir = tempDir();
  try {
    const g = new ComputeGraph();
    // 100,000 sources: megabytes of --json and of --full text, far past a pipe's buffer.
    for (let i = 0; i < 100_000; i++) g.addNode({ kind: 'empty', name: `source number ${i}`, stream: StreamId(i % 4) });
    const file = join(dir, 'g.json');
    writeFileSync(file, JSON.stringify(g));
    for (const args of [['inspect', '--json', file], ['inspect', '--full', file]]) {
      const what = args.slice(0, 2).join(' ');
      const r = await closedEarly(args);
      assert.ok(r.first.length > 0, `${what}: some output came`);
      assert.equal(r.signal, null, `${what}: not killed`);
      assert.equal(r.stderr, '', `${what}: nothing on stderr`);
      assert.equal(r.status, 0, `${what}: status`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a folder that cannot be made, a full device: one line saying why, not an error code', () => {
  inTempDir((dir) => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    assertUserError(cudagraph(['demo', '--mode', 'cpu', '-o', file]), /^cudagraph: cannot write .*a-file\/demo\.json: a part of the path is not a folder\n$/, 'demo -o a file');
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    assertUserError(cudagraph(['render', g, '-o', join(file, 'g.svg')]), /^cudagraph: cannot write .*: a part of the path is not a folder\n$/, 'render -o a-file/g.svg');
    assertUserError(cudagraph(['convert', g, '-o', join(file, 'g.cgraph')]), /^cudagraph: cannot write .*: a part of the path is not a folder\n$/, 'convert -o a-file/g.cgraph');
    if (existsSync('/dev/full')) {
      symlinkSync('/dev/full', join(dir, 'full.svg'));
      assertUserError(cudagraph(['render', g, '-o', join(dir, 'full.svg')]), /^cudagraph: cannot write .*full\.svg: no space left on the device\n$/, 'render -o a link to /dev/full');
      assert.ok(lstatSync(join(dir, 'full.svg')).isSymbolicLink(), 'the link is left as it was');
    }
  });
});
