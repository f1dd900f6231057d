/**
 * Whether the GPU path can run here, and why not, in one line: what `demo` prints first and what
 * `bench` refuses with. `doctor` goes through the same steps in detail.
 */
import { readFileSync } from 'node:fs';
import { Device, driverAvailable, nvrtcVersion, type CudaError } from '../index.js';

/** `13000` → `13.0`. */
export function cudaVersionText(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** The first line of an error's message, without the operation prefix the library puts first. */
export function firstLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.split('\n')[0]!;
}

/**
 * The loader's failure in one line: what is missing and how many places were tried, e.g. `the
 * CUDA driver library (libcuda) is not available (tried libcuda.so.1 and 10 other places)`.
 */
export function driverProblem(e: CudaError): string {
  const tried = String(e.details['tried'] ?? '')
    .split(', ')
    .filter((x) => x.length > 0);
  const where = tried.length === 0 ? '' : ` (tried ${tried[0]}${tried.length > 1 ? ` and ${tried.length - 1} other places` : ''})`;
  return `${e.description}${where}`;
}

/** The places a loader error's message lists under `Tried, in order:`. */
export function triedPlaces(message: string): string[] {
  const out: string[] = [];
  let inList = false;
  for (const line of message.split('\n')) {
    if (/Tried, in order:\s*$/.test(line)) inList = true;
    else if (/^Check:/.test(line)) inList = false;
    else if (inList) {
      const m = /^\s+- (\S+) \(/.exec(line);
      if (m) out.push(m[1]!);
    }
  }
  return out;
}

/** An NVRTC failure in one line: `NVRTC … could not be loaded (tried libnvrtc.so.13 and 3 other places)`. */
export function nvrtcProblem(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const tried = triedPlaces(message);
  if (tried.length === 0) return firstLine(e);
  const what = firstLine(e).replace(/^.*NVRTC_NOT_LOADED: /, '').replace(/\.?\s*Tried, in order:\s*$/, '');
  return `${what} (tried ${tried[0]}${tried.length > 1 ? ` and ${tried.length - 1} other places` : ''})`;
}

/** The device the GPU path would use, or the one-line reason it cannot run. */
export type GpuProbe =
  | { readonly ok: true; readonly device: Device; readonly driverVersion: number }
  | { readonly ok: false; readonly reason: string };

/** Device 0 if a driver loads and sees a GPU; `needNvrtc` also requires NVRTC to load. Never throws. */
export function probeGpu(needNvrtc: boolean): GpuProbe {
  const d = driverAvailable();
  if (!d.ok) return { ok: false, reason: `no CUDA driver: ${driverProblem(d.error)}` };
  let device: Device;
  let driverVersion: number;
  try {
    if (Device.count() === 0) return { ok: false, reason: 'the CUDA driver loaded but sees no GPU' };
    device = Device.get(0);
    driverVersion = Device.driverVersion();
  } catch (e) {
    return { ok: false, reason: `the CUDA driver did not initialise: ${firstLine(e)}` };
  }
  if (needNvrtc) {
    try {
      nvrtcVersion();
    } catch (e) {
      return { ok: false, reason: `found ${device.name}, but ${nvrtcProblem(e)}; the demo compiles its kernels with NVRTC` };
    }
  }
  return { ok: true, device, driverVersion };
}

/** Where a shared library whose file name contains `name` is mapped in this process (Linux), or null. */
export function loadedLibraryPath(name: string): string | null {
  try {
    const maps = readFileSync('/proc/self/maps', 'utf8');
    for (const line of maps.split('\n')) {
      const path = line.slice(line.indexOf('/'));
      if (line.includes('/') && path.includes(name)) return path.trim();
    }
  } catch {
    // Not Linux: the path is unknown, which the caller says.
  }
  return null;
}

/** `141.0 GiB`. */
export function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

/** A device in one line: `NVIDIA H200 (compute capability 9.0, 139.8 GiB, 132 SMs)`. */
export function describeDevice(d: Device): string {
  return `${d.name} (compute capability ${d.computeCapability.major}.${d.computeCapability.minor}, ${gib(d.totalMemory)}, ${d.multiprocessorCount} SMs)`;
}

