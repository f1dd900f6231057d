/**
 * Where the CLI writes: a reader that stops early (`cudagraph inspect --json g.json | head -1`)
 * ends the output quietly, without an uncaught EPIPE and its stack; an output file is written whole
 * or not at all (a failed write leaves the old file as it was), and a write that fails says why in
 * words.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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

/** The names in `dir`, sorted. */
function names(dir: string): string[] {
  return readdirSync(dir).sort();
}

const hasSh = process.platform !== 'win32';

test('a write cut short (a file-size limit) leaves the old output as it was and no other file, and says why in one line', { skip: hasSh ? false : 'no sh here' }, () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    const cases: [string, string[]][] = [
      ['old.dot', ['render', g, '-o', join(dir, 'old.dot')]],
      ['old.svg', ['render', g, '-o', join(dir, 'old.svg')]],
      ['old.mmd', ['render', g, '-o', join(dir, 'old.mmd')]],
      ['old-summary.dot', ['render', g, '-o', join(dir, 'old-summary.dot'), '--summary']],
      ['old.json', ['convert', g, '-o', join(dir, 'old.json')]],
    ];
    for (const [name] of cases) writeFileSync(join(dir, name), 'the old file\n');
    const before = names(dir);
    for (const [name, args] of cases) {
      // 4 blocks of 512 bytes: each output is larger, so its write fails part-way (EFBIG; Node ignores SIGXFSZ).
      const quoted = [process.execPath, join(root, 'bin', 'cudagraph.js'), ...args].map((a) => `'${a}'`).join(' ');
      const r = spawnSync('sh', ['-c', `ulimit -f 4 && exec ${quoted}`], { encoding: 'utf8' });
      assertUserError({ status: r.status, stdout: r.stdout, stderr: r.stderr }, /^cudagraph: cannot write .*: the file is larger than this process may write \(ulimit -f\)\n$/, name);
      assert.equal(readFileSync(join(dir, name), 'utf8'), 'the old file\n', `${name} unchanged`);
      assert.deepEqual(names(dir), before, `${name}: no file left behind`);
    }
  });
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

test('an existing output is replaced whole, through a symbolic link, keeping its permissions', { skip: process.platform === 'win32' ? 'no modes here' : false }, () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    const real = join(dir, 'real.dot');
    writeFileSync(real, 'the old file\n');
    chmodSync(real, 0o640);
    symlinkSync(real, join(dir, 'link.dot'));
    const r = cudagraph(['render', g, '-o', join(dir, 'link.dot')]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(lstatSync(join(dir, 'link.dot')).isSymbolicLink(), 'still a link');
    assert.match(readFileSync(real, 'utf8'), /^digraph/);
    assert.equal(statSync(real).mode & 0o777, 0o640);
    assert.deepEqual(names(dir), ['g.json', 'link.dot', 'real.dot']);
  });
});

