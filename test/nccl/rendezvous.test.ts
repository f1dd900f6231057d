/**
 * `tcpRendezvous` between Node processes on 127.0.0.1, each standing in for a host: every rank gets
 * rank 0's bytes, also when rank 0 starts last; a missing rank, a rank claimed twice, a world size
 * that differs, a rank out of range, a stray client, another protocol version, a peer pointed at
 * another program, and an abort each end with the typed error that says so, on every process, and
 * every process then exits by itself (nothing left open). The hosts are processes; a few checks
 * that need a hand-made client run rank 0 in this process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { connect, createServer, type Socket } from 'node:net';
import { tcpRendezvous, RendezvousError, InvalidArgumentError, CudagraphError } from '../../src/index.js';
import { FrameReader, RefuseReason, encodeHello, type Frame } from '../../src/nccl/rendezvous-protocol.js';
import { startRendezvous, freePort, shown, type HostOutcome } from './host-processes.js';

const hexOf = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function ok(o: HostOutcome): Record<string, unknown> {
  assert.equal(o.hung, false, shown(o));
  assert.equal(o.exitCode, 0, shown(o));
  assert.ok(o.result, shown(o));
  return o.result;
}

function failed(o: HostOutcome, code: string): NonNullable<HostOutcome['error']> {
  assert.equal(o.hung, false, `a process must not hang: ${shown(o)}`);
  assert.equal(o.exitCode, 1, shown(o));
  assert.ok(o.error, shown(o));
  assert.equal(o.error.code, code, shown(o));
  assert.equal(o.error.name, 'RendezvousError');
  assert.match(o.error.message, /^tcpRendezvous: /);
  return o.error;
}

test('four processes: ranks 1-3 receive exactly rank 0\'s 128 bytes, and every process exits by itself', async () => {
  const payload = randomBytes(128);
  const host = startRendezvous({ rank: 0, worldSize: 4, port: 0, payloadHex: hexOf(payload), timeoutMs: 60_000 });
  const port = await host.listening;
  const peers = [1, 2, 3].map((rank) => startRendezvous({ rank, worldSize: 4, port, timeoutMs: 60_000 }));
  const all = await Promise.all([host.done, ...peers.map((p) => p.done)]);
  all.forEach((o, rank) => {
    const r = ok(o);
    assert.equal(r['rank'], rank);
    assert.equal(r['worldSize'], 4);
    assert.equal(r['port'], port);
    assert.equal(r['payloadHex'], hexOf(payload), `rank ${rank}'s payload`);
  });
});

test('rank 0 starting after the others: they retry until it listens, then all get its payload', async () => {
  const payload = randomBytes(128);
  const port = await freePort();
  const peers = [1, 2].map((rank) => startRendezvous({ rank, worldSize: 3, port, timeoutMs: 60_000 }));
  // The peers are refused meanwhile (nothing listens): they must keep trying, not fail.
  await new Promise((r) => setTimeout(r, 1_500));
  const host = startRendezvous({ rank: 0, worldSize: 3, port, payloadHex: hexOf(payload), timeoutMs: 60_000 });
  const all = await Promise.all([host.done, ...peers.map((p) => p.done)]);
  for (const o of all) assert.equal(ok(o)['payloadHex'], hexOf(payload));
});

test('a rank that never arrives: rank 0 times out naming it, and tells the rank that came', async () => {
  // Long enough for rank 1's process to start and connect on a loaded machine.
  const host = startRendezvous({ rank: 0, worldSize: 3, port: 0, payloadHex: '00', timeoutMs: 4_000 });
  const port = await host.listening;
  const peer = startRendezvous({ rank: 1, worldSize: 3, port, timeoutMs: 60_000 });
  const [h, p] = await Promise.all([host.done, peer.done]);
  const e = failed(h, 'ERR_RENDEZVOUS_TIMEOUT');
  assert.deepEqual(e.details?.['missingRanks'], [2]);
  assert.match(e.message, /timed out after 4000 ms .*rank\(s\) 2 of 3 did not arrive \(arrived: 1\)/);
  // Rank 1 learns it from rank 0 at once, not at its own (later) timeout.
  const pe = failed(p, 'ERR_RENDEZVOUS_HOST_FAILED');
  assert.match(pe.message, /rank 0 gave up .*rank\(s\) 2 of 3 did not arrive/);
});

test('no rank 0 at the address: a peer times out saying rank 0 was not reachable at addr:port', async () => {
  const port = await freePort();
  const p = await startRendezvous({ rank: 2, worldSize: 4, port, timeoutMs: 1_000 }).done;
  const e = failed(p, 'ERR_RENDEZVOUS_TIMEOUT');
  assert.equal(e.details?.['reached'], false);
  assert.equal(e.details?.['address'], `127.0.0.1:${port}`);
  assert.match(e.message, new RegExp(`rank 2 could not reach rank 0 at 127\\.0\\.0\\.1:${port} within 1000 ms \\(\\d+ attempts, last: ECONNREFUSED\\)`));
});

test('two processes claiming the same rank: rank 0 and the second claimant fail with ERR_RENDEZVOUS_DUPLICATE_RANK', async () => {
  const host = startRendezvous({ rank: 0, worldSize: 3, port: 0, payloadHex: 'ab', timeoutMs: 60_000 });
  const port = await host.listening;
  const a = startRendezvous({ rank: 1, worldSize: 3, port, timeoutMs: 60_000 });
  const b = startRendezvous({ rank: 1, worldSize: 3, port, timeoutMs: 60_000 });
  const [h, x, y] = await Promise.all([host.done, a.done, b.done]);
  const e = failed(h, 'ERR_RENDEZVOUS_DUPLICATE_RANK');
  assert.match(e.message, /rank 1 is claimed twice: by 127\.0\.0\.1:\d+ and by 127\.0\.0\.1:\d+/);
  assert.equal(e.details?.['peerRank'], 1);
  // Which of the two came first is up to the scheduler: one is refused as the duplicate, the other told rank 0 gave up.
  const codes = [x, y].map((o) => failed(o, o.error?.code ?? '?').code).sort();
  assert.deepEqual(codes, ['ERR_RENDEZVOUS_DUPLICATE_RANK', 'ERR_RENDEZVOUS_HOST_FAILED']);
});

test('a rank with another world size: refused with ERR_RENDEZVOUS_WORLD_SIZE on both sides, the others told why', async () => {
  const host = startRendezvous({ rank: 0, worldSize: 3, port: 0, payloadHex: 'ab', timeoutMs: 60_000 });
  const port = await host.listening;
  // Rank 1 is a hand-made client, connected and admitted before the mismatch arrives (a process
  // could still be starting then); it must be told why the group failed.
  const good = helloClient(port, 1, 3);
  await good.admitted;
  const bad = startRendezvous({ rank: 2, worldSize: 4, port, timeoutMs: 60_000 });
  const [h, b, g] = await Promise.all([host.done, bad.done, good.done]);
  const e = failed(h, 'ERR_RENDEZVOUS_WORLD_SIZE');
  assert.match(e.message, /claims rank 2 of a world of 4, but rank 0 has a world of 3/);
  assert.deepEqual([e.details?.['peerRank'], e.details?.['peerWorldSize']], [2, 4]);
  assert.match(failed(b, 'ERR_RENDEZVOUS_WORLD_SIZE').message, /rank 0 refused rank 2 of 4 .*world of 3/);
  const told = frames(g);
  assert.equal(told.length, 1);
  assert.equal(told[0]!.type, 'refuse');
  const refuse = told[0] as Extract<Frame, { type: 'refuse' }>;
  assert.equal(refuse.reason, RefuseReason.hostFailed);
  assert.match(refuse.text, /^tcpRendezvous: rank 0: a peer at .* claims rank 2 of a world of 4/);
});

test('abort: rank 0 and a waiting peer stop with ERR_RENDEZVOUS_ABORTED, and both processes exit', async () => {
  // Rank 0 aborts well after the peer, so the peer meets its own abort, not rank 0's refusal.
  const host = startRendezvous({ rank: 0, worldSize: 3, port: 0, payloadHex: 'ab', timeoutMs: 60_000, abortAfterMs: 3_000 });
  const port = await host.listening;
  const peer = startRendezvous({ rank: 1, worldSize: 3, port, timeoutMs: 60_000, abortAfterMs: 600 });
  const lonely = startRendezvous({ rank: 1, worldSize: 3, port: await freePort(), timeoutMs: 60_000, abortAfterMs: 600 });
  const [h, p, l] = await Promise.all([host.done, peer.done, lonely.done]);
  assert.match(failed(h, 'ERR_RENDEZVOUS_ABORTED').message, /rank 0 of 3: aborted/);
  assert.match(failed(p, 'ERR_RENDEZVOUS_ABORTED').message, /rank 1 of 3: aborted/);
  failed(l, 'ERR_RENDEZVOUS_ABORTED'); // aborted between connection attempts
});

/** A hand-made client: what it sends, and everything it gets back until the server closes. */
function client(port: number, send: Uint8Array | string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s: Socket = connect({ host: '127.0.0.1', port });
    const got: Buffer[] = [];
    s.on('connect', () => s.write(send));
    s.on('data', (d: Buffer) => got.push(d));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(got)));
  });
}

