/**
 * The shipped addon binaries, native/prebuilt/<platform>-<arch>/cudagraph_hot.node (linux-x64 and
 * linux-arm64), are what their source builds and what their folder names.
 *
 * - Every file, on any machine: an ELF shared object of its folder's architecture that needs libc
 *   alone, no glibc symbol version newer than GLIBC_2.17, and exports the Node-API entry point
 *   (read with test/support/elf.ts, no tools needed).
 * - Byte for byte: `scripts/build-native.sh --target T --check` rebuilds it into a temporary file and
 *   compares the two (the build is reproducible: no build id, no paths, stripped). It needs the
 *   target's compiler (gcc, or $CC, for this machine's own target; Debian's cross compiler,
 *   aarch64-linux-gnu-gcc or x86_64-linux-gnu-gcc, for the other) and Node's headers
 *   (/usr/include/node, or $NODE_INCLUDE), and is skipped with the reason without them.
 *
 * The source hash beside each binary (test/driver/native.test.ts) catches an edit without a rebuild;
 * this catches a binary that is not what the committed source and flags give. Running the arm64 file
 * itself takes an arm64 Node under emulation: scripts/check-native-arm64.sh.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ELF_MACHINE, newestGlibc, readElf } from '../support/elf.js';

// dist/test/driver/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const nodeInclude = process.env['NODE_INCLUDE'] ?? '/usr/include/node';
/** The targets build-native.sh builds: Node's arch name and the cross compiler of each. */
const TARGETS = {
  'linux-x64': { arch: 'x64', cross: 'x86_64-linux-gnu-gcc' },
  'linux-arm64': { arch: 'arm64', cross: 'aarch64-linux-gnu-gcc' },
} as const;
type Target = keyof typeof TARGETS;
const host = process.platform === 'linux' ? (Object.keys(TARGETS) as Target[]).find((t) => TARGETS[t].arch === process.arch) : undefined;
const binaryOf = (target: Target): string => `native/prebuilt/${target}/cudagraph_hot.node`;

/** The compiler build-native.sh uses for `target` here. */
function compilerOf(target: Target): string {
  return target === host ? (process.env['CC'] ?? 'gcc') : TARGETS[target].cross;
}

function missing(target: Target): string | false {
  if (host === undefined) return `build-native.sh runs on Linux x64 and arm64, not ${process.platform}-${process.arch}`;
  if (!existsSync(join(root, binaryOf(target)))) return `no prebuilt addon for ${target}`;
  const cc = compilerOf(target);
  if (spawnSync(cc, ['--version']).status !== 0) return `${cc} is absent`;
  if (!existsSync(join(nodeInclude, 'node_api.h'))) return `${nodeInclude}/node_api.h is absent (set NODE_INCLUDE to Node's include/node folder)`;
  return false;
}

/** Runs build-native.sh --target `target` --check in `dir` (the repository, or a copy of its native/ and the script). */
function checkIn(dir: string, target: Target) {
  const env = { ...process.env };
  if (target !== host) delete env['CC'];
  return spawnSync('bash', [join(dir, 'scripts', 'build-native.sh'), '--target', target, '--check'], { encoding: 'utf8', timeout: 120_000, env });
}

test('the prebuilt folders are the targets build-native.sh builds, each file an ELF shared object of its architecture', () => {
  const dir = join(root, 'native', 'prebuilt');
  assert.deepEqual(readdirSync(dir).sort(), Object.keys(TARGETS).sort());
  for (const target of Object.keys(TARGETS) as Target[]) {
    assert.deepEqual(readdirSync(join(dir, target)).sort(), ['cudagraph_hot.node', 'cudagraph_hot.node.source-sha256'], target);
    const elf = readElf(readFileSync(join(root, binaryOf(target))));
    assert.equal(elf.type, 3, `${target}: a shared object`);
    assert.equal(elf.machine, ELF_MACHINE[TARGETS[target].arch], `${target}: the ELF machine of ${TARGETS[target].arch}`);
    assert.deepEqual(elf.needed, ['libc.so.6'], `${target}: libc alone (no libcuda, no libstdc++)`);
    assert.deepEqual(Object.keys(elf.versionsNeeded), ['libc.so.6'], target);
    const newest = newestGlibc(elf.versionsNeeded['libc.so.6']!);
    assert.ok(newest !== null && newestGlibc([newest, 'GLIBC_2.17']) === 'GLIBC_2.17', `${target} needs ${newest}; nothing newer than GLIBC_2.17 may be needed`);
    assert.ok(elf.exportedFunctions.includes('napi_register_module_v1'), `${target} exports the Node-API entry point`);
  }
});

test('newestGlibc compares versions as numbers', () => {
  assert.equal(newestGlibc(['GLIBC_2.2.5', 'GLIBC_2.14', 'GLIBC_2.3.4']), 'GLIBC_2.14');
  assert.equal(newestGlibc(['GLIBC_2.17', 'GLIBC_2.34']), 'GLIBC_2.34');
  assert.equal(newestGlibc(['GLIBC_PRIVATE']), null);
});

for (const target of Object.keys(TARGETS) as Target[]) {
  test(`the committed ${target} addon is byte for byte what build-native.sh builds from the committed source`, { skip: missing(target) }, () => {
    const r = checkIn(root, target);
    assert.equal(r.status, 0, `${binaryOf(target)} differs from a rebuild (rebuild with scripts/build-native.sh --target ${target} and commit it):\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /is up to date/);
  });
}

test('the check fails when one byte of the binary differs', { skip: host === undefined ? 'not Linux x64 or arm64' : missing(host) }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-native-'));
  try {
    cpSync(join(root, 'native'), join(dir, 'native'), { recursive: true });
    mkdirSync(join(dir, 'scripts'));
    cpSync(join(root, 'scripts', 'build-native.sh'), join(dir, 'scripts', 'build-native.sh'));
    assert.equal(checkIn(dir, host!).status, 0, 'the copy checks as the original does');
    const bytes = readFileSync(join(dir, binaryOf(host!)));
    const at = bytes.length >> 1;
    bytes[at] = bytes[at]! ^ 0x01;
    writeFileSync(join(dir, binaryOf(host!)), bytes);
    const r = checkIn(dir, host!);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /differs from a fresh build/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
