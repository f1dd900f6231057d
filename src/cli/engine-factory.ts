/**
 * Builds the decode engine `cudagraph serve` drives, by kind: `cpu` (the CPU reference,
 * `src/llm/reference-engine.ts`, `new CpuDecodeEngine(options)`), `gpu` (one CUDA graph per batch
 * bucket) and `gpu-eager` (the same kernels launched one by one), both from `src/llm/gpu-engine.ts`
 * (`createGpuEngine(options)`). Each engine module is imported when asked for, so a build without
 * one still serves with the others, and a machine without a GPU never loads the GPU engine.
 *
 * The contract with an engine module: its constructor or factory takes `EngineOptions` (the
 * model's shape, the slots, the batch limit, the weights file or the seed of random weights) and
 * returns a `DecodeEngine` whose `slots`, `maxBatch` and `maxPositions` the server then reads.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LLAMA_CONFIG, llamaConfig, type LlamaConfig } from '../llm/config.js';
import type { DecodeEngine } from '../llm/engine.js';
import { UsageError } from './usage-error.js';

/** The engines `--engine` chooses from. */
export const ENGINE_KINDS = Object.freeze(['cpu', 'gpu', 'gpu-eager'] as const);
/** An engine kind. */
export type EngineKind = (typeof ENGINE_KINDS)[number];

/** The model shapes `--config` chooses from: `small` starts in a blink, `default` is `DEFAULT_LLAMA_CONFIG`. */
export const MODEL_CONFIGS: Readonly<Record<'small' | 'default', LlamaConfig>> = Object.freeze({
  small: llamaConfig('MODEL_CONFIGS.small', { layers: 2, dim: 128, heads: 4, kvHeads: 2, hidden: 384, maxPositions: 512 }),
  default: DEFAULT_LLAMA_CONFIG,
});
/** A model shape's name. */
export type ConfigName = keyof typeof MODEL_CONFIGS;

/** What an engine is built from. */
export interface EngineOptions {
  readonly kind: EngineKind;
  /** The model's shape (a weights file must match it). */
  readonly config: LlamaConfig;
  /** KV-cache slots: sequences in flight at once. */
  readonly slots: number;
  /** The most sequences one step takes (≤ `slots`). */
  readonly maxBatch: number;
  /** A `.safetensors` file with the model's weights (Hugging Face Llama names); absent: random weights from `seed`. */
  readonly weights?: string;
  /** The seed of random weights. */
  readonly seed: number;
}

/** Builds an engine from `options`. The server's factory type, so tests and other front ends can pass their own. */
export type EngineFactory = (options: EngineOptions) => Promise<DecodeEngine>;

/** The module of each kind, relative to this file, and what it is called in messages. */
const MODULES = {
  cpu: { path: '../llm/reference-engine.js', what: 'the CPU reference engine', source: 'src/llm/reference-engine.ts' },
  gpu: { path: '../llm/gpu-engine.js', what: 'the GPU engine', source: 'src/llm/gpu-engine.ts' },
} as const;

/**
 * Imports an engine module; a module missing from this build is a one-line `UsageError`. An error
 * the module throws while loading is passed on as it is (a driver error says what to check).
 */
async function importEngine(module: keyof typeof MODULES, kind: EngineKind): Promise<Record<string, unknown>> {
  const m = MODULES[module];
  const url = new URL(m.path, import.meta.url);
  const file = fileURLToPath(url);
  if (!existsSync(file)) throw new UsageError(`--engine ${kind}: ${m.what} (${m.source}) is not part of this build`);
  try {
    // A computed specifier: this file compiles whether or not the engine's module exists yet.
    return (await import(url.href)) as Record<string, unknown>;
  } catch (e) {
    if ((e as NodeJS.ErrnoException | null)?.code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(file)) {
      throw new UsageError(`--engine ${kind}: ${m.what} (${m.source}) is not part of this build`, { cause: e });
    }
    throw e;
  }
}

/**
 * The default `EngineFactory`: `cpu` → `new CpuDecodeEngine(options)`; `gpu`, `gpu-eager` →
 * `createGpuEngine(options)` (which reads `options.kind`).
 * @throws UsageError when the engine's module is not in this build or lacks its export; whatever
 *   the engine throws (a `CudaError` where there is no GPU, a bad weights file…).
 */
export async function createEngine(options: EngineOptions): Promise<DecodeEngine> {
  if (options.kind === 'cpu') {
    const mod = await importEngine('cpu', 'cpu');
    const Engine = mod.CpuDecodeEngine as (new (o: EngineOptions) => DecodeEngine) | undefined;
    if (typeof Engine !== 'function') throw new UsageError(`--engine cpu: ${MODULES.cpu.source} has no CpuDecodeEngine class`);
    return new Engine(options);
  }
  const mod = await importEngine('gpu', options.kind);
  const create = mod.createGpuEngine as ((o: EngineOptions) => DecodeEngine | Promise<DecodeEngine>) | undefined;
  if (typeof create !== 'function') throw new UsageError(`--engine ${options.kind}: ${MODULES.gpu.source} has no createGpuEngine function`);
  return await create(options);
}
