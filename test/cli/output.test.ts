/**
 * Where the CLI writes: a reader that stops early (`cudagraph inspect --json g.json | head -1`)
 * ends the output quietly, without an uncaught EPIPE and its stack.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComputeGraph, StreamId } from '../../src/index.js';
import { root, tempDir } from './helpers.js';

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