/**
 * A hand-made peer: sends HELLO(rank, worldSize) and collects what rank 0 sends until it closes.
 * `admitted` resolves 200 ms after the HELLO is written: on the loopback it is there in
 * microseconds, and rank 0, idle meanwhile, reads it at once.
 */
function helloClient(port: number, rank: number, worldSize: number): { admitted: Promise<void>; done: Promise<Buffer> } {
  let sent: () => void = () => {};
  const wrote = new Promise<void>((r) => (sent = r));
  const done = new Promise<Buffer>((resolve, reject) => {
    const s: Socket = connect({ host: '127.0.0.1', port });
    const got: Buffer[] = [];
    s.on('connect', () => s.write(encodeHello(rank, worldSize), () => sent()));
    s.on('data', (d: Buffer) => got.push(d));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(got)));
  });
  return { admitted: wrote.then(() => new Promise<void>((r) => setTimeout(r, 200))), done };
}

function frames(bytes: Buffer): Frame[] {
  return new FrameReader().push(bytes);
}

async function inProcessHost(worldSize: number, payload: Uint8Array, timeoutMs = 10_000): Promise<{ port: number; done: ReturnType<typeof tcpRendezvous> }> {
  let resolvePort: (p: number) => void = () => {};
  const listening = new Promise<number>((r) => (resolvePort = r));
  const done = tcpRendezvous({ rank: 0, worldSize, addr: '127.0.0.1', port: 0, listenHost: '127.0.0.1', payload, timeoutMs, onListening: (a) => resolvePort(a.port) });
  done.catch(() => {});
  return { port: await listening, done };
}

