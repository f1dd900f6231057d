/**
 * The package as shipped: `npm pack`, unpacked into a temporary project (its dependencies linked
 * from this checkout's node_modules, so no network is needed), then used as a consumer would:
 * a strict TypeScript file using the public entry points type-checks without `@types/node`, the
 * typings carry no internal members, no source maps point at sources that are not shipped, the
 * licence is there, and the CLI runs from the installed package.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Every file under `dir`, relative to it. */
function files(dir: string, at = ''): string[] {
  return readdirSync(join(dir, at), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(dir, join(at, e.name)) : [join(at, e.name)]));
}

const CONSUMER = `import { Device, Graph, StreamGraphCapture, captureGraph, makeGraphed, GraphCaptureGuard, arg, ComputeGraph, StreamCapture, StreamId,
  CONDITIONAL_DEVICE_API, DeviceBuffer, Module, type KernelNodeEntry, type ConditionalNode } from 'cudagraph';
import { ComputeGraph as ModelGraph, GraphBuilder } from 'cudagraph/model';
import { nativeStatus } from 'cudagraph/driver';

const model: ModelGraph = new ComputeGraph();
const cap = new StreamCapture();
cap.beginCapture(StreamId(0));
void GraphBuilder;
void nativeStatus().active;

export function onTheGpu(): void {
  const d = Device.get(0);
  using s = d.createStream();
  using x = DeviceBuffer.alloc(d, 64);
  const c = StreamGraphCapture.begin(s);
  c.endGraph().dispose();
  // A body may return what it likes, but not a Promise: the type refuses an async body.
  using g1 = captureGraph(s, (st) => x.memsetAsync(st, 0));
  // @ts-expect-error an async capture body
  captureGraph(s, async () => {});
  // @ts-expect-error an async capture body
  GraphCaptureGuard.capture(s, async () => {});
  // @ts-expect-error an async capture body
  makeGraphed(s, async () => {});
  using g = Graph.create(d);
  const entries: KernelNodeEntry[] = [];
  g.addKernelNodes(entries);
  const loop: ConditionalNode = g.addWhileNode(g.conditionalHandle({ default: 1 }));
  void loop.bodies.length;
  void arg.u32(1);
  void Module;
  void CONDITIONAL_DEVICE_API;
  void g1;
  void model;
}
`;

test('the packed package: typings without @types/node or internals, no dangling source maps, a licence, a CLI that runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-pack-'));
  try {
    const pack = spawnSync('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: root, encoding: 'utf8' });
    assert.equal(pack.status, 0, pack.stderr);
    const tarball = join(dir, pack.stdout.trim().split('\n').pop()!);
    assert.ok(existsSync(tarball), tarball);
    const project = join(dir, 'consumer');
    const pkgDir = join(project, 'node_modules', 'cudagraph');
    mkdirSync(pkgDir, { recursive: true });
    const untar = spawnSync('tar', ['-xzf', tarball, '-C', pkgDir, '--strip-components=1'], { encoding: 'utf8' });
    assert.equal(untar.status, 0, untar.stderr);
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const dep of Object.keys(manifest.dependencies)) {
      const at = join(project, 'node_modules', dep);
      mkdirSync(dirname(at), { recursive: true });
      symlinkSync(join(root, 'node_modules', dep), at, 'dir');
    }
    const shipped = files(pkgDir);
    assert.deepEqual(shipped.filter((f) => f.endsWith('.map')), [], 'no source maps (their sources are not shipped)');
    assert.ok(shipped.includes('LICENSE'), 'the licence ships');
    assert.match(readFileSync(join(pkgDir, 'LICENSE'), 'utf8'), /^MIT License/);
    const typings = shipped.filter((f) => f.endsWith('.d.ts')).map((f) => readFileSync(join(pkgDir, f), 'utf8')).join('\n');
    for (const internal of ['beginFor(', 'instantiateFor(', 'handleFor(', 'adoptHandle(', 'key: typeof INTERNAL']) {
      assert.ok(!typings.includes(internal), `the typings show ${internal}`);
    }
    assert.ok(!/NodeJS\.|from 'node:/.test(shipped.filter((f) => f.endsWith('.d.ts') && !f.includes('/cli/')).map((f) => readFileSync(join(pkgDir, f), 'utf8')).join('\n')), 'the library typings need no @types/node');
    writeFileSync(join(project, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '--strict', '--noEmit', '--target', 'ES2022', '--module', 'NodeNext',
        '--moduleResolution', 'NodeNext', '--lib', 'ES2022,ESNext.Disposable', '--types', '', join(project, 'consumer.ts')],
      { cwd: project, encoding: 'utf8' },
    );
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    const bin = join(pkgDir, 'bin', 'cudagraph.js');
    const help = spawnSync(process.execPath, [bin, '--help'], { cwd: project, encoding: 'utf8' });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Usage: cudagraph/);
    const demo = spawnSync(process.execPath, [bin, 'demo', '--mode', 'cpu', '-o', join(project, 'out')], { cwd: project, encoding: 'utf8' });
    assert.equal(demo.status, 0, demo.stderr);
    assert.match(demo.stdout, /^cudagraph demo: CPU model mode: --mode cpu was given/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
