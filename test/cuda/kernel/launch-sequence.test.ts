/**
 * `LaunchSequence` on the CPU, through the public object layer, against a stand-in for libcuda
 * compiled here with gcc: it answers the calls that create a device, streams, a module, kernels
 * and buffers with made-up handles, and writes down every `cuLaunchKernel` it receives (function,
 * grid, block, stream, the first argument's value, the context current at the call). Each check
 * runs on both bindings (the Node-API addon and koffi) and compares them. test/gpu runs the same
 * behaviour on the real driver.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Device, DeviceBuffer, Module, LaunchSequence, InvalidArgumentError, DisposedError, CudaError, arg } from '../../../src/index.js';
import type { PreparedLaunch, Stream, Kernel } from '../../../src/index.js';
import { bindings, onBinding } from '../../support/bindings.js';
import { CAPTURE, LIFETIME } from '../../../src/cuda/core/internal.js';
import { captureStarted, captureEnded, type CaptureSink } from '../../../src/cuda/core/capture-hooks.js';
import type { Lifetime } from '../../../src/cuda/core/lifetime.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const gcc = spawnSync('gcc', ['--version']).status === 0;

/**
 * The stand-in's launch: writes down each one. The rest of the stand-in (device, context, streams,
 * buffers, modules, capture) is fixtures/stand-in-driver.c, built with two devices.
 */
const RECORDING_LAUNCH = `
#include <stdint.h>
typedef unsigned long long u64;
extern u64 launches, current_ctx;
/* per launch: f, grid x, block x, stream, the first argument (as u32), the current context */
u64 launch_log[6 * 512];
/* launch number fail_at (1-based, counted from the start; 0: none) answers fail_rc */
int fail_at, fail_rc;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shm, void *stream, void **params, void **extra) {
  (void)gy; (void)gz; (void)by; (void)bz; (void)shm; (void)extra;
  u64 k = launches++;
  if (k < 512) {
    u64 *e = &launch_log[6 * k];
    e[0] = (uintptr_t)f; e[1] = gx; e[2] = bx; e[3] = (uintptr_t)stream;
    e[4] = params ? *(const uint32_t *)params[0] : ~0ull; e[5] = current_ctx;
  }
  return fail_at != 0 && (u64)fail_at == k + 1 ? fail_rc : 0;
}
`;
const SHARED_STAND_IN = fileURLToPath(new URL('../../../../fixtures/stand-in-driver.c', import.meta.url));

/** One launch as the stand-in saw it. */
interface Seen {
  readonly fn: bigint;
  readonly grid: number;
  readonly block: number;
  readonly stream: bigint;
  readonly tag: number;
  readonly ctx: bigint;
}

/** The stand-in, built and loaded as the driver of this process (this file runs in its own process). */
function standIn(): { seen: () => Seen[]; count: () => number; failAt: (k: number, rc: number) => void; close: () => void } | null {
  if (!gcc) return null;
  const dir = mkdtempSync(join(tmpdir(), 'cg-stand-in-'));
  writeFileSync(join(dir, 'launch.c'), RECORDING_LAUNCH);
  const so = join(dir, 'libcuda-stand-in.so');
  const cc = spawnSync(
    'gcc',
    ['-O1', '-fPIC', '-shared', '-Wall', '-DSTAND_IN_DEVICES=2', '-DSTAND_IN_OWN_LAUNCH', '-o', so, SHARED_STAND_IN, join(dir, 'launch.c')],
    { encoding: 'utf8' },
  );
  assert.equal(cc.status, 0, cc.stderr);
  process.env['CUDA_DRIVER_PATH'] = so;
  const lib = koffi.load(so);
  const log = new BigUint64Array(koffi.view(lib.symbol('launch_log') as bigint, 6 * 512 * 8));
  const n = new BigUint64Array(koffi.view(lib.symbol('launches') as bigint, 8));
  const failAtAddress = lib.symbol('fail_at') as bigint;
  const failRcAddress = lib.symbol('fail_rc') as bigint;
  return {
    count: () => Number(n[0]),
    seen: () =>
      Array.from({ length: Math.min(512, Number(n[0])) }, (_, k) => ({
        fn: log[6 * k]!,
        grid: Number(log[6 * k + 1]),
        block: Number(log[6 * k + 2]),
        stream: log[6 * k + 3]!,
        tag: Number(log[6 * k + 4]),
        ctx: log[6 * k + 5]!,
      })),
    failAt: (k, rc) => {
      koffi.encode(failAtAddress, 'int', k);
      koffi.encode(failRcAddress, 'int', rc);
    },
    close: () => rmSync(dir, { recursive: true }),
  };
}

