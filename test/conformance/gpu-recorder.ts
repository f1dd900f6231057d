/**
 * The GPU side of the conformance suite: real work on real streams under one CUDA stream capture
 * (kernels from a small NVRTC module named as the scripts name them, copies and fills on real
 * buffers, host functions through `cuLaunchHostFunc`, events through `cuEventRecord` and
 * `cuStreamWaitEvent`), read back through `Graph.toComputeGraph()`.
 */
import {
  CudaError,
  Device,
  DeviceBuffer,
  HostFunction,
  Module,
  PinnedHostBuffer,
  StreamGraphCapture,
  type ComputeGraph,
  type Event,
  type Graph,
  type Stream,
} from '../../src/index.js';
import { KERNEL_NAMES, MAX_BYTES, type ScriptDir } from './script.js';
import type { Recorder } from './recorder.js';
import type { ErrorClass } from './outcome.js';

/** CUDA C++ for the kernels scripts name: each bumps a counter once. */
export const CONFORMANCE_KERNELS = KERNEL_NAMES.map(
  (k) => `extern "C" __global__ void ${k}(unsigned int *p) { if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(p, 1u); }`,
).join('\n');

/** What every GPU recorder of a test file shares: the device, the kernels and the buffers. */
export class GpuResources {
  readonly device: Device;
  readonly module: Module;
  readonly counter: DeviceBuffer;
  readonly a: DeviceBuffer;
  readonly b: DeviceBuffer;
  readonly pinned: PinnedHostBuffer;

  constructor(device: Device = Device.get(0)) {
    this.device = device;
    this.module = Module.compile(device, CONFORMANCE_KERNELS);
    this.counter = DeviceBuffer.alloc(device, 4);
    this.a = DeviceBuffer.alloc(device, MAX_BYTES);
    this.b = DeviceBuffer.alloc(device, MAX_BYTES);
    this.pinned = PinnedHostBuffer.alloc(device, MAX_BYTES);
  }

  dispose(): void {
    this.module.dispose();
    this.counter.dispose();
    this.a.dispose();
    this.b.dispose();
    this.pinned.dispose();
  }
}

const CLASSES: Record<number, ErrorClass> = { 900: 'unsupported', 901: 'invalidated', 903: 'unmatched', 904: 'unjoined', 905: 'isolation' };

/** Records scripts through `StreamGraphCapture` on fresh streams and events. */
export class GpuRecorder implements Recorder {
  readonly name: string;
  #streams: Stream[] = [];
  #outside: Stream | null = null;
  #events = new Map<number, Event>();
  #hosts = new Map<string, HostFunction>();
  #capture: StreamGraphCapture | null = null;
  /** A release that failed while disposing (reported by the driver later), kept for the report. */
  cleanupError: unknown = null;

  /**
   * @param keep called with the captured `Graph` at `end()` (it then owns it); without it the graph
   *   is disposed once read back.
   */
  constructor(
    readonly res: GpuResources,
    readonly keep?: (graph: Graph) => void,
  ) {
    this.name = `CUDA ${Device.driverVersion()} on ${res.device.name}`;
  }

  #event(e: number): Event {
    let ev = this.#events.get(e);
    if (ev === undefined) {
      ev = this.res.device.createEvent();
      this.#events.set(e, ev);
    }
    return ev;
  }

  #s(s: number): Stream {
    const st = this.#streams[s];
    if (st === undefined) throw new Error(`GpuRecorder: no stream ${s}`);
    return st;
  }

  begin(streams: number, before: readonly number[]): void {
    for (let i = 0; i < streams; i++) this.#streams.push(this.res.device.createStream());
    // Events and a stream outside the capture are made before it begins (creating them is not
    // capture work, and the early records must happen before the capture).
    for (let e = 0; e < 128; e++) this.#event(e);
    if (before.length > 0) {
      this.#outside = this.res.device.createStream();
      for (const e of before) this.#event(e).record(this.#outside);
    }
    this.#capture = StreamGraphCapture.begin(this.#s(0), 'global');
  }

  kernel(s: number, name: string, blocks: number, threads: number, smem: number): void {
    this.res.module.function(name).launch(this.#s(s), { grid: blocks, block: threads, sharedMem: smem, args: [this.res.counter] });
  }

  memcpy(s: number, dir: ScriptDir, size: number): void {
    const st = this.#s(s);
    const host = this.res.pinned.bytes.subarray(0, size);
    if (dir === 'HostToDevice') this.res.a.copyFromHostAsync(st, host);
    else if (dir === 'DeviceToHost') this.res.a.copyToHostAsync(st, host);
    else this.res.b.copyFromDeviceAsync(st, this.res.a, { byteLength: size });
  }

  memset(s: number, size: number, value: number): void {
    this.res.b.memsetAsync(this.#s(s), value, { count: size });
  }

  host(s: number, label: string): void {
    let h = this.#hosts.get(label);
    if (h === undefined) {
      h = HostFunction.create(() => {}, { label });
      this.#hosts.set(label, h);
    }
    h.launch(this.#s(s));
  }

  recordEvent(s: number, e: number): void {
    this.#event(e).record(this.#s(s));
  }

  waitEvent(s: number, e: number): void {
    this.#s(s).wait(this.#event(e));
  }

  end(): ComputeGraph {
    const capture = this.#capture;
    if (capture === null) throw new Error('GpuRecorder: begin first');
    const graph = capture.endGraph();
    try {
      return graph.toComputeGraph();
    } finally {
      if (this.keep !== undefined) this.keep(graph);
      else graph.dispose();
    }
  }

  classify(error: unknown): ErrorClass {
    if (error instanceof CudaError) return CLASSES[error.code] ?? `other:${error.code}`;
    return `other:${error instanceof Error ? error.message : String(error)}`;
  }

  dispose(): void {
    this.#capture?.dispose();
    this.#capture = null;
    for (const s of this.#streams) s.dispose();
    this.#outside?.dispose();
    for (const e of this.#events.values()) e.dispose();
    for (const h of this.#hosts.values()) h.dispose();
    this.#streams = [];
    this.#events.clear();
    this.#hosts.clear();
    // A failed release is thrown by the next checked call: take it here, so one case cannot fail
    // the next one, and keep it for the report.
    try {
      this.res.device.synchronize();
    } catch (e) {
      this.cleanupError = e;
    }
  }
}
