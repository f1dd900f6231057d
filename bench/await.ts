/**
 * Where the time of an awaited round trip goes, and whether the event loop stays free meanwhile
 * (`npm run bench:await` on a GPU machine). One process, the variants interleaved in every round:
 *
 *   - sync:       `exec.launch(s)` + `s.synchronize()` (blocking), a graph of N empty kernels;
 *   - sync via event: `exec.launch(s)`, an event recorded after it, `event.synchronize()`: what the
 *                 record that an await makes (it waits for the work before it, not after) adds;
 *   - await:      `exec.launch(s)` + `await s.synchronizeAsync()`;
 *   - idle await: `await s.synchronizeAsync()` of an idle stream: the wait's own cost (an event
 *                 recorded, found done by the completion thread, handed back to the event loop,
 *                 the promise settled) with no GPU work to overlap it;
 *   - await, loop asleep / idle await, loop asleep: the same two with the event loop left to sleep
 *                 at once (no keeping awake: the completion thread's hand-back must wake the JS
 *                 thread, src/driver/result/wait.ts says why that costs);
 *   - immediate:  `await` of a promise resolved by `setImmediate`: what one turn of the event loop
 *                 costs this process, the floor of any wait that frees the loop.
 *
 * Then the event loop's delay (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution: how late a
 * 1 ms timer fires) during a
 * stream of awaited round trips and during a stream of blocking ones, for `--seconds` each; a
 * thousand streams awaited at once (the wall time, and the process's threads before and after);
 * and long waits: a kernel spinning on the GPU's clock for 0.5 to 20 ms, launched and waited for
 * blocking and awaited in alternation (`--long-reps` each, half from 5 ms), how much later the
 * awaited one ended (median against median) and the process's CPU time over the wall time of each
 * (a blocking synchronize spins in the driver, about one core).
 *
 *   npm run bench:await -- [--nodes 10] [--rounds 10] [--reps 300] [--seconds 1] [--long-reps 20]
 *   (writes $OUT/await.json when OUT is set)
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Device, Module, StreamGraphCapture, arg } from '../src/index.js';
import { nativeStatus } from '../src/driver/index.js';
import { setKeepAwakeMs } from '../src/driver/result/wait.js';
import type { GraphExec, Stream } from '../src/index.js';
import { median } from './gpu/stats.js';
import { intFlag } from './args.js';

const argv = process.argv.slice(2);
const num = (name: string, dflt: number): number => intFlag('bench:await', argv, name, dflt);
const NODES = num('--nodes', 10);
const ROUNDS = num('--rounds', 10);
const REPS = num('--reps', 300);
const SECONDS = num('--seconds', 1);
const LONG_REPS = num('--long-reps', 20);
const LONG_US = [500, 1000, 2000, 5000, 10000, 20000];
const STREAMS = 1000;
const RESOLUTION_MS = 1;

const d = Device.get(0);
const s = d.createStream();
const module = Module.compile(
  d,
  `extern "C" __global__ void empty() {}
extern "C" __global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}`,
);
const empty = module.function('empty');
const spin = module.function('spin_ns');

function graphOf(stream: Stream, n: number): GraphExec {
  const cap = StreamGraphCapture.begin(stream);
  for (let i = 0; i < n; i++) empty.launch(stream, { grid: 1, block: 32, args: [] });
  const exec = cap.end();
  exec.launch(stream);
  stream.synchronize();
  return exec;
}
const exec = graphOf(s, NODES);
const now = () => process.hrtime.bigint();

const marker = d.createEvent();
const variants: Record<string, () => Promise<number>> = {
  'sync via event': async () => {
    s.synchronize();
    const t0 = now();
    exec.launch(s);
    s.record(marker).synchronize();
    return Number(now() - t0);
  },
  sync: async () => {
    s.synchronize();
    const t0 = now();
    exec.launch(s);
    s.synchronize();
    return Number(now() - t0);
  },
  await: async () => {
    s.synchronize();
    const t0 = now();
    exec.launch(s);
    await s.synchronizeAsync();
    return Number(now() - t0);
  },
  'idle await': async () => {
    s.synchronize();
    const t0 = now();
    await s.synchronizeAsync();
    return Number(now() - t0);
  },
  'await, loop asleep': async () => {
    const before = setKeepAwakeMs(0);
    s.synchronize();
    const t0 = now();
    exec.launch(s);
    await s.synchronizeAsync();
    const t = Number(now() - t0);
    setKeepAwakeMs(before);
    return t;
  },
  'idle await, loop asleep': async () => {
    const before = setKeepAwakeMs(0);
    s.synchronize();
    const t0 = now();
    await s.synchronizeAsync();
    const t = Number(now() - t0);
    setKeepAwakeMs(before);
    return t;
  },
  immediate: async () => {
    const t0 = now();
    await new Promise<void>((r) => setImmediate(r));
    return Number(now() - t0);
  },
};

// Warm-up: a thousand of each (JIT, the completion thread, the pool of wait events).
for (const f of Object.values(variants)) for (let i = 0; i < 1000; i++) await f();

const perRound: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, f] of Object.entries(variants)) {
    const xs: number[] = [];
    for (let i = 0; i < REPS; i++) xs.push((await f()) / 1e3);
    perRound[name]!.push(median(xs));
  }
}

/**
 * The event loop's delay while `body` runs for SECONDS: how much later than due a 1 ms timer fired
 * (µs percentiles; the histogram holds the intervals, the 1 ms taken off here).
 */
