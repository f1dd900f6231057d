/**
 * Input files that are not regular files: a FIFO (whose open waits for a writer that never comes)
 * and a device that never ends (`/dev/zero`) are refused at once, in one line, for every command
 * that reads a graph and for `--font`; each run is a child process killed after a few seconds, so
 * a hang fails the test instead of stopping it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertUserError, cudagraph, graph50, inTempDir } from './helpers.js';

/** A FIFO at `path` (`mkfifo`), or false where the system has none. */
function fifo(path: string): boolean {
  try {
    execFileSync('mkfifo', [path]);
    return true;
  } catch {
    return false;
  }
}

// `mkfifo --version` answers where the tool is; then a FIFO it cannot make fails the test.
const canFifo = process.platform !== 'win32' && spawnSync('mkfifo', ['--version']).status === 0;
const timeoutMs = 10_000;

test('inspect, render and convert refuse a FIFO and /dev/zero in one line instead of waiting forever', { skip: canFifo ? false : 'no mkfifo here' }, () => {
  inTempDir((dir) => {
    const pipe = join(dir, 'g.json');
    assert.ok(fifo(pipe), `mkfifo ${pipe}`);
    const inputs = [pipe, ...(existsSync('/dev/zero') ? ['/dev/zero'] : [])];
    for (const input of inputs) {
      const runs: [string, string[]][] = [
        ['inspect', ['inspect', input]],
        ['inspect --json', ['inspect', '--json', input]],
        ['render', ['render', input, '-o', join(dir, 'g.svg')]],
        ['convert', ['convert', input, '-o', join(dir, 'g.cgraph')]],
      ];
      for (const [what, args] of runs) {
        assertUserError(cudagraph(args, { timeoutMs }), /^cudagraph: cannot read .*: it is not a regular file \(a device, a pipe or a socket\)\n$/, `${what} ${input}`);
      }
    }
    assertUserError(cudagraph(['render', join(dir, 'missing.json'), '-o', join(dir, 'g.svg')], { timeoutMs }), /cannot read .*missing\.json: no such file or folder/, 'a missing file');
  });
});

test('render refuses a --font that is a FIFO or /dev/zero in one line instead of waiting forever', { skip: canFifo ? false : 'no mkfifo here' }, () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    const pipe = join(dir, 'font.ttf');
    assert.ok(fifo(pipe), `mkfifo ${pipe}`);
    for (const font of [pipe, ...(existsSync('/dev/zero') ? ['/dev/zero'] : [])]) {
      assertUserError(
        cudagraph(['render', g, '-o', join(dir, 'g.png'), '--font', font], { timeoutMs }),
        /^cudagraph: cannot read the font .*: it is not a regular file \(a device, a pipe or a socket\)\n$/,
        `--font ${font}`,
      );
      assertUserError(
        cudagraph(['render', g, '-o', join(dir, 'g.png')], { timeoutMs, env: { ...process.env, CUDAGRAPH_FONT: font } }),
        /^cudagraph: cannot read the font .*: it is not a regular file/,
        `CUDAGRAPH_FONT=${font}`,
      );
    }
  });
});
