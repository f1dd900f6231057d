/**
 * `npm run bench:nccl`: the multi-GPU benchmark, for a machine with two or more GPUs.
 *
 * 1. The data-parallel step (each GPU: x += 1; g = allReduce_sum(x); w = 0.5·g), per-step wall
 *    time eager (three launches and one NCCL group per step) against the step captured on every
 *    GPU and replayed with one `cuGraphLaunch` per GPU (`captureMultiDevice`), at several sizes;
 *    eager and graphed rounds interleaved, median and min..max of the round medians.
 * 2. All-reduce alone: algorithm bandwidth (bytes / time) and bus bandwidth (algbw · 2(n−1)/n,
 *    nccl-tests' definition), against the NVLink figure `nvidia-smi nvlink -s` reports for GPU 0
 *    (the sum of its links' speeds, per direction).
 *
 * Refuses to run (exit 2, with the reason) with fewer than two GPUs or without NCCL. NCCL's NVLink
 * multicast stays off (NCCL_NVLS_ENABLE=0, set by the library unless already set): the device
 * machines' rules forbid it. Options: --gpus N (default: all), --iters N (default 200),
 * --rounds N (default 5), --out FILE.json.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  Device,
  DeviceBuffer,
  NcclComm,
  captureMultiDevice,
  loadNccl,
  ncclAvailable,
  driverAvailable,
  type NcclClique,
  type Stream,
} from '../src/index.js';
import { StepKernels } from '../fixtures/nccl-step.js';
import { median } from './gpu/stats.js';

/** NVLink links of one GPU as `nvidia-smi nvlink -s` prints them. */
export interface NvlinkStatus {
  /** Speed of each active link, GB/s (per direction). */
  readonly links: readonly number[];
  /** Their sum: the GPU's NVLink bandwidth per direction, GB/s. */
  readonly totalGBs: number;
}

/**
 * Parses `nvidia-smi nvlink -s` output (lines `Link 3: 26.562 GB/s`, inactive links as
 * `Link 4: <inactive>`) for the first GPU listed. Null when no active link is listed.
 */
export function parseNvlinkStatus(text: string): NvlinkStatus | null {
  const links: number[] = [];
  let gpus = 0;
  for (const line of text.split('\n')) {
    if (/^GPU \d+:/.test(line.trim())) {
      gpus++;
      if (gpus > 1) break;
      continue;
    }
    const m = /^\s*Link \d+:\s*([\d.]+)\s*GB\/s/.exec(line);
    if (m) links.push(Number(m[1]));
  }
  if (links.length === 0) return null;
  return { links, totalGBs: Math.round(links.reduce((a, b) => a + b, 0) * 1000) / 1000 };
}

/** nccl-tests' bus bandwidth of an all-reduce over `ranks` ranks: algbw · 2(ranks−1)/ranks. */
export function allReduceBusBandwidth(algbwGBs: number, ranks: number): number {
  return (algbwGBs * 2 * (ranks - 1)) / ranks;
}

interface Options {
  gpus: number;
  iters: number;
  rounds: number;
  out: string | null;
}

function parseArgs(argv: readonly string[], available: number): Options {
  const o: Options = { gpus: available, iters: 200, rounds: 5, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    const int = (): number => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`bench:nccl: ${a} needs a positive integer, got ${v}`);
      i++;
      return n;
    };
    if (a === '--gpus') o.gpus = Math.min(int(), available);
    else if (a === '--iters') o.iters = int();
    else if (a === '--rounds') o.rounds = int();
    else if (a === '--out') {
      if (!v) throw new Error('bench:nccl: --out needs a file name');
      o.out = v;
      i++;
    } else throw new Error(`bench:nccl: unknown option ${a} (known: --gpus N, --iters N, --rounds N, --out FILE)`);
  }
  return o;
}

function refuse(reason: string): never {
  process.stderr.write(`bench:nccl: not run: ${reason}\n`);
  process.exit(2);
}

const nowUs = (): number => Number(process.hrtime.bigint()) / 1000;

