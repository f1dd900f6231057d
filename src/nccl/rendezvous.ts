import * as net from 'node:net';
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireInt, requireName, requireOptions } from '../util/validate.js';
import { RendezvousError, type RendezvousErrorCode } from './rendezvous-error.js';
import {
  FrameReader,
  MAX_PAYLOAD_BYTES,
  ProtocolViolation,
  RefuseReason,
  RENDEZVOUS_VERSION,
  encodeAck,
  encodeHello,
  encodePayload,
  encodeRefuse,
  printable,
  type Frame,
  type RefuseReasonCode,
} from './rendezvous-protocol.js';

/**
 * What the rendezvous needs of an `AbortSignal`, spelled out so the typings need neither the DOM
 * library nor @types/node. Pass a real `AbortSignal` (the only kind accepted at run time).
 */
export interface AbortSignalLike {
  /** True once the signal fired. */
  readonly aborted: boolean;
  /** What it fired with (`AbortController.abort(reason)`). */
  readonly reason?: unknown;
  /** Registers the listener of the 'abort' event. */
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  /** Removes it. */
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Options of `tcpRendezvous`. */
export interface TcpRendezvousOptions {
  /** This process's rank, 0..worldSize−1. Rank 0 serves; every other rank connects to it. */
  readonly rank: number;
  /** Number of ranks; every rank must give the same. */
  readonly worldSize: number;
  /** The host the other ranks reach rank 0 at (`MASTER_ADDR`): a name or an IP address. */
  readonly addr: string;
  /** Rank 0's port (`MASTER_PORT`). Rank 0 may give 0 for a free port chosen by the system (see `onListening`). */
  readonly port: number;
  /** Rank 0 only, required there: the bytes handed to every other rank (e.g. an ncclUniqueId's 128). */
  readonly payload?: ArrayBufferView;
  /** How long to wait for the whole group, in milliseconds (default 300,000: 5 minutes). */
  readonly timeoutMs?: number;
  /** Gives up when it fires (`ERR_RENDEZVOUS_ABORTED`, `cause` its reason), closing every socket. */
  readonly signal?: AbortSignalLike;
  /** Rank 0 only (ignored elsewhere): the address to listen on. Default: every interface, as torchrun's store does. */
  readonly listenHost?: string;
  /** Rank 0 only (ignored elsewhere): called once it listens, with the port (the chosen one when `port` is 0). */
  readonly onListening?: (address: { readonly host: string; readonly port: number }) => void;
}

/** What `tcpRendezvous` resolves to once every rank holds the payload. */
export interface RendezvousResult {
  /** The payload rank 0 handed out (on rank 0, a copy of its own). */
  readonly payload: Uint8Array;
  /** This process's rank, as given. */
  readonly rank: number;
  /** The number of ranks, as given (and agreed by every rank). */
  readonly worldSize: number;
  /** The port rank 0 listened on; null for a world of one rank, where no socket is opened. */
  readonly port: number | null;
  /** Milliseconds from the call to completion. */
  readonly elapsedMs: number;
}

const OP = 'tcpRendezvous';
const DEFAULT_TIMEOUT_MS = 300_000;
/** setTimeout's largest delay (a larger one fires at once). */
const MAX_TIMEOUT_MS = 0x7fff_ffff;
/** A connection that says nothing this long is dropped: it holds a socket and is no peer. */
const HANDSHAKE_MS = 10_000;
/** One connection attempt's limit: a SYN lost to a host not up yet is retried, not waited on for minutes. */
const CONNECT_ATTEMPT_MS = 5_000;
/** Retry delays of a peer while rank 0 is not reachable: from 50 ms, doubling, at most 1 s, with jitter. */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1_000;
/** How long a closing socket may take to flush its last frame before it is destroyed anyway. */
const LINGER_MS = 1_000;

/**
 * Hands rank 0's `payload` to every rank of a group over TCP (the way torchrun's `MASTER_ADDR` /
 * `MASTER_PORT` store does, reduced to one broadcast). Rank 0 listens on `port`; every other rank
 * connects to `addr:port`, retrying with backoff while rank 0 is not up yet, and says which rank
 * it is and how many ranks it expects. Rank 0 refuses a peer whose world size differs, a rank
 * claimed twice, a rank out of range, and a client that does not speak the protocol (its magic and
 * version are checked on the first bytes: an HTTP request to the port is answered 400 and dropped,
 * and the rendezvous goes on). Only when all `worldSize − 1` peers are there does rank 0 send the
 * payload to all of them (a barrier: every rank learns at once that the group is complete); each
 * confirms, and rank 0 closes its server. A world of one rank opens no socket.
 *
 * Nothing is left behind: on success, failure, timeout or abort every socket, the server and every
 * timer are closed before the promise settles. When rank 0 gives up it tells every connected peer
 * why (`ERR_RENDEZVOUS_HOST_FAILED` there), so they fail at once instead of at their own timeout.
 *
 * @example
 * const id = rank === 0 ? NcclUniqueId.create().toBytes() : undefined;
 * const { payload } = await tcpRendezvous({ rank, worldSize, addr: 'node0', port: 29500, payload: id });
 * @throws InvalidArgumentError (rejects; nothing opened) for a bad option; RendezvousError when the
 *   group does not complete: `ERR_RENDEZVOUS_TIMEOUT` naming the ranks missing (rank 0) or the
 *   unreachable address (the others), `ERR_RENDEZVOUS_WORLD_SIZE`, `ERR_RENDEZVOUS_DUPLICATE_RANK`,
 *   `ERR_RENDEZVOUS_RANK_RANGE`, `ERR_RENDEZVOUS_PROTOCOL`, `ERR_RENDEZVOUS_HOST_FAILED`,
 *   `ERR_RENDEZVOUS_DISCONNECTED`, `ERR_RENDEZVOUS_LISTEN`, `ERR_RENDEZVOUS_ABORTED`.
 */
export function tcpRendezvous(options: TcpRendezvousOptions): Promise<RendezvousResult> {
  return rendezvousAs(OP, options);
}

/** @internal `tcpRendezvous` reporting under the caller's operation name (`initNcclFromEnvironment`). */
export async function rendezvousAs(op: string, options: unknown): Promise<RendezvousResult> {
  const o = checkOptions(op, options);
  if (o.signal?.aborted) throw aborted(op, o, o.signal);
  if (o.worldSize === 1) {
    return { payload: o.payload!.slice(), rank: 0, worldSize: 1, port: null, elapsedMs: 0 };
  }
  return o.rank === 0 ? serve(op, o) : join(op, o);
}

/** Checked options. */
interface Checked {
  readonly rank: number;
  readonly worldSize: number;
  readonly addr: string;
  readonly port: number;
  readonly payload: Uint8Array | null;
  readonly timeoutMs: number;
  readonly signal: AbortSignalLike | undefined;
  readonly listenHost: string | undefined;
  readonly onListening: TcpRendezvousOptions['onListening'];
}

const KEYS = ['rank', 'worldSize', 'addr', 'port', 'payload', 'timeoutMs', 'signal', 'listenHost', 'onListening'];

/** @internal The option checks, shared with `initFromEnvironment` (which reports them under its own name). */
export function checkOptions(op: string, options: unknown): Checked {
  if (options === undefined) throw new InvalidArgumentError(op, 'options', 'options are required ({ rank, worldSize, addr, port, … })');
  const o = requireOptions<TcpRendezvousOptions>(op, options, KEYS);
  const worldSize = requireInt(op, 'worldSize', o.worldSize, 1, 0x7fff_ffff);
  const rank = requireInt(op, 'rank', o.rank, 0, worldSize - 1);
  const addr = requireName(op, 'addr', o.addr);
  const port = requireInt(op, 'port', o.port, rank === 0 ? 0 : 1, 65535);
  let payload: Uint8Array | null = null;
  if (rank === 0) {
    if (!ArrayBuffer.isView(o.payload) || o.payload.byteLength > MAX_PAYLOAD_BYTES) {
      throw new InvalidArgumentError(
        op,
        'payload',
        `rank 0 needs a payload: an ArrayBufferView of at most ${MAX_PAYLOAD_BYTES} bytes, got ${ArrayBuffer.isView(o.payload) ? `${o.payload.byteLength} bytes` : describe(o.payload)}`,
      );
    }
    // A copy: the caller may reuse its buffer while the rendezvous runs.
    payload = Uint8Array.from(new Uint8Array(o.payload.buffer, o.payload.byteOffset, o.payload.byteLength));
  } else if (o.payload !== undefined) {
    throw new InvalidArgumentError(op, 'payload', `only rank 0 hands out a payload; rank ${rank} receives it (pass undefined)`);
  }
  const timeoutMs = o.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : requireInt(op, 'timeoutMs', o.timeoutMs, 1, MAX_TIMEOUT_MS);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError(op, 'signal', `signal must be an AbortSignal, got ${describe(o.signal)}`);
  }
  const listenHost = o.listenHost === undefined ? undefined : requireName(op, 'listenHost', o.listenHost);
  if (o.onListening !== undefined && typeof o.onListening !== 'function') {
    throw new InvalidArgumentError(op, 'onListening', `onListening must be a function, got ${describe(o.onListening)}`);
  }
  return { rank, worldSize, addr, port, payload, timeoutMs, signal: o.signal as AbortSignalLike | undefined, listenHost, onListening: o.onListening };
}

