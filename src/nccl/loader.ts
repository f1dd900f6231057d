/**
 * Where libnccl is looked for. NCCL is loaded at run time, never linked, like the driver: the
 * package installs and the rest of it works where NCCL is absent, and an NCCL call there fails
 * with one `NcclError` (`NCCL_NOT_LOADED`) that lists every path tried.
 */
import type { Environment } from '../util/environment.js';
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireName } from '../util/validate.js';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { pythonSitePackages, type LibraryCandidate } from '../driver/loader.js';

/** The library's file name (the soname every NCCL 2.x release ships). */
export const NCCL_SONAME = 'libnccl.so.2';

/**
 * Prefixes of Python environments that ship NCCL in the `nvidia-nccl-cu*` wheel, besides the usual
 * ones `pythonSitePackages` knows: PyTorch's virtual environment on the project's device machine
 * (`/opt/torch/.venv`).
 */
export const NCCL_PYTHON_PREFIXES: readonly string[] = ['/opt/torch/.venv/lib'];

/** Folders where system packages and toolkits put libnccl (apt's `libnccl2`, NGC containers, the CUDA toolkit). */
export const NCCL_SYSTEM_FOLDERS: readonly string[] = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/lib',
  '/usr/local/nccl/lib',
  '/usr/local/cuda/lib64',
  '/usr/local/cuda/lib',
];

function fileOrFolder(value: string): string {
  let isFolder = value.endsWith('/');
  try {
    isFolder ||= statSync(value).isDirectory();
  } catch {
    // A path that does not exist is reported by the attempt itself.
  }
  return isFolder ? join(value, NCCL_SONAME) : value;
}

/**
 * Where to look for libnccl, in order: `path` (the `loadNccl({ path })` option), `$NCCL_LIBRARY`
 * (each a file, or a folder holding libnccl.so.2), then the dynamic loader's search
 * (`LD_LIBRARY_PATH`, ld.so.cache) for `libnccl.so.2` and `libnccl.so`, then the
 * `nvidia/nccl/lib` folder of pip's `nvidia-nccl-cu*` wheel in every Python site-packages found
 * (including `/opt/torch/.venv`, `$VIRTUAL_ENV`, `$CONDA_PREFIX`), then the system folders.
 * Candidates in folders are listed whether or not the file exists, so a failure shows every place.
 * @throws InvalidArgumentError for an `env` that is not an object, a variable it reads that is
 *   neither a string nor unset, or a `path` that is not a non-empty string.
 */
export function ncclCandidates(env: Environment = process.env, path?: string): LibraryCandidate[] {
  const OP = 'ncclCandidates';
  if (typeof env !== 'object' || env === null) throw new InvalidArgumentError(OP, 'env', `env must be an object of environment variables (as process.env), got ${describe(env)}`);
  if (path !== undefined) requireName(OP, 'path', path);
  // The variables read here and by the Python search: strings or unset, as in process.env.
  for (const key of ['NCCL_LIBRARY', 'CONDA_PREFIX', 'VIRTUAL_ENV']) {
    const v: unknown = env[key];
    if (v !== undefined && typeof v !== 'string') throw new InvalidArgumentError(OP, 'env', `env.${key} must be a string or unset, got ${describe(v)}`);
  }
  const out: LibraryCandidate[] = [];
  if (path !== undefined) out.push({ path: fileOrFolder(path), source: 'loadNccl({ path })' });
  const fromEnv = env['NCCL_LIBRARY'];
  if (fromEnv) out.push({ path: fileOrFolder(fromEnv), source: '$NCCL_LIBRARY' });
  out.push({ path: NCCL_SONAME, source: 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)' });
  out.push({ path: 'libnccl.so', source: 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)' });
  const wheels = pythonSitePackages(env, NCCL_PYTHON_PREFIXES).map((site) => join(site, 'nvidia', 'nccl', 'lib'));
  // The device machine's venv is named even where it is absent, so the error shows where it was expected.
  const expected = join(NCCL_PYTHON_PREFIXES[0]!, 'python3.*', 'site-packages', 'nvidia', 'nccl', 'lib');
  if (!wheels.some((w) => w.startsWith(NCCL_PYTHON_PREFIXES[0]!))) {
    out.push({ path: join(expected, NCCL_SONAME), source: 'Python nvidia-nccl wheel (PyTorch venv, not present)' });
  }
  for (const dir of wheels) out.push({ path: join(dir, NCCL_SONAME), source: 'Python nvidia-nccl wheel' });
  for (const dir of NCCL_SYSTEM_FOLDERS) out.push({ path: join(dir, NCCL_SONAME), source: 'system folder' });
  return out;
}

/** What to check when libnccl cannot be found. */
export const NCCL_ADVICE: readonly string[] = [
  'NCCL is installed: `pip install nvidia-nccl-cu13` (or -cu12) puts libnccl.so.2 in site-packages/nvidia/nccl/lib, `apt install libnccl2` in /usr/lib;',
  'set NCCL_LIBRARY to the full path of libnccl.so.2 (or its folder), or call loadNccl({ path }) before the first NCCL call;',
  'or add its folder to LD_LIBRARY_PATH;',
  'a PyTorch install has one: python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))".',
];

