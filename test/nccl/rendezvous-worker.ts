/**
 * One host of the multi-process rendezvous tests (test/nccl/rendezvous.test.ts,
 * from-environment.test.ts), run as its own Node process:
 *
 *   node dist/test/nccl/rendezvous-worker.js rdzv '<json TcpRendezvousOptions, payloadHex, abortAfterMs>'
 *   node dist/test/nccl/rendezvous-worker.js env-steps   (RANK, WORLD_SIZE, … from the environment)
 *   node dist/test/nccl/rendezvous-worker.js env-nccl    (the same, through the real NCCL binding)
 *
 * It prints `LISTENING <port>` when it is rank 0 and listens, then `RESULT <json>` or
 * `ERROR <json of code, message, details, name>`. It never calls process.exit: it ends when nothing
 * is left open, so a socket or timer the rendezvous forgot to close keeps it alive and the parent's
 * time limit fails the test. `env-steps` stands in for CUDA and NCCL (rank 0's id is 128 random
 * bytes, initRank returns what it was given); `env-nccl` runs `initNcclFromEnvironment` against the
 * no-op driver and the recording NCCL ($CUDA_DRIVER_PATH, $NCCL_LIBRARY, TEST_RECORDING_NCCL=1)
 * and reports the id the library received, or, on a GPU with the real NCCL, checks an all-reduce
 * across the ranks. Not a test file itself (the runner only picks up *.test.js).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { tcpRendezvous, initNcclFromEnvironment, DeviceBuffer } from '../../src/index.js';
import { joinFromEnvironment, type JoinSteps } from '../../src/nccl/from-environment.js';

function say(tag: string, value: unknown): void {
  process.stdout.write(`${tag} ${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
}

function report(e: unknown): void {
  const err = e as { code?: unknown; message?: string; details?: unknown; name?: string; variable?: string; value?: string };
  say('ERROR', { code: err.code, name: err.name, message: err.message, details: err.details, variable: err.variable, value: err.value });
  process.exitCode = 1;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

async function rdzv(spec: Record<string, unknown>): Promise<void> {
  const { payloadHex, abortAfterMs, ...options } = spec as { payloadHex?: string; abortAfterMs?: number } & Record<string, unknown>;
  let signal: AbortSignal | undefined;
  if (abortAfterMs !== undefined) {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stopped by the test')), abortAfterMs);
    signal = ac.signal;
  }
  const r = await tcpRendezvous({
    ...(options as { rank: number; worldSize: number; addr: string; port: number }),
    ...(payloadHex !== undefined ? { payload: Buffer.from(payloadHex, 'hex') } : {}),
    ...(signal ? { signal } : {}),
    onListening: (a) => say('LISTENING', String(a.port)),
  });
  say('RESULT', { rank: r.rank, worldSize: r.worldSize, port: r.port, payloadHex: hex(r.payload) });
}

/** CUDA and NCCL stood in for: what initRank is given comes back as the result. */
const FAKE: JoinSteps<number, { id: string; rank: number; size: number; device: number; made: string | null }> = {
  prepare: (_op, device) => device as number,
  createId: () => {
    made = randomBytes(128);
    return made;
  },
  initRank: (_op, device, init) => ({ id: hex(init.id), rank: init.rank, size: init.size, device, made: made && hex(made) }),
  idBytes: 128,
};
let made: Uint8Array | null = null;

async function envSteps(): Promise<void> {
  const timeoutMs = Number(process.env['TEST_TIMEOUT_MS'] ?? 10_000);
  const r = await joinFromEnvironment('initNcclFromEnvironment', { timeoutMs, listenHost: '127.0.0.1' }, FAKE, {
    onListening: (a) => say('LISTENING', String(a.port)),
  });
  say('RESULT', r);
}

async function envNccl(): Promise<void> {
  using comm = await initNcclFromEnvironment({ timeoutMs: Number(process.env['TEST_TIMEOUT_MS'] ?? 10_000), listenHost: '127.0.0.1' });
  const out: Record<string, unknown> = { rank: comm.rank, size: comm.size, device: comm.device.ordinal, localRanks: comm.localRanks };
  if (process.env['TEST_RECORDING_NCCL'] === '1') {
    // The recording library keeps the id ncclCommInitRank received.
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
    const lastId = koffi.load(process.env['NCCL_LIBRARY']!).func('int rec_last_id(void *out)') as (out: Uint8Array) => number;
    const seen = new Uint8Array(128);
    lastId(seen);
    out['idSeenByNccl'] = hex(seen);
  } else {
    // The real NCCL: an all-reduce of (rank + 1) over every rank must give size·(size + 1)/2 everywhere.
    const n = 1024;
    using s = comm.device.createStream();
    using x = DeviceBuffer.alloc(comm.device, 4 * n);
    x.copyFromHost(new Float32Array(n).fill(comm.rank + 1));
    comm.allReduce(s, { send: x, count: n, type: 'f32', op: 'sum' });
    s.synchronize();
    const back = new Float32Array(n);
    x.copyToHost(back);
    out['sums'] = [...new Set(back)];
    out['asyncError'] = comm.asyncError();
  }
  say('RESULT', out);
}

const mode = process.argv[2];
const run = mode === 'rdzv' ? rdzv(JSON.parse(process.argv[3] ?? '{}') as Record<string, unknown>) : mode === 'env-steps' ? envSteps() : mode === 'env-nccl' ? envNccl() : Promise.reject(new Error(`unknown mode ${mode}`));
run.catch(report);
