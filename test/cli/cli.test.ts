import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../src/cli/main.js';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { assertUserError, cudagraph, graph50, inTempDir, root } from './helpers.js';

const COMMANDS = ['demo', 'doctor', 'bench', 'render', 'inspect', 'convert', 'serve'];

test('--help works for the program and for every command, on stdout, status 0', () => {
  const top = cudagraph(['--help']);
  assert.equal(top.status, 0);
  assert.match(top.stdout, /Usage: cudagraph/);
  for (const c of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${c}\\b`, 'm'), c);
  const expected: Record<string, RegExp[]> = {
    demo: [/--out <dir>/, /--mode <mode>/, /--json/, /--rounds <n>/, /--iterations <n>/, /\[job\]/, /--n <n>/, /--tol <x>/],
    doctor: [/--json/],
    bench: [/--sizes <list>/, /--quick/, /--json/, /--rounds <n>/, /--reps <n>/],
    render: [/<graph>/, /-o, --output <file>/, /\.svg, \.png, \.dot or \.mmd/, /--no-critical-path/, /--font <file>/, /--scale <n>/],
    inspect: [/<graph>/, /--json/],
    convert: [/<graph>/, /-o, --output <file>/, /\.cgraph or \.json/],
    serve: [/--port <n>/, /--host <address>/, /--engine <kind>/, /--slots <n>/, /--max-batch <n>/, /--prefill-chunk <n>/, /--queue <n>/, /--max-tokens <n>/, /--config <name>/, /--weights <file>/, /--seed <n>/],
  };
  for (const c of COMMANDS) {
    const r = cudagraph([c, '--help']);
    assert.equal(r.status, 0, c);
    assert.match(r.stdout, new RegExp(`Usage: cudagraph ${c}`), c);
    for (const m of expected[c]!) assert.match(r.stdout, m, `${c} --help: ${m}`);
  }
});

test('no command: the usage on stderr, status 1; an unknown command: one line, status 1', () => {
  const none = cudagraph([]);
  assert.equal(none.status, 1);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /Usage: cudagraph/);
  const bad = cudagraph(['frobnicate']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^cudagraph: unknown command 'frobnicate'/);
});

test('run() in-process: returns the status and writes to the output it is given', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
  assert.equal(await run(['inspect', '--nope'], io), 1);
  assert.match(err.join(''), /^cudagraph: unknown option '--nope'/);
  assert.equal(await run(['--help'], io), 0);
  assert.match(out.join(''), /Usage: cudagraph/);
});

test('--version prints the package version; a command\'s usage error points at that command\'s help', () => {
  const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const r = cudagraph([flag]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout.trim(), pkg.version);
  }
  const render = cudagraph(['render', 'graph.json']);
  assert.equal(render.status, 1);
  assert.match(render.stderr, /^cudagraph: required option '-o, --output <file>' not specified\n\(run cudagraph render --help for usage\)\n$/);
  const inspect = cudagraph(['inspect', '--nope']);
  assert.match(inspect.stderr, /\(run cudagraph inspect --help for usage\)/);
});

test("docs/cli.md's table of commands lists every command of --help, and says how many there are", () => {
  const doc = readFileSync(join(root, 'docs', 'cli.md'), 'utf8');
  const top = cudagraph(['--help']).stdout;
  const listed = [...top.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
  assert.deepEqual([...listed].sort(), [...COMMANDS].sort(), 'the commands of --help');
  const rows = [...doc.matchAll(/^\| `([a-z]+)[ `]/gm)].map((m) => m[1]!);
  for (const c of listed) assert.ok(rows.includes(c), `docs/cli.md's table lists ${c}`);
  const words = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
  assert.match(doc, new RegExp(`\\b${words[listed.length]}\\b commands:`, 'i'), 'the count of commands');
});

test("a bad option value points at its command's help, as commander's own option errors do", () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    const cases: [string[], RegExp][] = [
      [['demo', '--rounds', '0', '-o', dir], /^cudagraph: --rounds must be an integer from 1 to 1000, got '0'\n\(run cudagraph demo --help for usage\)\n$/],
      [['demo', 'solver', '--tol', '2', '-o', dir], /^cudagraph: --tol must be a number in \(0, 1\), got '2'\n\(run cudagraph demo --help for usage\)\n$/],
      [['bench', '--sizes', 'ten'], /^cudagraph: --sizes must be an integer from 1 to 100000, got 'ten'\n\(run cudagraph bench --help for usage\)\n$/],
      [['render', g, '-o', join(dir, 'g.png'), '--scale', 'big'], /^cudagraph: --scale must be a number from 0\.1 to 10, got 'big'\n\(run cudagraph render --help for usage\)\n$/],
      [['render', g, '-o', join(dir, 'g.svg'), '--summary', '--full'], /^cudagraph: --summary and --full cannot be given together\n\(run cudagraph render --help for usage\)\n$/],
      [['render', g, '-o', join(dir, 'g.bmp')], /^cudagraph: cannot tell the picture format from '.*g\.bmp': the output must end in \.svg, \.png, \.dot or \.mmd\n\(run cudagraph render --help for usage\)\n$/],
      [['convert', g, '-o', join(dir, 'g.txt')], /^cudagraph: -o .*g\.txt: the output must end in \.cgraph \(binary\) or \.json\n\(run cudagraph convert --help for usage\)\n$/],
      [['serve', '--host', ' '], /^cudagraph: --host must be a host name or address, got ' '\n\(run cudagraph serve --help for usage\)\n$/],
    ];
    for (const [args, message] of cases) {
      const r = cudagraph(args);
      assert.equal(r.status, 1, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, message, args.join(' '));
    }
    // A file the command cannot read is not a usage error: no pointer at the help.
    assert.match(cudagraph(['inspect', join(dir, 'missing.json')]).stderr, /^cudagraph: cannot read .*: no such file or folder\n$/);
  });
});