test('stray clients are refused and the rendezvous goes on: HTTP gets a 400, garbage is dropped, another version gets a REFUSE', async () => {
  const payload = randomBytes(128);
  const { port, done } = await inProcessHost(2, payload);
  const http = (await client(port, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')).toString('latin1');
  assert.match(http, /^HTTP\/1\.1 400 Bad Request\r\n/);
  assert.match(http, /this port is a cudagraph rendezvous \(protocol version 1\)/);
  assert.match((await client(port, Uint8Array.of(0, 1, 2, 3, 4, 5))).toString('latin1'), /not a rendezvous frame \(wrong magic\)/);
  const v2 = encodeHello(1, 2);
  v2[4] = 2;
  const refused = frames(await client(port, v2));
  assert.equal(refused.length, 1);
  assert.equal(refused[0]!.type, 'refuse');
  assert.match((refused[0] as Extract<Frame, { type: 'refuse' }>).text, /protocol version 2, this build speaks 1/);
  // The real peer, in its own process, still gets the payload.
  const peer = await startRendezvous({ rank: 1, worldSize: 2, port, timeoutMs: 60_000 }).done;
  assert.equal(ok(peer)['payloadHex'], hexOf(payload));
  assert.equal(hexOf((await done).payload), hexOf(payload));
});

test('a peer claiming a rank out of range is refused with ERR_RENDEZVOUS_RANK_RANGE; claiming rank 0 is a duplicate', async () => {
  {
    const { port, done } = await inProcessHost(2, Uint8Array.of(1));
    const reply = frames(await client(port, encodeHello(7, 2)));
    assert.deepEqual(reply.map((f) => f.type), ['refuse']);
    await assert.rejects(done, (e: unknown) => e instanceof RendezvousError && e.code === 'ERR_RENDEZVOUS_RANK_RANGE' && /claims rank 7, outside 1\.\.1/.test(e.message));
  }
  {
    const { port, done } = await inProcessHost(2, Uint8Array.of(1));
    await client(port, encodeHello(0, 2));
    await assert.rejects(done, (e: unknown) => e instanceof RendezvousError && e.code === 'ERR_RENDEZVOUS_DUPLICATE_RANK' && /claims rank 0, which is this process/.test(e.message));
  }
});

test('a peer pointed at another program fails at once with ERR_RENDEZVOUS_PROTOCOL quoting what it answered', async () => {
  const other = createServer((s) => s.end('SSH-2.0-OpenSSH_9.6\r\n'));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  const { port } = other.address() as { port: number };
  try {
    const t0 = performance.now();
    await assert.rejects(
      tcpRendezvous({ rank: 1, worldSize: 2, addr: '127.0.0.1', port, timeoutMs: 60_000 }),
      (e: unknown) => e instanceof RendezvousError && e.code === 'ERR_RENDEZVOUS_PROTOCOL' && e.message.includes(`127.0.0.1:${port} is not a cudagraph rendezvous: it answered 'SSH-2.0-OpenSSH_9.6\\x0d\\x0a'`),
    );
    assert.ok(performance.now() - t0 < 5_000, 'not at the timeout');
  } finally {
    other.close();
  }
});

test('a payload of several MiB arrives whole in another process (frames split across TCP reads)', async () => {
  const payload = randomBytes(3 * 1024 * 1024 + 7);
  const { port, done } = await inProcessHost(2, payload);
  const peer = await startRendezvous({ rank: 1, worldSize: 2, port, timeoutMs: 60_000 }).done;
  assert.equal(ok(peer)['payloadHex'], hexOf(payload));
  await done;
});

test('after a rendezvous, success or failure, rank 0\'s port is free again', async () => {
  const listenAgain = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const reuse = createServer();
      reuse.on('error', reject);
      reuse.listen(port, '127.0.0.1', () => reuse.close(() => resolve()));
    });
  {
    const { port, done } = await inProcessHost(2, Uint8Array.of(9), 300);
    await assert.rejects(done, RendezvousError);
    await listenAgain(port);
  }
  {
    const { port, done } = await inProcessHost(2, Uint8Array.of(9));
    const peer = await tcpRendezvous({ rank: 1, worldSize: 2, addr: '127.0.0.1', port, timeoutMs: 5_000 });
    assert.deepEqual([...peer.payload], [9]);
    await done;
    await listenAgain(port);
  }
});