const driver = standIn();
const skip = driver === null && 'gcc is absent';
process.on('exit', () => driver?.close());


/** The launches made while `body` ran. */
function launchesDuring(body: () => void): Seen[] {
  const before = driver!.count();
  body();
  return driver!.seen().slice(before);
}

/** A capture sink that writes down what it is told (what `StreamGraphCapture` implements). */
class RecordingSink implements CaptureSink {
  readonly retained: Lifetime[] = [];
  readonly errors: CudaError[] = [];
  retain(life: Lifetime): void {
    this.retained.push(life);
  }
  noteError(error: CudaError): void {
    this.errors.push(error);
  }
  join(): void {}
  allocate(): null {
    return null;
  }
  allocated(): void {}
}

/** Runs `body` with `streams` recording into a new sink, registered as an active capture. */
function capturing(streams: Stream[], body: () => void): RecordingSink {
  const sink = new RecordingSink();
  captureStarted(sink);
  for (const s of streams) s[CAPTURE] = sink;
  try {
    body();
  } finally {
    for (const s of streams) s[CAPTURE] = null;
    captureEnded(sink);
  }
  return sink;
}

const PTX = '//\n.version 8.0\n.target sm_90\n.address_size 64\n';

/** The shared fixtures: device 0, two streams, a module of three kernels and a buffer. */
function fixtures(): { s1: Stream; s2: Stream; ka: Kernel; kb: Kernel; kc: Kernel; buf: DeviceBuffer } {
  const d = Device.get(0);
  const m = Module.load(d, PTX);
  return { s1: d.createStream(), s2: d.createStream(), ka: m.function('ka'), kb: m.function('kb'), kc: m.function('kc'), buf: DeviceBuffer.alloc(d, 256) };
}

/** Three launches tagged 1, 2, 3 (their first argument), with different shapes. */
function prepareThree(f: ReturnType<typeof fixtures>): [PreparedLaunch, PreparedLaunch, PreparedLaunch] {
  return [
    f.ka.prepare({ grid: 1, block: 32, args: [arg.u32(1), f.buf] }),
    f.kb.prepare({ grid: 2, block: 64, args: [arg.u32(2)] }),
    f.kc.prepare({ grid: 3, block: 96, args: [arg.u32(3), f.buf] }),
  ];
}

/** a, b, a, c, b: a and c on s1, b on s2 (a repeats; two streams). */
function fiveEntries(f: ReturnType<typeof fixtures>, a: PreparedLaunch, b: PreparedLaunch, c: PreparedLaunch): { launch: PreparedLaunch; stream: Stream }[] {
  return [
    { launch: a, stream: f.s1 },
    { launch: b, stream: f.s2 },
    { launch: a, stream: f.s1 },
    { launch: c, stream: f.s1 },
    { launch: b, stream: f.s2 },
  ];
}

