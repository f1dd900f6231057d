/**
 * The hot calls' fast path (`PreparedLaunch.launch`, `GraphExec.launch`) skips its checks while
 * the stream and the check epoch are those of the last call that passed them
 * (src/cuda/core/check-epoch.ts). These tests warm that path first and then change, one at a time,
 * everything the checks guard: each must still be refused with the same error, with no driver call
 * made, and the next good call must go through. Against the no-op stand-in driver of bench:host,
 * on both bindings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, Module, StreamGraphCapture, DisposedError, CudaError, HostCallbackError, InvalidArgumentError, arg } from '../../../src/index.js';
import { keepCleanupError } from '../../../src/cuda/core/lifetime.js';
import { keepHostCallbackError } from '../../../src/cuda/host/host-calls.js';
import { bindings, onBinding } from '../../support/bindings.js';
import { loadStandIn } from '../../support/stand-in-driver.js';


/** The stand-in driver, built and made this process's driver (this file runs in its own process). */
function standIn(): { launches: () => number; graphLaunches: () => number; destroys: () => string } | null {
  const lib = loadStandIn('hot-checks');
  if (lib === null) return null;
  const log = lib.u64s('destroy_log', 64);
  const n = lib.u64s('destroys');
  return {
    launches: lib.counter('launches'),
    graphLaunches: lib.counter('graph_launches'),
    // 'G' = cuGraphDestroy, 'E' = cuGraphExecDestroy, in call order
    destroys: () => Array.from(log.subarray(0, Math.min(64, Number(n[0]))), (k) => (k === 1n ? 'G' : 'E')).join(''),
  };
}

const driver = standIn();
const skip = driver === null && 'gcc is absent';

/** Asserts `body` throws what `expected` accepts and makes no driver launch. */
function refused(body: () => void, expected: (e: unknown) => boolean, what: string): void {
  const before = [driver!.launches(), driver!.graphLaunches()];
  assert.throws(body, expected, what);
  assert.deepEqual([driver!.launches(), driver!.graphLaunches()], before, `${what}: no driver call`);
}

const disposedError = (name: RegExp) => (e: unknown) => e instanceof DisposedError && name.test(e.message);