test('property: any world size, peers arriving in any order and at any time, strangers among them: every rank gets the payload', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 2, max: 7 }).chain((worldSize) =>
        fc.record({
          worldSize: fc.constant(worldSize),
          delays: fc.array(fc.integer({ min: 0, max: 60 }), { minLength: worldSize - 1, maxLength: worldSize - 1 }),
          strangers: fc.array(fc.record({ at: fc.integer({ min: 0, max: 60 }), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }).filter((b) => b[0] !== 0x43) }), { maxLength: 3 }),
          payload: fc.uint8Array({ maxLength: 256 }),
        }),
      ),
      async ({ worldSize, delays, strangers, payload }) => {
        const { port, done } = await inProcessHost(worldSize, payload);
        const later = <T>(ms: number, f: () => Promise<T>): Promise<T> => new Promise<void>((r) => setTimeout(r, ms)).then(f);
        const peers = delays.map((ms, i) => later(ms, () => tcpRendezvous({ rank: i + 1, worldSize, addr: '127.0.0.1', port, timeoutMs: 10_000 })));
        const probes = strangers.map((st) => later(st.at, () => client(port, st.bytes)).catch(() => Buffer.alloc(0)));
        const [host, ...rest] = await Promise.all([done, ...peers]);
        await Promise.all(probes);
        for (const r of [host, ...rest]) assert.deepEqual([...r.payload], [...payload]);
        assert.deepEqual(rest.map((r) => r.rank), delays.map((_, i) => i + 1));
      },
    ),
    { numRuns: 15 },
  );
});

