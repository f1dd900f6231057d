/**
 * The cudagraph worker of `npm run bench:gpu`: the same rows as the C, CuPy and PyTorch workers,
 * through cudagraph's public API (the package root, as a user imports it). Usage:
 *   node dist/bench/gpu/cudagraph-worker.js <kernels.ptx>
 * Protocol and row logic: bench/gpu/worker-loop.ts. The hot paths use `PreparedLaunch` (kernel
 * arguments packed once) and `GraphExec.launch`; nothing is allocated inside a timed loop. The
 * cudagraph-only `-seq` rows submit the same N launches as one `LaunchSequence`, built untimed.
 */
import { readFileSync } from 'node:fs';
import { Device, DeviceBuffer, Module, StreamGraphCapture, arg } from '../../src/index.js';
import type { GraphExec, LaunchSequence, PreparedLaunch, Stream } from '../../src/index.js';
import { nativeStatus } from '../../src/driver/hot.js';
import { packageVersion, repoRoot } from './paths.js';
import { serve, type BenchImpl, type WorkerInfo } from './worker-loop.js';

/** Elements of the `add2` buffer: grid 1, block 256, like PyTorch's x.add_(1) on 256 floats. */
const ELEMENTS = 256;

function now(): bigint {
  return process.hrtime.bigint();
}

class CudagraphImpl implements BenchImpl<GraphExec> {
  private readonly device: Device;
  private readonly stream: Stream;
  private readonly buffer: DeviceBuffer;
  private readonly empty: PreparedLaunch;
  private readonly add2: PreparedLaunch;
  /** The `-seq` rows' sequences of n `empty` launches, by n (built on first use, outside the timed span). */
  private readonly sequences = new Map<number, LaunchSequence>();

  constructor(ptxPath: string) {
    this.device = Device.get(0);
    // Non-blocking, like the C worker's cuStreamCreate(CU_STREAM_NON_BLOCKING).
    this.stream = this.device.createStream({ nonBlocking: true });
    const module = Module.load(this.device, readFileSync(ptxPath, 'utf8'));
    this.buffer = DeviceBuffer.alloc(this.device, ELEMENTS * 4);
    this.buffer.memsetAsync(this.stream, 0, { elementSize: 4 });
    this.empty = module.function('empty').prepare({ grid: 1, block: 32, args: [] });
    this.add2 = module.function('add2').prepare({ grid: 1, block: ELEMENTS, args: [this.buffer, arg.i32(ELEMENTS)] });
    this.stream.synchronize();
  }

  info(): WorkerInfo {
    return {
      device: this.device.name,
      driverVersion: Device.driverVersion(),
      version: `cudagraph ${packageVersion(repoRoot(import.meta.url))}, Node ${process.version}, hot calls on ${nativeStatus().active ? 'the Node-API addon' : `koffi (${nativeStatus().reason})`}`,
    };
  }

  eager(n: number, withArgs: boolean): number {
    const p = withArgs ? this.add2 : this.empty;
    const s = this.stream;
    s.synchronize();
    const t0 = now();
    for (let i = 0; i < n; i++) p.launch(s);
    const t1 = now();
    s.synchronize();
    return Number(t1 - t0);
  }

  capture(n: number, withArgs: boolean): { captureNs: number; instantiateNs: number; graph: GraphExec } {
    const p = withArgs ? this.add2 : this.empty;
    const s = this.stream;
    s.synchronize();
    const t0 = now();
    const cap = StreamGraphCapture.begin(s, 'global');
    try {
      for (let i = 0; i < n; i++) p.launch(s);
    } catch (e) {
      cap.dispose(); // ends the broken capture so the stream stays usable for the next command
      throw e;
    }
    const t1 = now();
    const graph = cap.end();
    const t2 = now();
    return { captureNs: Number(t1 - t0), instantiateNs: Number(t2 - t1), graph };
  }

  /**
   * `capture` with the loop replaced by one `seq.launch()`. Kept apart from `capture` on purpose:
   * the issue's rows stay measured by the code of the earlier runs, loop and all.
   */
  captureSequence(n: number): { captureNs: number; instantiateNs: number; graph: GraphExec } {
    const seq = this.sequenceOf(n);
    const s = this.stream;
    s.synchronize();
    const t0 = now();
    const cap = StreamGraphCapture.begin(s, 'global');
    try {
      seq.launch();
    } catch (e) {
      cap.dispose(); // ends the broken capture so the stream stays usable for the next command
      throw e;
    }
    const t1 = now();
    const graph = cap.end();
    const t2 = now();
    return { captureNs: Number(t1 - t0), instantiateNs: Number(t2 - t1), graph };
  }

  private sequenceOf(n: number): LaunchSequence {
    let seq = this.sequences.get(n);
    if (seq === undefined) {
      seq = this.stream.sequence(Array.from({ length: n }, () => this.empty));
      this.sequences.set(n, seq);
    }
    return seq;
  }

  eagerSequence(n: number): number {
    const seq = this.sequenceOf(n);
    const s = this.stream;
    s.synchronize();
    const t0 = now();
    seq.launch();
    const t1 = now();
    s.synchronize();
    return Number(t1 - t0);
  }

  destroy(graph: GraphExec): void {
    graph.dispose();
  }

  readyGraph(n: number): GraphExec {
    const graph = this.capture(n, false).graph;
    graph.launch(this.stream);
    this.stream.synchronize();
    return graph;
  }

  launchOnce(graph: GraphExec): { launchNs: number; timerNs: number } {
    const s = this.stream;
    s.synchronize();
    const ta = now(); // the first clock read after the wait: the harness's cost, not the call's
    const t0 = now();
    graph.launch(s);
    const t1 = now();
    s.synchronize();
    return { launchNs: Number(t1 - t0), timerNs: Number(t0 - ta) };
  }

  replay(graph: GraphExec, launches: number): number {
    const s = this.stream;
    s.synchronize();
    const t0 = now();
    for (let i = 0; i < launches; i++) graph.launch(s);
    s.synchronize();
    return Number(now() - t0);
  }
}

const ptx = process.argv[2];
if (ptx === undefined) {
  process.stderr.write('usage: node cudagraph-worker.js <kernels.ptx>\n');
  process.exit(2);
}
process.exit(await serve('cudagraph', () => new CudagraphImpl(ptx)));
