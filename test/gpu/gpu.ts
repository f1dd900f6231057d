/**
 * Shared set-up of the GPU tests: whether a device is usable here, and the fixtures. A suite is
 * skipped with a visible reason when no driver loads, and fails instead when CUDA_TESTS=require
 * (the device runner sets it), so a broken driver binding can never pass as "skipped".
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Device, driverAvailable } from '../../src/index.js';
export { bindings, onBinding } from '../support/bindings.js';

const required = process.env['CUDA_TESTS'] === 'require';

function unavailableReason(): string | null {
  const d = driverAvailable();
  if (!d.ok) return `no CUDA driver: ${d.error.message.split('\n')[0]}`;
  try {
    if (Device.count() === 0) return 'the CUDA driver sees no GPU';
  } catch (e) {
    return `the CUDA driver did not initialise: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  }
  return null;
}

/** Why GPU tests cannot run here, or null when they can. */
export const gpuUnavailable = unavailableReason();

/** A suite of GPU tests: skipped (with the reason) without a GPU, failed under CUDA_TESTS=require. */
export function gpuSuite(name: string, body: () => void): void {
  if (gpuUnavailable === null) {
    describe(name, body);
  } else if (required) {
    test(name, () => assert.fail(`CUDA_TESTS=require but ${gpuUnavailable}`));
  } else {
    test(name, { skip: gpuUnavailable }, () => {});
  }
}

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'gpu', 'fixtures');

/** The fixture kernels as PTX text (compute_90). */
export function fixturePtx(): string {
  return readFileSync(join(fixtures, 'kernels.ptx'), 'utf8');
}

/** The fixture kernels as an sm_90 cubin. */
export function fixtureCubin(): Uint8Array {
  return new Uint8Array(readFileSync(join(fixtures, 'kernels.sm_90.cubin')));
}

/** CUDA C++ kernels compiled with NVRTC by the tests. */
export const NVRTC_SOURCE = `
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
extern "C" __global__ void branch_a(unsigned int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 2u + 1u;
}
extern "C" __global__ void branch_b(unsigned int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] + 100u;
}
extern "C" __global__ void join_sum(const unsigned int *a, const unsigned int *b, unsigned int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
template <typename T> __global__ void scale(T *p, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= s;
}
`;

/** Reads a buffer of u32 back to the host (synchronous copy). */
export function readU32(buf: { copyToHost(dst: ArrayBufferView): unknown; byteLength: number }): Uint32Array {
  const out = new Uint32Array(buf.byteLength / 4);
  buf.copyToHost(out);
  return out;
}
