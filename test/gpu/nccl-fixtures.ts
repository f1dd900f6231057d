/**
 * Shared set-up of the NCCL GPU tests: whether NCCL and enough GPUs are here, and the kernels of
 * the data-parallel step. A suite is skipped with a visible reason when no driver or no NCCL loads
 * (failed instead under CUDA_TESTS=require, as every GPU suite); the two-GPU suite is skipped with
 * its reason when fewer than two GPUs are present, even under CUDA_TESTS=require (the device
 * machine of one GPU cannot run it), and fails there only when two GPUs are present.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, ncclAvailable, loadNccl } from '../../src/index.js';
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

export { StepKernels, STEP_SOURCE, readF32, f16Bits, bf16Bits } from '../../fixtures/nccl-step.js';
