/**
 * Where the benchmark's files are, found from the running script so it works both from
 * `dist/bench/...` (compiled) and from a copy of the checkout on the device.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's root: the nearest folder above `fromUrl` (a module's `import.meta.url`) whose
 * package.json names the package `cudagraph`. Throws an `Error` when there is none.
 */
export function repoRoot(fromUrl: string): string {
  let dir = dirname(fileURLToPath(fromUrl));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'cudagraph') return dir;
      } catch {
        // not our package.json; keep walking up
      }
    }
    const up = resolve(dir, '..');
    if (up === dir) throw new Error(`repoRoot: no cudagraph package.json above ${fromUrl}`);
    dir = up;
  }
}

/** The package version from the checkout's package.json. */
export function packageVersion(root: string): string {
  const v = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: unknown }).version;
  return typeof v === 'string' ? v : '?';
}

/** The benchmark's files under a checkout root. */
export function benchPaths(root: string) {
  return {
    root,
    ptx: join(root, 'bench/gpu/kernels.ptx'),
    cSource: join(root, 'bench/gpu/c/worker.c'),
    /** Built on the device; dist/ is ignored by git. */
    cBinary: join(root, 'dist/bench/gpu/c/worker'),
    cupyWorker: join(root, 'bench/gpu/py/cupy_worker.py'),
    torchWorker: join(root, 'bench/gpu/py/torch_worker.py'),
    /** Exists once bench/gpu/cudagraph-worker.ts is compiled (after the driver layer is merged). */
    cudagraphWorker: join(root, 'dist/bench/gpu/cudagraph-worker.js'),
    results: join(root, 'bench/results'),
  };
}