test('a sequence launches every entry in order, exactly as launching each would, on both bindings', { skip }, () => {
  const f = fixtures();
  const runs: Seen[][] = [];
  for (const [name, hot] of bindings()) {
    onBinding(hot, () => {
      const [a, b, c] = prepareThree(f);
      const entries = fiveEntries(f, a, b, c);
      const one = launchesDuring(() => entries.forEach((e) => e.launch.launch(e.stream)));
      using seq = new LaunchSequence(entries);
      assert.equal(seq.native, hot !== null, name);
      assert.equal(seq.length, 5);
      assert.deepEqual(seq.entries, entries);
      assert.ok(Object.isFrozen(seq.entries));
      // Another device made current in between: the sequence makes its own current again.
      Device.get(1);
      const batched = launchesDuring(() => seq.launch());
      assert.deepEqual(batched, one, `${name}: the same calls as one launch at a time`);
      assert.deepEqual(
        batched.map((x) => [x.fn, x.grid, x.block, x.stream, x.tag, x.ctx]),
        [
          [f.ka.handle, 1, 32, f.s1.handle, 1, 0xc0n],
          [f.kb.handle, 2, 64, f.s2.handle, 2, 0xc0n],
          [f.ka.handle, 1, 32, f.s1.handle, 1, 0xc0n],
          [f.kc.handle, 3, 96, f.s1.handle, 3, 0xc0n],
          [f.kb.handle, 2, 64, f.s2.handle, 2, 0xc0n],
        ],
        name,
      );
      // setArg rewrites the block in place: the next submission sees it.
      a.setArg(0, arg.u32(11));
      const after = launchesDuring(() => seq.launch());
      assert.deepEqual(after.map((x) => x.tag), [11, 2, 11, 3, 2], name);
      // stream.sequence is the same thing on one stream; a launch may repeat.
      using onOne = f.s2.sequence([c, c, b]);
      assert.deepEqual(launchesDuring(() => onOne.launch()).map((x) => [x.tag, x.stream]), [[3, f.s2.handle], [3, f.s2.handle], [2, f.s2.handle]], name);
      runs.push([...batched, ...after]);
      // An empty sequence launches nothing and needs no driver.
      using empty = new LaunchSequence([]);
      assert.deepEqual(launchesDuring(() => empty.launch()), []);
      for (const l of [a, b, c]) l.dispose();
    });
  }
  if (runs.length === 2) assert.deepEqual(runs[0], runs[1], 'the addon and koffi made the same calls');
});

test('entry k refused: a CudaError naming the entry, entries before it submitted, none after; the same on both bindings', { skip }, () => {
  const f = fixtures();
  const messages: string[] = [];
  for (const [name, hot] of bindings()) {
    onBinding(hot, () => {
      const [a, b, c] = prepareThree(f);
      using seq = new LaunchSequence(fiveEntries(f, a, b, c));
      driver!.failAt(driver!.count() + 4, 1);
      let thrown: unknown;
      const seen = launchesDuring(() => {
        try {
          seq.launch();
        } catch (e) {
          thrown = e;
        }
      });
      driver!.failAt(0, 0);
      assert.ok(thrown instanceof CudaError, `${name}: ${String(thrown)}`);
      assert.equal(thrown.code, 1);
      assert.equal(thrown.operation, 'LaunchSequence.launch');
      assert.equal(thrown.driverCall, 'cuLaunchKernel');
      assert.deepEqual({ ...thrown.details }, { index: 3, kernel: 'kc', submitted: 3, entries: 5 }, name);
      assert.match(thrown.message, /^LaunchSequence\.launch: CUDA_ERROR_INVALID_VALUE \(1\): .*\[cuLaunchKernel\]\nentry 3 of 5 \(kernel 'kc' on Stream\(0x[0-9a-f]+ on device 0\)\) failed: entries 0–2 were submitted; entry 4 was not$/s);
      assert.deepEqual(seen.map((x) => x.tag), [1, 2, 1, 3], `${name}: three submitted, the fourth refused, the fifth never tried`);
      messages.push(thrown.message);
      // The first entry refused, and the last.
      for (const [at, text] of [[1, 'entry 0 of 5 (kernel \'ka\''], [5, 'entries 0–3 were submitted']] as const) {
        driver!.failAt(driver!.count() + at, 2);
        assert.throws(() => seq.launch(), (e: unknown) => e instanceof CudaError && e.code === 2 && e.message.includes(text) && e.details['index'] === at - 1, `${name} ${at}`);
        driver!.failAt(0, 0);
      }
      assert.match(String(messages.at(-1)), /failed: entries 0–2 were submitted; entry 4 was not/);
      // The sequence is usable again.
      assert.equal(launchesDuring(() => seq.launch()).length, 5);
      for (const l of [a, b, c]) l.dispose();
    });
  }
  if (messages.length === 2) assert.equal(messages[0], messages[1]);
});

