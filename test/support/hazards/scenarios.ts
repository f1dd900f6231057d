/**
 * The hazard scenarios: each provokes one way a program could hang, crash or touch freed memory
 * (JS host functions in flight, forgotten captures, lifetimes of wrapped and disposed objects,
 * forged objects, detachable memory) and checks that cudagraph refuses or defers instead.
 *
 * They run in a child process each (`run-scenario.ts`), against the real driver on a GPU
 * (test/gpu/hazards.test.ts) and against the hazard stand-in driver on any machine
 * (test/cuda/hazards.test.ts), which ends the process with exit code 86 where the real driver
 * would hang. A scenario throws (an assertion) when cudagraph misbehaves and returns facts
 * otherwise.
 */
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import {
  Device,
  DeviceBuffer,
  DisposedError,
  GraphCaptureGuard,
  CapturePool,
  HostCallbackError,
  HostFunction,
  InvalidArgumentError,
  Module,
  PinnedHostBuffer,
  Stream,
  StreamGraphCapture,
  arg,
  type GraphExec,
} from '../../../src/index.js';
import { deferredCleanupCount } from '../../../src/cuda/core/lifetime.js';
import { activeCaptureCount } from '../../../src/cuda/core/capture-hooks.js';
import { hostFunctionLabel, hostTrampoline } from '../../../src/cuda/host/host-function.js';
import { QUEUE_LIMIT, STAGED_LIMIT, gate } from '../../../src/driver/host-gate.js';

/** Driver-side counters, where the driver can tell (the stand-in). */
export interface DriverCounters {
  readonly waits: number;
  readonly allocs: number;
  readonly frees: number;
  readonly loads: number;
  readonly unloads: number;
  readonly registers: number;
  readonly unregisters: number;
  readonly launches: number;
  readonly hostCallsRun: number;
}

/** What a scenario is given. */
export interface HazardContext {
  readonly device: Device;
  /** Kernels `empty_kernel()`, `fill_u32(p, v, n)`, `add_one(counter)` (the GPU fixtures, or stand-ins). */
  readonly module: Module;
  /** The module image, to load more modules. */
  readonly image: string;
  /** True on a real GPU. */
  readonly gpu: boolean;
  /** Keeps `stream` busy for about `ms` milliseconds (a spinning kernel; on the stand-in, a pause). */
  delay(stream: Stream, ms: number): void;
  /** The stand-in's counters, or null on a real driver. */
  readonly counters: (() => DriverCounters) | null;
  /** Collects garbage and lets finalizers run. */
  gc(): Promise<void>;
}

export type Scenario = (ctx: HazardContext) => Promise<Record<string, unknown>>;

const MiB = 1 << 20;

