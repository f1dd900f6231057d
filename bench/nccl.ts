/**
 * `npm run bench:nccl`: the multi-GPU benchmark, for a machine with two or more GPUs.
 *
 * 1. The data-parallel step (each GPU: x += 1; g = allReduce_sum(x); w = 0.5·g), per-step wall
 *    time eager (three launches and one NCCL group per step) against the step captured on every
 *    GPU and replayed with one `cuGraphLaunch` per GPU (`captureMultiDevice`), at several sizes;
 *    eager and graphed rounds interleaved, median and min..max of the round medians.
 *    From 8 bytes a GPU (where the step is all launch latency) to 16 MiB.
 * 2. The tensor-parallel pair (fixtures/nccl-tensor-parallel.ts: all-gather, two split matrix
 *    products, reduce-scatter), eager against graphed, the same way.
 * 3. All-reduce alone, in place, from 8 B to `--max-bytes` (1 GiB by default) by factors of 2:
 *    algorithm bandwidth (bytes / time) and bus bandwidth (algbw · 2(n−1)/n, nccl-tests'
 *    definition), against the NVLink figure `nvidia-smi nvlink -s` reports for GPU 0 (the sum of
 *    its links' speeds, per direction), and, given `--nccl-tests <all_reduce_perf>`, beside
 *    NVIDIA's nccl-tests run on the same GPUs with the same sizes (its in-place columns).
 *
 * Refuses to run (exit 2, with the reason) with fewer than two GPUs, unless `--gpus 1` asks for
 * one rank (a check that the bench runs: the collectives are copies), or without NCCL. NCCL's NVLink
 * multicast stays off (NCCL_NVLS_ENABLE=0, set by the library unless already set): the device
 * machines' rules forbid it. Options: --gpus N (default: all), --iters N (default 200),
 * --rounds N (default 5), --max-bytes N (default 1073741824), --nccl-tests PATH, --out FILE.json.
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
import { TensorParallelPair, smallIntegers, type PairShape } from '../fixtures/nccl-tensor-parallel.js';
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

/** One size of an nccl-tests run (`all_reduce_perf`): its in-place columns. */
export interface NcclTestsRow {
  readonly bytes: number;
  readonly us: number;
  readonly algbw: number;
  readonly busbw: number;
}

/**
 * Parses the table nccl-tests prints (`all_reduce_perf -b 8 -e 1G -f 2 -g N`): every line not
 * starting with `#` whose first field is a byte count; the last eight fields are the out-of-place
 * and in-place time (µs), algbw, busbw (GB/s) and error count, whether or not the version prints
 * a root column. The in-place figures are kept (the bench's all-reduce is in place).
 */
export function parseNcclTests(text: string): NcclTestsRow[] {
  const rows: NcclTestsRow[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) continue;
    const f = t.split(/\s+/);
    if (f.length < 10 || !/^\d+$/.test(f[0]!)) continue;
    const [us, algbw, busbw] = f.slice(-4, -1).map(Number) as [number, number, number];
    if (![us, algbw, busbw].every(Number.isFinite)) continue;
    rows.push({ bytes: Number(f[0]), us, algbw, busbw });
  }
  return rows;
}

/** nccl-tests' bus bandwidth of an all-reduce over `ranks` ranks: algbw · 2(ranks−1)/ranks. */
export function allReduceBusBandwidth(algbwGBs: number, ranks: number): number {
  return (algbwGBs * 2 * (ranks - 1)) / ranks;
}

interface Options {
  gpus: number;
  iters: number;
  rounds: number;
  maxBytes: number;
  ncclTests: string | null;
  out: string | null;
}

