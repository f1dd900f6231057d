/**
 * Builds the C reference worker on the machine that runs the benchmark, with the system compiler.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The result of `buildCWorker`: the command that worked, or every attempt and why it failed. */
export type BuildResult =
  | { readonly ok: true; readonly command: string }
  | { readonly ok: false; readonly attempts: readonly string[] };

/** The CUDA toolkit folder: `$CUDA_HOME`, `$CUDA_PATH`, else /usr/local/cuda. */
export function cudaHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.CUDA_HOME || env.CUDA_PATH || '/usr/local/cuda';
}

/** The folder holding libcuda.so.1 according to `ldconfig -p`, or null. */
function libcudaDir(): string | null {
  const r = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  if (r.status !== 0 || typeof r.stdout !== 'string') return null;
  const m = /libcuda\.so\.1\b.*=>\s*(\S+)/.exec(r.stdout);
  return m ? dirname(m[1]!) : null;
}

/**
 * The link options to try in order: plain `-lcuda` (the driver's dev symlink), the toolkit's
 * stub library (link only: at run time the real libcuda.so.1 is loaded, the stub's soname), and
 * the driver's libcuda.so.1 itself by file name when neither is installed.
 */
export function linkCandidates(home: string, driverDir: string | null): string[][] {
  const out = [['-lcuda'], [`-L${join(home, 'lib64/stubs')}`, '-lcuda'], [`-L${join(home, 'targets/x86_64-linux/lib/stubs')}`, '-lcuda']];
  if (driverDir) out.push([`-L${driverDir}`, '-l:libcuda.so.1']);
  return out;
}

/**
 * Compiles `source` to `binary` with `gcc -O2 -Wall -Wextra -I<cuda>/include`, trying each link
 * option of `linkCandidates` until one works. Never throws; a failure lists every attempt.
 */
export function buildCWorker(source: string, binary: string, compiler = process.env.CC || 'gcc'): BuildResult {
  const home = cudaHome();
  if (!existsSync(join(home, 'include/cuda.h'))) {
    return { ok: false, attempts: [`no ${join(home, 'include/cuda.h')} (set CUDA_HOME to the toolkit folder)`] };
  }
  mkdirSync(dirname(binary), { recursive: true });
  const attempts: string[] = [];
  for (const link of linkCandidates(home, libcudaDir())) {
    const args = ['-O2', '-Wall', '-Wextra', `-I${join(home, 'include')}`, source, '-o', binary, ...link];
    const r = spawnSync(compiler, args, { encoding: 'utf8' });
    const command = `${compiler} ${args.join(' ')}`;
    if (r.status === 0) return { ok: true, command };
    // The first error line says what is missing (`cannot find -lcuda`, a compile error).
    const out = (r.stderr || r.stdout || '').split('\n').map((l) => l.trim());
    const why = r.error ? r.error.message : out.find((l) => /error/i.test(l)) ?? out.find((l) => l) ?? `exit ${r.status}`;
    attempts.push(attempts.length === 0 ? `${command}: ${why}` : `${link.join(' ')}: ${why}`);
  }
  return { ok: false, attempts };
}
