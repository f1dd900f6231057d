/** The pipeline the lowering and update GPU tests share, and a read-back check through a lowering's node mapping. */
import {
  Device,
  DeviceBuffer,
  GraphBuilder,
  Module,
  PinnedHostBuffer,
  lowerGraph,
  type ComputeGraph,
  type LoweredGraph,
  type NodeId,
} from '../../src/index.js';
import { signature } from '../conformance/compare.js';

// Explicit rounding intrinsics: no multiply-add contraction, so JS can compute the same floats.
export const PIPELINE_SOURCE = `
extern "C" __global__ void scale(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __fmul_rn(a, x[i]);
}
extern "C" __global__ void offset(const float *x, float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __fadd_rn(x[i], b);
}
extern "C" __global__ void combine(const float *p, const float *q, float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) z[i] = __fadd_rn(__fmul_rn(p[i], q[i]), 0.5f);
}
extern "C" __global__ void bump(unsigned int *c) { if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(c, 1u); }
`;

/** Elements per buffer. */
export const N = 4096;
/** Blocks of 256 threads covering N. */
export const GRID = Math.ceil(N / 256);

/** The pipeline as a builder program; `a` and `b` are the kernels' scalars. */
export function pipeline(a: number, b: number): ReturnType<GraphBuilder['build']> {
  const g = new GraphBuilder();
  const hin = g.hostBuffer('in', 4 * N);
  const hout = g.hostBuffer('out', 4 * N);
  const x = g.buffer('x', 4 * N);
  const y1 = g.buffer('y1', 4 * N);
  const y2 = g.buffer('y2', 4 * N);
  const z = g.buffer('z', 4 * N);
  g.memcpy({ src: hin, dst: x, name: 'upload' });
  g.kernel('scale', { grid: GRID, block: 256, args: [x, y1, g.f32(a), g.i32(N)], reads: [x], writes: [y1] });
  g.kernel('offset', { grid: GRID, block: 256, args: [x, y2, g.f32(b), g.i32(N)], reads: [x], writes: [y2] });
  g.kernel('combine', { grid: GRID, block: 256, args: [y1, y2, z, g.i32(N)], reads: [y1, y2], writes: [z] });
  g.memcpy({ src: z, dst: hout, name: 'download' });
  return g.build();
}

/** Differences between a read-back graph and its source, through the lowering's node mapping. */
export function sameAsSource(source: ComputeGraph, readBack: ComputeGraph, modelIds: readonly NodeId[]): string[] {
  const out: string[] = [];
  const pos = new Map(modelIds.map((m, i) => [m, i as NodeId]));
  const sig = (n: ReturnType<ComputeGraph['node']>): string => (n.kind === 'empty' ? 'empty' : signature(n));
  for (const n of source.nodes()) {
    const r = readBack.node(pos.get(n.id)!);
    if (sig(n) !== sig(r)) out.push(`node ${n.id}: ${sig(n)} became ${sig(r)}`);
  }
  for (const a of source.nodes()) {
    for (const b of source.nodes()) {
      if (a.id !== b.id && source.isReachable(a.id, b.id) !== readBack.isReachable(pos.get(a.id)!, pos.get(b.id)!)) {
        out.push(`${a.id} → ${b.id}: reachability differs`);
      }
    }
  }
  return out;
}

/** The module and buffers the pipeline runs on; `lower(a, b)` lowers the pipeline with those scalars. */
export class PipelineRig {
  readonly module: Module;
  readonly pin: PinnedHostBuffer;
  readonly pout: PinnedHostBuffer;
  readonly x: DeviceBuffer;
  readonly y1: DeviceBuffer;
  readonly y2: DeviceBuffer;
  readonly z: DeviceBuffer;

  constructor(readonly device: Device) {
    this.module = Module.compile(device, PIPELINE_SOURCE);
    this.pin = PinnedHostBuffer.alloc(device, 4 * N);
    this.pout = PinnedHostBuffer.alloc(device, 4 * N);
    this.x = DeviceBuffer.alloc(device, 4 * N);
    this.y1 = DeviceBuffer.alloc(device, 4 * N);
    this.y2 = DeviceBuffer.alloc(device, 4 * N);
    this.z = DeviceBuffer.alloc(device, 4 * N);
  }

  lower(a: number, b: number): LoweredGraph {
    const built = pipeline(a, b);
    const { x, y1, y2, z } = this;
    return lowerGraph(built.graph, { modules: this.module, nodes: built.bindings, buffers: { x, y1, y2, z }, hostBuffers: { in: this.pin, out: this.pout } });
  }

  [Symbol.dispose](): void {
    for (const r of [this.module, this.pin, this.pout, this.x, this.y1, this.y2, this.z]) r.dispose();
  }
}
