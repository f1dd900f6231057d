/**
 * The shipped addon binary, native/prebuilt/<platform>-<arch>/cudagraph_hot.node, is what its
 * source builds: `scripts/build-native.sh --check` rebuilds it into a temporary file and compares
 * the two byte for byte (the build is reproducible: no build id, no paths, stripped). The source
 * hash beside the binary (test/driver/native.test.ts) catches an edit without a rebuild; this
 * catches a binary that is not what the committed source and flags give. It needs gcc (or $CC) and
 * Node's headers (/usr/include/node, or $NODE_INCLUDE), and is skipped with the reason without them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/driver/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const cc = process.env['CC'] ?? 'gcc';
const nodeInclude = process.env['NODE_INCLUDE'] ?? '/usr/include/node';
const targets: Readonly<Record<string, string>> = { x64: 'linux-x64', arm64: 'linux-arm64' };
const target = process.platform === 'linux' ? targets[process.arch] : undefined;
const binary = `native/prebuilt/${target}/cudagraph_hot.node`;

function missing(): string | false {
  if (target === undefined) return `build-native.sh builds for Linux x64 and arm64, not ${process.platform}-${process.arch}`;
  if (!existsSync(join(root, binary))) return `no prebuilt addon for ${target}`;
  if (spawnSync(cc, ['--version']).status !== 0) return `${cc} is absent`;
  if (!existsSync(join(nodeInclude, 'node_api.h'))) return `${nodeInclude}/node_api.h is absent (set NODE_INCLUDE to Node's include/node folder)`;
  return false;
}
const skip = missing();

/** Runs build-native.sh --check in a copy of the repository's native/ and scripts/build-native.sh. */
function checkIn(dir: string) {
  return spawnSync('bash', [join(dir, 'scripts', 'build-native.sh'), '--check'], { encoding: 'utf8', timeout: 120_000 });
}

test('the committed addon binary is byte for byte what build-native.sh builds from the committed source', { skip }, () => {
  const r = spawnSync('bash', [join(root, 'scripts', 'build-native.sh'), '--check'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${binary} differs from a rebuild (rebuild with scripts/build-native.sh and commit it):\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /is up to date/);
});

test('the check fails when one byte of the binary differs', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-native-'));
  try {
    cpSync(join(root, 'native'), join(dir, 'native'), { recursive: true });
    mkdirSync(join(dir, 'scripts'));
    cpSync(join(root, 'scripts', 'build-native.sh'), join(dir, 'scripts', 'build-native.sh'));
    assert.equal(checkIn(dir).status, 0, 'the copy checks as the original does');
    const bytes = readFileSync(join(dir, binary));
    const at = bytes.length >> 1;
    bytes[at] = bytes[at]! ^ 0x01;
    writeFileSync(join(dir, binary), bytes);
    const r = checkIn(dir);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /differs from a fresh build/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
