/**
 * Host functions without a GPU: the one koffi trampoline dispatches by id on the JS thread, also
 * when a foreign thread calls it (a pthread stands in for the driver's thread); errors are kept
 * and thrown once with their cause; host calls in flight close the gate (driver/host-gate.ts) to
 * calls that wait for the GPU, and count enqueues up to the queue limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { HostCallbackError, HostFunction, InvalidArgumentError } from '../../../src/index.js';
import { hostFunctionLabel, hostTrampoline, isHostTrampoline } from '../../../src/cuda/host/host-function.js';
import { hostCallState, surfaceHostCallbackErrors } from '../../../src/cuda/host/host-calls.js';
import { QUEUE_LIMIT, gate, hostCallsSubmitted, passGate } from '../../../src/driver/host-gate.js';

/** What a driver call classified as a wait does at the gate now. */
function waitAtGate(op: string): void {
  passGate(op, 'cuStreamSynchronize', 'gpu');
}

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const HostFn = koffi.proto('void cudagraph_test_hostfn(void *userData)');

/** Calls the trampoline as the driver would, with the function's id as user data. */
function callAsDriver(hf: HostFunction): void {
  koffi.call(hostTrampoline(), HostFn, BigInt(hf.id));
}

test('the trampoline runs the host function by id and counts its calls', () => {
  let seen = 0;
  using hf = HostFunction.create(() => void seen++, { label: 'count' });
  assert.equal(hf.label, 'count');
  callAsDriver(hf);
  callAsDriver(hf);
  assert.deepEqual([seen, hf.calls, hf.failures], [2, 2, 0]);
  assert.ok(isHostTrampoline(hostTrampoline()));
  assert.equal(hostFunctionLabel(hostTrampoline(), BigInt(hf.id)), 'count');
  assert.equal(hostFunctionLabel(hostTrampoline() + 8n, BigInt(hf.id)), null, 'another function pointer is not ours');
  assert.equal(HostFunction.create(() => {}).label.startsWith('host#'), true);
});

test('what a host function throws is kept and thrown once by the next checked call, with the original as cause', () => {
  const boom = new TypeError('boom');
  using hf = HostFunction.create(() => {
    throw boom;
  }, { label: 'bad' });
  callAsDriver(hf);
  callAsDriver(hf);
  assert.equal(hf.failures, 2);
  assert.equal(hostCallState.errorPending, true);
  assert.throws(
    () => hf.launch(null as never), // any checked call of the object layer reports it first
    (e: unknown) =>
      e instanceof HostCallbackError &&
      e.code === 'ERR_HOST_CALLBACK_FAILED' &&
      e.operation === 'HostFunction.launch' &&
      e.cause === boom &&
      e.errors.length === 2 &&
      /the host function 'bad' threw while the GPU ran it \(and 1 more\): boom/.test(e.message),
  );
  assert.equal(hostCallState.errorPending, false);
  assert.doesNotThrow(() => surfaceHostCallbackErrors('again'));
});

