/**
 * The API reference (docs/api/*.md, scripts/gen-api.mjs): the committed pages are what the doc
 * comments of the built typings give (so an edited doc comment or a new export without a rebuilt
 * reference fails), and the generator refuses an export without a doc comment. The second part
 * runs the generator on small typings written here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = join(root, 'scripts', 'gen-api.mjs');

function gen(args: string[]) {
  return spawnSync(process.execPath, [script, ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
}

test('docs/api is what scripts/gen-api.mjs makes from the built typings (run npm run gen:api after changing a doc comment)', () => {
  const r = gen(['--check']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /docs\/api is up to date \(4 pages\)/);
  const index = readFileSync(join(root, 'docs', 'api', 'README.md'), 'utf8');
  for (const page of ['cudagraph.md', 'model.md', 'driver.md']) assert.ok(index.includes(`](${page})`), page);
  const driver = readFileSync(join(root, 'docs', 'api', 'driver.md'), 'utf8');
  assert.match(driver, /^### `nativeStatus`\n\n```ts\nfunction nativeStatus\(\): NativeStatus\n```\n\nWhether the hot calls/m);
});

test('the build runs TypeScript 7 by path, not the `tsc` that npm links (typescript5 has one too)', () => {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
  assert.match(manifest.scripts['build']!, /^node node_modules\/typescript\/bin\/tsc /);
  assert.match(manifest.devDependencies['typescript5']!, /^npm:typescript@\^?5\./);
  const v = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '--version'], { encoding: 'utf8' });
  assert.match(v.stdout, /^Version 7\./);
});

/** Typings of three entry points in `dir`/dist/src; `undocumented` leaves one export without a doc comment. */
function fixture(dir: string, undocumented: boolean): string {
  const dts = join(dir, 'dist', 'src');
  const files: Record<string, string> = {
    'index.d.ts': "/** The root. */\nexport * from './lib.js';\nexport * as ns from './ns.js';\n",
    'lib.d.ts': [
      '/** Adds. */',
      'export declare function add(a: number, b: number): number;',
      '/**',
      ' * A box.',
      ' * @example',
      ' * new Box(1).value',
      ' */',
      'export declare class Box {',
      '    private secret;',
      '    /** What it holds. */',
      '    readonly value: number;',
      '    constructor(value: number);',
      '}',
      ...(undocumented ? ['export declare const bare = 1;'] : ['/** One. */', 'export declare const bare = 1;']),
      '',
    ].join('\n'),
    'ns.d.ts': '/** A namespace. */\n/** Two. */\nexport declare const two = 2;\n',
    'entries/model.d.ts': "/** The model. */\nexport { add } from '../lib.js';\n",
    'entries/driver.d.ts': "/** The driver. */\nexport { Box } from '../lib.js';\n",
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dts, name)), { recursive: true });
    writeFileSync(join(dts, name), text);
  }
  return dts;
}

test('the generator writes each export with its declaration and doc comment, and fails on an export without one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-api-'));
  try {
    const out = join(dir, 'api');
    const ok = gen(['--dts', fixture(dir, false), '--out', out]);
    assert.equal(ok.status, 0, ok.stderr);
    const page = readFileSync(join(out, 'cudagraph.md'), 'utf8');
    assert.match(page, /### `add`\n\n```ts\nfunction add\(a: number, b: number\): number\n```\n\nAdds\./);
    assert.match(page, /### `Box`\n\n```ts\nclass Box\n```\n\nA box\.\n\n\*Example:\*\n\n```ts\nnew Box\(1\)\.value\n```/);
    assert.match(page, /- `readonly value: number`\n {2}What it holds\./);
    assert.ok(!page.includes('secret'), 'private members are left out');
    assert.match(page, /## `ns`\n\nA namespace\.[\s\S]*#### `ns\.two`/);
    assert.match(readFileSync(join(out, 'model.md'), 'utf8'), /### `add`/);
    assert.equal(gen(['--dts', join(dir, 'dist', 'src'), '--out', out, '--check']).status, 0, 'just written, so current');
    writeFileSync(join(out, 'model.md'), 'edited by hand\n');
    const stale = gen(['--dts', join(dir, 'dist', 'src'), '--out', out, '--check']);
    assert.equal(stale.status, 1);
    assert.match(stale.stderr, /stale, run npm run gen:api: .*model\.md/);

    const bad = gen(['--dts', fixture(dir, true), '--out', out]);
    assert.equal(bad.status, 1, bad.stdout);
    assert.match(bad.stderr, /gen-api: cudagraph: bare \(lib\.ts\) has no doc comment/);
    assert.equal(readFileSync(join(out, 'model.md'), 'utf8'), 'edited by hand\n', 'nothing is written when an export has no doc comment');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the generator fails when an entry point has not been built', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-api-'));
  try {
    const r = gen(['--dts', join(dir, 'nothing'), '--out', join(dir, 'api')]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /index\.d\.ts is missing \(run npm run build\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
