/**
 * Finds and loads the CUDA driver library (libcuda) and NVRTC at run time. Nothing is linked: the
 * package installs and the CPU model works on machines without CUDA, and a driver call there fails
 * with one error that lists every place that was tried and what to check (sharp's loader does this).
 */
import type { Environment } from '../util/environment.js';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import { koffi, type KoffiLibrary } from './koffi.js';

/** One place the loader tried, and why it failed. */
export interface LoadAttempt {
  /** The file name or path passed to the dynamic loader. */
  readonly path: string;
  /** Where the candidate came from, e.g. `$CUDA_DRIVER_PATH` or `dynamic loader search path`. */
  readonly source: string;
  /** The loader's message. */
  readonly error: string;
}

/** A candidate library: a path (or bare name for the dynamic loader) and where it came from. */
export interface LibraryCandidate {
  readonly path: string;
  readonly source: string;
}

/** A library that loaded. */
export interface LoadedLibrary {
  readonly lib: KoffiLibrary;
  readonly path: string;
}

/** The outcome of trying candidates in order. */
export type LoadOutcome =
  | { readonly ok: true; readonly loaded: LoadedLibrary; readonly attempts: readonly LoadAttempt[] }
  | { readonly ok: false; readonly attempts: readonly LoadAttempt[] };

/**
 * Folders where Linux distributions, containers and WSL put libcuda. `/usr/local/nvidia/lib64` is
 * where the NVIDIA container runtime mounts it (seen on the project's device machine).
 */
export const DRIVER_FOLDERS_LINUX: readonly string[] = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/nvidia/lib64',
  '/usr/local/nvidia/lib',
  '/usr/lib/wsl/lib',
  '/run/opengl-driver/lib',
  '/usr/local/cuda/compat',
];

/**
 * A user-given path: a file, or a folder that should hold `fileName`. A bare file name that names
 * a file in the current folder means that file: the dynamic loader would search for it elsewhere
 * (a bare name that is no file here stays the loader's to find).
 */
function explicitPath(value: string, fileName: string): string {
  let isFolder = value.endsWith('/');
  let exists = false;
  try {
    isFolder ||= statSync(value).isDirectory();
    exists = true;
  } catch {
    // A path that does not exist is reported by the attempt itself.
  }
  if (isFolder) return join(value, fileName);
  return exists && !/[/\\]/.test(value) ? resolve(value) : value;
}

/**
 * Where to look for the CUDA driver library, in order: `$CUDA_DRIVER_PATH` (a file, or a folder
 * holding libcuda.so.1), then the dynamic loader's own search (`LD_LIBRARY_PATH`, ld.so.cache), then
 * the usual driver folders. The toolkit's `stubs/libcuda.so` is never tried: it only returns
 * `CUDA_ERROR_STUB_LIBRARY`.
 */
