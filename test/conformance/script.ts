/**
 * A scripted multi-stream workload: what the conformance suite records twice, through the CPU
 * model and through real CUDA stream capture. Stream 0 is the origin (the capture begins and ends
 * there); other streams join the capture by waiting on an event recorded in it, as in CUDA.
 */

/** Copy directions a single GPU can record (peer-to-peer needs two). */
export type ScriptDir = 'HostToDevice' | 'DeviceToHost' | 'DeviceToDevice';

/** One step of a script. */
export type Op =
  | { readonly op: 'kernel'; readonly s: number; readonly name: string; readonly blocks: number; readonly threads: number; readonly smem: number }
  | { readonly op: 'memcpy'; readonly s: number; readonly dir: ScriptDir; readonly size: number }
  | { readonly op: 'memset'; readonly s: number; readonly size: number; readonly value: number }
  | { readonly op: 'host'; readonly s: number; readonly label: string }
  | { readonly op: 'record'; readonly s: number; readonly e: number }
  | { readonly op: 'wait'; readonly s: number; readonly e: number };

/** A workload: streams 0..streams−1, events recorded before the capture began, then the ops. */
export interface Script {
  readonly name: string;
  readonly streams: number;
  /** Events recorded (on a stream outside the capture) before the capture begins. */
  readonly before?: readonly number[];
  readonly ops: readonly Op[];
}

/** The kernels scripts may name (the GPU recorder compiles exactly these). */
export const KERNEL_NAMES = ['k_a', 'k_b', 'k_c', 'k_d'] as const;

/** The largest copy or fill a script may make (the GPU recorder's buffers hold this much). */
export const MAX_BYTES = 1 << 16;

/** Shorthands for writing scripts by hand. */
export const op = {
  kernel: (s: number, name: string, blocks: number, threads = 32, smem = 0): Op => ({ op: 'kernel', s, name, blocks, threads, smem }),
  memcpy: (s: number, dir: ScriptDir, size: number): Op => ({ op: 'memcpy', s, dir, size }),
  memset: (s: number, size: number, value: number): Op => ({ op: 'memset', s, size, value }),
  host: (s: number, label: string): Op => ({ op: 'host', s, label }),
  record: (s: number, e: number): Op => ({ op: 'record', s, e }),
  wait: (s: number, e: number): Op => ({ op: 'wait', s, e }),
};
