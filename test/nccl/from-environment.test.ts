/**
 * `initNcclFromEnvironment` on the CPU: the launch environment read, the device taken from
 * LOCAL_RANK, rank 0's id handed to every rank over the rendezvous and given to initRank, in
 * processes on 127.0.0.1 as torchrun would start them. The CUDA and NCCL steps are stood in for
 * twice: by plain functions (what initRank receives comes back), and by the no-op driver and the
 * recording NCCL compiled here, through the real binding (`NcclComm.initRank`, `ncclCommInitRank`
 * receiving rank 0's 128 bytes by value). The real NCCL runs in test/gpu/nccl.test.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initNcclFromEnvironment, InvalidArgumentError, LaunchEnvironmentError, RendezvousError } from '../../src/index.js';
import { joinFromEnvironment, type JoinSteps } from '../../src/nccl/from-environment.js';
import { startHost, freePort, shown, type HostOutcome } from './host-processes.js';

const env = (rank: number, worldSize: number, port: number, extra: Record<string, string> = {}): Record<string, string> => ({
  RANK: `${rank}`,
  WORLD_SIZE: `${worldSize}`,
  LOCAL_RANK: `${rank % 2}`,
  LOCAL_WORLD_SIZE: `${Math.min(2, worldSize)}`,
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: `${port}`,
  ...extra,
});

function ok(o: HostOutcome): Record<string, unknown> {
  assert.equal(o.hung, false, shown(o));
  assert.equal(o.exitCode, 0, shown(o));
  assert.ok(o.result, shown(o));
  return o.result;
}

test('three processes started like torchrun (two per host): each joins with rank 0\'s id, on device LOCAL_RANK', async () => {
  const port = await freePort();
  // The peers first: rank 0 is the last to start, as happens when hosts boot at different speeds.
  const hosts = [2, 1, 0].map((rank) => startHost(['env-steps'], env(rank, 3, port, { TEST_TIMEOUT_MS: '60000' })));
  const [r2, r1, r0] = (await Promise.all(hosts.map((h) => h.done))).map(ok);
  const made = r0!['made'];
  assert.match(String(made), /^[0-9a-f]{256}$/);
  for (const [rank, r] of [r0!, r1!, r2!].entries()) {
    assert.equal(r['id'], made, `rank ${rank} joins with rank 0's id`);
    assert.deepEqual([r['rank'], r['size'], r['device']], [rank, 3, rank % 2]);
  }
  assert.equal(r1!['made'], null, 'only rank 0 makes an id');
  assert.equal(r2!['made'], null);
});

test('a malformed environment fails in the process before anything is opened, naming the variable', async () => {
  const o = await startHost(['env-steps'], env(0, 2, 1, { RANK: '-1' })).done;
  assert.equal(o.exitCode, 1, shown(o));
  assert.equal(o.hung, false);
  assert.equal(o.error?.name, 'LaunchEnvironmentError');
  assert.equal(o.error?.variable, 'RANK');
  assert.equal(o.error?.value, '-1');
  assert.match(o.error?.message ?? '', /^initNcclFromEnvironment: RANK must be a whole number ≥ 0, got '-1' \(negative\)/);
  assert.doesNotMatch(o.stdout, /LISTENING/);
});

/** Stand-ins that write down what they are asked, in order. */
function recordingSteps(idBytes = 128, id: Uint8Array = Uint8Array.from({ length: 128 }, (_, i) => 255 - i)) {
  const calls: string[] = [];
  const steps: JoinSteps<string, { id: number[]; rank: number; size: number; device: string }> = {
    prepare: (op, device) => {
      calls.push(`prepare ${op} ${String(device)}`);
      return `device ${String(device)}`;
    },
    createId: (op) => {
      calls.push(`createId ${op}`);
      return id;
    },
    initRank: (op, device, init) => {
      calls.push(`initRank ${op} ${device} rank ${init.rank} size ${init.size}`);
      return { id: [...init.id], rank: init.rank, size: init.size, device };
    },
    idBytes,
  };
  return { calls, steps };
}

const OP = 'initNcclFromEnvironment';