for (const [binding, hot] of bindings()) {
  test(`${binding}: PreparedLaunch.launch after a warm fast path still refuses every disposed part, kept error and bad stream`, { skip }, () => {
    onBinding(hot, () => {
      const device = Device.get(0);
      const stream = device.createStream({ nonBlocking: true });
      const other = device.createStream({ nonBlocking: true });
      const module = Module.load(device, '// stand-in\n');
      const buffer = DeviceBuffer.alloc(device, 256);
      const p = module.function('add2').prepare({ grid: 1, block: 64, args: [buffer, arg.i32(64)] });
      const warm = (s = stream): void => {
        const before = driver!.launches();
        for (let i = 0; i < 3; i++) p.launch(s);
        assert.equal(driver!.launches(), before + 3);
      };
      warm();
      refused(() => p.launch(null as never), (e) => e instanceof InvalidArgumentError && e.message.startsWith('PreparedLaunch.launch'), 'not a stream');
      warm(other);
      other.dispose();
      refused(() => p.launch(other), disposedError(/^PreparedLaunch\.launch/), 'a disposed stream');
      warm();
      keepCleanupError(new Error('a free failed'));
      refused(() => p.launch(stream), (e) => e instanceof CudaError && e.message.includes('a free failed'), 'a kept cleanup error');
      warm();
      keepHostCallbackError('host fn', new Error('callback threw'));
      refused(() => p.launch(stream), (e) => e instanceof HostCallbackError, 'a kept host-function error');
      warm();
      // A capture begun and ended between calls: the launch is recorded, and registered, as before.
      const cap = StreamGraphCapture.begin(stream);
      p.launch(stream);
      cap.end().dispose();
      warm();
      buffer.dispose();
      refused(() => p.launch(stream), disposedError(/DeviceBuffer/), 'a disposed buffer argument');
      const fresh = DeviceBuffer.alloc(device, 256);
      p.setArg(0, fresh);
      warm();
      module.dispose();
      refused(() => p.launch(stream), disposedError(/Module/), 'a disposed module');
      const p2 = Module.load(device, '// stand-in\n').function('add2').prepare({ grid: 1, block: 64, args: [fresh, arg.i32(64)] });
      p2.launch(stream);
      p2.dispose();
      refused(() => p2.launch(stream), disposedError(/PreparedLaunch/), 'a disposed launch');
      p.dispose();
      fresh.dispose();
      stream.dispose();
    });
  });

  test(`${binding}: GraphExec.launch after a warm fast path still refuses a disposed exec or stream, and never switches from its default stream`, { skip }, () => {
    onBinding(hot, () => {
      const device = Device.get(0);
      const stream = device.createStream({ nonBlocking: true });
      const other = device.createStream({ nonBlocking: true });
      const p = Module.load(device, '// stand-in\n').function('empty').prepare({ grid: 1, block: 32, args: [] });
      const cap = StreamGraphCapture.begin(stream);
      p.launch(stream);
      const exec = cap.end();
      const warm = (s?: typeof stream): void => {
        const before = driver!.graphLaunches();
        for (let i = 0; i < 3; i++) exec.launch(s);
        assert.equal(driver!.graphLaunches(), before + 3);
      };
      warm();
      assert.equal(exec.launchCount, 3);
      warm(other);
      other.dispose();
      refused(() => exec.launch(other), disposedError(/^GraphExec\.launch/), 'a disposed stream');
      refused(() => exec.launch(42 as never), (e) => e instanceof InvalidArgumentError, 'not a stream');
      warm();
      keepCleanupError(new Error('a free failed'));
      refused(() => exec.launch(), (e) => e instanceof CudaError && e.message.includes('a free failed'), 'a kept cleanup error');
      warm();
      // The captured stream disposed: launch() without a stream is refused, never sent to another stream.
      stream.dispose();
      refused(() => exec.launch(), disposedError(/^GraphExec\.launch: the exec's default stream .* \(pass another stream: launch\(stream\)\)/), 'a disposed default stream');
      assert.equal(exec.stream, stream);
      warm(device.stream());
      exec.dispose();
      refused(() => exec.launch(), disposedError(/^GraphExec\.launch/), 'a disposed exec');
      assert.equal(exec.launchCount, 15, "five warm-ups of three; no refused call counted");
      p.dispose();
    });
  });
}

test('GraphExec.dispose destroys the template it owns before the exec (once each), unless the graph is held elsewhere or a capture is active', { skip }, () => {
  const device = Device.get(0);
  const stream = device.createStream({ nonBlocking: true });
  const p = Module.load(device, '// stand-in\n').function('empty').prepare({ grid: 1, block: 32, args: [] });
  const captured = (): ReturnType<StreamGraphCapture['end']> => {
    const cap = StreamGraphCapture.begin(stream);
    p.launch(stream);
    return cap.end();
  };
  const destroysDuring = (body: () => void): string => {
    const before = driver!.destroys().length;
    body();
    return driver!.destroys().slice(before);
  };
  const exec = captured();
  assert.equal(destroysDuring(() => {
    exec.dispose();
    exec.dispose();
  }), 'GE', 'template first, then the exec, once');
  // Another exec of the same template holds it: this exec goes first, the template when the last holder goes.
  const first = captured();
  const second = first.graph.instantiate();
  assert.equal(destroysDuring(() => first.dispose()), 'E');
  assert.equal(destroysDuring(() => second.dispose()), 'EG');
  // While a capture is active every free is deferred, in the usual order, until it ends.
  const third = captured();
  const cap = StreamGraphCapture.begin(device.createStream({ nonBlocking: true }));
  assert.equal(destroysDuring(() => third.dispose()), '');
  assert.equal(destroysDuring(() => cap.endGraph().dispose()), 'EGG');
  p.dispose();
});