function main(): void {
  const d = driverAvailable();
  if (!d.ok) refuse(`no CUDA driver (${d.error.message.split('\n')[0]})`);
  const count = Device.count();
  if (count < 2) refuse(`needs at least 2 GPUs for a multi-GPU step and a meaningful all-reduce bandwidth; this machine has ${count}`);
  const n = ncclAvailable();
  if (!n.ok) refuse(n.error.message);
  const o = parseArgs(process.argv.slice(2), count);
  if (o.gpus < 2) refuse('--gpus must be at least 2');
  const info = loadNccl();
  let nvlinkText = '';
  try {
    nvlinkText = execFileSync('nvidia-smi', ['nvlink', '-s', '-i', '0'], { encoding: 'utf8', timeout: 20_000 });
  } catch (e) {
    nvlinkText = '';
    process.stderr.write(`bench:nccl: nvidia-smi nvlink -s failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)})\n`);
  }
  const nvlink = parseNvlinkStatus(nvlinkText);
  const devices = Array.from({ length: o.gpus }, (_, i) => Device.get(i));
  process.stderr.write(`bench:nccl: ${devices.map(String).join(', ')}; NCCL ${info.version} (${info.path}); NCCL_NVLS_ENABLE=${process.env['NCCL_NVLS_ENABLE']}\n`);
  using clique = { c: NcclComm.initAll(devices), [Symbol.dispose]() { this.c.dispose(); } };
  const streams = devices.map((dv) => dv.createStream());
  const kernels = devices.map((dv) => new StepKernels(dv));
  const stepRows: Array<Record<string, number>> = [];
  const bwRows: Array<Record<string, number>> = [];
  try {
    for (const elems of [1 << 10, 1 << 14, 1 << 18, 1 << 22]) stepRows.push(benchStep(clique.c, streams, kernels, elems, o));
    for (const bytes of [1 << 20, 1 << 24, 1 << 26, 1 << 28]) bwRows.push(benchAllReduce(clique.c, streams, bytes, o));
  } finally {
    for (const k of kernels) k.dispose();
    for (const s of streams) s.dispose();
  }
  const lines = [
    `# NCCL data-parallel step and all-reduce, ${o.gpus} × ${devices[0]!.name}, NCCL ${info.version}`,
    '',
    `| elements per GPU | eager µs/step (min..max) | graphed µs/step (min..max) | eager/graphed |`,
    '|---|---|---|---|',
    ...stepRows.map(
      (r) => `| ${r['elements']} | ${r['eagerUs']!.toFixed(1)} (${r['eagerMin']!.toFixed(1)}..${r['eagerMax']!.toFixed(1)}) | ${r['graphUs']!.toFixed(1)} (${r['graphMin']!.toFixed(1)}..${r['graphMax']!.toFixed(1)}) | ${(r['eagerUs']! / r['graphUs']!).toFixed(2)} |`,
    ),
    '',
    `NVLink (nvidia-smi nvlink -s, GPU 0): ${nvlink ? `${nvlink.links.length} links, ${nvlink.totalGBs} GB/s per direction` : 'not reported'}`,
    '',
    '| bytes | µs | algbw GB/s | busbw GB/s | busbw / NVLink |',
    '|---|---|---|---|---|',
    ...bwRows.map(
      (r) =>
        `| ${r['bytes']} | ${r['us']!.toFixed(1)} | ${r['algbw']!.toFixed(1)} | ${r['busbw']!.toFixed(1)} | ${nvlink ? `${((100 * r['busbw']!) / nvlink.totalGBs).toFixed(0)}%` : '—'} |`,
    ),
  ];
  if (o.out) writeFileSync(o.out, JSON.stringify({ gpus: o.gpus, gpu: devices[0]!.name, nccl: info.version, nvlink, steps: stepRows, allReduce: bwRows }, null, 2));
  process.stdout.write(lines.join('\n') + '\n');
}

/** Per-step time of the data-parallel step, eager against graphed, in interleaved rounds. */
function benchStep(clique: NcclClique, streams: Stream[], kernels: StepKernels[], elems: number, o: Options): Record<string, number> {
  const r = clique.size;
  const mk = (): DeviceBuffer[] => clique.comms.map((c) => DeviceBuffer.alloc(c.device, 4 * elems));
  const [x, g, w] = [mk(), mk(), mk()];
  for (let i = 0; i < r; i++) for (const b of [x[i]!, g[i]!, w[i]!]) b.memsetAsync(streams[i]!, 0);
  const step = (st: readonly Stream[]): void => {
    for (let i = 0; i < r; i++) kernels[i]!.add(st[i]!, x[i]!, 1, elems);
    clique.allReduce(st, (k) => ({ send: x[k]!, recv: g[k]!, count: elems, type: 'f32', op: 'sum' }));
    for (let i = 0; i < r; i++) kernels[i]!.scale(st[i]!, g[i]!, w[i]!, 0.5, elems);
  };
  const sync = (): void => streams.forEach((s) => s.synchronize());
  for (let i = 0; i < 5; i++) step(streams);
  sync();
  const graphs = captureMultiDevice(streams, step);
  try {
    for (let i = 0; i < 5; i++) graphs.launch();
    sync();
    const eager: number[] = [];
    const graphed: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      let t = nowUs();
      for (let i = 0; i < o.iters; i++) step(streams);
      sync();
      eager.push((nowUs() - t) / o.iters);
      t = nowUs();
      for (let i = 0; i < o.iters; i++) graphs.launch();
      sync();
      graphed.push((nowUs() - t) / o.iters);
    }
    return {
      elements: elems,
      eagerUs: median(eager),
      eagerMin: Math.min(...eager),
      eagerMax: Math.max(...eager),
      graphUs: median(graphed),
      graphMin: Math.min(...graphed),
      graphMax: Math.max(...graphed),
    };
  } finally {
    graphs.dispose();
    for (const b of [...x, ...g, ...w]) b.dispose();
  }
}

/** All-reduce of `bytes` per GPU (f32, in place): time, algbw and busbw. */
function benchAllReduce(clique: NcclClique, streams: Stream[], bytes: number, o: Options): Record<string, number> {
  const bufs = clique.comms.map((c) => DeviceBuffer.alloc(c.device, bytes));
  try {
    bufs.forEach((b, i) => b.memsetAsync(streams[i]!, 0));
    const run = (): void => clique.allReduce(streams, (k) => ({ send: bufs[k]!, count: bytes / 4, type: 'f32', op: 'sum' }));
    const sync = (): void => streams.forEach((s) => s.synchronize());
    for (let i = 0; i < 5; i++) run();
    sync();
    const iters = Math.max(10, Math.min(o.iters, Math.floor((2 ** 31) / bytes)));
    const per: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const t = nowUs();
      for (let i = 0; i < iters; i++) run();
      sync();
      per.push((nowUs() - t) / iters);
    }
    const us = median(per);
    const algbw = bytes / us / 1000; // bytes/µs = MB/s; /1000 → GB/s
    return { bytes, us, algbw, busbw: allReduceBusBandwidth(algbw, clique.size) };
  } finally {
    for (const b of bufs) b.dispose();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (e) {
    process.stderr.write(`bench:nccl: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  }
}