test('one rank (WORLD_SIZE=1): no socket, the steps in order, the id made and given to initRank; device overrides LOCAL_RANK', async () => {
  const { calls, steps } = recordingSteps();
  const r = await joinFromEnvironment(OP, { env: env(0, 1, 29500) }, steps);
  assert.deepEqual(calls, [`prepare ${OP} 0`, `createId ${OP}`, `initRank ${OP} device 0 rank 0 size 1`]);
  assert.deepEqual(r.id, Array.from({ length: 128 }, (_, i) => 255 - i));
  const again = recordingSteps();
  await joinFromEnvironment(OP, { env: env(0, 1, 29500), device: 5 }, again.steps);
  assert.equal(again.calls[0], `prepare ${OP} 5`);
});

test('two ranks in this process through the rendezvous: the peer\'s initRank gets rank 0\'s bytes, never makes its own', async () => {
  const port = await freePort();
  const a = recordingSteps();
  const b = recordingSteps();
  const [r0, r1] = await Promise.all([
    joinFromEnvironment(OP, { env: env(0, 2, port), listenHost: '127.0.0.1', timeoutMs: 10_000 }, a.steps),
    joinFromEnvironment(OP, { env: env(1, 2, port), timeoutMs: 10_000 }, b.steps),
  ]);
  assert.deepEqual(r1.id, r0.id);
  assert.deepEqual(b.calls, [`prepare ${OP} 1`, `initRank ${OP} device 1 rank 1 size 2`]);
});

