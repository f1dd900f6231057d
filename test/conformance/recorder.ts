/**
 * The small interface the conformance suite drives: one implementation records through the CPU
 * model (`StreamCapture`), another through real CUDA stream capture on a device (read back with
 * `Graph.toComputeGraph()`). The suite is written once against this interface.
 */
import type { ComputeGraph } from '../../src/index.js';
import type { ScriptDir } from './script.js';
import type { ErrorClass } from './outcome.js';

/** Records one script; a fresh recorder (or a fresh `begin`) per script. */
export interface Recorder {
  /** e.g. `model (cuda semantics)` or `CUDA 13.0 on NVIDIA H200`. */
  readonly name: string;
  /** Records `before` events on a stream outside the capture, then begins capturing stream 0. */
  begin(streams: number, before: readonly number[]): void;
  kernel(s: number, name: string, blocks: number, threads: number, smem: number): void;
  memcpy(s: number, dir: ScriptDir, size: number): void;
  memset(s: number, size: number, value: number): void;
  host(s: number, label: string): void;
  recordEvent(s: number, e: number): void;
  waitEvent(s: number, e: number): void;
  /** Ends the capture on stream 0 and returns the graph it made. */
  end(): ComputeGraph;
  /** Maps an error a call threw to the suite's vocabulary. */
  classify(error: unknown): ErrorClass;
  /** Releases whatever the recorder holds (streams, events, the capture); never throws. */
  dispose(): void;
}