for (const [signal, what] of [['SIGINT', 'Ctrl-C'], ['SIGTERM', 'kill'], ['SIGHUP', 'a closed terminal']] as const) {
  test(`${what} (${signal}) while a large DOT file is written leaves the old file as it was and no other file`, { skip: process.platform === 'win32' ? 'no signals here' : false }, async () => {
    const dir = tempDir();
    try {
      const g = new ComputeGraph();
      // 200,000 nodes: 18 MB of DOT, written over most of a second.
      for (let i = 0; i < 200_000; i++) g.addNode({ kind: 'empty', name: `op ${i}`, stream: StreamId(i % 4) });
      const file = join(dir, 'g.json');
      writeFileSync(file, JSON.stringify(g));
      const out = join(dir, 'g.dot');
      writeFileSync(out, 'the old file\n');
      const before = names(dir);
      const child = spawn(process.execPath, [join(root, 'bin', 'cudagraph.js'), 'render', file, '-o', out], { cwd: root, stdio: 'ignore' });
      let interrupted = false;
      // As soon as the write has begun (a new file beside the output, or the output itself changed): Ctrl-C.
      const poll = setInterval(() => {
        if (interrupted) return;
        if (names(dir).length > before.length || statSync(out).size !== 'the old file\n'.length) {
          interrupted = true;
          child.kill(signal);
        }
      }, 2);
      const ended = await new Promise<{ status: number | null; signal: string | null }>((resolve) => child.on('close', (status, signal) => resolve({ status, signal })));
      clearInterval(poll);
      assert.ok(interrupted, 'the write was interrupted while it ran');
      assert.equal(ended.signal, signal, `ended by the signal (status ${ended.status})`);
      assert.equal(readFileSync(out, 'utf8'), 'the old file\n', 'the old file is unchanged');
      assert.deepEqual(names(dir), before, 'no file left behind');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** Runs the CLI as an ordinary user: as `nobody` when the tests run as root (who may write any file). */
function asUser(): { uid?: number; gid?: number } {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
}

/**
 * Why the CLI cannot run as the user of `asUser`, or null when it can: a checkout in a folder
 * only its owner may enter (`mktemp -d` makes one) is out of that user's reach when the tests run
 * as root.
 */
function userCannotRun(): string | null {
  if (process.getuid?.() !== 0) return null;
  const r = cudagraph(['--version'], { ...asUser(), cwd: '/' });
  const why = r.stderr.split('\n').find((l) => /Error|EACCES/.test(l)) ?? `status ${r.status}`;
  return r.status === 0 ? null : `the checkout is out of reach of uid 65534, whom the tests run the CLI as (they run as root): ${why.trim()}`;
}

/** A temporary folder the user of `asUser` can enter and write. */
function sharedTempDir(): string {
  const dir = tempDir();
  chmodSync(dir, 0o777);
  return dir;
}

test('a write-protected output is refused in one line and left as it was; a writable file in a folder that takes no new file is written in place', { skip: process.platform === 'win32' ? 'no modes here' : false }, (t) => {
  const unreachable = userCannotRun();
  if (unreachable !== null) {
    t.skip(unreachable);
    return;
  }
  const dir = sharedTempDir();
  try {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    chmodSync(g, 0o644);
    const ro = join(dir, 'ro.dot');
    writeFileSync(ro, 'the old file\n');
    chmodSync(ro, 0o444);
    const r = cudagraph(['render', g, '-o', ro], asUser());
    assertUserError(r, /^cudagraph: cannot write .*ro\.dot: permission denied/, 'a file the user may not write');
    assert.equal(readFileSync(ro, 'utf8'), 'the old file\n');
    const locked = join(dir, 'locked');
    mkdirSync(locked);
    const out = join(locked, 'out.dot');
    writeFileSync(out, 'the old file\n');
    chmodSync(out, 0o666);
    chmodSync(locked, 0o555);
    const w = cudagraph(['render', g, '-o', out], asUser());
    assert.equal(w.status, 0, w.stderr);
    assert.match(readFileSync(out, 'utf8'), /^digraph/);
    assert.deepEqual(names(locked), ['out.dot']);
  } finally {
    // Only where it was made: a failure before that must be the one the test reports.
    if (existsSync(join(dir, 'locked'))) chmodSync(join(dir, 'locked'), 0o755);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a link to nothing is written through (its target made), a link to stdout writes to stdout, and a long file name is written', { skip: process.platform === 'win32' ? 'no links here' : false }, () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    symlinkSync('target.dot', join(dir, 'dangling.dot'));
    const r = cudagraph(['render', g, '-o', join(dir, 'dangling.dot')]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(lstatSync(join(dir, 'dangling.dot')).isSymbolicLink(), 'still a link');
    assert.match(readFileSync(join(dir, 'target.dot'), 'utf8'), /^digraph/);
    symlinkSync('/dev/stdout', join(dir, 'stdout.dot'));
    // Through a shell's pipe (a test's own stdout is a socket, which /dev/stdout cannot open).
    const s = spawnSync('sh', ['-c', `"${process.execPath}" "${join(root, 'bin', 'cudagraph.js')}" render "${g}" -o "${join(dir, 'stdout.dot')}" | cat`], { encoding: 'utf8' });
    assert.equal(s.status, 0, s.stderr);
    assert.match(s.stdout, /^digraph/);
    const long = join(dir, `${'a'.repeat(246)}.dot`);
    const l = cudagraph(['render', g, '-o', long]);
    assert.equal(l.status, 0, l.stderr);
    assert.match(readFileSync(long, 'utf8'), /^digraph/);
    assert.deepEqual(names(dir), [`${'a'.repeat(246)}.dot`, 'dangling.dot', 'g.json', 'stdout.dot', 'target.dot']);
  });
});

test('Ctrl-C during a synchronous write still ends the command, by the signal, with no file left behind', { skip: process.platform === 'win32' ? 'no signals here' : false }, async () => {
  const dir = tempDir();
  try {
    const out = join(dir, 'out.svg');
    const module = join(root, 'dist', 'src', 'cli', 'output-file.js');
    // A write that holds the thread for 1.5 s, as a large synchronous write does; Ctrl-C 0.3 s into it.
    const script = `import { writeOutput } from ${JSON.stringify(module)};
import { writeFileSync } from 'node:fs';
await writeOutput(${JSON.stringify(out)}, (to) => { const end = Date.now() + 1500; while (Date.now() < end) {} if (typeof to === 'string') writeFileSync(to, 'x'); else to.write('x'); });
console.log('went on');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => void (stdout += t));
    setTimeout(() => child.kill('SIGINT'), 300);
    const ended = await new Promise<{ status: number | null; signal: string | null }>((resolve) => child.on('close', (status, signal) => resolve({ status, signal })));
    assert.equal(ended.signal, 'SIGINT', `ended by the signal (status ${ended.status}, stdout ${JSON.stringify(stdout)})`);
    assert.equal(stdout, '', 'the command did not go on');
    assert.deepEqual(names(dir).filter((n) => n.endsWith('.tmp')), [], 'no file left behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a streamed write that fails at once leaves no file behind (the half-opened file is closed before it is removed)', async () => {
  const { writeOutput } = await import('../../src/cli/output-file.js');
  const dir = tempDir();
  try {
    const g = graph50();
    await assert.rejects(
      writeOutput(join(dir, 'out.dot'), (to) =>
        g.writeDot(to, {
          onProgress: () => {
            throw new Error('stop');
          },
        }),
      ),
      /stop/,
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(names(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a signal that the program handles itself, during a streamed write: the output is left as it was, the temporary file is not made again, and the write fails saying so', { skip: process.platform === 'win32' ? 'no signals here' : false }, async () => {
  const { writeOutput } = await import('../../src/cli/output-file.js');
  const dir = tempDir();
  // The program's own listener: the signal then does not end the process.
  const own = (): void => {};
  process.on('SIGTERM', own);
  try {
    const out = join(dir, 'out.dot');
    writeFileSync(out, 'the old file\n');
    const g = graph50();
    // The signal arrives once the writer has begun, before its file stream opened anything (an
    // open by path, queued then, would make the removed file again).
    const written = writeOutput(out, (to) => {
      const done = g.writeDot(to);
      process.emit('SIGTERM', 'SIGTERM');
      return done;
    });
    await assert.rejects(written, /^UsageError: cannot write .*out\.dot: interrupted by SIGTERM$/);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(readFileSync(out, 'utf8'), 'the old file\n', 'the old file is unchanged');
    assert.deepEqual(names(dir), ['out.dot'], 'no file left behind');
  } finally {
    process.off('SIGTERM', own);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('stdout that cannot be written (a full device) is one line on stderr and status 1, not a stack trace', { skip: existsSync('/dev/full') ? false : 'no /dev/full here' }, () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${join(root, 'bin', 'cudagraph.js')}" inspect "${g}" > /dev/full`], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr, 'cudagraph: cannot write to stdout: no space left on the device\n');
  });
});
