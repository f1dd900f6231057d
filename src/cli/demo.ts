/**
 * `cudagraph demo`: record the demo workload (a tiny MLP forward pass over three streams) and
 * report its graph. This build has no GPU path yet, so it always runs on the CPU model and says so
 * on its first line.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StreamCapture } from '../model/stream-capture.js';
import { DEMO_STREAMS, MLP, recordMlpForward } from './workload.js';
import { formatSummary, summarize } from './summary.js';
import { UsageError } from './usage-error.js';

/** Options of `cudagraph demo`. */
export interface DemoOptions {
  /** Folder for demo.dot and demo.json (created if missing). */
  out: string;
  /** Print the summary as JSON instead of text. */
  json: boolean;
}

/** Where the CLI writes: stdout and stderr, or a test's buffers. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** Why the demo runs on the CPU model (its first line says so). */
export const CPU_MODE_REASON = 'this build has no GPU support yet (the driver layer comes with a later release)';

/**
 * Runs `cudagraph demo`: records the workload, writes demo.dot and demo.json under `options.out`,
 * prints the summary. @throws UsageError when the files cannot be written.
 */
export function demo(options: DemoOptions, io: Output): void {
  const cap = new StreamCapture();
  recordMlpForward(cap);
  const graph = cap.endCapture(DEMO_STREAMS.main, { requireJoined: true });
  const summary = summarize(graph);

  const dir = resolve(options.out);
  const dotPath = join(dir, 'demo.dot');
  const jsonPath = join(dir, 'demo.json');
  try {
    mkdirSync(dir, { recursive: true });
    const title = `cudagraph demo: MLP forward (${graph.nodeCount()} nodes, ${graph.streams().length} streams), critical path in red`;
    writeFileSync(dotPath, graph.toDot({ title, highlight: summary.criticalPath.nodes.map((n) => n.id) }));
    writeFileSync(jsonPath, JSON.stringify(graph, null, 1) + '\n');
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new UsageError(`cannot write the demo's files to ${options.out} (${reason})`, { cause: e });
  }

  const mode = `ran on the CPU model: ${CPU_MODE_REASON}, so the workload was recorded with StreamCapture instead of captured on a GPU`;
  if (options.json) {
    io.out(JSON.stringify({ mode: 'cpu-model', reason: CPU_MODE_REASON, workload: { name: 'mlp-forward', ...MLP }, ...summary, files: { dot: dotPath, json: jsonPath } }, null, 2) + '\n');
    return;
  }
  const { batch, inputs, hidden, outputs } = MLP;
  io.out(
    [
      `cudagraph demo: ${mode}.`,
      `workload:       2-layer MLP forward + loss (batch ${batch}, ${inputs} → ${hidden} → ${outputs}) on 3 streams with fork/join`,
      ...formatSummary(summary),
      `DOT written to: ${dotPath}  (draw it: dot -Tsvg ${dotPath} -o demo.svg)`,
      `JSON written to: ${jsonPath}`,
    ].join('\n') + '\n',
  );
}