/** `host:port`, bracketing an IPv6 literal. */
function hostPort(host: string, port: number): string {
  return net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** @internal Ranks as short text: `2, 5-9, 12`. */
export function formatRanks(ranks: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < ranks.length; ) {
    let j = i;
    while (j + 1 < ranks.length && ranks[j + 1] === ranks[j]! + 1) j++;
    parts.push(j === i ? `${ranks[i]}` : j === i + 1 ? `${ranks[i]}, ${ranks[j]}` : `${ranks[i]}-${ranks[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}

function aborted(op: string, o: Checked, signal: AbortSignalLike): RendezvousError {
  return new RendezvousError(op, 'ERR_RENDEZVOUS_ABORTED', `rank ${o.rank} of ${o.worldSize}: aborted`, { rank: o.rank, worldSize: o.worldSize, address: hostPort(o.addr, o.port) }, { cause: signal.reason });
}

/** Ends a socket after `last` (if any) is flushed, and destroys it then, or after LINGER_MS at the latest. */
function closeAfter(s: net.Socket, last?: Uint8Array | string): void {
  if (s.destroyed) return;
  const t = setTimeout(() => s.destroy(), LINGER_MS);
  s.once('close', () => clearTimeout(t));
  if (last === undefined) s.end(() => s.destroy());
  else s.end(last, () => s.destroy());
}

/** A connection to rank 0's server. */
interface Conn {
  readonly socket: net.Socket;
  readonly reader: FrameReader;
  readonly remote: string;
  /** The rank it claimed, or -1 before its HELLO. */
  rank: number;
  handshake: NodeJS.Timeout | null;
}

/** Rank 0: listen, admit peers, send the payload when all are there, wait for every confirmation. */
function serve(op: string, o: Checked): Promise<RendezvousResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const server = net.createServer({ noDelay: true });
    const conns = new Set<Conn>();
    const peers = new Map<number, Conn>();
    const acked = new Set<number>();
    let payloadSent = false;
    let settled = false;
    let port = o.port;
    let listen: 'pending' | 'listening' | 'failed' = 'pending';
    let afterListen: (() => void) | null = null;
    const where = (): string => hostPort(o.addr, port);
    const details = () => ({ rank: 0, worldSize: o.worldSize, address: where() });

    const timer = setTimeout(() => {
      const missing: number[] = [];
      for (let r = 1; r < o.worldSize; r++) if (payloadSent ? !acked.has(r) : !peers.has(r)) missing.push(r);
      const arrived = [...peers.keys()].sort((a, b) => a - b);
      const what = payloadSent
        ? `rank(s) ${formatRanks(missing)} received the payload and did not confirm`
        : `rank(s) ${formatRanks(missing)} of ${o.worldSize} did not arrive (arrived: ${arrived.length ? formatRanks(arrived) : 'none'})`;
      fail(new RendezvousError(op, 'ERR_RENDEZVOUS_TIMEOUT', `rank 0 timed out after ${o.timeoutMs} ms listening on port ${port}: ${what}`, { ...details(), missingRanks: missing }));
    }, o.timeoutMs);
    const onAbort = (): void => fail(aborted(op, o, o.signal!));
    o.signal?.addEventListener('abort', onAbort, { once: true });

    /** Settles once: closes every connection (telling peers why on failure) and the server, then resolves or rejects. */
    const finish = (error: unknown, culprit?: { conn: Conn; reason: RefuseReasonCode; text: string }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      for (const c of conns) {
        if (c.handshake) clearTimeout(c.handshake);
        if (error === null) closeAfter(c.socket);
        else if (culprit?.conn === c) closeAfter(c.socket, encodeRefuse(culprit.reason, culprit.text));
        else if (c.rank > 0) closeAfter(c.socket, encodeRefuse(RefuseReason.hostFailed, error instanceof Error ? error.message : String(error)));
        else c.socket.destroy();
      }
      const done = (): void => {
        if (error !== null) reject(error);
        else resolve({ payload: o.payload!.slice(), rank: 0, worldSize: o.worldSize, port, elapsedMs: performance.now() - started });
      };
      if (listen === 'listening') server.close(done);
      else if (listen === 'pending') afterListen = done; // closed (or failed) as soon as listen() reports back
      else done();
    };
    const fail = (e: unknown, culprit?: { conn: Conn; reason: RefuseReasonCode; text: string }): void => finish(e, culprit);
    const refusePeer = (c: Conn, code: RendezvousErrorCode, reason: RefuseReasonCode, message: string, extra: object): void =>
      fail(new RendezvousError(op, code, `rank 0: ${message}`, { ...details(), ...extra }), { conn: c, reason, text: message });

    const hello = (c: Conn, f: Extract<Frame, { type: 'hello' }>): void => {
      const extra = { peerRank: f.rank, peerWorldSize: f.worldSize };
      if (f.worldSize !== o.worldSize) {
        return refusePeer(c, 'ERR_RENDEZVOUS_WORLD_SIZE', RefuseReason.worldSize, `a peer at ${c.remote} claims rank ${f.rank} of a world of ${f.worldSize}, but rank 0 has a world of ${o.worldSize}: every rank must be given the same world size`, extra);
      }
      if (f.rank === 0) {
        return refusePeer(c, 'ERR_RENDEZVOUS_DUPLICATE_RANK', RefuseReason.duplicateRank, `a peer at ${c.remote} claims rank 0, which is this process (the one listening on port ${port})`, extra);
      }
      if (f.rank >= o.worldSize) {
        return refusePeer(c, 'ERR_RENDEZVOUS_RANK_RANGE', RefuseReason.rankRange, `a peer at ${c.remote} claims rank ${f.rank}, outside 1..${o.worldSize - 1}`, extra);
      }
      const other = peers.get(f.rank);
      if (other !== undefined) {
        return refusePeer(c, 'ERR_RENDEZVOUS_DUPLICATE_RANK', RefuseReason.duplicateRank, `rank ${f.rank} is claimed twice: by ${other.remote} and by ${c.remote}`, extra);
      }
      c.rank = f.rank;
      peers.set(f.rank, c);
      if (peers.size === o.worldSize - 1) {
        // The barrier: the payload goes out only when the group is complete, to everyone at once.
        payloadSent = true;
        const frame = encodePayload(o.payload!);
        for (const p of peers.values()) p.socket.write(frame);
      }
    };

    const onFrame = (c: Conn, f: Frame): void => {
      if (f.type === 'hello' && c.rank === -1) {
        if (c.handshake) clearTimeout(c.handshake);
        c.handshake = null;
        hello(c, f);
      } else if (f.type === 'ack' && c.rank > 0 && payloadSent && !acked.has(c.rank)) {
        acked.add(c.rank);
        if (acked.size === o.worldSize - 1) finish(null);
      } else if (c.rank > 0) {
        refusePeer(c, 'ERR_RENDEZVOUS_PROTOCOL', RefuseReason.protocol, `rank ${c.rank} at ${c.remote} sent an unexpected ${f.type} frame`, { peerRank: c.rank });
      } else {
        closeAfter(c.socket, encodeRefuse(RefuseReason.protocol, `expected a hello frame first, got ${f.type}`));
      }
    };

    /** A client that is not a peer of this protocol version: answered and dropped; the rendezvous goes on. */
    const refuseStranger = (c: Conn, v: ProtocolViolation): void => {
      if (c.handshake) clearTimeout(c.handshake);
      if (c.rank > 0) {
        refusePeer(c, 'ERR_RENDEZVOUS_PROTOCOL', RefuseReason.protocol, `rank ${c.rank} at ${c.remote} broke the protocol: ${v.message}`, { peerRank: c.rank });
        return;
      }
      const text = `this port is a cudagraph rendezvous (protocol version ${RENDEZVOUS_VERSION}); ${v.message}`;
      if (v.reason === 'version' || v.reason === 'frame') closeAfter(c.socket, encodeRefuse(v.reason === 'version' ? RefuseReason.version : RefuseReason.protocol, text));
      else if (/^[A-Z]+ \S/.test(Buffer.from(v.bytes).toString('latin1'))) {
        // An HTTP request (a browser, curl, a health check): a proper 400, so the client shows why.
        const body = `${text}\n`;
        closeAfter(c.socket, `HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      } else closeAfter(c.socket, `${text}\n`);
    };

    server.on('connection', (socket) => {
      if (settled) {
        socket.destroy();
        return;
      }
      const c: Conn = { socket, reader: new FrameReader(), remote: hostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0), rank: -1, handshake: null };
      conns.add(c);
      c.handshake = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
      socket.on('error', () => {}); // 'close' follows; a peer's reset is handled there
      socket.on('close', () => {
        conns.delete(c);
        if (c.handshake) clearTimeout(c.handshake);
        if (settled || c.rank <= 0 || peers.get(c.rank) !== c) return;
        if (!payloadSent) peers.delete(c.rank); // it left before the group was complete: it may come back
        else if (!acked.has(c.rank)) {
          fail(new RendezvousError(op, 'ERR_RENDEZVOUS_DISCONNECTED', `rank 0: rank ${c.rank} at ${c.remote} disconnected after the payload was sent and before confirming it`, { ...details(), peerRank: c.rank }));
        }
      });
      socket.on('data', (chunk: Buffer) => {
        if (settled || socket.writableEnded) return; // refused: what it sends next is not read
        let frames: Frame[];
        try {
          frames = c.reader.push(chunk);
        } catch (e) {
          if (e instanceof ProtocolViolation) return refuseStranger(c, e);
          throw e;
        }
        for (const f of frames) {
          if (settled || c.socket.destroyed || c.socket.writableEnded) return;
          onFrame(c, f);
        }
      });
    });
    server.on('error', (e: NodeJS.ErrnoException) => {
      if (listen !== 'pending') return; // after listen, errors belong to connections
      listen = 'failed';
      if (afterListen) return afterListen();
      fail(new RendezvousError(op, 'ERR_RENDEZVOUS_LISTEN', `rank 0 could not listen on ${hostPort(o.listenHost ?? '*', o.port)}: ${e.code ?? e.message}`, details(), { cause: e }));
    });
    server.listen({ port: o.port, host: o.listenHost }, () => {
      listen = 'listening';
      port = (server.address() as net.AddressInfo).port;
      if (afterListen) return server.close(afterListen); // aborted while listen() was under way
      if (settled) return;
      try {
        o.onListening?.({ host: o.listenHost ?? o.addr, port });
      } catch (e) {
        fail(e);
      }
    });
  });
}