async function loopDelay(body: () => Promise<unknown>): Promise<{ p50: number; p99: number; max: number; roundTrips: number }> {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  const end = Date.now() + SECONDS * 1000;
  let roundTrips = 0;
  while (Date.now() < end) {
    await body();
    roundTrips++;
  }
  h.disable();
  const late = (ns: number) => Math.max(0, ns / 1e3 - RESOLUTION_MS * 1e3);
  return { p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max), roundTrips };
}
const delayAwait = await loopDelay(variants.await!);
const delaySync = await loopDelay(async () => {
  // Blocking round trips back to back, giving the loop a turn only every 100 ms (as a program
  // that blocks would): the delay the awaited form avoids.
  const end = Date.now() + 100;
  while (Date.now() < end) await variants.sync!();
  await new Promise<void>((r) => setImmediate(r));
});

const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const streams = Array.from({ length: STREAMS }, () => d.createStream());
const execs = streams.map((st) => graphOf(st, 1));
const threadsBefore = threads();
const t0 = now();
await Promise.all(streams.map((st, i) => (execs[i]!.launch(st), st.synchronizeAsync())));
const manyMs = Number(now() - t0) / 1e6;
const threadsAfter = threads();

/** Long waits: how late an awaited spin of `us` µs ends against a blocking one, and the CPU each takes. */
async function longWait(us: number): Promise<{ us: number; lateUs: number; syncUs: number; awaitUs: number; cpuSync: number; cpuAwait: number }> {
  const reps = us >= 5000 ? Math.max(1, LONG_REPS >> 1) : LONG_REPS;
  const cpu = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const launch = (): void => spin.launch(s, { grid: 1, block: 1, args: [arg.u64(BigInt(us) * 1000n)] });
  const sync: number[] = [];
  const awaited: number[] = [];
  let cpuSync = 0, cpuAwait = 0, wallSync = 0, wallAwait = 0;
  for (let i = 0; i < reps; i++) {
    let c = cpu();
    let t0 = now();
    launch();
    s.synchronize();
    let t = Number(now() - t0) / 1e3;
    sync.push(t);
    wallSync += t;
    cpuSync += cpu() - c;
    c = cpu();
    t0 = now();
    launch();
    await s.synchronizeAsync();
    t = Number(now() - t0) / 1e3;
    awaited.push(t);
    wallAwait += t;
    cpuAwait += cpu() - c;
  }
  const syncUs = median(sync);
  const awaitUs = median(awaited);
  return { us, lateUs: awaitUs - syncUs, syncUs, awaitUs, cpuSync: cpuSync / wallSync, cpuAwait: cpuAwait / wallAwait };
}
const long = [];
for (const us of LONG_US) long.push(await longWait(us));

const summary = Object.fromEntries(
  Object.entries(perRound).map(([k, xs]) => [k, { median: median(xs), lo: Math.min(...xs), hi: Math.max(...xs) }]),
);
const results = {
  date: new Date().toISOString(),
  gpu: d.name,
  binding: nativeStatus().active ? 'addon' : `koffi (${nativeStatus().reason})`,
  nodes: NODES, rounds: ROUNDS, reps: REPS,
  roundTripUs: summary,
  awaitOverSync: summary['await']!.median / summary['sync']!.median,
  loopDelayUs: { awaited: delayAwait, blocking: delaySync },
  concurrent: { streams: STREAMS, wallMs: manyMs, threadsBefore, threadsAfter },
  longWaits: long,
  perRound,
};
if (process.env['OUT']) writeFileSync(join(process.env['OUT'], 'await.json'), JSON.stringify(results, null, 2));

const f = (x: number) => x.toFixed(2);
process.stdout.write(`bench:await — ${d.name}, ${results.binding}, graph of ${NODES} empty kernels, ${ROUNDS} rounds × ${REPS}\n`);
for (const [k, v] of Object.entries(summary)) process.stdout.write(`  ${k.padEnd(24)} ${f(v.median).padStart(7)} µs  [${f(v.lo)}–${f(v.hi)}]\n`);
process.stdout.write(`  await / sync: ${results.awaitOverSync.toFixed(3)}×\n`);
process.stdout.write(`  event-loop delay (a 1 ms timer fired late by), awaited round trips (${delayAwait.roundTrips} in ${SECONDS} s): p50 ${f(delayAwait.p50)} µs, p99 ${f(delayAwait.p99)} µs, max ${f(delayAwait.max)} µs\n`);
process.stdout.write(`  event-loop delay (a 1 ms timer fired late by), blocking round trips (${delaySync.roundTrips} turns): p50 ${f(delaySync.p50)} µs, p99 ${f(delaySync.p99)} µs, max ${f(delaySync.max)} µs\n`);
process.stdout.write(`  ${STREAMS} streams awaited at once: ${manyMs.toFixed(1)} ms, threads ${threadsBefore} → ${threadsAfter}\n`);
process.stdout.write(`  long waits (a kernel spinning for the time given; median of ${LONG_REPS}, ${Math.max(1, LONG_REPS >> 1)} from 5 ms): awaited late by, CPU over wall (blocking / awaited)\n`);
for (const l of long) process.stdout.write(`    ${String(l.us / 1000).padStart(4)} ms  ${f(l.lateUs).padStart(8)} µs late   CPU ${f(l.cpuSync)} / ${f(l.cpuAwait)}\n`);
for (const e of execs) e.dispose();
for (const st of streams) st.dispose();
exec.dispose();
marker.dispose();
s.dispose();
