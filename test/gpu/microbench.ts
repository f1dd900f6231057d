/**
 * Driver microbenchmark (not a test): host cost of the hot paths through cudagraph (on the binding
 * the environment selects, and forced onto koffi), through raw koffi calls of the same symbols,
 * through raw calls of the Node-API addon (native/cudagraph_hot.c), and from C (microbench.c, run
 * as a child process), interleaved in rounds (C, then the Node columns in an order that rotates
 * every repetition) so drift hits all alike. Rows follow the reference measurements of docs/benchmark.md. Also probes how koffi runs a
 * CUDA host function (cuLaunchHostFunc).
 *
 * Columns: `cudagraph` (the public API, addon unless CUDAGRAPH_NATIVE=0), `cudagraph-koffi` (the
 * same calls with the addon switched off in-process: prepared launches made on koffi; the call
 * sites then see both kinds, which may cost either a few ns), `koffi-raw`, `addon-raw` (a launch
 * registered in the addon, launched by id), `addon-args` (the addon's ten-argument launchKernel,
 * eager rows only: the alternative to registering), `C`. The single graph launch rows add `timer`
 * (an empty span after the same wait).
 *
 *   node dist/test/gpu/microbench.js --c ./microbench --ptx test/gpu/fixtures/kernels.ptx [--out file.json]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { Device, Module, StreamGraphCapture, DeviceBuffer, arg, type GraphExec, type PreparedLaunch } from '../../src/index.js';
import { driverSymbol } from '../../src/driver/sys.js';
import { loadNativeAddon, nativeStatus, setNativeAddonForTesting, bindNativeSymbol } from '../../src/driver/hot.js';

const argv = process.argv.slice(2);
const opt = (k: string): string | undefined => {
  const i = argv.indexOf(k);
  return i >= 0 ? argv[i + 1] : undefined;
};

if (argv[0] === '--hostfunc-child') {
  await hostFuncChild(argv[1] as 'async' | 'sync');
  process.exit(0);
}

const REPS = 30;
const ROUNDS = 3;
const N = 1000;
const now = (): number => Number(process.hrtime.bigint()) / 1e3; // µs

const ptxPath = opt('--ptx') ?? 'test/gpu/fixtures/kernels.ptx';
const d = Device.get(0);
const s = d.createStream();
const sh = s.handle;
const m = Module.load(d, readFileSync(ptxPath, 'utf8'));
const empty = m.function('empty_kernel');
const two = m.function('two_args');
const buf = DeviceBuffer.alloc(d, 1024);
const prep0 = empty.prepare({ grid: 1, block: 32, args: [] });
const prep2 = two.prepare({ grid: 1, block: 32, args: [buf, arg.i32(1)] });
// The library's binding as the environment chose it, and koffi forced in-process.
const binding = nativeStatus();
const libraryHot = setNativeAddonForTesting(null);
const prep0k = empty.prepare({ grid: 1, block: 32, args: [] });
const prep2k = two.prepare({ grid: 1, block: 32, args: [buf, arg.i32(1)] });
setNativeAddonForTesting(libraryHot);
const onKoffi = (): void => void setNativeAddonForTesting(null);
const onLibrary = (): void => void setNativeAddonForTesting(libraryHot);

// koffi raw: the same symbols, called directly with prebuilt arguments.
const rawLaunch = driverSymbol('bench', 'cuLaunchKernel');
const rawBegin = driverSymbol('bench', 'cuStreamBeginCapture_v2');
const rawEnd = driverSymbol('bench', 'cuStreamEndCapture');
const rawInst = driverSymbol('bench', 'cuGraphInstantiateWithFlags');
const rawGraphLaunch = driverSymbol('bench', 'cuGraphLaunch');
const rawExecDestroy = driverSymbol('bench', 'cuGraphExecDestroy');
const rawGraphDestroy = driverSymbol('bench', 'cuGraphDestroy');
const fEmpty = empty.handle;
const fTwo = two.handle;
const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const rawArgs = koffi.alloc('uint8_t', 32) as bigint;
{
  const v = new DataView(koffi.view(rawArgs, 32));
  v.setBigUint64(0, rawArgs + 16n, true);
  v.setBigUint64(8, rawArgs + 24n, true);
  v.setBigUint64(16, buf.ptr, true);
  v.setInt32(24, 1, true);
}
const out64 = new BigUint64Array(1);

// The addon, raw: loaded whatever the environment says, bound to the loader's driver functions.
const loadedHot = loadNativeAddon({});
if (loadedHot.addon === null) throw new Error(`microbench: the addon does not load here: ${loadedHot.status.reason}`);
const hot = loadedHot.addon;
bindNativeSymbol('bench', hot, 'cuLaunchKernel');
bindNativeSymbol('bench', hot, 'cuGraphLaunch');
const rawSync = driverSymbol('bench', 'cuStreamSynchronize');
const syncKoffi = (): void => {
  if (rawSync(sh) !== 0) throw new Error('koffi synchronize failed');
};
const syncLibrary = (): void => s.synchronize();
const id0 = hot.register(fEmpty, 1, 1, 1, 32, 1, 1, 0, 0n);
const id2 = hot.register(fTwo, 1, 1, 1, 32, 1, 1, 0, rawArgs);
const hotLaunch = (id: number): void => {
  if (hot.launch(id, sh) !== 0) throw new Error('addon launch failed');
};

type Samples = Record<string, number[]>;
const js: Samples = {};
const add = (k: string, v: number): void => void (js[k] ??= []).push(v);

/** Times each of `fns` once, starting with a different one every repetition so order effects cancel out. */
function rotate(rep: number, ...fns: Array<() => void>): void {
  for (let k = 0; k < fns.length; k++) fns[(rep + k) % fns.length]!();
}

