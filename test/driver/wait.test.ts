/**
 * Waits that leave the event loop free (`synchronizeAsync`), against the stand-in driver
 * (fixtures/stand-in-driver.c), whose events a test can hold and release: the addon's completion
 * thread and koffi's fallback, what a wait means (the work before it), batches, a thousand waits on
 * one thread, failures of the work, a wait during a capture, an event disposed while waited for,
 * and processes and workers that end with waits pending (in child processes, with a timeout).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CudaError, Device, DisposedError, GraphCache, InvalidArgumentError, Module, StreamGraphCapture, arg, captureGraph, type Stream } from '../../src/index.js';
import { nativeAddon, setNativeAddonForTesting } from '../../src/driver/hot.js';
import { setKeepAwakeMs, waitsPending } from '../../src/driver/result/wait.js';
import { gate } from '../../src/driver/host-gate.js';
import { loadStandIn } from '../support/stand-in-driver.js';

const lib = loadStandIn('wait');
const skip = lib === null ? 'gcc is absent' : nativeAddon() === null ? 'no addon for this platform' : false;
const v = (name: string) => lib!.u64s(name);

/** Holds every event recorded from now on until `release()`. */
function hold(): { release: (upto?: bigint) => void; records: () => bigint } {
  v('events_hold')[0] = 1n;
  return {
    release: (upto) => {
      v('events_done_upto')[0] = upto ?? v('event_records')[0]!;
    },
    records: () => v('event_records')[0]!,
  };
}

function unhold(): void {
  v('events_done_upto')[0] = v('event_records')[0]!;
  v('events_hold')[0] = 0n;
}

/** Settles after `ms` of event-loop turns; whether `p` settled meanwhile. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true), () => (settled = true));
  const end = Date.now() + ms;
  while (!settled && Date.now() < end) await new Promise((r) => setTimeout(r, 1));
  return settled;
}

function threads(): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
}

/**
 * A wait on `s` held at the stand-in: not resolved while held, the event loop turning meanwhile;
 * resolved once released.
 */
async function heldThenReleased(s: Stream): Promise<void> {
  const h = hold();
  const p = s.synchronizeAsync();
  let turns = 0;
  const ticking = setInterval(() => turns++, 1);
  try {
    assert.equal(await settledWithin(p, 30), false, 'held: not resolved');
    // Any turn shows the loop free (a blocking wait on a held event would never return); how many
    // depends on the machine's load.
    assert.ok(turns >= 1, `the event loop ran meanwhile (${turns} timer turns)`);
    h.release();
    await p;
  } finally {
    clearInterval(ticking);
    unhold();
  }
}

// Both phases: a young wait polled by the event loop kept turning (young for longer than the hold),
// and a wait handed to the completion thread at once, which wakes the loop when it ends.
for (const [keepAwake, how] of [[100, 'young: polled by the event loop kept turning'], [0, 'handed to the completion thread at once']] as const) {
  test(`a wait resolves when the work before it is done, not before, with the event loop free (${how})`, { skip }, async () => {
    const before = setKeepAwakeMs(keepAwake);
    try {
      const s = Device.get(0).createStream();
      await heldThenReleased(s);
      assert.equal(waitsPending(), 0);
      // Many short waits in a row, each resolved.
      for (let i = 0; i < 200; i++) await s.synchronizeAsync();
      s.dispose();
    } finally {
      setKeepAwakeMs(before);
    }
  });
}

test('a stream wait means the work submitted before it: a later wait on the same stream is not waited for', { skip }, async () => {
  const s = Device.get(0).createStream();
  const h = hold();
  const first = s.synchronizeAsync();
  const upto = h.records();
  const second = s.synchronizeAsync();
  h.release(upto);
  await first;
  assert.equal(await settledWithin(second, 20), false, 'the second wait is still held');
  h.release();
  await second;
  unhold();
  s.dispose();
});

