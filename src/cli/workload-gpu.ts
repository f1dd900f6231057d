/**
 * Runs a workload `Program` on a GPU through cudagraph's public API: NVRTC compiles the kernels,
 * every launch is prepared once (arguments packed), inputs and outputs live in pinned host memory,
 * and fork/join goes through one event per stream. The same `enqueue()` issues the work eagerly or
 * inside a `StreamGraphCapture`, so the graph records exactly what the eager run executes.
 */
import {
  DeviceBuffer,
  Module,
  PinnedHostBuffer,
  StreamGraphCapture,
  arg,
  type Device,
  type Event,
  type GraphExec,
  type KernelArg,
  type PreparedLaunch,
  type Stream,
} from '../index.js';
import { KERNEL_SOURCE, bufferBytes, type Program, type ProgramArg, type Step } from './workload.js';
import type { WorkloadData } from './workload-data.js';

/** The outputs of one forward pass, copied out of pinned memory. */
export interface GpuOutputs {
  readonly probs: Float32Array;
  readonly pred: Int32Array;
  readonly stats: Float32Array;
}

/** A workload set up on a device: buffers allocated, weights uploaded, launches prepared. */
export class GpuWorkload {
  readonly device: Device;
  /** The program's streams, by lane (0 is the main stream, where capture begins). */
  readonly streams: readonly Stream[];
  /** NVRTC compile time of the kernels, in milliseconds. */
  readonly compileMs: number;
  readonly #module: Module;
  readonly #events: readonly Event[];
  readonly #buffers = new Map<string, DeviceBuffer>();
  readonly #host = new Map<string, PinnedHostBuffer>();
  readonly #launches: PreparedLaunch[] = [];
  /** The steps, compiled to closures: issuing the work is a loop over them. */
  readonly #ops: (() => void)[] = [];

  private constructor(device: Device, program: Program, data: WorkloadData) {
    this.device = device;
    const t0 = performance.now();
    this.#module = Module.compile(device, KERNEL_SOURCE, { name: 'mlp.cu' });
    this.compileMs = performance.now() - t0;
    const lanes = 1 + Math.max(...program.steps.flatMap((s) => (s.op === 'join' ? s.edges.flat() : [s.stream])));
    this.streams = Array.from({ length: lanes }, () => device.createStream());
    this.#events = this.streams.map(() => device.createEvent());

    for (const spec of program.buffers) {
      const buf = DeviceBuffer.alloc(device, bufferBytes(spec));
      this.#buffers.set(spec.name, buf);
      if (spec.role === 'weight') buf.copyFromHost(data.get(spec.name)!);
      if (spec.role === 'input' || spec.role === 'output') {
        const host = PinnedHostBuffer.alloc(device, bufferBytes(spec));
        if (spec.role === 'input') host.bytes.set(new Uint8Array(data.get(spec.name)!.buffer));
        this.#host.set(spec.name, host);
      }
    }
    // The weights went up on the legacy stream, which the (non-blocking) work streams do not
    // wait for: finish them before any work can read them.
    device.synchronize();
    for (const step of program.steps) this.#ops.push(this.#compile(step));
  }

  /**
   * Compiles the kernels and prepares the program on `device`.
   * @throws NvrtcError when NVRTC is missing or the source does not compile; CudaError from the driver.
   */
  static create(device: Device, program: Program, data: WorkloadData): GpuWorkload {
    return new GpuWorkload(device, program, data);
  }

  #compile(step: Step): () => void {
    switch (step.op) {
      case 'upload': {
        const buf = this.#buffers.get(step.buffer)!;
        const src = this.#host.get(step.buffer)!.bytes;
        const s = this.streams[step.stream]!;
        return () => void buf.copyFromHostAsync(s, src);
      }
      case 'download': {
        const buf = this.#buffers.get(step.buffer)!;
        const dst = this.#host.get(step.buffer)!.bytes;
        const s = this.streams[step.stream]!;
        return () => void buf.copyToHostAsync(s, dst);
      }
      case 'kernel': {
        const args = step.args.map((a) => this.#arg(a));
        const launch = this.#module.function(step.fn).prepare({ grid: step.grid, block: step.block, args });
        this.#launches.push(launch);
        const s = this.streams[step.stream]!;
        return () => launch.launch(s);
      }
      case 'join': {
        const from = [...new Set(step.edges.map(([f]) => f))];
        const streams = this.streams;
        const events = this.#events;
        return () => {
          for (const f of from) events[f]!.record(streams[f]!);
          for (const [f, t] of step.edges) streams[t]!.wait(events[f]!);
        };
      }
    }
  }

  #arg(a: ProgramArg): KernelArg {
    if ('buf' in a) return this.#buffers.get(a.buf)!;
    if ('i32' in a) return arg.i32(a.i32);
    return arg.f32(a.f32);
  }

  /** Issues one forward pass on the streams (eagerly, or into an active capture). */
  enqueue(): void {
    for (const op of this.#ops) op();
  }

  /** Runs `iterations` forward passes eagerly and waits for them. */
  runEager(iterations: number): void {
    for (let i = 0; i < iterations; i++) this.enqueue();
    this.streams[0]!.synchronize();
  }

  /**
   * Captures one forward pass: begins on the main stream; the side streams join the capture
   * through the fork events and are joined back before the end. Returns the instantiated graph.
   */
  capture(): GraphExec {
    const cap = StreamGraphCapture.begin(this.streams[0]!, 'global');
    try {
      this.enqueue();
      return cap.end();
    } finally {
      cap.dispose(); // a no-op after end(); ends a failed capture so the stream stays usable
    }
  }

  /** Replays `exec` `iterations` times on the main stream and waits. */
  runGraph(exec: GraphExec, iterations: number): void {
    const s = this.streams[0]!;
    for (let i = 0; i < iterations; i++) exec.launch(s);
    s.synchronize();
  }

  /** Fills the pinned outputs with NaN bytes, so a pass that writes nothing cannot pass for one that did. */
  poisonOutputs(): void {
    for (const name of ['probs', 'pred', 'stats']) this.#host.get(name)!.bytes.fill(0xff);
  }

  /** A copy of the outputs of the last completed pass. */
  outputs(): GpuOutputs {
    const copy = (name: string): ArrayBuffer => this.#host.get(name)!.bytes.slice().buffer;
    return { probs: new Float32Array(copy('probs')), pred: new Int32Array(copy('pred')), stats: new Float32Array(copy('stats')) };
  }

  /** Frees everything (graphs that still use the buffers keep them alive until they are disposed). */
  dispose(): void {
    for (const l of this.#launches) l.dispose();
    for (const b of this.#buffers.values()) b.dispose();
    for (const h of this.#host.values()) h.dispose();
    for (const e of this.#events) e.dispose();
    for (const s of this.streams) s.dispose();
    this.#module.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** True when the two results are the same bytes. */
export function sameBits(a: GpuOutputs, b: GpuOutputs): boolean {
  const eq = (x: ArrayBufferView, y: ArrayBufferView): boolean =>
    Buffer.compare(Buffer.from(x.buffer, x.byteOffset, x.byteLength), Buffer.from(y.buffer, y.byteOffset, y.byteLength)) === 0;
  return eq(a.probs, b.probs) && eq(a.pred, b.pred) && eq(a.stats, b.stats);
}