test('under capture: the same resources registered as by single launches, once per capture; a capture error is recorded with the caller\'s stack', { skip }, () => {
  const f = fixtures();
  for (const [name, hot] of bindings()) {
    onBinding(hot, () => {
      const [a, b, c] = prepareThree(f);
      const entries = fiveEntries(f, a, b, c);
      using seq = new LaunchSequence(entries);
      const what = (sink: RecordingSink): string[] => sink.retained.map((l) => l.what);
      const single = capturing([f.s1], () => entries.forEach((e) => e.launch.launch(e.stream)));
      const batched = capturing([f.s1], () => seq.launch());
      assert.deepEqual(what(batched), what(single), name);
      // a and c on the capturing stream: module and buffer each, once per launch per capture; b's stream is not capturing.
      assert.deepEqual(what(batched), [a, a, c, c].map((_, i) => (i % 2 === 0 ? f.ka.module[LIFETIME].what : f.buf[LIFETIME].what)), name);
      const both = capturing([f.s1, f.s2], () => {
        seq.launch();
        seq.launch();
      });
      assert.equal(both.retained.length, 5, `${name}: a (module, buffer), b (module) and c (module, buffer), once each`);
      // 906 at entry 3 (c): a was submitted and registers; c did not and does not.
      const failing = (run: () => void): RecordingSink =>
        capturing([f.s1], () => {
          driver!.failAt(driver!.count() + 4, 906);
          try {
            assert.throws(run, (e: unknown) => e instanceof CudaError && e.code === 906);
          } finally {
            driver!.failAt(0, 0);
          }
        });
      const singleFailure = failing(() => entries.forEach((e) => e.launch.launch(e.stream)));
      const sequenceFailure = failing(() => seq.launch());
      assert.deepEqual(what(sequenceFailure), what(singleFailure), name);
      assert.equal(sequenceFailure.retained.length, 2);
      assert.equal(sequenceFailure.errors.length, 1);
      const noted = sequenceFailure.errors[0]!;
      assert.equal(noted.operation, 'LaunchSequence.launch');
      assert.equal(noted.details['index'], 3);
      assert.ok((noted.stack ?? '').includes('launch-sequence.test'), `${name}: ${noted.stack}`);
      for (const l of [a, b, c]) l.dispose();
    });
  }
});

test('disposal: the sequence holds its launches; a disposed launch, module, buffer or stream is refused before anything launches', { skip }, () => {
  const f = fixtures();
  const d = Device.get(0);
  for (const [name, hot] of bindings()) {
    onBinding(hot, () => {
      const registered = (): number => hot?.registered() ?? 0;
      const before = registered();
      using buf = DeviceBuffer.alloc(d, 64);
      const a = f.ka.prepare({ grid: 1, block: 32, args: [arg.u32(1), buf] });
      const b = f.kb.prepare({ grid: 1, block: 32, args: [arg.u32(2)] });
      const seq = f.s1.sequence([a, b, a]);
      assert.equal(a[LIFETIME].holders, 1, 'held once however often it appears');
      b.dispose();
      assert.equal(b[LIFETIME].freed, false, `${name}: the sequence holds b`);
      const refused = (op: string, subject: string) => (e: unknown) => e instanceof DisposedError && e.message === `${op}: ${subject} has been disposed`;
      assert.equal(launchesDuring(() => assert.throws(() => seq.launch(), refused('LaunchSequence.launch', 'PreparedLaunch of kb'))).length, 0, name);
      assert.throws(() => f.s1.sequence([b]), refused('Stream.sequence', 'PreparedLaunch of kb'));
      assert.throws(() => new LaunchSequence([{ launch: b, stream: f.s1 }]), refused('LaunchSequence', 'PreparedLaunch of kb'));
      using onlyA = f.s1.sequence([a]);
      buf.dispose();
      assert.equal(launchesDuring(() => assert.throws(() => onlyA.launch(), refused('LaunchSequence.launch', buf[LIFETIME].what))).length, 0, name);
      const s3 = d.createStream();
      const c = f.kb.prepare({ grid: 1, block: 32, args: [arg.u32(3)] });
      using onS3 = s3.sequence([c]);
      s3.dispose();
      assert.equal(launchesDuring(() => assert.throws(() => onS3.launch(), (e: unknown) => e instanceof DisposedError && e.message.startsWith('LaunchSequence.launch: Stream 0x'))).length, 0);
      assert.throws(() => s3.sequence([c]), DisposedError);
      seq.dispose();
      seq.dispose();
      assert.equal(seq.disposed, true);
      assert.equal(b[LIFETIME].freed, true, `${name}: released with the sequence`);
      assert.throws(() => seq.launch(), refused('LaunchSequence.launch', 'LaunchSequence of 3 launches'));
      a.dispose();
      c.dispose();
      onlyA.dispose();
      onS3.dispose();
      assert.equal(registered(), before, `${name}: every launch left the addon once nothing held it`);
    });
  }
});

