/**
 * Diagnostic (not a benchmark of record): where the time of ONE graph launch call between
 * synchronizes goes in a Node process, on the GPU. bench:gpu's row "graph launch, host cost of one
 * call" (10 nodes) is 1.4–1.8× of C while the same call costs ~25 ns more than the bare addon call
 * when hot (bench:host). Each variant below is one repetition shape, timed 200 times a round,
 * variants rotating, several rounds; medians in µs.
 *
 *   node dist/bench/probe/launch-probe.js <launch-probe.node> [--out file.json]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Device, Module, StreamGraphCapture } from '../../src/index.js';
import { nativeAddon, mailboxOf, MAILBOX } from '../../src/driver/hot.js';
import { driverLibraryPath } from '../../src/driver/sys.js';

interface Probe {
  bind(graphLaunch: bigint, streamSync: bigint): void;
  timedLaunch(exec: bigint, stream: bigint): number;
  cycle(exec: bigint, stream: bigint): number;
  sync(stream: bigint): number;
  bindCapture(addresses: BigUint64Array): void;
  captureCycle(fn: bigint, stream: bigint, n: number, templateFirst: boolean): number;
}
const require = createRequire(import.meta.url);
const probe = require(process.argv[2]!) as Probe;
const out = process.argv.indexOf('--out') > 0 ? process.argv[process.argv.indexOf('--out') + 1] : undefined;
const koffi = require('koffi') as typeof import('koffi').default;

const device = Device.get(0);
const s = device.createStream({ nonBlocking: true });
const sh = s.handle;
const ptx = readFileSync(fileURLToPath(new URL('../../../bench/gpu/kernels.ptx', import.meta.url)), 'utf8');
const empty = Module.load(device, ptx).function('empty').prepare({ grid: 1, block: 32, args: [] });
const cap = StreamGraphCapture.begin(s);
for (let i = 0; i < 10; i++) empty.launch(s);
const exec = cap.end();
exec.launch(s);
s.synchronize();
const raw = exec.handle;
const lib = koffi.load(driverLibraryPath()!);
probe.bind(lib.symbol('cuGraphLaunch') as bigint, lib.symbol('cuStreamSynchronize') as bigint);
probe.bindCapture(
  BigUint64Array.from(
    ['cuLaunchKernel', 'cuStreamBeginCapture_v2', 'cuStreamEndCapture', 'cuGraphInstantiateWithFlags', 'cuGraphDestroy', 'cuGraphExecDestroy'].map(
      (name) => lib.symbol(name) as bigint,
    ),
  ),
);
const fnHandle = empty.kernel.handle;
const koffiLaunch = lib.func('int cuGraphLaunch(uint64_t exec, uint64_t stream)') as (e: bigint, s: bigint) => number;
const hot = nativeAddon();
const box = hot !== null ? mailboxOf(hot) : null;
const hr = (): bigint => process.hrtime.bigint();
const NODES = 1000;
const seq = s.sequence(Array.from({ length: NODES }, () => empty));
const seq10k = s.sequence(Array.from({ length: 10 * NODES }, () => empty));

/** Capture of `nodes` launches: µs per node of begin + the launches (as bench:gpu's capture row), then end + destroy. */
function captureSpan(record: () => void, nodes = NODES, instantiate = false): number {
  s.synchronize();
  const t0 = hr();
  const c = StreamGraphCapture.begin(s);
  record();
  const t1 = hr();
  if (instantiate) c.end().dispose();
  else c.endGraph().dispose();
  return Number(t1 - t0) / nodes;
}