function parseArgs(argv: readonly string[], available: number): Options {
  const o: Options = { gpus: available, iters: 200, rounds: 5, maxBytes: 2 ** 30, ncclTests: null, out: null };
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
    else if (a === '--max-bytes') o.maxBytes = int();
    else if (a === '--out' || a === '--nccl-tests') {
      if (!v) throw new Error(`bench:nccl: ${a} needs a file name`);
      if (a === '--out') o.out = v;
      else o.ncclTests = v;
      i++;
    } else throw new Error(`bench:nccl: unknown option ${a} (known: --gpus N, --iters N, --rounds N, --max-bytes N, --nccl-tests PATH, --out FILE)`);
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
  const n = ncclAvailable();
  if (!n.ok) refuse(n.error.message);
  const o = parseArgs(process.argv.slice(2), count);
  // One rank only when asked for (`--gpus 1`): a check that the bench runs, not a measurement of
  // NCCL (its collectives are copies, and the bus bandwidth is 0 by definition).
  const asked = process.argv.includes('--gpus');
  if (o.gpus < 2 && !(asked && o.gpus === 1)) {
    refuse(`needs at least 2 GPUs for a multi-GPU step and a meaningful all-reduce bandwidth; this machine has ${count} (--gpus 1 runs it on one, as a check)`);
  }
  if (o.gpus === 1) process.stderr.write('bench:nccl: one rank (--gpus 1): the collectives are copies; a check that the bench runs, not a measurement\n');
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
  const pairRows: Array<Record<string, number>> = [];
  const bwRows: Array<Record<string, number>> = [];
  try {
    for (const elems of [2, 256, 1 << 12, 1 << 16, 1 << 20, 1 << 22]) stepRows.push(benchStep(clique.c, streams, kernels, elems, o));
    for (const shape of [
      { tokens: 8 * o.gpus, hidden: 1024, inner: 512 * o.gpus },
      { tokens: 64 * o.gpus, hidden: 1024, inner: 512 * o.gpus },
    ]) pairRows.push(benchPair(clique.c, streams, shape, o));
    for (let bytes = 8; bytes <= o.maxBytes; bytes *= 2) bwRows.push(benchAllReduce(clique.c, streams, bytes, o));
  } finally {
    for (const k of kernels) k.dispose();
    for (const s of streams) s.dispose();
  }
  let ncclTests: NcclTestsRow[] = [];
  if (o.ncclTests !== null) {
    try {
      const text = execFileSync(o.ncclTests, ['-b', '8', '-e', String(o.maxBytes), '-f', '2', '-g', String(o.gpus)], { encoding: 'utf8', timeout: 600_000 });
      ncclTests = parseNcclTests(text);
      process.stderr.write(text);
    } catch (e) {
      process.stderr.write(`bench:nccl: ${o.ncclTests} failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)})\n`);
    }
  }
  const theirs = (bytes: number): NcclTestsRow | undefined => ncclTests.find((r) => r.bytes === bytes);
  const lines = [
    `# NCCL data-parallel step and all-reduce, ${o.gpus} × ${devices[0]!.name}, NCCL ${info.version}`,
    '',
    `| elements per GPU | eager µs/step (min..max) | graphed µs/step (min..max) | eager/graphed |`,
    '|---|---|---|---|',
    ...stepRows.map(
      (r) => `| ${r['elements']} | ${r['eagerUs']!.toFixed(1)} (${r['eagerMin']!.toFixed(1)}..${r['eagerMax']!.toFixed(1)}) | ${r['graphUs']!.toFixed(1)} (${r['graphMin']!.toFixed(1)}..${r['graphMax']!.toFixed(1)}) | ${(r['eagerUs']! / r['graphUs']!).toFixed(2)} |`,
    ),
    '',
    `| tensor-parallel pair (tokens × hidden × inner) | eager µs/step (min..max) | graphed µs/step (min..max) | eager/graphed |`,
    '|---|---|---|---|',
    ...pairRows.map(
      (r) => `| ${r['tokens']} × ${r['hidden']} × ${r['inner']} | ${r['eagerUs']!.toFixed(1)} (${r['eagerMin']!.toFixed(1)}..${r['eagerMax']!.toFixed(1)}) | ${r['graphUs']!.toFixed(1)} (${r['graphMin']!.toFixed(1)}..${r['graphMax']!.toFixed(1)}) | ${(r['eagerUs']! / r['graphUs']!).toFixed(2)} |`,
    ),
    '',
    `NVLink (nvidia-smi nvlink -s, GPU 0): ${nvlink ? `${nvlink.links.length} links, ${nvlink.totalGBs} GB/s per direction` : 'not reported'}`,
    '',
    '| bytes | µs | algbw GB/s | busbw GB/s | busbw / NVLink | nccl-tests busbw (in place) | cudagraph / nccl-tests |',
    '|---|---|---|---|---|---|---|',
    ...bwRows.map((r) => {
      const t = theirs(r['bytes']!);
      return `| ${r['bytes']} | ${r['us']!.toFixed(1)} | ${r['algbw']!.toFixed(2)} | ${r['busbw']!.toFixed(2)} | ${nvlink ? `${((100 * r['busbw']!) / nvlink.totalGBs).toFixed(0)}%` : '—'} | ${t ? t.busbw.toFixed(2) : '—'} | ${t && t.busbw > 0 ? (r['busbw']! / t.busbw).toFixed(2) : '—'} |`;
    }),
  ];
  if (o.out) writeFileSync(o.out, JSON.stringify({ gpus: o.gpus, gpu: devices[0]!.name, nccl: info.version, nvlink, steps: stepRows, tensorParallel: pairRows, allReduce: bwRows, ncclTests }, null, 2));
  process.stdout.write(lines.join('\n') + '\n');
}