test('refused input: not iterable, not a launch or a stream, launches and streams of different devices; nothing is held', { skip }, () => {
  const f = fixtures();
  const d1 = Device.get(1);
  const s1other = d1.createStream();
  const m1 = Module.load(d1, PTX);
  const [a] = prepareThree(f);
  const onOther = m1.function('ka').prepare({ grid: 1, block: 32, args: [arg.u32(9)] });
  const refuses = (fn: () => unknown, text: RegExp): void => {
    assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && text.test(e.message), String(text));
  };
  refuses(() => new LaunchSequence(5 as never), /^LaunchSequence: entries must be an iterable of \{ launch, stream \}, got 5$/);
  refuses(() => new LaunchSequence('ab' as never), /^LaunchSequence: entries must be an iterable/);
  refuses(() => new LaunchSequence(null as never), /^LaunchSequence: entries must be an iterable/);
  refuses(() => new LaunchSequence([{ launch: a, stream: f.s1 }, 7] as never), /^LaunchSequence: entries\[1\]\.launch must be a PreparedLaunch, got undefined$/);
  refuses(() => new LaunchSequence([{ launch: {}, stream: f.s1 }] as never), /^LaunchSequence: entries\[0\]\.launch must be a PreparedLaunch/);
  refuses(() => new LaunchSequence([{ launch: a, stream: 0n }] as never), /^LaunchSequence: entries\[0\]\.stream must be a Stream, got 0n$/);
  refuses(() => new LaunchSequence([{ launch: a, stream: s1other }]), /^LaunchSequence: entries\[0\]\.stream is a stream of device 1; the sequence's launches are on device 0$/);
  refuses(() => new LaunchSequence([{ launch: a, stream: f.s1 }, { launch: onOther, stream: s1other }]), /^LaunchSequence: entries\[1\]\.launch is a launch on device 1; the sequence's first launch is on device 0/);
  refuses(() => f.s1.sequence(3 as never), /^Stream\.sequence: launches must be an iterable of PreparedLaunch, got 3$/);
  refuses(() => f.s1.sequence([a, f.s2] as never), /^Stream\.sequence: launches\[1\] must be a PreparedLaunch, got an object \(Stream\)$/);
  refuses(() => f.s1.sequence([a, onOther]), /^Stream\.sequence: launches\[1\] is a launch on device 1/);
  refuses(() => s1other.sequence([a]), /^Stream\.sequence: launches\[0\] is a launch on device 0; the stream is of device 1$/);
  assert.equal(a[LIFETIME].holders, 0, 'a refused sequence holds nothing');
  // Any iterable: a generator, a Set.
  using fromGenerator = f.s1.sequence((function* () {
    yield a;
    yield a;
  })());
  assert.equal(fromGenerator.length, 2);
  using fromSet = new LaunchSequence(new Set([{ launch: a, stream: f.s2 }]));
  assert.equal(fromSet.length, 1);
  a.dispose();
  onOther.dispose();
});

test('a single launch on a stream of another device is refused as a sequence\'s is, with no launch', { skip }, () => {
  const f = fixtures();
  const s1other = Device.get(1).createStream();
  const [a] = prepareThree(f);
  const refused = (fn: () => unknown, op: string, text: RegExp): void => {
    const before = driver!.count();
    assert.throws(fn, (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${op}: `) && text.test(e.message), `${op} ${text}`);
    assert.equal(driver!.count(), before, `${op}: nothing launched`);
  };
  a.launch(f.s1);
  refused(() => a.launch(s1other), 'PreparedLaunch.launch', /the stream is of device 1; the launch is on device 0/);
  refused(() => f.ka.launch(s1other, { grid: 1, block: 32, args: [arg.u32(1), f.buf] }), 'Kernel.launch', /the stream is of device 1; the kernel is on device 0/);
  // The fast path after a good launch on the right stream does not let the other through.
  a.launch(f.s1);
  refused(() => a.launch(s1other), 'PreparedLaunch.launch', /device 1/);
  assert.equal(launchesDuring(() => a.launch(f.s1)).length, 1, 'the right stream still launches');
  a.dispose();
  s1other.dispose();
});