/** Each variant: one repetition, returning the timed span in ns. */
const variants: Record<string, () => number> = {
  'C in this process: wait, clock, clock, cuGraphLaunch, clock (probe.cycle)': () => probe.cycle(raw, sh),
  'wait from JS (koffi), cuGraphLaunch timed in C': () => {
    s.synchronize();
    return probe.timedLaunch(raw, sh);
  },
  'wait from C, exec.launch timed in JS': () => {
    probe.sync(sh);
    void hr();
    const t0 = hr();
    exec.launch(s);
    return Number(hr() - t0);
  },
  'wait from JS, exec.launch timed in JS (bench:gpu)': () => {
    s.synchronize();
    void hr();
    const t0 = hr();
    exec.launch(s);
    return Number(hr() - t0);
  },
  'wait from JS, raw addon mailbox call': () => {
    s.synchronize();
    void hr();
    const t0 = hr();
    box!.u64[MAILBOX.EXEC] = raw;
    box!.u64[MAILBOX.STREAM] = sh;
    hot!.graphLaunchFromMailbox();
    const t1 = hr();
    if (box!.i32[MAILBOX.RESULT] !== 0) throw new Error('launch failed');
    return Number(t1 - t0);
  },
  'wait from JS, raw koffi cuGraphLaunch': () => {
    s.synchronize();
    void hr();
    const t0 = hr();
    koffiLaunch(raw, sh);
    return Number(hr() - t0);
  },
  'wait by polling stream.query() in JS, exec.launch': () => {
    while (!s.query()) {
      /* spin in JS: the thread never leaves JS */
    }
    void hr();
    const t0 = hr();
    exec.launch(s);
    return Number(hr() - t0);
  },
  'wait from JS, empty span (clock only)': () => {
    s.synchronize();
    void hr();
    const t0 = hr();
    return Number(hr() - t0);
  },
  'capture, per node: PreparedLaunch.launch loop in JS (bench:gpu)': () =>
    captureSpan(() => {
      for (let i = 0; i < NODES; i++) empty.launch(s);
    }),
  'capture, per node: one LaunchSequence (the cuLaunchKernel loop in C, in this process)': () => captureSpan(() => seq.launch()),
  'capture 10000, per node: PreparedLaunch.launch loop in JS': () =>
    captureSpan(() => {
      for (let i = 0; i < 10 * NODES; i++) empty.launch(s);
    }, 10 * NODES),
  'capture 10000, per node: one LaunchSequence': () => captureSpan(() => seq10k.launch(), 10 * NODES),
  'capture 10000 then instantiate + destroy (bench shape), per node: JS loop': () =>
    captureSpan(() => {
      for (let i = 0; i < 10 * NODES; i++) empty.launch(s);
    }, 10 * NODES, true),
  'capture 10000 then instantiate + destroy (bench shape), per node: LaunchSequence': () => captureSpan(() => seq10k.launch(), 10 * NODES, true),
  "capture 10000 in C in this process, instantiate, destroy template then exec (the C worker's order)": () =>
    probe.captureCycle(fnHandle, sh, 10 * NODES, true),
  "capture 10000 in C in this process, instantiate, destroy exec then template (cudagraph's order)": () =>
    probe.captureCycle(fnHandle, sh, 10 * NODES, false),
  'no wait: exec.launch right after the previous launch (queue ~2 deep)': () => {
    s.synchronize();
    exec.launch(s);
    void hr();
    const t0 = hr();
    exec.launch(s);
    return Number(hr() - t0);
  },
};

const median = (xs: number[]): number => {
  const a = [...xs].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 ? a[m]! : (a[m - 1]! + a[m]!) / 2;
};
const names = Object.keys(variants);
const rounds: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
for (const n of names) for (let i = 0; i < 50; i++) variants[n]!(); // warm-up
const ROUNDS = 7;
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < names.length; k++) {
    const n = names[(k + r) % names.length]!;
    const xs: number[] = [];
    for (let i = 0; i < (n.startsWith('capture') ? 20 : 200); i++) {
      const x = variants[n]!();
      if (x < 0) throw new Error(`${n}: CUresult ${-x}`);
      xs.push(x / 1e3);
    }
    rounds[n]!.push(median(xs));
  }
  s.synchronize();
}
process.stdout.write(`one graph launch call (10 nodes) or capture per node (1000 nodes), µs: median of ${ROUNDS} round medians [min–max]\n`);
for (const n of names) {
  const xs = rounds[n]!;
  process.stdout.write(`${median(xs).toFixed(3).padStart(7)} [${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)}]  ${n}\n`);
}
if (out !== undefined) writeFileSync(out, JSON.stringify({ device: device.name, node: process.version, rounds }, null, 1) + '\n');
exec.dispose();
