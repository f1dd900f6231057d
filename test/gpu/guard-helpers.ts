/** Shared set-up of the guard, pool and soak GPU tests. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DeviceBuffer, type Stream } from '../../src/index.js';

/** CUDA C++ kernels for the guard tests (compiled with NVRTC). */
export const GUARD_KERNELS = `
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
extern "C" __global__ void add_from(unsigned int *p, const unsigned int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += *v;
}
extern "C" __global__ void fill_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
`;

/** A buffer of `n` u32 zeros (synchronous, outside any capture). */
export function zeroed(s: Stream, n: number): DeviceBuffer {
  const b = DeviceBuffer.alloc(s.device, 4 * n);
  b.memsetAsync(s, 0);
  s.synchronize();
  return b;
}

/** The buffer's u32 values (synchronous copy). */
export function u32(buf: DeviceBuffer): Uint32Array {
  const out = new Uint32Array(buf.byteLength / 4);
  buf.copyToHost(out);
  return out;
}

/** True when every element equals `v`; else a message with the first that does not. */
export function allEqual(values: Uint32Array, v: number): true | string {
  const i = values.findIndex((x) => x !== v);
  return i < 0 ? true : `element ${i} is ${values[i]}, expected ${v}`;
}

let gcFn: (() => void) | null = null;

/** Runs a full garbage collection (and lets finalizers run). */
export async function collectGarbage(): Promise<void> {
  if (gcFn === null) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  for (let i = 0; i < 3; i++) {
    gcFn();
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const MiB = 1024 * 1024;
