/**
 * Host functions without a GPU: the one koffi trampoline dispatches by id on the JS thread, also
 * when a foreign thread calls it (a pthread stands in for the driver's thread); errors are kept
 * and thrown once with their cause; pending calls make synchronous waits refuse.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { HostCallbackError, HostFunction, InvalidArgumentError } from '../../src/index.js';
import { hostFunctionLabel, hostTrampoline, isHostTrampoline } from '../../src/cuda/host-function.js';
import {
  assertNoPendingHostCalls,
  hostCallState,
  hostCallsSubmitted,
  surfaceHostCallbackErrors,
} from '../../src/cuda/host-calls.js';

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

test('pending host calls refuse synchronous waits until they have run', () => {
  using hf = HostFunction.create(() => {}, { label: 'p' });
  assert.doesNotThrow(() => assertNoPendingHostCalls('Stream.synchronize'));
  hostCallsSubmitted(2);
  assert.throws(
    () => assertNoPendingHostCalls('Stream.synchronize'),
    (e: unknown) =>
      e instanceof HostCallbackError &&
      e.code === 'ERR_HOST_CALL_PENDING' &&
      /^Stream\.synchronize: 2 JS host function calls are still pending on the GPU\. A synchronous wait would deadlock/.test(e.message) &&
      /synchronizeAsync/.test(e.message),
  );
  callAsDriver(hf);
  assert.throws(() => assertNoPendingHostCalls('Event.synchronize'), /1 JS host function call is still pending/);
  callAsDriver(hf);
  assert.doesNotThrow(() => assertNoPendingHostCalls('Stream.synchronize'));
  callAsDriver(hf); // a call nobody counted (a graph launched elsewhere) does not go negative
  assert.equal(hostCallState.pending, 0);
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
  assert.equal(hostCallState.pending, 1);
  const t0 = Date.now();
  while (calls === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 1));
  assert.equal(calls, 1);
  assert.equal(ranOn, mainThread);
  assert.equal(hostCallState.pending, 0);
  assert.equal(pthreadJoin(tid[0]!, null), 0);
});

test('HostFunction.create refuses a non-function and bad options', () => {
  assert.throws(() => HostFunction.create(3 as never), (e: unknown) => e instanceof InvalidArgumentError && /HostFunction\.create: fn must be a function/.test(e.message));
  assert.throws(() => HostFunction.create(() => {}, { label: '' }), /label must be a non-empty string/);
  assert.throws(() => HostFunction.create(() => {}, { name: 'x' } as never), /unknown option 'name'/);
});
