/**
 * `cudagraph demo`: the main job on a small realistic workload (a tiny MLP forward pass over three
 * streams with fork/join, 34 kernels). With a GPU: compile it with NVRTC, run it eagerly, capture
 * it into a CUDA graph, replay it, check the results and time both ways. Without one: record the
 * same program in the CPU model. Either way, report the graph and draw it. The first line says
 * which mode ran and why.
 */
import { join, resolve } from 'node:path';
import type { ComputeGraph } from '../index.js';
import { checksPassed, runGpuDemo, type GpuDemoResult } from './demo-gpu.js';
import { writeOutputFile } from './output-file.js';
import { cudaVersionText, describeDevice, probeGpu } from './gpu-probe.js';
import type { Output } from './output.js';
import { dotToSvg, toDot } from './picture.js';
import { formatSummary, summarize } from './summary.js';
import { terminalText } from './terminal-text.js';
import { UsageError } from './usage-error.js';
import { MLP, MLP_PROGRAM, nodeSteps } from './workload.js';
import { referenceForward, workloadData } from './workload-data.js';
import { modelGraph } from './workload-model.js';

/** Which path `demo` takes: `auto` uses the GPU when one is usable. */
export type DemoMode = 'auto' | 'gpu' | 'cpu';

/** Options of `cudagraph demo`. */
export interface DemoOptions {
  /** Folder for demo.json, demo.dot and demo.svg (created if missing). */
  readonly out: string;
  readonly json: boolean;
  readonly mode: DemoMode;
  /** GPU: timing rounds and iterations per round. */
  readonly rounds: number;
  readonly iterations: number;
}

const STEPS = nodeSteps(MLP_PROGRAM);
const KERNELS = STEPS.filter((s) => s.op === 'kernel').length;
const COPIES = STEPS.length - KERNELS;

/** The workload in one line. */
export const WORKLOAD_LINE = `MLP forward + loss (batch ${MLP.batch}, ${MLP.widths.join(' → ')}): ${KERNELS} kernels and ${COPIES} copies on 3 streams with fork/join`;

/**
 * Writes the graph as `<base>.json` (a graph file `render` and `inspect` read), `<base>.dot` and
 * `<base>.svg` in `dir`; returns their paths. @throws UsageError when they cannot be written.
 */
export async function writeGraphFiles(graph: ComputeGraph, dir: string, base: string, title: string): Promise<{ json: string; dot: string; svg: string }> {
  const files = { json: join(dir, `${base}.json`), dot: join(dir, `${base}.dot`), svg: join(dir, `${base}.svg`) };
  const dot = toDot(graph, { title });
  await writeOutputFile(files.json, JSON.stringify(graph, null, 1) + '\n');
  await writeOutputFile(files.dot, dot);
  await writeOutputFile(files.svg, await dotToSvg(dot));
  return files;
}

function us(x: number): string {
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}

/**
 * Runs `cudagraph demo` and returns the exit status: 1 when a GPU check failed (the report says
 * which), else 0.
 * @throws UsageError when `--mode gpu` is asked for and no GPU is usable, or the files cannot be
 *   written; NvrtcError / CudaError when the GPU run fails.
 */