/** One turn of the event loop (deferred frees run on the turn after the last host call returned). */
function turn(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/** Waits, without any driver call, until `done()` holds (at most 10 s). */
async function until(done: () => boolean, what: string): Promise<void> {
  const t0 = Date.now();
  while (!done()) {
    if (Date.now() - t0 > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Asserts that `body` is refused because a host call is in flight, naming `driverCall`. */
function refusedPending(body: () => unknown, driverCall: string, message?: RegExp): HostCallbackError {
  let caught: unknown = null;
  try {
    body();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof HostCallbackError, `expected HostCallbackError for ${driverCall}, got ${String(caught)}`);
  assert.equal(caught.code, 'ERR_HOST_CALL_PENDING');
  assert.equal(caught.details.driverCall, driverCall);
  if (message !== undefined) assert.match(caught.message, message);
  return caught;
}

/** A host function that counts its calls. */
function counting(label: string): { hf: HostFunction; calls: () => number } {
  let n = 0;
  const hf = HostFunction.create(() => void n++, { label });
  return { hf, calls: () => n };
}

export const scenarios: Record<string, Scenario> = {
  /** Synchronous waits while a host call is pending are refused, naming it; the awaitable wait works. */
  async 'sync-while-pending'(ctx) {
    const s = ctx.device.createStream();
    const { hf, calls } = counting('tick');
    ctx.delay(s, 150);
    hf.launch(s);
    const ev = s.record();
    const waitsBefore = ctx.counters?.().waits;
    const e = refusedPending(() => s.synchronize(), 'cuStreamSynchronize', /^Stream\.synchronize: 1 JS host function call is in flight \('tick' \(1 call\)\)/);
    assert.match(e.message, /await stream\.synchronizeAsync\(\)/);
    refusedPending(() => ev.synchronize(), 'cuEventSynchronize', /^Event\.synchronize:/);
    refusedPending(() => ctx.device.synchronize(), 'cuCtxSynchronize', /^Device\.synchronize:/);
    if (ctx.counters) assert.equal(ctx.counters().waits, waitsBefore, 'no refused wait reached the driver');
    await s.synchronizeAsync();
    assert.equal(calls(), 1);
    assert.equal(gate.calls, 0);
    s.synchronize(); // allowed again
    hf.dispose();
    s.dispose();
    return { calls: calls() };
  },

  /** A host function that waits for the GPU is refused (it would wait for itself). */
  async 'sync-inside-host-function'(ctx) {
    const s = ctx.device.createStream();
    let caught: unknown = null;
    const hf = HostFunction.create(() => {
      try {
        s.synchronize();
      } catch (e) {
        caught = e;
      }
    }, { label: 'inner' });
    hf.launch(s);
    await s.synchronizeAsync();
    assert.ok(caught instanceof HostCallbackError && caught.code === 'ERR_HOST_CALL_PENDING', String(caught));
    assert.match((caught as Error).message, /inside a host function/);
    hf.dispose();
    s.dispose();
    return {};
  },

  /** Frees that wait for the GPU are deferred while a host call is pending, then run: nothing leaks. */
  async 'dispose-while-pending'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const base = deferredCleanupCount();
    const before = ctx.counters?.();
    const buf = DeviceBuffer.alloc(d, 64 * MiB);
    const mod = Module.load(d, ctx.image);
    const pin = PinnedHostBuffer.alloc(d, MiB);
    const freeWith = ctx.gpu ? d.memoryInfo().free : 0;
    const { hf, calls } = counting('slow');
    ctx.delay(s, 200);
    hf.launch(s);
    buf.dispose();
    mod.dispose();
    pin.dispose();
    assert.equal(deferredCleanupCount(), base + 3, 'the three frees wait');
    await s.synchronizeAsync();
    await turn();
    assert.equal(calls(), 1);
    assert.equal(deferredCleanupCount(), base, 'every deferred free ran');
    if (ctx.gpu) assert.ok(d.memoryInfo().free >= freeWith + 60 * MiB, 'the 64 MiB came back');
    if (ctx.counters) {
      const after = ctx.counters();
      assert.deepEqual([after.frees - before!.frees, after.unloads - before!.unloads, after.unregisters - before!.unregisters], [1, 1, 1]);
    }
    hf.dispose();
    s.dispose();
    return {};
  },

  /** A garbage-collection finalizer freeing a forgotten buffer while a host call is pending defers, not hangs. */
  async 'finalizer-while-pending'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const base = deferredCleanupCount();
    const freesBefore = ctx.counters?.().frees ?? 0;
    (() => {
      for (let i = 0; i < 4; i++) DeviceBuffer.alloc(d, MiB); // forgotten
    })();
    const { hf, calls } = counting('gc');
    ctx.delay(s, 500);
    hf.launch(s);
    await ctx.gc();
    const deferred = deferredCleanupCount() - base;
    assert.equal(calls(), 0, 'the host call is still pending');
    assert.ok(deferred >= 1, `the finalizers ran while the host call was pending (${deferred} deferred)`);
    await s.synchronizeAsync();
    await turn();
    assert.equal(deferredCleanupCount(), base);
    if (ctx.counters) assert.equal(ctx.counters().frees - freesBefore, 4);
    hf.dispose();
    s.dispose();
    return { deferredByFinalizers: deferred };
  },

  /** A CapturePool torn down while a pooled graph's host node is pending waits, then releases everything. */
  async 'pool-teardown-while-pending'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const base = deferredCleanupCount();
    const pool = new CapturePool();
    const { hf, calls } = counting('pooled');
    let graph;
    {
      using guard = GraphCaptureGuard.beginWithPool(s, pool);
      const tmp = DeviceBuffer.allocAsync(s, 4096);
      tmp.memsetAsync(s, 1);
      hf.launch(s);
      graph = guard.finish();
    }
    ctx.delay(s, 200);
    graph.launch();
    graph.dispose();
    pool.dispose();
    hf.dispose();
    assert.ok(deferredCleanupCount() > base, 'the pool teardown waits');
    await s.synchronizeAsync();
    await turn();
    assert.equal(calls(), 1);
    assert.equal(deferredCleanupCount(), base);
    assert.equal(pool.released, true);
    s.dispose();
    return {};
  },

  /** Enqueues behind a pending host call stop below the driver's queue, instead of blocking for ever. */
  async 'queue-behind-pending'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const k = ctx.module.function('empty_kernel');
    const p = k.prepare({ grid: 1, block: 1, args: [] });
    const seq = s.sequence([p, p]);
    const buf = DeviceBuffer.alloc(d, 4096);
    let exec: GraphExec;
    {
      using cap = StreamGraphCapture.begin(s);
      p.launch(s);
      exec = cap.end();
    }
    const { hf, calls } = counting('gatekeeper');
    ctx.delay(s, 300);
    hf.launch(s);
    const launchesBefore = ctx.counters?.().launches ?? 0;
    for (let i = 0; i < QUEUE_LIMIT; i++) p.launch(s);
    const e = refusedPending(() => p.launch(s), 'cuLaunchKernel', /1000 operations were submitted since/);
    assert.deepEqual([e.details.queued, e.details.limit], [QUEUE_LIMIT, QUEUE_LIMIT]);
    refusedPending(() => seq.launch(), 'cuLaunchKernel', /^LaunchSequence\.launch:/);
    refusedPending(() => k.launch(s, { grid: 1, block: 1, args: [] }), 'cuLaunchKernel', /^Kernel\.launch:/);
    refusedPending(() => exec.launch(s), 'cuGraphLaunch', /^GraphExec\.launch:/);
    refusedPending(() => buf.memsetAsync(s, 0), 'cuMemsetD8Async', /^DeviceBuffer\.memsetAsync:/);
    if (ctx.counters) assert.equal(ctx.counters().launches - launchesBefore, QUEUE_LIMIT, 'the refused launches made no driver call');
    await s.synchronizeAsync();
    assert.equal(calls(), 1);
    p.launch(s);
    seq.launch();
    exec.launch(s);
    await s.synchronizeAsync();
    for (const x of [exec, seq, p, buf, hf, s]) x.dispose();
    return { limit: QUEUE_LIMIT };
  },

  /** A host function disposed right after an eager launch still runs: the call keeps it alive. */
  async 'dispose-host-function-after-launch'(ctx) {
    const s = ctx.device.createStream();
    const { hf, calls } = counting('late');
    ctx.delay(s, 100);
    hf.launch(s);
    hf.dispose();
    assert.equal(hf.callsInFlight, 1);
    await s.synchronizeAsync(); // would reject with "called after it was released"
    assert.equal(calls(), 1);
    assert.equal(hostFunctionLabel(hostTrampoline(), BigInt(hf.id)), null, 'released once the call ran');
    s.dispose();
    return {};
  },

  /** A graph with a host node, disposed right after its launch, keeps its host function until the call ran. */
  async 'graph-host-node'(ctx) {
    const s = ctx.device.createStream();
    const { hf, calls } = counting('node');
    let exec: GraphExec;
    {
      using cap = StreamGraphCapture.begin(s);
      hf.launch(s);
      exec = cap.end();
    }
    hf.dispose();
    ctx.delay(s, 150);
    exec.launch();
    exec.dispose();
    refusedPending(() => s.synchronize(), 'cuStreamSynchronize', /'node' \(1 call\)/);
    await s.synchronizeAsync();
    assert.equal(calls(), 1);
    s.dispose();
    return {};
  },

  /** Calls that wait for the GPU are refused while a host call is pending: loading a module, pageable and synchronous copies. */
  async 'waiting-calls-while-pending'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const buf = DeviceBuffer.alloc(d, 4096);
    const host = new Uint8Array(4096);
    const pin = PinnedHostBuffer.alloc(d, 4096);
    const { hf } = counting('blocker');
    ctx.delay(s, 200);
    hf.launch(s);
    refusedPending(() => Module.load(d, ctx.image), 'cuModuleLoadDataEx', /^Module\.load:/);
    refusedPending(() => buf.copyToHostAsync(s, host), 'cuMemcpyDtoHAsync_v2 (into pageable memory)');
    // Small copies from pageable memory are staged by the driver at once: allowed, up to STAGED_LIMIT bytes.
    buf.copyFromHostAsync(s, host);
    const big = DeviceBuffer.alloc(d, STAGED_LIMIT);
    const e = refusedPending(() => big.copyFromHostAsync(s, new Uint8Array(STAGED_LIMIT)), 'cuMemcpyHtoDAsync_v2 (from pageable memory)', /can stage without waiting for the GPU \(4096 staged/);
    assert.deepEqual([e.details.staged, e.details.stagedLimit], [4096, STAGED_LIMIT]);
    refusedPending(() => buf.copyToHost(host), 'cuMemcpyDtoH_v2');
    refusedPending(() => buf.copyFromHost(host), 'cuMemcpyHtoD_v2');
    buf.copyToHostAsync(s, pin.bytes); // pinned: queued, allowed
    buf.copyFromHostAsync(s, pin.bytes);
    await s.synchronizeAsync();
    buf.copyToHost(host); // allowed again
    big.copyFromHostAsync(s, new Uint8Array(STAGED_LIMIT));
    await s.synchronizeAsync();
    for (const x of [buf, big, pin, hf, s]) x.dispose();
    return {};
  },

  /** Pinned memory cannot be transferred away while the driver may write into it. */
  async 'pinned-not-detachable'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const pin = PinnedHostBuffer.alloc(d, 8192);
    const sab = pin.bytes.buffer;
    assert.throws(() => structuredClone(sab, { transfer: [sab as unknown as ArrayBuffer] }));
    const { port1, port2 } = new MessageChannel();
    assert.throws(() => port1.postMessage(sab, [sab as unknown as ArrayBuffer]));
    port1.close();
    port2.close();
    assert.equal(pin.bytes.byteLength, 8192, 'still attached');
    if (ctx.gpu) {
      // A replayed copy lands in the pinned memory, where the program reads it.
      const buf = DeviceBuffer.alloc(d, 8192);
      buf.memsetAsync(s, 0x5a);
      let exec: GraphExec;
      {
        using cap = StreamGraphCapture.begin(s);
        buf.copyToHostAsync(s, pin.bytes);
        exec = cap.end();
      }
      exec.launch();
      await s.synchronizeAsync();
      assert.equal(pin.bytes[0], 0x5a);
      assert.equal(pin.bytes[8191], 0x5a);
      exec.dispose();
      buf.dispose();
    }
    pin.dispose();
    s.dispose();
    return {};
  },

  /** A capture dropped without end() or dispose() is abandoned when collected: frees held back run. */
  async 'forgotten-capture'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const base = deferredCleanupCount();
    const pool = new CapturePool();
    const buf = DeviceBuffer.alloc(d, MiB); // before the captures: cuMemAlloc would invalidate a global one
    (() => {
      StreamGraphCapture.begin(s, 'global'); // forgotten
    })();
    const s2 = d.createStream();
    (() => {
      GraphCaptureGuard.beginWithPool(s2, pool); // forgotten too
    })();
    assert.equal(s.isCapturing, true);
    buf.dispose();
    assert.equal(deferredCleanupCount(), base + 1, 'held back while the captures are active');
    assert.equal(pool.holderCount, 1);
    for (let i = 0; i < 5 && activeCaptureCount() > 0; i++) await ctx.gc();
    assert.equal(activeCaptureCount(), 0, 'the forgotten captures were abandoned');
    assert.equal(s.isCapturing, false);
    assert.equal(s2.isCapturing, false);
    assert.equal(deferredCleanupCount(), base, 'the held-back free ran');
    assert.equal(pool.holderCount, 0, "the forgotten guard's hold on the pool was released");
    s.synchronize(); // the stream runs work again
    pool.dispose();
    s.dispose();
    s2.dispose();
    return {};
  },

  /** end() ends the capture even when the stream was disposed or an unrelated error waits, and reports that error. */
  async 'end-always-ends'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const buf = DeviceBuffer.alloc(d, 4096);
    const base = deferredCleanupCount();
    const cap = StreamGraphCapture.begin(s);
    buf.memsetAsync(s, 1);
    s.dispose();
    assert.equal(deferredCleanupCount(), base + 1, "the stream's destroy waits for the capture");
    assert.throws(() => cap.end(), (e: unknown) => e instanceof DisposedError && /^StreamGraphCapture\.end: /.test(e.message) && /graph discarded/.test(e.message));
    assert.equal(cap.isActive(), false);
    assert.equal(activeCaptureCount(), 0);
    assert.equal(deferredCleanupCount(), base, "the stream's deferred destroy ran");

    // An unrelated host function throws while a capture is active: end() still ends it, then reports.
    const s2 = d.createStream();
    const s3 = d.createStream();
    const bad = HostFunction.create(() => {
      throw new Error('unrelated');
    }, { label: 'bad' });
    ctx.delay(s3, 50);
    bad.launch(s3);
    const cap2 = StreamGraphCapture.begin(s2, 'relaxed');
    buf.memsetAsync(s2, 2);
    await until(() => bad.calls === 1 && gate.calls === 0, 'the failing host function');
    assert.throws(() => cap2.end(), (e: unknown) => e instanceof HostCallbackError && e.code === 'ERR_HOST_CALLBACK_FAILED' && /graph discarded/.test(e.message));
    assert.equal(cap2.isActive(), false);
    assert.equal(s2.isCapturing, false);
    assert.equal(activeCaptureCount(), 0);
    s2.synchronize(); // the stream is not left capturing: a capture would refuse this
    for (const x of [buf, bad, s2, s3]) x.dispose();
    return {};
  },

  /** A wrap of a cudagraph stream is tied to it: shares its capture, refuses use after it is disposed. */
  async 'wrapped-streams'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const w = Stream.wrap(d, s.handle);
    const buf = DeviceBuffer.alloc(d, 4096);
    const p = ctx.module.function('empty_kernel').prepare({ grid: 1, block: 1, args: [] });
    // Work through the wrap is recorded by a capture of the stream, and kept alive by its graph.
    const cap = StreamGraphCapture.begin(s);
    assert.equal(w.isCapturing, true);
    buf.memsetAsync(w, 3);
    p.launch(w);
    const exec = cap.end();
    assert.equal(w.isCapturing, false);
    assert.equal(exec.nodeCount, 2);
    exec.dispose();
    p.launch(w); // warm the fast path on the wrap
    const launches = ctx.counters?.().launches ?? 0;
    s.dispose();
    assert.equal(w.disposed, true);
    assert.throws(() => p.launch(w), (e: unknown) => e instanceof DisposedError && /^PreparedLaunch\.launch: /.test(e.message));
    assert.throws(() => w.query(), DisposedError);
    if (ctx.counters) assert.equal(ctx.counters().launches, launches, 'nothing reached the driver with the destroyed handle');
    // A capture's default stream disposed: the exec refuses, it does not switch streams.
    const s2 = d.createStream();
    let exec2: GraphExec;
    {
      using cap2 = StreamGraphCapture.begin(s2);
      p.launch(s2);
      exec2 = cap2.end();
    }
    s2.dispose();
    assert.throws(() => exec2.launch(), (e: unknown) => e instanceof DisposedError && /default stream/.test(e.message));
    const s3 = d.createStream();
    exec2.launch(s3);
    await s3.synchronizeAsync();
    for (const x of [exec2, p, buf, s3]) x.dispose();
    return {};
  },

  /** Forged objects are refused with typed errors, never used (a forged device crashed the process). */
  async 'forged-objects'(ctx) {
    const d = ctx.device;
    const s = d.createStream();
    const forgedDevice = Object.create(Device.prototype) as Device;
    const forgedStream = Object.create(Stream.prototype) as Stream;
    const forgedBuffer = Object.create(DeviceBuffer.prototype) as DeviceBuffer;
    const isRefusal = (name: RegExp) => (e: unknown) => e instanceof InvalidArgumentError && name.test(e.message) && /did not make it/.test(e.message);
    assert.throws(() => Stream.wrap(forgedDevice, 5n), isRefusal(/^Stream\.wrap: device must be a Device/));
    assert.throws(() => Stream.wrap({ context: 1n } as unknown as Device, 5n), InvalidArgumentError);
    assert.throws(() => DeviceBuffer.alloc(forgedDevice, 16), isRefusal(/^DeviceBuffer\.alloc:/));
    assert.throws(() => PinnedHostBuffer.alloc(forgedDevice, 16), isRefusal(/^PinnedHostBuffer\.alloc:/));
    assert.throws(() => Module.load(forgedDevice, ctx.image), isRefusal(/^Module\.load:/));
    assert.throws(() => StreamGraphCapture.begin(forgedStream), isRefusal(/^StreamGraphCapture\.begin:/));
    const { hf } = counting('forged');
    assert.throws(() => hf.launch(forgedStream), isRefusal(/^HostFunction\.launch:/));
    const k = ctx.module.function('fill_u32');
    assert.throws(() => k.launch(s, { grid: 1, block: 1, args: [forgedBuffer] }), InvalidArgumentError);
    const buf = DeviceBuffer.alloc(d, 16);
    assert.throws(() => buf.copyFromDeviceAsync(s, forgedBuffer), isRefusal(/^DeviceBuffer\.copyFromDeviceAsync:/));
    assert.throws(() => s.wait(Object.create(Object.getPrototypeOf(s.record())) as never), InvalidArgumentError);
    assert.throws(() => new (Stream as unknown as new (k: symbol) => Stream)(Symbol('x')), (e: unknown) => e instanceof InvalidArgumentError && /^new Stream: /.test(e.message));
    await s.synchronizeAsync();
    for (const x of [buf, hf, s]) x.dispose();
    return {};
  },
};