function timeLoop(key: string, body: () => void, setup: () => void = onLibrary): () => void {
  return () => {
    setup();
    s.synchronize();
    const t0 = now();
    for (let i = 0; i < N; i++) body();
    add(key, (now() - t0) / N);
    s.synchronize();
  };
}

const eager0 = timeLoop('eager_launch/cudagraph', () => prep0.launch(s));
const eager0Raw = timeLoop('eager_launch/koffi-raw', () => rawLaunch(fEmpty, 1, 1, 1, 32, 1, 1, 0, sh, null, null));
const eager0K = timeLoop('eager_launch/cudagraph-koffi', () => prep0k.launch(s), onKoffi);
const eager0Hot = timeLoop('eager_launch/addon-raw', () => hotLaunch(id0));
const eager0Args = timeLoop('eager_launch/addon-args', () => hot.launchKernel(fEmpty, 1, 1, 1, 32, 1, 1, 0, sh, 0n));
const eager2 = timeLoop('eager_launch_2args/cudagraph', () => prep2.launch(s));
const eager2Raw = timeLoop('eager_launch_2args/koffi-raw', () => rawLaunch(fTwo, 1, 1, 1, 32, 1, 1, 0, sh, rawArgs, null));
const eager2K = timeLoop('eager_launch_2args/cudagraph-koffi', () => prep2k.launch(s), onKoffi);
const eager2Hot = timeLoop('eager_launch_2args/addon-raw', () => hotLaunch(id2));
const eager2Args = timeLoop('eager_launch_2args/addon-args', () => hot.launchKernel(fTwo, 1, 1, 1, 32, 1, 1, 0, sh, rawArgs));
const eager2OneOff = timeLoop('eager_launch_2args/cudagraph-oneoff', () =>
  two.launch(s, { grid: 1, block: 32, args: [buf, arg.i32(1)] }),
);

function captureOurs(impl: string, p: PreparedLaunch, setup: () => void): () => void {
  return () => {
    setup();
    const t0 = now();
    const cap = StreamGraphCapture.begin(s);
    for (let i = 0; i < N; i++) p.launch(s);
    const g = cap.endGraph();
    const t1 = now();
    const exec = g.instantiate();
    const t2 = now();
    add(`capture_per_node/${impl}`, (t1 - t0) / N);
    add(`instantiate_per_node/${impl}`, (t2 - t1) / N);
    add(`capture+inst_per_node/${impl}`, (t2 - t0) / N);
    exec.dispose();
    g.dispose();
  };
}

