/**
 * The cudagraph worker of `npm run bench:gpu`: the same rows as the C, CuPy and PyTorch workers,
 * through cudagraph's public API (the package root, as a user imports it). Usage:
 *   node dist/bench/gpu/cudagraph-worker.js <kernels.ptx>
 * Protocol and row logic: bench/gpu/worker-loop.ts. The hot paths use `PreparedLaunch` (kernel
 * arguments packed once) and `GraphExec.launch`; nothing is allocated inside a timed loop. The
 * cudagraph-only `-seq` rows submit the same N launches as one `LaunchSequence`, built untimed.
 */
import { readFileSync } from 'node:fs';
import { Device, DeviceBuffer, Graph, Module, StreamGraphCapture, arg } from '../../src/index.js';
import type { CudaNode, GraphExec, Kernel, KernelArg, KernelNodeEntry, LaunchConfig, LaunchSequence, PreparedLaunch, Stream } from '../../src/index.js';
import { nativeStatus } from '../../src/driver/hot.js';
import { packageVersion, repoRoot } from './paths.js';
import { UPDATE_CALLS } from './protocol.js';
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
  /** The `add2` kernel and its launch, for the graphs built node by node. */
  private readonly add2Kernel: Kernel;
  private readonly add2Config: LaunchConfig;
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
    this.add2Kernel = module.function('add2');
    this.add2Config = { grid: 1, block: ELEMENTS, args: [this.buffer, arg.i32(ELEMENTS)] };
    this.add2 = this.add2Kernel.prepare(this.add2Config);
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

  /** A chain of n `add2` kernel nodes, each added after the one before; ns of the adding loop only. */
  build(n: number): number {
    const g = Graph.create(this.device);
    const k = this.add2Kernel;
    const c = this.add2Config;
    let prev: CudaNode = g.addKernelNode(k, c);
    const t0 = now();
    for (let i = 1; i < n; i++) prev = g.addKernelNode(k, c, [prev]);
    const t1 = now();
    g.dispose();
    return Number(t1 - t0);
  }

  /**
   * The same chain added by one `addKernelNodes` call. The entries are made before the span, as C's
   * loop fills its parameter struct before its span: the span is the library's call.
   */
  buildBatch(n: number): number {
    const g = Graph.create(this.device);
    const kernel = this.add2Kernel;
    const config = this.add2Config;
    const first = g.addKernelNode(kernel, config);
    const entries: KernelNodeEntry[] = new Array(n - 1);
    entries[0] = { kernel, config, after: [first] };
    for (let i = 1; i < n - 1; i++) entries[i] = { kernel, config, after: [i - 1] };
    const t0 = now();
    g.addKernelNodes(entries);
    const t1 = now();
    g.dispose();
    return Number(t1 - t0);
  }

  updateRow(n: number, reps: number): { update: number[]; toggle: number[]; reinstantiate: number[] } {
    const g = Graph.create(this.device);
    const k = this.add2Kernel;
    const nodes: CudaNode[] = [g.addKernelNode(k, this.add2Config)];
    for (let i = 1; i < n; i++) nodes.push(g.addKernelNode(k, this.add2Config, [nodes[i - 1]!]));
    const exec = g.instantiate(undefined, this.stream);
    const mid = nodes[n >> 1]!;
    // Two argument lists, alternated so every update changes a value.
    const args: ReadonlyArray<readonly KernelArg[]> = [
      [this.buffer, arg.i32(ELEMENTS - 1)],
      [this.buffer, arg.i32(ELEMENTS)],
    ];
    const out = { update: [] as number[], toggle: [] as number[], reinstantiate: [] as number[] };
    try {
      for (let i = -1; i < reps; i++) {
        const t0 = now();
        for (let j = 0; j < UPDATE_CALLS; j++) exec.setKernelArgs(mid, args[j & 1]!);
        const t1 = now();
        for (let j = 0; j < UPDATE_CALLS; j++) exec.setNodeEnabled(mid, (j & 1) !== 0);
        const t2 = now();
        const again = g.instantiate(undefined, this.stream);
        const t3 = now();
        again.dispose();
        if (i < 0) continue;
        out.update.push(Number(t1 - t0) / UPDATE_CALLS);
        out.toggle.push(Number(t2 - t1) / UPDATE_CALLS);
        out.reinstantiate.push(Number(t3 - t2));
      }
    } finally {
      exec.dispose();
      g.dispose();
    }
    return out;
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

  roundTrip(graph: GraphExec): number {
    const s = this.stream;
    s.synchronize();
    now();
    const t0 = now();
    graph.launch(s);
    s.synchronize();
    return Number(now() - t0);
  }

  async roundTripAwait(graph: GraphExec): Promise<number> {
    const s = this.stream;
    s.synchronize();
    now();
    const t0 = now();
    graph.launch(s);
    await s.synchronizeAsync();
    return Number(now() - t0);
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
