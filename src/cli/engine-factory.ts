/**
 * Builds the decode engine `cudagraph serve` drives, by kind: `cpu` (the CPU reference,
 * `src/llm/reference-engine.ts`), `gpu` (one CUDA graph per batch bucket) and `gpu-eager` (the same
 * kernels launched one by one), both `GpuDecodeEngine` (`src/llm/gpu-engine.ts`), from the model's
 * shape, the slots, the batch limit, and a weights file or the seed of synthetic weights. Each
 * engine's module is imported when asked for, so a machine without a GPU never loads the GPU
 * engine. The server reads the engine's `slots`, `maxBatch` and `maxPositions`.
 */
import { DEFAULT_LLAMA_CONFIG, llamaConfig, type LlamaConfig } from '../llm/config.js';
import type { DecodeEngine } from '../llm/engine.js';

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
  /** The most entries one step takes (one a sequence; prompt chunks take one a token). */
  readonly maxBatch: number;
  /** A `.safetensors` file with the model's weights (Hugging Face Llama names); absent: random weights from `seed`. */
  readonly weights?: string;
  /** The seed of random weights. */
  readonly seed: number;
}

/** Builds an engine from `options`. The server's factory type, so tests and other front ends can pass their own. */
export type EngineFactory = (options: EngineOptions) => Promise<DecodeEngine>;

/** The weights an engine starts from: the file's (checked against the shape), or seeded synthetic ones. */
async function weightsFor(options: EngineOptions) {
  const { loadLlamaWeights } = await import('../llm/safetensors.js');
  const { syntheticWeights } = await import('../llm/weights.js');
  return options.weights !== undefined ? loadLlamaWeights(options.weights, options.config) : syntheticWeights(options.config, options.seed);
}

/**
 * The default `EngineFactory`: `cpu` → `CpuDecodeEngine`; `gpu` → `GpuDecodeEngine` with one graph
 * per batch bucket; `gpu-eager` → the same kernels launched one by one. Each engine's module is
 * imported only when asked for (the CPU engine never loads the GPU code).
 * @throws whatever the engine or the weights file throws (a `CudaError` where there is no GPU, a
 *   `FileFormatError` for a bad file, an `InvalidArgumentError` for a file of another shape).
 */
export async function createEngine(options: EngineOptions): Promise<DecodeEngine> {
  const weights = await weightsFor(options);
  if (options.kind === 'cpu') {
    const { CpuDecodeEngine } = await import('../llm/reference-engine.js');
    return new CpuDecodeEngine(options.config, weights, { slots: options.slots, maxBatch: options.maxBatch });
  }
  const { GpuDecodeEngine } = await import('../llm/gpu-engine.js');
  return new GpuDecodeEngine({
    config: options.config,
    weights: (name) => weights.get(name)!.data,
    graphs: options.kind === 'gpu',
    slots: options.slots,
    maxBatch: options.maxBatch,
  });
}