/**
 * Per-step time of `step` enqueued eagerly against its graphs (captured here) replayed, in
 * interleaved rounds after five of each: median and min..max of the round means, µs.
 */
function eagerVsGraphed(streams: Stream[], step: (st: readonly Stream[]) => void, o: Options): Record<string, number> {
  const sync = (): void => streams.forEach((s) => s.synchronize());
  for (let i = 0; i < 5; i++) step(streams);
  sync();
  using graphs = captureMultiDevice(streams, step);
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
    eagerUs: median(eager),
    eagerMin: Math.min(...eager),
    eagerMax: Math.max(...eager),
    graphUs: median(graphed),
    graphMin: Math.min(...graphed),
    graphMax: Math.max(...graphed),
  };
}

/** The data-parallel step (x += 1, all-reduce, halve) of `elems` floats per GPU, eager against graphed. */
function benchStep(clique: NcclClique, streams: Stream[], kernels: StepKernels[], elems: number, o: Options): Record<string, number> {
  const r = clique.size;
  const mk = (): DeviceBuffer[] => clique.comms.map((c) => DeviceBuffer.alloc(c.device, 4 * elems));
  const [x, g, w] = [mk(), mk(), mk()];
  try {
    for (let i = 0; i < r; i++) for (const b of [x[i]!, g[i]!, w[i]!]) b.memsetAsync(streams[i]!, 0);
    const step = (st: readonly Stream[]): void => {
      for (let i = 0; i < r; i++) kernels[i]!.add(st[i]!, x[i]!, 1, elems);
      clique.allReduce(st, (k) => ({ send: x[k]!, recv: g[k]!, count: elems, type: 'f32', op: 'sum' }));
      for (let i = 0; i < r; i++) kernels[i]!.scale(st[i]!, g[i]!, w[i]!, 0.5, elems);
    };
    return { elements: elems, ...eagerVsGraphed(streams, step, o) };
  } finally {
    for (const b of [...x, ...g, ...w]) b.dispose();
  }
}

/** The tensor-parallel pair of `shape`, eager against graphed. */
function benchPair(clique: NcclClique, streams: Stream[], shape: PairShape, o: Options): Record<string, number> {
  const pair = new TensorParallelPair(clique, shape);
  try {
    pair.load(smallIntegers(shape.tokens * shape.hidden, 1), smallIntegers(shape.hidden * shape.inner, 2), smallIntegers(shape.inner * shape.hidden, 3));
    return { ...shape, ...eagerVsGraphed(streams, (st) => pair.step(st), o) };
  } finally {
    pair.dispose();
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
