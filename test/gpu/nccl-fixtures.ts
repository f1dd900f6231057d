/**
 * Shared set-up of the NCCL GPU tests: whether NCCL and enough GPUs are here, and the kernels of
 * the data-parallel step. A suite is skipped with a visible reason when no driver or no NCCL loads
 * (failed instead under CUDA_TESTS=require, as every GPU suite); the two-GPU suite is skipped with
 * its reason when fewer than two GPUs are present, even under CUDA_TESTS=require (the device
 * machine of one GPU cannot run it), and fails there only when two GPUs are present.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, ncclAvailable, loadNccl, Module, arg, type DeviceBuffer, type Stream } from '../../src/index.js';
import { gpuUnavailable } from './gpu.js';

const required = process.env['CUDA_TESTS'] === 'require';

function ncclReason(): string | null {
  if (gpuUnavailable !== null) return gpuUnavailable;
  const n = ncclAvailable();
  if (!n.ok) return `no NCCL: ${n.error.message.split('\n')[0]}`;
  return null;
}

/** Why NCCL GPU tests cannot run here, or null. */
export const ncclUnavailable = ncclReason();

/** A suite that needs a GPU and NCCL: skipped with the reason, failed under CUDA_TESTS=require. */
export function ncclSuite(name: string, body: () => void): void {
  if (ncclUnavailable === null) describe(name, body);
  else if (required) test(name, () => assert.fail(`CUDA_TESTS=require but ${ncclUnavailable}`));
  else test(name, { skip: ncclUnavailable }, () => {});
}

/**
 * A suite that needs `gpus` GPUs and NCCL. With fewer GPUs it is skipped with a visible reason,
 * also under CUDA_TESTS=require; with enough GPUs and no NCCL it fails under CUDA_TESTS=require.
 */
export function multiGpuSuite(name: string, gpus: number, body: () => void): void {
  if (gpuUnavailable !== null) {
    if (required) test(name, () => assert.fail(`CUDA_TESTS=require but ${gpuUnavailable}`));
    else test(name, { skip: gpuUnavailable }, () => {});
    return;
  }
  const count = Device.count();
  if (count < gpus) {
    test(name, { skip: `needs ${gpus} GPUs, this machine has ${count}` }, () => {});
    return;
  }
  ncclSuite(name, body);
}

/** One line for the logs: which NCCL ran. */
export function ncclBanner(): string {
  const info = loadNccl();
  return `NCCL ${info.version} from ${info.path}; NCCL_NVLS_ENABLE=${process.env['NCCL_NVLS_ENABLE']}`;
}

/** Kernels of the data-parallel step, compiled with NVRTC. */
export const STEP_SOURCE = `
extern "C" __global__ void add_f32(float *p, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
extern "C" __global__ void scale_into(const float *src, float *dst, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * s;
}
`;

/** The step's kernels on one device. */
export class StepKernels {
  readonly module: Module;
  constructor(device: Device) {
    this.module = Module.compile(device, STEP_SOURCE);
  }
  /** p[i] += v */
  add(s: Stream, p: DeviceBuffer, v: number, n: number): void {
    this.module.function('add_f32').launch(s, { grid: Math.ceil(n / 256), block: 256, args: [p, arg.f32(v), arg.i32(n)] });
  }
  /** dst[i] = src[i] * k */
  scale(s: Stream, src: DeviceBuffer, dst: DeviceBuffer, k: number, n: number): void {
    this.module.function('scale_into').launch(s, { grid: Math.ceil(n / 256), block: 256, args: [src, dst, arg.f32(k), arg.i32(n)] });
  }
  dispose(): void {
    this.module.dispose();
  }
}

/** Reads a float buffer back (synchronous copy). */
export function readF32(buf: DeviceBuffer): Float32Array {
  const out = new Float32Array(buf.byteLength / 4);
  buf.copyToHost(out);
  return out;
}

/** Float32 IEEE half (f16) bits of small integers, exactly representable: 1 → 0x3c00. */
export function f16Bits(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exp = ((u >>> 23) & 0xff) - 127 + 15;
  const mant = (u >>> 13) & 0x3ff;
  if (x === 0) return sign;
  return sign | (exp << 10) | mant;
}

/** bfloat16 bits (the high half of the f32 bits; exact for small integers). */
export function bf16Bits(x: number): number {
  const f = new Float32Array([x]);
  return new Uint32Array(f.buffer)[0]! >>> 16;
}