function captureRaw(impl: string, launchOne: () => void): () => void {
  return () => {
    const t0 = now();
    rawBegin(sh, 0);
    for (let i = 0; i < N; i++) launchOne();
    rawEnd(sh, out64);
    const rg = out64[0]!;
    const t1 = now();
    rawInst(out64, rg, 0n);
    const re = out64[0]!;
    const t2 = now();
    add(`capture_per_node/${impl}`, (t1 - t0) / N);
    add(`instantiate_per_node/${impl}`, (t2 - t1) / N);
    add(`capture+inst_per_node/${impl}`, (t2 - t0) / N);
    rawExecDestroy(re);
    rawGraphDestroy(rg);
  };
}
const captures = [
  captureOurs('cudagraph', prep0, onLibrary),
  captureOurs('cudagraph-koffi', prep0k, onKoffi),
  captureRaw('koffi-raw', () => rawLaunch(fEmpty, 1, 1, 1, 32, 1, 1, 0, sh, null, null)),
  captureRaw('addon-raw', () => hotLaunch(id0)),
];

const execs = new Map<number, { exec: GraphExec; raw: bigint }>();
for (const size of [10, 1000, 10000]) {
  const cap = StreamGraphCapture.begin(s);
  for (let i = 0; i < size; i++) prep0.launch(s);
  const exec = cap.end();
  rawInst(out64, exec.graph.handle, 0n);
  execs.set(size, { exec, raw: out64[0]! });
}

type Launcher = [impl: string, call: () => void, setup: () => void, sync: () => void];

/**
 * The graph launch call of each Node column, for the exec of `size` nodes, and the wait before it.
 * `timer` times an empty span after a wait: the clock's own cost, and whatever a wait leaves behind
 * (it grows with the wait). The second device run also had `addon-raw-sync` (the wait through the
 * addon too): no difference, so the wait stays on koffi (docs/ffi-decision.md).
 */
function graphLaunchers(size: number): Launcher[] {
  const e = execs.get(size)!;
  const addonLaunch = (): void => {
    if (hot.graphLaunch(e.raw, sh) !== 0) throw new Error('addon graph launch failed');
  };
  return [
    ['cudagraph', () => e.exec.launch(s), onLibrary, syncLibrary],
    ['cudagraph-koffi', () => e.exec.launch(s), onKoffi, syncLibrary],
    ['koffi-raw', () => rawGraphLaunch(e.raw, sh), onLibrary, syncKoffi],
    ['addon-raw', addonLaunch, onLibrary, syncKoffi],
    ['timer', () => {}, onLibrary, syncKoffi],
  ];
}

/** One graph launch call timed between synchronizes, as C does. */
function graphLaunchOnce(size: number, [impl, call, setup, sync]: Launcher): () => void {
  return () => {
    setup();
    sync();
    const t0 = now();
    call();
    add(`graph_launch_${size}/${impl}`, now() - t0);
    sync();
  };
}

/** Steady state: 100 launches of the 10-node graph back to back, host time per call. */
function graphLaunchLoop(impl: string, call: () => void, setup: () => void): () => void {
  return () => {
    setup();
    s.synchronize();
    const t0 = now();
    for (let i = 0; i < 100; i++) call();
    add(`graph_launch_10_loop/${impl}`, (now() - t0) / 100);
  };
}

// Warm the JS paths up (the JIT optimises a function after many calls; an application that
// replays a graph does so often), then time single calls as C does.
for (const [, call, setup] of graphLaunchers(10).slice(0, 4)) {
  setup();
  for (let i = 0; i < 5000; i++) call();
}
onLibrary();
s.synchronize();

