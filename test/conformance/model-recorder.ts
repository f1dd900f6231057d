/** The CPU side of the conformance suite: `StreamCapture` as a recorder. */
import { StreamCapture, StreamId, CaptureEvent, GraphError, type CaptureSemantics, type ComputeGraph } from '../../src/index.js';
import type { Recorder } from './recorder.js';
import type { ScriptDir } from './script.js';
import type { ErrorClass } from './outcome.js';

const CLASSES: Record<string, ErrorClass> = {
  CAPTURE_UNJOINED: 'unjoined',
  CAPTURE_INVALIDATED: 'invalidated',
  CAPTURE_ISOLATION: 'isolation',
  CAPTURE_UNMATCHED: 'unmatched',
};

/**
 * Records through `StreamCapture`. Under `'cuda'` semantics only stream 0 is begun and the other
 * streams join by waiting, as on a device; under `'per-stream'` semantics (which has no joining by
 * waiting) every stream is begun up front and events recorded before the capture do not exist.
 */
export class ModelRecorder implements Recorder {
  readonly name: string;
  #cap: StreamCapture | null = null;

  constructor(readonly semantics: CaptureSemantics = 'cuda') {
    this.name = `model (${semantics} semantics)`;
  }

  get #c(): StreamCapture {
    if (this.#cap === null) throw new Error('ModelRecorder: begin first');
    return this.#cap;
  }

  begin(streams: number, before: readonly number[]): void {
    const cap = new StreamCapture({ semantics: this.semantics });
    this.#cap = cap;
    if (this.semantics === 'cuda') {
      // A stream outside the capture (one past the script's streams) records the early events.
      for (const e of before) cap.recordEvent(StreamId(streams), CaptureEvent(e));
      cap.beginCapture(StreamId(0));
    } else {
      for (let s = 0; s < streams; s++) cap.beginCapture(StreamId(s));
    }
  }

  kernel(s: number, name: string, blocks: number, threads: number, smem: number): void {
    this.#c.recordKernel(StreamId(s), name, blocks, threads, smem);
  }

  memcpy(s: number, dir: ScriptDir, size: number): void {
    this.#c.recordMemcpy(StreamId(s), 'copy', dir, size);
  }

  memset(s: number, size: number, value: number): void {
    this.#c.recordMemset(StreamId(s), 'fill', size, value);
  }

  host(s: number, label: string): void {
    this.#c.recordHostCallback(StreamId(s), label);
  }

  recordEvent(s: number, e: number): void {
    this.#c.recordEvent(StreamId(s), CaptureEvent(e));
  }

  waitEvent(s: number, e: number): void {
    this.#c.waitEvent(StreamId(s), CaptureEvent(e));
  }

  end(): ComputeGraph {
    return this.#c.endCapture(StreamId(0));
  }

  classify(error: unknown): ErrorClass {
    if (error instanceof GraphError) return CLASSES[error.code] ?? `other:${error.code}`;
    return `other:${error instanceof Error ? error.message : String(error)}`;
  }

  dispose(): void {
    this.#cap = null;
  }
}