test('a call for a released host function is reported, not a crash', () => {
  const hf = HostFunction.create(() => {}, { label: 'gone' });
  const id = hf.id;
  hf.dispose();
  assert.equal(hostFunctionLabel(hostTrampoline(), BigInt(id)), null);
  koffi.call(hostTrampoline(), HostFn, BigInt(id));
  assert.throws(() => surfaceHostCallbackErrors('probe'), /host function #\d+ was called by the GPU after it was released/);
});

test('host calls in flight refuse waits, naming the functions, until they have run', () => {
  using hf = HostFunction.create(() => {}, { label: 'p' });
  assert.doesNotThrow(() => waitAtGate('Stream.synchronize'));
  hostCallsSubmitted(2);
  assert.throws(
    () => waitAtGate('Stream.synchronize'),
    (e: unknown) =>
      e instanceof HostCallbackError &&
      e.code === 'ERR_HOST_CALL_PENDING' &&
      e.details.driverCall === 'cuStreamSynchronize' &&
      /^Stream\.synchronize: 2 JS host function calls are in flight, and cuStreamSynchronize can wait for the GPU/.test(e.message) &&
      /synchronizeAsync/.test(e.message),
  );
  callAsDriver(hf);
  assert.throws(() => waitAtGate('Event.synchronize'), /1 JS host function call is in flight/);
  callAsDriver(hf);
  assert.doesNotThrow(() => waitAtGate('Stream.synchronize'));
  callAsDriver(hf); // a call nobody counted (a graph launched elsewhere) does not go negative
  assert.equal(gate.pending, 0);
  assert.equal(gate.calls, 0);
});

test('while a host call is in flight, enqueues are counted and refused past the queue limit; the count restarts when the gate opens', () => {
  using hf = HostFunction.create(() => {}, { label: 'q' });
  passGate('x', 'cuLaunchKernel', 'queue'); // open: not counted
  assert.equal(gate.queued, 0);
  hostCallsSubmitted(1);
  passGate('PreparedLaunch.launch', 'cuLaunchKernel', 'queue', QUEUE_LIMIT - 1);
  passGate('PreparedLaunch.launch', 'cuLaunchKernel', 'queue');
  assert.throws(
    () => passGate('LaunchSequence.launch', 'cuLaunchKernel', 'queue', 2),
    (e: unknown) =>
      e instanceof HostCallbackError &&
      e.details.queued === QUEUE_LIMIT &&
      e.details.limit === QUEUE_LIMIT &&
      /^LaunchSequence\.launch: 1 JS host function call is in flight.*2 more would pass the 1000/.test(e.message),
  );
  assert.equal(gate.queued, QUEUE_LIMIT, 'a refusal counts nothing');
  passGate('x', 'cuStreamQuery', 'none'); // queries pass
  callAsDriver(hf);
  assert.equal(gate.queued, 0);
  passGate('PreparedLaunch.launch', 'cuLaunchKernel', 'queue');
});

test('a wait made from inside a host function is refused with advice for that case', () => {
  let caught: unknown = null;
  using hf = HostFunction.create(() => {
    try {
      waitAtGate('Stream.synchronize');
    } catch (e) {
      caught = e;
    }
  }, { label: 'inside' });
  callAsDriver(hf);
  assert.ok(caught instanceof HostCallbackError);
  assert.match((caught as Error).message, /made from inside a host function, which must not wait for the GPU/);
  assert.equal(gate.calls, 0);
});

test('called from another thread (as the driver does), the function runs on the JS thread once the event loop turns', async () => {
  const libc = koffi.load('libc.so.6');
  // pthread's start routine returns a pointer; the trampoline returns nothing, which pthread ignores.
  const pthreadCreate = libc.func('int pthread_create(_Out_ uint64_t *thread, void *attr, void *start, void *arg)');
  const pthreadJoin = libc.func('int pthread_join(uint64_t thread, void *retval)');
  const mainThread = Symbol('js thread');
  let ranOn: symbol | null = null;
  let calls = 0;
  const marker = mainThread;
  using hf = HostFunction.create(() => {
    calls++;
    ranOn = marker;
  }, { label: 'threaded' });
  hostCallsSubmitted(1);
  const tid = [0n];
  assert.equal(pthreadCreate(tid, null, hostTrampoline(), BigInt(hf.id)), 0);
  // The foreign thread is blocked until the JS thread runs the call: nothing has happened yet.
  assert.equal(calls, 0);
  assert.equal(gate.pending, 1);
  const t0 = Date.now();
  while (calls === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 1));
  assert.equal(calls, 1);
  assert.equal(ranOn, mainThread);
  assert.equal(gate.pending, 0);
  assert.equal(pthreadJoin(tid[0]!, null), 0);
});

test('HostFunction.create refuses a non-function and bad options', () => {
  assert.throws(() => HostFunction.create(3 as never), (e: unknown) => e instanceof InvalidArgumentError && /HostFunction\.create: fn must be a function/.test(e.message));
  assert.throws(() => HostFunction.create(() => {}, { label: '' }), /label must be a non-empty string/);
  assert.throws(() => HostFunction.create(() => {}, { name: 'x' } as never), /unknown option 'name'/);
});