const c: Samples = {};
const cBin = opt('--c');
for (let round = 0; round < ROUNDS; round++) {
  if (cBin) {
    const r = spawnSync(cBin, [ptxPath, String(REPS)], { encoding: 'utf8' });
    if (r.status === 0) {
      const parsed = JSON.parse(r.stdout) as Samples;
      for (const [k, v] of Object.entries(parsed)) (c[`${k}/C`] ??= []).push(...v);
    } else console.error(`C reference failed: ${r.stderr}`);
  }
  // One row at a time, as the C program does, rotating the order of the Node columns.
  for (let rep = 0; rep < REPS; rep++) rotate(rep, eager0, eager0K, eager0Raw, eager0Hot, eager0Args);
  for (let rep = 0; rep < REPS; rep++) rotate(rep, eager2, eager2K, eager2Raw, eager2Hot, eager2Args);
  for (let rep = 0; rep < REPS; rep++) eager2OneOff();
  for (let rep = 0; rep < REPS; rep++) rotate(rep, ...captures);
  for (const size of [10, 1000, 10000]) {
    const timed = graphLaunchers(size).map((l) => graphLaunchOnce(size, l));
    for (const t of timed) t(); // warm-up, as in C
    for (const [impl] of graphLaunchers(size)) js[`graph_launch_${size}/${impl}`]!.pop();
    for (let rep = 0; rep < REPS; rep++) rotate(rep, ...timed);
  }
  const loops = graphLaunchers(10).slice(0, 4).map(([impl, call, setup]) => graphLaunchLoop(impl, call, setup));
  for (let rep = 0; rep < REPS; rep++) rotate(rep, ...loops);
  onLibrary();
  s.synchronize();
}

const all: Samples = { ...js, ...c };
const stat = (v: number[]) => {
  const x = [...v].sort((a, b) => a - b);
  const q = (p: number) => x[Math.min(x.length - 1, Math.floor(p * (x.length - 1)))]!;
  return { median: q(0.5), p10: q(0.1), p90: q(0.9), n: x.length };
};
const rows = [...new Set(Object.keys(all).map((k) => k.split('/')[0]!))];
const table: Array<Record<string, string | number>> = [];
for (const row of rows) {
  const cMed = all[`${row}/C`] ? stat(all[`${row}/C`]!).median : NaN;
  for (const impl of ['C', 'koffi-raw', 'addon-raw', 'addon-args', 'cudagraph', 'cudagraph-koffi', 'cudagraph-oneoff', 'timer']) {
    const v = all[`${row}/${impl}`];
    if (!v) continue;
    const st = stat(v);
    table.push({ row, impl, median_us: +st.median.toFixed(3), p10: +st.p10.toFixed(3), p90: +st.p90.toFixed(3), n: st.n, vsC: Number.isNaN(cMed) ? '-' : +(st.median / cMed).toFixed(2) });
  }
}

// Host functions through koffi: does a JS callback run from the driver's thread, and does a
// synchronous wait on the stream deadlock while the callback waits for the JS thread?
const self = fileURLToPath(import.meta.url);
const probe = (mode: string) => {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [self, '--hostfunc-child', mode], { encoding: 'utf8', timeout: 4000 });
  return { mode, status: r.status, signal: r.signal, ms: Date.now() - t0, out: (r.stdout + r.stderr).trim().slice(0, 300) };
};
const hostfunc = argv.includes('--no-hostfunc') ? [] : [probe('async'), probe('sync')];

const result = { device: d.toString(), driverVersion: Device.driverVersion(), node: process.version, binding, reps: REPS, rounds: ROUNDS, table, hostfunc, samples: all };
const outFile = opt('--out');
if (outFile) writeFileSync(outFile, JSON.stringify(result, null, 1));
console.log(JSON.stringify({ hostfunc }, null, 1));
console.table(table);

async function hostFuncChild(mode: 'async' | 'sync'): Promise<void> {
  const dev = Device.get(0);
  const st = dev.createStream();
  const k = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
  const proto = k.proto('void CUhostFn_probe(void *userData)');
  let calls = 0;
  const cb = k.register(() => {
    calls++;
  }, k.pointer(proto));
  const launchHostFunc = driverSymbol('probe', 'cuLaunchHostFunc');
  const t0 = performance.now();
  const rc = launchHostFunc(st.handle, cb, null);
  if (mode === 'async') await st.synchronizeAsync();
  else st.synchronize(); // the JS thread blocks in cuStreamSynchronize
  console.log(`${mode}: rc=${rc} calls=${calls} after ${(performance.now() - t0).toFixed(1)} ms`);
  k.unregister(cb);
}