export function driverCandidates(
  env: Environment = process.env,
  platform: string = process.platform,
): LibraryCandidate[] {
  const out: LibraryCandidate[] = [];
  const fromEnv = env['CUDA_DRIVER_PATH'];
  if (platform === 'win32') {
    if (fromEnv) out.push({ path: explicitPath(fromEnv, 'nvcuda.dll'), source: '$CUDA_DRIVER_PATH' });
    out.push({ path: 'nvcuda.dll', source: 'Windows system folders' });
    return out;
  }
  if (fromEnv) out.push({ path: explicitPath(fromEnv, 'libcuda.so.1'), source: '$CUDA_DRIVER_PATH' });
  out.push({ path: 'libcuda.so.1', source: 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)' });
  out.push({ path: 'libcuda.so', source: 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)' });
  for (const dir of DRIVER_FOLDERS_LINUX) out.push({ path: join(dir, 'libcuda.so.1'), source: 'driver folder' });
  return out;
}

/**
 * Python `site-packages` / `dist-packages` folders under the usual prefixes (`/usr/local/lib`,
 * `/usr/lib`, `/opt/conda/lib`, `$CONDA_PREFIX/lib`, `$VIRTUAL_ENV/lib`) and `extraPrefixes`, for
 * libraries that ship in pip wheels (NVRTC here, NCCL in `src/nccl/loader.ts`). Folders that do not
 * exist are left out; never throws.
 */
export function pythonSitePackages(env: Environment, extraPrefixes: readonly string[] = []): string[] {
  const prefixes = new Set<string>(['/usr/local/lib', '/usr/lib', '/opt/conda/lib']);
  for (const key of ['CONDA_PREFIX', 'VIRTUAL_ENV']) {
    const v = env[key];
    if (v) prefixes.add(join(v, 'lib'));
  }
  for (const p of extraPrefixes) prefixes.add(p);
  const out: string[] = [];
  for (const prefix of prefixes) {
    let pythons: string[];
    try {
      pythons = readdirSync(prefix).filter((d) => /^python3(\.\d+)?$/.test(d)).sort();
    } catch {
      continue;
    }
    for (const py of pythons) {
      for (const site of ['site-packages', 'dist-packages']) {
        const folder = join(prefix, py, site);
        if (existsSync(folder)) out.push(folder);
      }
    }
  }
  return out;
}

/** Python site-packages folders that may hold pip's NVIDIA wheels (`nvidia/cuda_nvrtc/lib`, `nvidia/cu13/lib`). */
function pythonNvidiaLibFolders(env: Environment): string[] {
  const out: string[] = [];
  for (const site of pythonSitePackages(env)) {
    const nvidia = join(site, 'nvidia');
    let packages: string[];
    try {
      packages = readdirSync(nvidia);
    } catch {
      continue;
    }
    for (const p of packages.sort()) {
      if (p === 'cuda_nvrtc' || /^cu\d+$/.test(p)) out.push(join(nvidia, p, 'lib'));
    }
  }
  return out;
}

/**
 * Where to look for NVRTC: `$NVRTC_PATH` (a file or a folder), the dynamic loader's search, the
 * toolkit (`$CUDA_HOME`, `$CUDA_PATH`, /usr/local/cuda) and pip's NVIDIA wheels in Python's
 * site-packages. Newer versions are tried first.
 */
export function nvrtcCandidates(
  env: Environment = process.env,
  platform: string = process.platform,
): LibraryCandidate[] {
  const out: LibraryCandidate[] = [];
  const fromEnv = env['NVRTC_PATH'];
  if (platform === 'win32') {
    if (fromEnv) out.push({ path: explicitPath(fromEnv, 'nvrtc64_130_0.dll'), source: '$NVRTC_PATH' });
    for (const v of ['130_0', '120_0', '112_0']) out.push({ path: `nvrtc64_${v}.dll`, source: 'PATH' });
    return out;
  }
  const names = ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so.11.2', 'libnvrtc.so'];
  if (fromEnv) out.push({ path: explicitPath(fromEnv, 'libnvrtc.so'), source: '$NVRTC_PATH' });
  for (const n of names) out.push({ path: n, source: 'dynamic loader search path (LD_LIBRARY_PATH, ld.so.cache)' });
  const toolkits = new Set<string>();
  for (const key of ['CUDA_HOME', 'CUDA_PATH']) {
    const v = env[key];
    if (v) toolkits.add(v);
  }
  toolkits.add('/usr/local/cuda');
  const folders: Array<[string, string]> = [];
  for (const t of toolkits) {
    folders.push([join(t, 'lib64'), 'CUDA toolkit']);
    folders.push([join(t, 'lib'), 'CUDA toolkit']);
  }
  for (const f of pythonNvidiaLibFolders(env)) folders.push([f, 'Python NVIDIA wheel']);
  for (const [dir, source] of folders) {
    for (const n of names) {
      const p = join(dir, n);
      if (existsSync(p)) out.push({ path: p, source });
    }
  }
  return out;
}

/** What `notALibraryFile` reads of a path's `fs.Stats` (spelled here: the published typings need no `@types/node`). */
export interface FileKind {
  isFile(): boolean;
  isFIFO(): boolean;
  isDirectory(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}

/**
 * What a path is, when it is not a file the dynamic loader can map: `a FIFO (named pipe)`, `a
 * folder`, … (null for a regular file). `dlopen` opens the path before it reads a byte, and opening
 * a FIFO blocks until something writes to it: a `$CUDA_DRIVER_PATH` naming one hung the process
 * for ever. So every path is looked at first (through symlinks, which `dlopen` follows too).
 */
export function notALibraryFile(stats: FileKind): string | null {
  if (stats.isFile()) return null;
  if (stats.isFIFO()) return 'a FIFO (named pipe), not a library file: opening it would block until something writes to it';
  if (stats.isDirectory()) return 'a folder, not a library file';
  if (stats.isSocket()) return 'a socket, not a library file';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device, not a library file';
  return 'not a regular file';
}

/** Why `path` cannot be handed to the dynamic loader, or null when it is a regular file (or a symlink to one). */
function pathProblem(path: string): string | null {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      let link = false;
      try {
        link = lstatSync(path).isSymbolicLink();
      } catch {
        // Not there at all.
      }
      return link ? 'a symlink to nothing (no such file)' : 'no such file';
    }
    return `cannot be looked at (${code ?? String(e)})`;
  }
  const problem = notALibraryFile(stats);
  if (problem === null) return null;
  let link = false;
  try {
    link = lstatSync(path).isSymbolicLink();
  } catch {
    // It was there a moment ago; the plain reason is enough.
  }
  return link ? `a symlink to ${problem}` : problem;
}

/**
 * For a bare name (`libcuda.so.1`), the file the dynamic loader would open first from
 * `LD_LIBRARY_PATH`, when that is not a regular file: the same hang as a bad explicit path.
 * (The ld.so cache and the system folders list only files that ldconfig or root put there.)
 * The list is read as ld.so reads it: entries split at colons and semicolons, an empty entry
 * (a leading, trailing or doubled separator) meaning the current folder.
 */
function searchPathProblem(name: string, env: Environment): string | null {
  const list = env['LD_LIBRARY_PATH'];
  if (list === undefined || list === '') return null;
  for (const dir of list.split(/[:;]/)) {
    const path = join(dir === '' ? '.' : dir, name);
    let exists = true;
    try {
      lstatSync(path);
    } catch {
      exists = false;
    }
    if (!exists) continue;
    const problem = pathProblem(path);
    return problem === null ? null : `the dynamic loader would open ${path} (from LD_LIBRARY_PATH), which is ${problem}`;
  }
  return null;
}

/** ELF `e_machine` values, by the `process.arch` that runs them. */
const ELF_MACHINES: Readonly<Record<number, string>> = { 3: 'ia32', 40: 'arm', 62: 'x64', 183: 'arm64', 21: 'ppc64', 22: 's390x', 243: 'riscv64' };

/**
 * When `path` is an ELF file for another architecture than this process's, says so: glibc reports
 * such a file as `cannot open shared object file: No such file or directory`. Null otherwise.
 */
function otherArchitecture(path: string): string | null {
  let header: Buffer;
  try {
    const fd = openSync(path, 'r');
    try {
      header = Buffer.alloc(20);
      if (readSync(fd, header, 0, 20, 0) < 20) return null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return null;
  const machine = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
  // Only where this process's own machine is known: elsewhere a library of its own would be called foreign.
  const ours = Object.keys(ELF_MACHINES).find((m) => ELF_MACHINES[Number(m)] === process.arch);
  if (ours === undefined || Number(ours) === machine) return null;
  return `a library for ${ELF_MACHINES[machine] ?? `ELF machine ${machine}`}, not for this process's ${process.arch}`;
}

/**
 * Tries each candidate in order with `load` (koffi by default) and returns the first that loads,
 * with every failed attempt. A path is looked at before it is loaded: one that is missing, a FIFO,
 * a folder, a socket or a device is an attempt with that reason, and never reaches `load` (see
 * `notALibraryFile`); so is a bare name that `LD_LIBRARY_PATH` resolves to such a file. A library
 * that loads but that `accept` refuses (it returns the reason) is unloaded, and is an attempt with
 * that reason: another library of the same name (`libcudart` for the driver) must not end the
 * search. Never throws.
 */
export function loadFirst(
  candidates: readonly LibraryCandidate[],
  load: (path: string) => KoffiLibrary = (p) => koffi().load(p),
  env: Environment = process.env,
  accept: (lib: KoffiLibrary) => string | null = () => null,
): LoadOutcome {
  const attempts: LoadAttempt[] = [];
  for (const c of candidates) {
    const isPath = c.path.includes('/') || (process.platform === 'win32' && c.path.includes('\\'));
    const problem = isPath ? pathProblem(c.path) : process.platform === 'win32' ? null : searchPathProblem(c.path, env);
    if (problem !== null) {
      attempts.push({ path: c.path, source: c.source, error: problem });
      continue;
    }
    let lib: KoffiLibrary;
    try {
      lib = load(c.path);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const arch = isPath ? otherArchitecture(c.path) : null;
      attempts.push({ path: c.path, source: c.source, error: arch === null ? message : `${message} (${arch})` });
      continue;
    }
    let refused: string | null;
    try {
      refused = accept(lib);
    } catch (e) {
      refused = e instanceof Error ? e.message : String(e);
    }
    if (refused === null) return { ok: true, loaded: { lib, path: c.path }, attempts };
    try {
      lib.unload();
    } catch {
      // Kept mapped: harmless, nothing of it is used.
    }
    attempts.push({ path: c.path, source: c.source, error: refused });
  }
  return { ok: false, attempts };
}

/** The lines of a loader error: every attempt, then what to check. */
export function describeAttempts(what: string, attempts: readonly LoadAttempt[], advice: readonly string[]): string {
  const tried = attempts.length
    ? attempts.map((a) => `  - ${a.path} (${a.source}): ${a.error}`).join('\n')
    : '  (no candidates)';
  return `${what} could not be loaded. Tried, in order:\n${tried}\nCheck:\n${advice.map((a) => `  - ${a}`).join('\n')}`;
}

/** What to check when libcuda cannot be found. */
export const DRIVER_ADVICE: readonly string[] = [
  'an NVIDIA driver is installed and working (`nvidia-smi` lists the GPU);',
  'libcuda.so.1 is visible to the dynamic loader (`ldconfig -p | grep libcuda`), or its folder is in LD_LIBRARY_PATH;',
  'in a container: it runs with the NVIDIA container toolkit (`docker run --gpus all …`), which mounts the driver;',
  'or set CUDA_DRIVER_PATH to the full path of libcuda.so.1 (or its folder).',
];

/** What to check when NVRTC cannot be found. */
export const NVRTC_ADVICE: readonly string[] = [
  'the CUDA toolkit is installed (libnvrtc.so.* under $CUDA_HOME/lib64 or /usr/local/cuda/lib64),',
  'or the pip wheel `nvidia-cuda-nvrtc` is installed in a Python environment;',
  'or set NVRTC_PATH to the full path of libnvrtc.so.* (or its folder);',
  'or load precompiled PTX/cubin with Module.load instead of compiling at run time.',
];