test('a thousand waits on a thousand streams: one completion thread, all resolved', { skip }, async () => {
  const d = Device.get(0);
  // The completion thread exists once the first wait ran.
  await d.createStream().synchronizeAsync();
  const before = threads();
  const streams = Array.from({ length: 1000 }, () => d.createStream());
  const h = hold();
  const waits = streams.map((s) => s.synchronizeAsync());
  assert.equal(waitsPending(), 1000);
  assert.equal(threads(), before, 'no thread per wait');
  h.release();
  await Promise.all(waits);
  assert.equal(waitsPending(), 0);
  unhold();
  for (const s of streams) s.dispose();
});

test('a failure of the work rejects the wait with CudaError naming the call; the next wait works', { skip }, async () => {
  const s = Device.get(0).createStream();
  v('event_query_error')[0] = 700n;
  try {
    await assert.rejects(s.synchronizeAsync(), (e: unknown) => e instanceof CudaError && e.code === 700 && /^Stream\.synchronizeAsync/.test(e.message) && /cuEventQuery/.test(e.message));
  } finally {
    v('event_query_error')[0] = 0n;
  }
  v('event_record_error')[0] = 1n;
  try {
    await assert.rejects(s.synchronizeAsync(), (e: unknown) => e instanceof CudaError && e.code === 1 && /cuEventRecord/.test(e.message));
  } finally {
    v('event_record_error')[0] = 0n;
  }
  await s.synchronizeAsync();
  s.dispose();
});

test('a wait on a capturing stream is refused and the capture goes on', { skip }, async () => {
  const s = Device.get(0).createStream();
  let refusal: Promise<void> | null = null;
  const g = captureGraph(s, (st) => {
    refusal = st.synchronizeAsync();
    assert.equal(st.isCapturing, true);
  });
  await assert.rejects(refusal!, (e: unknown) => e instanceof InvalidArgumentError && /^Stream\.synchronizeAsync: .*capturing/.test((e as Error).message));
  g.dispose();
  s.dispose();
});

test('an event disposed while waited for is destroyed when the wait ends, not before', { skip }, async () => {
  const d = Device.get(0);
  const s = d.createStream();
  const h = hold();
  const e = d.createEvent().record(s);
  const live = v('events_live')[0]!;
  const p = e.synchronizeAsync();
  e.dispose();
  assert.equal(v('events_live')[0], live, 'not destroyed while the completion thread queries it');
  h.release();
  await p;
  assert.equal(v('events_live')[0], live - 1n, 'destroyed once the wait ended');
  unhold();
  s.dispose();
});

test('without the addon: the same waits through koffi, the same meaning', { skip: lib === null && 'gcc is absent' }, async () => {
  const before = setNativeAddonForTesting(null);
  try {
    const s = Device.get(0).createStream();
    const h = hold();
    const first = s.synchronizeAsync();
    const upto = h.records();
    const second = s.synchronizeAsync();
    assert.equal(await settledWithin(first, 20), false);
    h.release(upto);
    await first;
    assert.equal(await settledWithin(second, 20), false);
    h.release();
    await second;
    unhold();
    s.dispose();
  } finally {
    setNativeAddonForTesting(before ?? undefined);
  }
});

test('without the addon: held waits leave libuv\'s thread pool free (file reads end while forty waits are pending, young and beyond the young limit), and all of them end', { skip: lib === null && 'gcc is absent' }, async () => {
  const before = setNativeAddonForTesting(null);
  try {
    const streams = Array.from({ length: 40 }, () => Device.get(0).createStream());
    const h = hold();
    const waits = streams.map((s) => s.synchronizeAsync());
    // Four threads serve the pool by default: a wait that blocked one of them each would hold them all.
    const reads = Promise.all(Array.from({ length: 8 }, () => readFile(fileURLToPath(import.meta.url))));
    assert.equal(await settledWithin(reads, 5_000), true, 'the reads ended while the waits were held');
    assert.equal(waitsPending(), 40);
    assert.equal(await settledWithin(Promise.race(waits), 20), false, 'held: none resolved');
    h.release();
    await Promise.all(waits);
    assert.equal(waitsPending(), 0);
    unhold();
    for (const s of streams) s.dispose();
  } finally {
    setNativeAddonForTesting(before ?? undefined);
  }
});