test('a world of one rank opens nothing and returns a copy of the payload', async () => {
  const payload = Uint8Array.of(1, 2, 3);
  const r = await tcpRendezvous({ rank: 0, worldSize: 1, addr: 'nowhere.invalid', port: 1, payload });
  assert.deepEqual([...r.payload], [1, 2, 3]);
  assert.notEqual(r.payload, payload);
  assert.equal(r.port, null);
});

test('options are checked before anything opens: each refusal an InvalidArgumentError naming tcpRendezvous', async () => {
  const base = { rank: 1, worldSize: 2, addr: '127.0.0.1', port: 29500 };
  const cases: Array<[unknown, string, RegExp]> = [
    [undefined, 'options', /options are required/],
    [{ ...base, worldSize: 0 }, 'worldSize', /worldSize must be an integer in 1\.\./],
    [{ ...base, worldSize: Number.NaN }, 'worldSize', /got NaN/],
    [{ ...base, rank: 2 }, 'rank', /rank must be an integer in 0\.\.1, got 2/],
    [{ ...base, rank: -1 }, 'rank', /got -1/],
    [{ ...base, rank: 0.5 }, 'rank', /got 0\.5/],
    [{ ...base, addr: '' }, 'addr', /addr must be a non-empty string/],
    [{ ...base, port: 0 }, 'port', /port must be an integer in 1\.\.65535, got 0/],
    [{ ...base, port: 65536 }, 'port', /got 65536/],
    [{ ...base, rank: 0 }, 'payload', /rank 0 needs a payload/],
    [{ ...base, rank: 0, payload: 'abc' }, 'payload', /got "abc"/],
    [{ ...base, payload: Uint8Array.of(1) }, 'payload', /only rank 0 hands out a payload; rank 1 receives it/],
    [{ ...base, timeoutMs: 0 }, 'timeoutMs', /timeoutMs must be an integer in 1\.\./],
    [{ ...base, timeoutMs: Infinity }, 'timeoutMs', /got Infinity/],
    [{ ...base, signal: {} }, 'signal', /signal must be an AbortSignal/],
    [{ ...base, onListening: 3 }, 'onListening', /onListening must be a function/],
    [{ ...base, listenHost: '' }, 'listenHost', /listenHost must be a non-empty string/],
    [{ ...base, retries: 3 }, 'options', /unknown option 'retries'/],
  ];
  for (const [options, parameter, message] of cases) {
    await assert.rejects(
      tcpRendezvous(options as never),
      (e: unknown) => e instanceof InvalidArgumentError && e instanceof CudagraphError && e.parameter === parameter && message.test(e.message) && e.message.startsWith('tcpRendezvous: '),
      `${JSON.stringify(options)}`,
    );
  }
  const ac = new AbortController();
  ac.abort(new Error('before'));
  await assert.rejects(tcpRendezvous({ ...base, signal: ac.signal }), (e: unknown) => e instanceof RendezvousError && e.code === 'ERR_RENDEZVOUS_ABORTED' && (e.cause as Error).message === 'before');
});

test('rank 0 cannot listen on a port in use: ERR_RENDEZVOUS_LISTEN naming the port', async () => {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const { port } = busy.address() as { port: number };
  try {
    await assert.rejects(
      tcpRendezvous({ rank: 0, worldSize: 2, addr: '127.0.0.1', port, listenHost: '127.0.0.1', payload: Uint8Array.of(1), timeoutMs: 5_000 }),
      (e: unknown) => e instanceof RendezvousError && e.code === 'ERR_RENDEZVOUS_LISTEN' && e.message.includes(`127.0.0.1:${port}: EADDRINUSE`),
    );
  } finally {
    busy.close();
  }
});