/** What the random interleavings may throw: the refusals and reports of host calls, nothing else. */
function allowed(e: unknown): string {
  if (e instanceof HostCallbackError) return e.code;
  throw e;
}

/** Lets every host call run and every deferred free go; ignores the reports of host functions that threw. */
async function settle(ctx: HazardContext, streams: readonly Stream[]): Promise<void> {
  for (let round = 0; round < 50; round++) {
    for (const s of streams) await s.synchronizeAsync().catch(allowed);
    await ctx.gc();
    await turn();
    if (gate.calls === 0 && deferredCleanupCount() === 0 && activeCaptureCount() === 0) return;
  }
  throw new Error(`did not settle: ${gate.calls} host calls in flight, ${deferredCleanupCount()} frees deferred, ${activeCaptureCount()} captures`);
}

scenarios['random-interleavings'] = async (ctx) => {
  const steps = Number(process.env['HAZARD_STEPS'] ?? 2000);
  const seed = Number(process.env['HAZARD_SEED'] ?? 42);
  const d = ctx.device;
  const streams = [d.createStream(), d.createStream()];
  const fill = ctx.module.function('fill_u32');
  const bufs: DeviceBuffer[] = [];
  const pins: PinnedHostBuffer[] = [];
  const mods: Module[] = [];
  const execs: GraphExec[] = [];
  const outcomes: Record<string, number> = {};
  const note = (what: string): void => void (outcomes[what] = (outcomes[what] ?? 0) + 1);
  let hostRuns = 0;
  const hosts = [
    HostFunction.create(() => void hostRuns++, { label: 'count' }),
    HostFunction.create(() => {
      throw new Error('a host function that throws');
    }, { label: 'throws' }),
    HostFunction.create(() => {
      try {
        streams[0]!.synchronize();
      } catch (e) {
        note(`inside:${allowed(e)}`);
      }
    }, { label: 'waits inside' }),
  ];
  const kinds = [
    'alloc', 'dispose', 'forget', 'kernel', 'host', 'sync', 'syncAsync', 'eventSync', 'gc', 'delay', 'capture',
    'launchExec', 'disposeExec', 'forgetExec', 'module', 'pinned', 'copyPinned', 'copyPageable', 'forgetCapture', 'flood',
  ] as const;
  const fc = (await import('fast-check')).default;
  const plan = fc.sample(fc.array(fc.tuple(fc.constantFrom(...kinds), fc.nat(1_000_000)), { minLength: steps, maxLength: steps }), { numRuns: 1, seed })[0]!;
  const pick = <T>(xs: T[], r: number): T | undefined => (xs.length === 0 ? undefined : xs[r % xs.length]);
  const take = <T>(xs: T[], r: number): T | undefined => (xs.length === 0 ? undefined : xs.splice(r % xs.length, 1)[0]);

  const step = async (kind: (typeof kinds)[number], r: number): Promise<void> => {
    const s = streams[r % streams.length]!;
    switch (kind) {
      case 'alloc':
        if (bufs.length < 32) bufs.push(DeviceBuffer.alloc(d, 4096 * (1 + (r % 256))));
        return;
      case 'dispose':
        take(bufs, r)?.dispose();
        return;
      case 'forget':
        take(bufs, r); // left to the garbage collector
        return;
      case 'kernel': {
        const b = pick(bufs, r);
        if (b !== undefined) fill.launch(s, { grid: 1, block: 64, args: [b, arg.u32(r), arg.i32(64)] });
        return;
      }
      case 'host':
        pick(hosts, r)!.launch(s);
        return;
      case 'sync':
        s.synchronize();
        return;
      case 'syncAsync':
        await s.synchronizeAsync();
        return;
      case 'eventSync':
        s.record().synchronize();
        return;
      case 'gc':
        (globalThis as { gc?: () => void }).gc?.();
        return;
      case 'delay':
        ctx.delay(s, 1);
        return;
      case 'capture': {
        const b = pick(bufs, r);
        if (b === undefined || execs.length >= 8) return;
        const cap = StreamGraphCapture.begin(s, 'global');
        try {
          fill.launch(s, { grid: 1, block: 64, args: [b, arg.u32(r), arg.i32(64)] });
          if (r % 3 === 0) hosts[0]!.launch(s);
        } catch (e) {
          cap.dispose();
          throw e;
        }
        execs.push(cap.end());
        return;
      }
      case 'launchExec':
        pick(execs, r)?.launch(s);
        return;
      case 'disposeExec':
        take(execs, r)?.dispose();
        return;
      case 'forgetExec':
        take(execs, r);
        return;
      case 'module':
        if (r % 2 === 0 && mods.length < 4) mods.push(Module.load(d, ctx.image));
        else take(mods, r)?.dispose();
        return;
      case 'pinned':
        if (r % 2 === 0 && pins.length < 4) pins.push(PinnedHostBuffer.alloc(d, 65536));
        else take(pins, r)?.dispose();
        return;
      case 'copyPinned': {
        const b = pick(bufs, r);
        const p = pick(pins, r);
        if (b !== undefined && p !== undefined) b.copyToHostAsync(s, p.bytes, { byteLength: Math.min(b.byteLength, p.byteLength) });
        return;
      }
      case 'copyPageable': {
        const b = pick(bufs, r);
        if (b !== undefined) b.copyFromHostAsync(s, new Uint8Array(64));
        return;
      }
      case 'forgetCapture': {
        const side = d.createStream();
        StreamGraphCapture.begin(side, 'relaxed'); // forgotten: abandoned when collected
        side.dispose(); // its destroy waits for the capture to go
        return;
      }
      case 'flood': {
        const b = pick(bufs, r);
        if (b === undefined) return;
        for (let i = 0; i < 300; i++) fill.launch(s, { grid: 1, block: 64, args: [b, arg.u32(i), arg.i32(64)] });
        return;
      }
    }
  };

  const run = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      const [kind, r] = plan[i]!;
      try {
        await step(kind, r);
        note(kind);
      } catch (e) {
        note(`${kind}:${allowed(e)}`);
      }
    }
  };
  const disposeAll = (): void => {
    for (const x of [...bufs.splice(0), ...pins.splice(0), ...mods.splice(0), ...execs.splice(0)]) x.dispose();
  };
  const measure = (): { deviceFree: number; rss: number } => ({ deviceFree: ctx.gpu ? d.memoryInfo().free : 0, rss: process.memoryUsage().rss });

  const warm = Math.min(200, Math.floor(steps / 10));
  await run(0, warm);
  disposeAll();
  await settle(ctx, streams);
  const before = measure();
  const countersBefore = ctx.counters?.();
  await run(warm, steps);
  disposeAll();
  await settle(ctx, streams);
  const after = measure();
  const MiB_ = 1 << 20;
  const deviceDrift = (before.deviceFree - after.deviceFree) / MiB_;
  const rssDrift = (after.rss - before.rss) / MiB_;
  if (ctx.gpu) assert.ok(Math.abs(deviceDrift) <= 64, `device free memory drifted by ${deviceDrift.toFixed(1)} MiB`);
  assert.ok(rssDrift <= 96, `RSS grew by ${rssDrift.toFixed(1)} MiB`);
  if (ctx.counters) {
    const c = ctx.counters();
    const b = countersBefore!;
    assert.ok(c.hostCallsRun > b.hostCallsRun, 'host calls ran');
    // Everything made in the measured steps was released: the stand-in's analogue of flat memory.
    assert.equal(c.frees - b.frees, c.allocs - b.allocs, 'every device allocation was freed');
    assert.equal(c.unloads - b.unloads, c.loads - b.loads, 'every module was unloaded');
    assert.equal(c.unregisters - b.unregisters, c.registers - b.registers, 'every pinned buffer was unregistered');
  }
  for (const h of hosts) h.dispose();
  for (const s of streams) s.dispose();
  return { steps, seed, hostRuns, deviceDriftMiB: Number(deviceDrift.toFixed(1)), rssDriftMiB: Number(rssDrift.toFixed(1)), outcomes };
};

/** Scenarios that need a real GPU (the stand-in driver cannot fault). */
export const gpuOnly: ReadonlySet<string> = new Set(['sticky-error']);

/** After a sticky error the driver runs no more work: host calls that will never run stop closing the gate. */
scenarios['sticky-error'] = async (ctx) => {
  const d = ctx.device;
  const trap = Module.compile(d, 'extern "C" __global__ void trap_now() { __trap(); }').function('trap_now');
  const s = d.createStream();
  const buf = DeviceBuffer.alloc(d, MiB);
  const { hf, calls } = counting('never');
  trap.launch(s, { grid: 1, block: 1, args: [] });
  hf.launch(s);
  assert.equal(gate.calls, 1);
  let code = 0;
  await assert.rejects(s.synchronizeAsync(), (e: unknown) => {
    code = (e as { code?: number }).code ?? 0;
    return e instanceof Error && [700, 714, 715, 716, 717, 718, 719].includes(code);
  });
  assert.equal(gate.calls, 0, 'the host call that will never run no longer holds the gate closed');
  buf.dispose(); // cuMemFree in a dead context returns at once (its error is kept), it does not hang
  assert.equal(calls(), 0);
  assert.equal(deferredCleanupCount(), 0);
  return { code };
};