test('without the addon: a wait that outlives the young window still ends, and a failure of the work rejects naming cuEventQuery', { skip: lib === null && 'gcc is absent' }, async () => {
  const before = setNativeAddonForTesting(null);
  const keep = setKeepAwakeMs(0);
  try {
    const s = Device.get(0).createStream();
    await heldThenReleased(s);
    v('event_query_error')[0] = 700n;
    try {
      await assert.rejects(s.synchronizeAsync(), (e: unknown) => e instanceof CudaError && e.code === 700 && /^Stream\.synchronizeAsync/.test(e.message) && /cuEventQuery/.test(e.message));
    } finally {
      v('event_query_error')[0] = 0n;
    }
    assert.equal(waitsPending(), 0);
    for (let i = 0; i < 50; i++) await s.synchronizeAsync();
    s.dispose();
  } finally {
    setKeepAwakeMs(keep);
    setNativeAddonForTesting(before ?? undefined);
  }
});

test('without the addon: a wait while a JS host call is in flight queries the stream, young as any other wait (not a millisecond timer each)', { skip: lib === null && 'gcc is absent' }, async () => {
  const before = setNativeAddonForTesting(null);
  const s = Device.get(0).createStream();
  gate.calls += 1; // as while a host function is in flight: the wait must enqueue nothing
  hold(); // an event recorded now would never complete
  try {
    const records = v('event_records')[0];
    let best = Infinity;
    // Fifty waits on the 1 ms timer take 50 ms at least; young, a turn of the event loop each.
    for (let attempt = 0; attempt < 3 && best >= 25; attempt++) {
      const t0 = performance.now();
      for (let i = 0; i < 50; i++) await s.synchronizeAsync();
      best = Math.min(best, performance.now() - t0);
    }
    assert.ok(best < 25, `50 waits took ${best.toFixed(1)} ms at best`);
    assert.equal(v('event_records')[0], records, 'no event recorded: the stream was queried');
    assert.equal(waitsPending(), 0);
  } finally {
    unhold();
    gate.calls -= 1;
    s.dispose();
    setNativeAddonForTesting(before ?? undefined);
  }
});

/** Runs `scenario` of wait-child.ts in a child process (with the stand-in) and returns its result. */
function child(scenario: string, binding: 'addon' | 'koffi') {
  const file = fileURLToPath(new URL('./wait-child.js', import.meta.url));
  const env = { ...process.env, CUDAGRAPH_NATIVE: binding === 'koffi' ? '0' : '1' };
  return spawnSync(process.execPath, [file, scenario], { encoding: 'utf8', timeout: 20_000, env });
}

const childScenarios = [
  ['exit-when-done', 'a process whose last wait ended exits by itself (the wait no longer holds the loop)'],
  ['exit-while-pending', 'process.exit() with a wait pending ends the process cleanly'],
  ['worker-terminated', 'a worker terminated with a wait pending: the process goes on and exits'],
  ['pending-keeps-alive', 'a pending wait keeps the process alive until it ends'],
] as const;

for (const binding of ['addon', 'koffi'] as const) {
  for (const [scenario, what] of childScenarios) {
    test(`${binding}: ${what}`, { skip: binding === 'addon' ? skip : lib === null && 'gcc is absent' }, () => {
      const r = child(scenario, binding);
      assert.equal(r.error, undefined, `${scenario}: ${String(r.error)}`);
      assert.equal(r.signal, null, `${scenario}: killed by ${r.signal}\n${r.stderr}`);
      assert.equal(r.status, 0, `${scenario}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^${scenario}: ok$`, 'm'), r.stdout + r.stderr);
    });
  }
}

