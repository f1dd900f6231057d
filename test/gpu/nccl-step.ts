/**
 * The kernels and host helpers of the NCCL tests' data-parallel step, shared by the GPU tests,
 * the two-process worker and bench/nccl.ts (no test-runner imports here).
 */
import { Module, arg, type Device, type DeviceBuffer, type Stream } from '../../src/index.js';

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