export async function demo(options: DemoOptions, io: Output): Promise<number> {
  const dir = resolve(options.out);
  const probe = options.mode === 'cpu' ? null : probeGpu(true);
  if (probe !== null && !probe.ok && options.mode === 'gpu') throw new UsageError(`demo --mode gpu: ${probe.reason} (\`cudagraph doctor\` says what to check)`);
  if (probe === null || !probe.ok) {
    const reason = probe === null ? '--mode cpu was given' : probe.reason;
    return cpuDemo(options, dir, reason, io);
  }

  const device = probe.device;
  const gpu = `${describeDevice(device)}, driver for CUDA ${cudaVersionText(probe.driverVersion)}`;
  const r = runGpuDemo(device, { rounds: options.rounds, iterations: options.iterations });
  const graph = r.captured;
  const summary = summarize(graph);
  const title = `MLP forward captured on ${device.name} and read back: ${graph.nodeCount()} nodes on ${graph.streams().length} streams; critical path thick and red`;
  const files = await writeGraphFiles(graph, dir, 'demo', title);
  const ok = checksPassed(r);
  if (options.json) {
    io.out(JSON.stringify({ mode: 'gpu', reason: `found ${gpu}`, device: device.name, workload: workloadJson(), ...resultJson(r), ok, ...summary, files }, null, 2) + '\n');
  } else {
    const c = r.check;
    const dag = r.sameAsModel
      ? 'the same nodes and edges as the CPU model records for this program'
      : r.matchesProgram
        ? 'nodes in program order, but its edges differ from the CPU model'
        : 'nodes not in program order: drawn without stream lanes';
    io.out(
      [
        `cudagraph demo: GPU mode: found ${gpu}.`,
        `workload:       ${WORKLOAD_LINE}; compiled with NVRTC in ${r.compileMs.toFixed(0)} ms`,
        `eager:          ${us(r.eager.us)} µs per iteration (${KERNELS} launches + ${COPIES} copies + event fork/joins; rounds ${us(r.eager.lo)}–${us(r.eager.hi)})`,
        `graph:          ${us(r.graph.us)} µs per iteration (one cuGraphLaunch; rounds ${us(r.graph.lo)}–${us(r.graph.hi)})`,
        `speedup:        ${r.speedup.toFixed(2)}× (medians of ${r.rounds} rounds × ${r.iterations} iterations, eager and graph alternating)`,
        `captured graph: ${r.nodeCount} nodes (cuGraphGetNodes), ${graph.edgeCount()} edges read back: ${dag}; capture + instantiate ${r.captureMs.toFixed(2)} ms`,
        `results:        graph ${c.graphEqualsEager ? '=' : '≠'} eager, bit for bit, after ${c.replays} replays; vs the float64 CPU reference: max relative error ${c.probsRelativeError.toExponential(1)} (probabilities), ` +
          `loss ${c.loss.toFixed(4)} (reference ${c.referenceLoss.toFixed(4)}), accuracy ${(c.accuracy * 100).toFixed(1)} % (random weights; reference ${(c.referenceAccuracy * 100).toFixed(1)} %), ` +
          `predictions agree on ${c.predictionsAgreeing}/${c.rows} rows`,
        ...formatSummary(summary),
        `picture:        ${terminalText(files.svg)}  (also ${terminalText(files.dot)}, and ${terminalText(files.json)}: \`cudagraph render ${terminalText(files.json)} -o demo.png\`)`,
      ].join('\n') + '\n',
    );
  }
  if (!ok) io.err('cudagraph: demo: the GPU results failed a check (see "results" above)\n');
  return ok ? 0 : 1;
}

function workloadJson(): object {
  return { name: 'mlp-forward', batch: MLP.batch, widths: MLP.widths, kernels: KERNELS, copies: COPIES, streams: 3 };
}

function resultJson(r: GpuDemoResult): object {
  const { captured: _captured, ...rest } = r;
  return rest;
}

async function cpuDemo(options: DemoOptions, dir: string, reason: string, io: Output): Promise<number> {
  const graph = modelGraph(MLP_PROGRAM);
  const summary = summarize(graph);
  const ref = referenceForward(workloadData(MLP_PROGRAM));
  const title = `MLP forward recorded in the CPU model: ${graph.nodeCount()} nodes on ${graph.streams().length} streams; critical path thick and red`;
  const files = await writeGraphFiles(graph, dir, 'demo', title);
  const reference = { loss: ref.loss, accuracy: ref.accuracy };
  if (options.json) {
    io.out(JSON.stringify({ mode: 'cpu-model', reason, workload: workloadJson(), reference, ...summary, files }, null, 2) + '\n');
    return 0;
  }
  const names = graph.nodes().map((n) => n.name);
  const levels = graph.levels().map((ids, l) => `  ${String(l).padStart(2)}  ${ids.map((id) => names[id]).join(' | ')}`);
  io.out(
    [
      `cudagraph demo: CPU model mode: ${terminalText(reason)}; the same workload was recorded with StreamCapture instead of captured on a GPU.`,
      `workload:       ${WORKLOAD_LINE}`,
      `the maths:      float64 on the CPU: loss ${ref.loss.toFixed(4)}, accuracy ${(ref.accuracy * 100).toFixed(1)} % (random weights)`,
      ...formatSummary(summary),
      'levels (what can run at once):',
      ...levels,
      `picture:        ${terminalText(files.svg)}  (also ${terminalText(files.dot)}, and ${terminalText(files.json)}: \`cudagraph render ${terminalText(files.json)} -o demo.png\`)`,
    ].join('\n') + '\n',
  );
  return 0;
}