/** Every other rank: connect (retrying), say who it is, wait for the payload, confirm it. */
function join(op: string, o: Checked): Promise<RendezvousResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const where = hostPort(o.addr, o.port);
    const details = { rank: o.rank, worldSize: o.worldSize, address: where };
    let settled = false;
    let socket: net.Socket | null = null;
    let retry: NodeJS.Timeout | null = null;
    let attemptTimer: NodeJS.Timeout | null = null;
    let attempts = 0;
    let reached = false;
    let connected = false;
    let lastError = '';

    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      if (retry) clearTimeout(retry);
      if (attemptTimer) clearTimeout(attemptTimer);
      o.signal?.removeEventListener('abort', onAbort);
    };
    const fail = (e: RendezvousError): void => {
      if (settled) return;
      cleanup();
      const s = socket;
      if (s === null || s.destroyed) reject(e);
      else {
        s.once('close', () => reject(e));
        s.destroy();
      }
    };
    const timer = setTimeout(() => {
      const msg = connected
        ? `rank ${o.rank} reached rank 0 at ${where}, but the group of ${o.worldSize} was not complete within ${o.timeoutMs} ms (rank 0 waits for every rank; its own error names the missing ones)`
        : reached
          ? `rank ${o.rank} reached rank 0 at ${where} but lost the connection, and could not get the payload within ${o.timeoutMs} ms (${attempts} attempts${lastError ? `, last: ${lastError}` : ''})`
          : `rank ${o.rank} could not reach rank 0 at ${where} within ${o.timeoutMs} ms (${attempts} attempts${lastError ? `, last: ${lastError}` : ''}): is rank 0 running, and is the port open between the hosts?`;
      fail(new RendezvousError(op, 'ERR_RENDEZVOUS_TIMEOUT', msg, { ...details, reached }));
    }, o.timeoutMs);
    const onAbort = (): void => fail(aborted(op, o, o.signal!));
    o.signal?.addEventListener('abort', onAbort, { once: true });

    const refused = (f: Extract<Frame, { type: 'refuse' }>): RendezvousError => {
      const code: RendezvousErrorCode =
        f.reason === RefuseReason.worldSize
          ? 'ERR_RENDEZVOUS_WORLD_SIZE'
          : f.reason === RefuseReason.duplicateRank
            ? 'ERR_RENDEZVOUS_DUPLICATE_RANK'
            : f.reason === RefuseReason.rankRange
              ? 'ERR_RENDEZVOUS_RANK_RANGE'
              : f.reason === RefuseReason.hostFailed
                ? 'ERR_RENDEZVOUS_HOST_FAILED'
                : 'ERR_RENDEZVOUS_PROTOCOL';
      const who = f.reason === RefuseReason.hostFailed ? 'rank 0 gave up' : `rank 0 refused rank ${o.rank} of ${o.worldSize}`;
      return new RendezvousError(op, code, `${who} (at ${where}): ${f.text}`, details);
    };

    const attempt = (): void => {
      retry = null;
      if (settled) return;
      attempts++;
      const reader = new FrameReader();
      const s = net.connect({ host: o.addr, port: o.port, noDelay: true });
      socket = s;
      attemptTimer = setTimeout(() => s.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })), CONNECT_ATTEMPT_MS);
      s.on('connect', () => {
        if (attemptTimer) clearTimeout(attemptTimer);
        attemptTimer = null;
        reached = true;
        connected = true;
        s.write(encodeHello(o.rank, o.worldSize));
      });
      s.on('error', (e: NodeJS.ErrnoException) => {
        lastError = e.code ?? e.message;
      });
      s.on('data', (chunk: Buffer) => {
        if (settled) return;
        let frames: Frame[];
        try {
          frames = reader.push(chunk);
        } catch (e) {
          if (!(e instanceof ProtocolViolation)) throw e;
          const msg =
            e.reason === 'magic'
              ? `${where} is not a cudagraph rendezvous: it answered '${printable(e.bytes)}' (another program on that port?)`
              : `rank 0 at ${where} broke the protocol: ${e.message}`;
          return fail(new RendezvousError(op, 'ERR_RENDEZVOUS_PROTOCOL', msg, details));
        }
        for (const f of frames) {
          if (f.type === 'refuse') return fail(refused(f));
          if (f.type !== 'payload') return fail(new RendezvousError(op, 'ERR_RENDEZVOUS_PROTOCOL', `rank 0 at ${where} sent an unexpected ${f.type} frame`, details));
          cleanup();
          const result: RendezvousResult = { payload: f.payload, rank: o.rank, worldSize: o.worldSize, port: o.port, elapsedMs: performance.now() - started };
          s.once('close', () => resolve(result));
          closeAfter(s, encodeAck());
          return;
        }
      });
      s.on('close', () => {
        if (attemptTimer) clearTimeout(attemptTimer);
        attemptTimer = null;
        connected = false;
        if (settled) return;
        socket = null;
        // Rank 0 is not up yet (or went away before the group completed): try again, backing off.
        const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(attempts - 1, 10));
        retry = setTimeout(attempt, delay * (0.5 + Math.random() / 2));
      });
    };
    attempt();
  });
}