test('under torchrun\'s agent store (TORCHELASTIC_USE_AGENT_STORE=True) the rendezvous takes MASTER_PORT + 1; the port option overrides both', async () => {
  const port = await freePort();
  // Something holds MASTER_PORT, as torchrun's agent store does (if another program already does, so much the better).
  const store = createServer();
  await new Promise<void>((r) => {
    store.once('error', () => r());
    store.listen(port - 1, '127.0.0.1', () => r());
  });
  try {
    const agent = { TORCHELASTIC_USE_AGENT_STORE: 'True' };
    const [r0, r1] = await Promise.all([
      joinFromEnvironment(OP, { env: env(0, 2, port - 1, agent), listenHost: '127.0.0.1', timeoutMs: 10_000 }, recordingSteps().steps),
      joinFromEnvironment(OP, { env: env(1, 2, port - 1, agent), timeoutMs: 10_000 }, recordingSteps().steps),
    ]);
    assert.deepEqual(r1.id, r0.id);
  } finally {
    store.close();
  }
  const other = await freePort();
  const [a, b] = await Promise.all([
    joinFromEnvironment(OP, { env: env(0, 2, 1), port: other, listenHost: '127.0.0.1', timeoutMs: 10_000 }, recordingSteps().steps),
    joinFromEnvironment(OP, { env: env(1, 2, 1), port: other, timeoutMs: 10_000 }, recordingSteps().steps),
  ]);
  assert.deepEqual(a.id, b.id);
  await assert.rejects(joinFromEnvironment(OP, { env: env(0, 2, 1), port: 0 }, recordingSteps().steps), (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'port');
});

test('a failing prepare (no NCCL, no such device) stops a rank before it joins; rank 0 then times out naming it', async () => {
  const port = await freePort();
  const failing: JoinSteps<string, never> = {
    ...recordingSteps().steps,
    prepare: () => {
      throw new InvalidArgumentError(OP, 'device', 'no device 1 here');
    },
  } as never;
  const [r0, r1] = await Promise.allSettled([
    joinFromEnvironment(OP, { env: env(0, 2, port), listenHost: '127.0.0.1', timeoutMs: 800 }, recordingSteps().steps),
    joinFromEnvironment(OP, { env: env(1, 2, port), timeoutMs: 800 }, failing),
  ]);
  assert.equal(r1.status, 'rejected');
  assert.match(((r1 as PromiseRejectedResult).reason as Error).message, /no device 1 here/);
  assert.equal(r0.status, 'rejected');
  const e = (r0 as PromiseRejectedResult).reason as RendezvousError;
  assert.ok(e instanceof RendezvousError);
  assert.equal(e.code, 'ERR_RENDEZVOUS_TIMEOUT');
  assert.deepEqual(e.details.missingRanks, [1]);
  assert.match(e.message, /^initNcclFromEnvironment: rank 0 timed out after 800 ms/);
});

test('an id of the wrong length from rank 0 is refused on the receiving rank (ERR_RENDEZVOUS_PROTOCOL)', async () => {
  const port = await freePort();
  const short = recordingSteps(128, Uint8Array.of(1, 2, 3));
  const [, r1] = await Promise.allSettled([
    joinFromEnvironment(OP, { env: env(0, 2, port), listenHost: '127.0.0.1', timeoutMs: 10_000 }, short.steps),
    joinFromEnvironment(OP, { env: env(1, 2, port), timeoutMs: 10_000 }, recordingSteps().steps),
  ]);
  assert.equal(r1.status, 'rejected');
  const e = (r1 as PromiseRejectedResult).reason as RendezvousError;
  assert.equal(e.code, 'ERR_RENDEZVOUS_PROTOCOL');
  assert.match(e.message, /^initNcclFromEnvironment: rank 0 handed out 3 bytes; the id is 128 bytes/);
});

test('initNcclFromEnvironment refuses bad options and environments before touching CUDA or NCCL', async () => {
  const good = env(0, 1, 29500);
  await assert.rejects(initNcclFromEnvironment({ env: good, retries: 1 } as never), (e: unknown) => e instanceof InvalidArgumentError && /^initNcclFromEnvironment: unknown option 'retries'/.test(e.message));
  await assert.rejects(initNcclFromEnvironment({ env: good, timeoutMs: -5 }), (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'timeoutMs' && e.message.startsWith('initNcclFromEnvironment: '));
  await assert.rejects(initNcclFromEnvironment({ env: good, device: 'gpu0' as never }), (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'device');
  await assert.rejects(initNcclFromEnvironment({ env: { ...good, WORLD_SIZE: '1.0' } }), (e: unknown) => e instanceof LaunchEnvironmentError && e.variable === 'WORLD_SIZE' && e.value === '1.0');
  await assert.rejects(initNcclFromEnvironment({ env: { ...good, MASTER_PORT: undefined } }), (e: unknown) => e instanceof LaunchEnvironmentError && e.variable === 'MASTER_PORT' && e.value === undefined);
  await assert.rejects(initNcclFromEnvironment({ env: good, signal: 'stop' as never }), (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'signal');
});

// The real binding against the no-op driver (two devices) and the recording NCCL, both compiled here.
const gcc = spawnSync('gcc', ['--version']).status === 0;
const skip = gcc ? false : 'gcc is not available to build the stand-in driver and the recording NCCL';
let dir = '';
let libs: Record<string, string> = {};

before(() => {
  if (!gcc) return;
  dir = mkdtempSync(join(tmpdir(), 'cg-nccl-env-'));
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const driver = join(dir, 'libcuda-stand-in.so');
  const nccl = join(dir, 'libnccl.so.2');
  for (const [out, src, defines] of [
    [driver, join(root, 'fixtures', 'stand-in-driver.c'), ['-DSTAND_IN_DEVICES=2']],
    [nccl, join(root, 'test', 'nccl', 'fixtures', 'recording-nccl.c'), []],
  ] as const) {
    const r = spawnSync('gcc', ['-O1', '-fPIC', '-shared', ...defines, '-o', out, src], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
  libs = { CUDA_DRIVER_PATH: driver, NCCL_LIBRARY: nccl, TEST_RECORDING_NCCL: '1' };
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('through the real binding: two processes, ncclCommInitRank on each receives the id rank 0\'s ncclGetUniqueId made', { skip }, async () => {
  const port = await freePort();
  const hosts = [1, 0].map((rank) => startHost(['env-nccl'], { ...env(rank, 2, port, { TEST_TIMEOUT_MS: '60000' }), ...libs }));
  const [r1, r0] = (await Promise.all(hosts.map((h) => h.done))).map(ok);
  // The recording library's ncclGetUniqueId writes byte i = i·7+3; only rank 0 called it.
  const expected = Buffer.from(Array.from({ length: 128 }, (_, i) => (i * 7 + 3) & 0xff)).toString('hex');
  assert.deepEqual(r0, { rank: 0, size: 2, device: 0, localRanks: 1, idSeenByNccl: expected });
  assert.deepEqual(r1, { rank: 1, size: 2, device: 1, localRanks: 1, idSeenByNccl: expected });
});
