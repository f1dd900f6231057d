/**
 * cudagraph: CUDA graphs for Node.js. This file re-exports the public API and nothing else;
 * each layer's own index lists what it makes public.
 */
export * from './errors/index.js';
export * from './model/index.js';
export * from './cuda/index.js';
export * from './nccl/index.js';