test('young waits beyond the limit, and young waits that outlive the window, go to the completion thread and still end', { skip }, async () => {
  const before = setKeepAwakeMs(5);
  try {
    const streams = Array.from({ length: 40 }, () => Device.get(0).createStream());
    const h = hold();
    const waits = streams.map((s) => s.synchronizeAsync());
    // Outlive the 5 ms window while held: every one of them is with the thread now.
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(waitsPending(), 40);
    h.release();
    await Promise.all(waits);
    assert.equal(waitsPending(), 0);
    unhold();
    for (const s of streams) s.dispose();
  } finally {
    setKeepAwakeMs(before);
  }
});

test('exec.launchAndWait(): launches and resolves when the launch is done; refusals under its own name, before any launch', { skip }, async () => {
  const d = Device.get(0);
  const s = d.createStream();
  const k = Module.load(d, '// stand-in: any text\n').function('add2');
  const cap = StreamGraphCapture.begin(s);
  k.launch(s, { grid: 1, block: 32, args: [arg.i32(1)] });
  const exec = cap.end();
  const launches = lib!.counter('graph_launches');
  const before = launches();
  const h = hold();
  const p = exec.launchAndWait();
  assert.equal(launches() - before, 1);
  assert.equal(await settledWithin(p, 20), false, 'held');
  h.release();
  await p;
  unhold();
  await assert.rejects(exec.launchAndWait('nope' as never), (e: unknown) => e instanceof InvalidArgumentError && /^GraphExec\.launchAndWait: /.test((e as Error).message));
  const other = d.createStream();
  const capturing = StreamGraphCapture.begin(other);
  await assert.rejects(exec.launchAndWait(other), (e: unknown) => e instanceof InvalidArgumentError && /^GraphExec\.launchAndWait: .*capturing/.test((e as Error).message));
  assert.equal(other.isCapturing, true, 'the capture goes on');
  capturing.dispose();
  assert.equal(launches() - before, 1, 'nothing launched by a refusal');
  exec.dispose();
  await assert.rejects(exec.launchAndWait(), (e: unknown) => e instanceof DisposedError && /^GraphExec\.launchAndWait: /.test((e as Error).message));
  s.dispose();
  other.dispose();
});

test('cache.runAndWait() and graph.launchAndWait(): resolve when the work is done; refusals reject under their own names with nothing launched', { skip }, async () => {
  const d = Device.get(0);
  const s = d.createStream();
  const k = Module.load(d, '// stand-in: any text\n').function('add2');
  const cache = new GraphCache({ stream: s, pool: false, warmup: 0, buckets: [4, 8], capture: (st: Stream, n: number) => k.launch(st, { grid: 1, block: 32, args: [arg.i32(n)] }) });
  const launches = lib!.counter('graph_launches');
  const before = launches();
  const h = hold();
  const p = cache.runAndWait(3);
  assert.equal(await settledWithin(p, 20), false, 'held');
  h.release();
  const r = await p;
  assert.deepEqual([r.key, r.hit, launches() - before], [4, false, 1]);
  unhold();
  await assert.rejects(cache.runAndWait(9), (e: unknown) => e instanceof InvalidArgumentError && /^GraphCache\.runAndWait: /.test((e as Error).message));
  const g = r.graph!;
  await g.launchAndWait();
  assert.equal(launches() - before, 2);
  const other = d.createStream();
  await assert.rejects(g.launchAndWait(other), (e: unknown) => e instanceof InvalidArgumentError && /^CapturedGraph\.launchAndWait: /.test((e as Error).message));
  assert.equal(launches() - before, 2, 'nothing launched by a refusal');
  cache.dispose();
  await assert.rejects(cache.runAndWait(4), (e: unknown) => e instanceof DisposedError && /^GraphCache\.runAndWait: /.test((e as Error).message));
  other.dispose();
  s.dispose();
});
