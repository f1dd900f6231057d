/**
 * The GPU half of `cudagraph demo`: compile the workload with NVRTC, run it eagerly, capture it with
 * `StreamGraphCapture` (the side streams fork and join through events inside the capture), replay
 * it, check the graph's results against the eager run and against the float64 reference, time
 * both, and read the captured graph back from the driver.
 */
import { median } from './stats.js';
import type { ComputeGraph, Device } from '../index.js';
import { MLP_PROGRAM } from './workload.js';
import { referenceForward, relativeError, workloadData } from './workload-data.js';
import { GpuWorkload, sameBits, type GpuOutputs } from './workload-gpu.js';
import { graphFromReadBack, modelGraph, sameDag } from './workload-model.js';

/** Per-iteration time over the rounds. */
export interface Timing {
  /** Median over the rounds, µs per iteration. */
  readonly us: number;
  /** Fastest and slowest round, µs per iteration. */
  readonly lo: number;
  readonly hi: number;
}

/** Everything the GPU demo measured and checked. */
export interface GpuDemoResult {
  readonly compileMs: number;
  /** End capture + instantiate, milliseconds (the capture itself included). */
  readonly captureMs: number;
  readonly eager: Timing;
  readonly graph: Timing;
  /** eager / graph (medians). */
  readonly speedup: number;
  readonly rounds: number;
  readonly iterations: number;
  /** `GraphExec.nodeCount` (from `cuGraphGetNodes`). */
  readonly nodeCount: number;
  /** The captured graph, read back from the driver. */
  readonly captured: ComputeGraph;
  /** Node i of the read-back is step i of the program (names and streams taken from it). */
  readonly matchesProgram: boolean;
  /** The read-back has exactly the nodes and edges the CPU model records for the same program. */
  readonly sameAsModel: boolean;
  readonly check: {
    /** The graph's outputs are the eager run's, bit for bit: after the first replay and after all of them. */
    readonly graphEqualsEager: boolean;
    /** Graph replays in total. */
    readonly replays: number;
    /** Largest error of the probabilities relative to the float64 reference. */
    readonly probsRelativeError: number;
    readonly loss: number;
    readonly referenceLoss: number;
    readonly accuracy: number;
    readonly referenceAccuracy: number;
    /** Rows whose predicted class is the reference's. */
    readonly predictionsAgreeing: number;
    readonly rows: number;
  };
}

function timing(samples: number[]): Timing {
  return { us: median(samples), lo: Math.min(...samples), hi: Math.max(...samples) };
}

function elapsedUs(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e3;
}

/**
 * Runs the demo workload on `device`: `rounds` rounds of `iterations` eager passes and
 * `iterations` graph replays, the order alternating by round (the machine's state drifts: see
 * the reference measurements on the H200). `progress` is told each finished round.
 * @throws NvrtcError when the kernels do not compile; CudaError from the driver.
 */
export function runGpuDemo(device: Device, options: { rounds: number; iterations: number; progress?: (round: number) => void }): GpuDemoResult {
  const { rounds, iterations } = options;
  const data = workloadData(MLP_PROGRAM);
  const ref = referenceForward(data);
  const w = GpuWorkload.create(device, MLP_PROGRAM, data);
  try {
    const pass = (run: () => void): GpuOutputs => {
      w.poisonOutputs();
      run();
      return w.outputs();
    };
    const eagerOut = pass(() => w.runEager(1));
    const t0 = process.hrtime.bigint();
    const exec = w.capture();
    const captureMs = elapsedUs(t0) / 1e3;
    try {
      const firstReplay = pass(() => w.runGraph(exec, 1));
      const readBack = exec.graph.readBack();
      const converted = graphFromReadBack(readBack, MLP_PROGRAM);

      const warmup = 10;
      w.runEager(warmup);
      w.runGraph(exec, warmup);
      const eager: number[] = [];
      const graph: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const steps = [
          () => {
            const t = process.hrtime.bigint();
            w.runEager(iterations);
            eager.push(elapsedUs(t) / iterations);
          },
          () => {
            const t = process.hrtime.bigint();
            w.runGraph(exec, iterations);
            graph.push(elapsedUs(t) / iterations);
          },
        ];
        if (r % 2 === 1) steps.reverse();
        for (const s of steps) s();
        options.progress?.(r + 1);
      }
      const lastReplay = pass(() => w.runGraph(exec, 1));
      const replays = 1 + warmup + rounds * iterations + 1;

      const rows = ref.pred.length;
      let agreeing = 0;
      for (let i = 0; i < rows; i++) if (lastReplay.pred[i] === ref.pred[i]) agreeing++;
      const e = timing(eager);
      const g = timing(graph);
      return {
        compileMs: w.compileMs,
        captureMs,
        eager: e,
        graph: g,
        speedup: e.us / g.us,
        rounds,
        iterations,
        nodeCount: exec.nodeCount,
        captured: converted.graph,
        matchesProgram: converted.matchesProgram,
        sameAsModel: sameDag(converted.graph, modelGraph(MLP_PROGRAM)),
        check: {
          graphEqualsEager: sameBits(firstReplay, eagerOut) && sameBits(lastReplay, eagerOut),
          replays,
          probsRelativeError: relativeError(lastReplay.probs, ref.probs),
          loss: lastReplay.stats[0]!,
          referenceLoss: ref.loss,
          accuracy: lastReplay.stats[1]!,
          referenceAccuracy: ref.accuracy,
          predictionsAgreeing: agreeing,
          rows,
        },
      };
    } finally {
      exec.dispose();
    }
  } finally {
    w.dispose();
  }
}

/** The largest relative error of the probabilities the demo accepts (float32 against float64). */
export const MAX_RELATIVE_ERROR = 1e-4;

/** True when every check of `r` passed. */
export function checksPassed(r: GpuDemoResult): boolean {
  const c = r.check;
  return (
    c.graphEqualsEager &&
    c.probsRelativeError <= MAX_RELATIVE_ERROR &&
    Math.abs(c.loss - c.referenceLoss) <= MAX_RELATIVE_ERROR * Math.max(1, c.referenceLoss) &&
    // A near-tie between two classes may round the other way in float32; more than one row is a bug.
    c.predictionsAgreeing >= c.rows - 1
  );
}