test('numbers are decimal: --scale and --tol refuse hexadecimal, binary and octal forms', () => {
  inTempDir((dir) => {
    const g = join(dir, 'g.json');
    writeFileSync(g, JSON.stringify(graph50()));
    for (const scale of ['0x1', '0b1', '0o1', 'Infinity', '1_0', '1.5.0']) {
      assertUserError(cudagraph(['render', g, '-o', join(dir, 'g.png'), '--scale', scale]), new RegExp(`--scale must be a number from 0\\.1 to 10, got '${scale}'`), `--scale ${scale}`);
    }
    for (const tol of ['0x0', '0b0', '.5e']) {
      assertUserError(cudagraph(['demo', 'solver', '--mode', 'cpu', '--n', '4', '--tol', tol, '-o', dir]), new RegExp(`--tol must be a number in \\(0, 1\\), got '${tol}'`), `--tol ${tol}`);
    }
    assert.equal(cudagraph(['render', g, '-o', join(dir, 'g.svg'), '--scale', '2.5e-1']).status, 0, 'an exponent is a decimal number');
  });
});

test("demo refuses the other job's options instead of ignoring them", () => {
  inTempDir((dir) => {
    const cases: [string[], RegExp][] = [
      [['demo', '--mode', 'cpu', '--n', '64', '-o', dir], /^cudagraph: --n is an option of demo solver, not of demo mlp\n\(run cudagraph demo --help for usage\)\n$/],
      [['demo', 'mlp', '--mode', 'cpu', '--tol', '1e-6', '-o', dir], /^cudagraph: --tol is an option of demo solver, not of demo mlp\n/],
      [['demo', 'solver', '--mode', 'cpu', '--iterations', '50', '-o', dir], /^cudagraph: --iterations is an option of demo mlp, not of demo solver\n/],
    ];
    for (const [args, message] of cases) assertUserError(cudagraph(args), message, args.join(' '));
    assert.deepEqual(readdirSync(dir), [], 'nothing written');
  });
});

test('every option in --help states its default at most once', () => {
  for (const c of COMMANDS) {
    const help = cudagraph([c, '--help']).stdout;
    // An option's description runs from its flags to the next option's.
    const options = help.slice(help.indexOf('Options:')).split(/\n(?= {2}-)/);
    for (const o of options) assert.ok((o.match(/\(default/g) ?? []).length <= 1, `${c}: ${o.replace(/\s+/g, ' ')}`);
  }
});
