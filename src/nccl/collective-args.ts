/**
 * The arguments of a collective, checked before NCCL sees them: counts, element types, reduction
 * operations, roots, offsets, and that each buffer holds what the collective reads or writes. A
 * pure function of sizes and numbers (no GPU), so every rule is tested on the CPU; `NcclComm`
 * adds the object checks (buffer, stream and communicator on one device, nothing disposed).
 *
 * What each collective touches, per rank (nccl.h.in's comments; `n` the count, `s` the element
 * size, `R` the number of ranks):
 * - allReduce: reads n·s from send, writes n·s to recv (in place: the same range);
 * - broadcast: the root reads n·s from send, every rank writes n·s to recv;
 * - reduce: reads n·s from send, the root writes n·s to recv;
 * - allGather (`n` = sendcount): reads n·s, writes R·n·s (in place: send = recv + rank·n·s);
 * - reduceScatter (`n` = recvcount): reads R·n·s, writes n·s (in place: recv = send + rank·n·s).
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireBoolean, requireInt, requireName, requireOneOf, requireSize } from '../util/validate.js';
import { NCCL_DATA_TYPES, NCCL_RED_OPS, decodeNcclVersion } from './codes.js';
import { COLLECTIVE_OPS, ELEMENT_TYPES, REDUCE_OPS, type CollectiveOp, type ElementType, type ReduceOp } from '../model/element-type.js';

/** The option names each collective accepts. */
export const COLLECTIVE_OPTIONS: { readonly [K in CollectiveOp]: readonly string[] } = {
  allReduce: ['send', 'recv', 'count', 'type', 'op', 'sendOffset', 'recvOffset'],
  broadcast: ['send', 'recv', 'count', 'type', 'root', 'sendOffset', 'recvOffset'],
  reduce: ['send', 'recv', 'count', 'type', 'op', 'root', 'sendOffset', 'recvOffset'],
  allGather: ['send', 'recv', 'count', 'type', 'sendOffset', 'recvOffset'],
  reduceScatter: ['send', 'recv', 'count', 'type', 'op', 'sendOffset', 'recvOffset'],
};

/** One side of a collective as the check sees it: the buffer's size (null: not given) and the option's offset. */
export interface BufferSide {
  readonly byteLength: number | null;
  readonly offset: unknown;
}

/** What `checkCollective` needs. */
export interface CollectiveInput {
  readonly kind: CollectiveOp;
  /** This rank, 0..size−1. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  /** The loaded NCCL's version code (for types and operations newer releases added). */
  readonly version: number;
  readonly count: unknown;
  readonly type: unknown;
  readonly op: unknown;
  readonly root: unknown;
  readonly send: BufferSide;
  readonly recv: BufferSide;
  /** True when send and recv are the same buffer (or one was omitted: in place). */
  readonly sameBuffer: boolean;
}

/** A checked collective: the numbers NCCL gets, and the byte ranges it touches. */
export interface CheckedCollective {
  readonly count: number;
  readonly type: ElementType;
  readonly datatype: number;
  readonly redOp: number;
  readonly root: number;
  readonly sendOffset: number;
  readonly recvOffset: number;
  /** Bytes read from send at sendOffset on this rank (0 when this rank does not read). */
  readonly sendBytes: number;
  /** Bytes written to recv at recvOffset on this rank (0 when this rank does not write). */
  readonly recvBytes: number;
}

function versionText(code: number): string {
  const v = decodeNcclVersion(code);
  return `${v.major}.${v.minor}.${v.patch}`;
}

function requireOffset(op: string, name: string, value: unknown, elementSize: number): number {
  const off = value === undefined ? 0 : requireSize(op, name, value);
  if (off % elementSize !== 0) {
    throw new InvalidArgumentError(op, name, `${name} must be a multiple of the element size (${elementSize} bytes), got ${off}`);
  }
  return off;
}

/**
 * Checks one collective's arguments and works out its offsets and byte ranges. An omitted buffer
 * means in place: allReduce/broadcast/reduce use the other buffer's range; allGather without
 * `send` reads this rank's slot of `recv`, reduceScatter without `recv` writes this rank's slot
 * of `send`.
 * @throws InvalidArgumentError (message starting with `op`; with `checkCollective` when `op` is
 *   not a non-empty string) for an `input` whose own fields are wrong (`input.kind` not a
 *   collective, `input.rank` outside 0..size−1, a `byteLength` neither null nor a byte count, …),
 *   a count that is not an integer ≥ 0, an unknown type or operation, a type or operation this NCCL lacks, a root out of range,
 *   an offset that is negative, fractional or not a multiple of the element size, a buffer
 *   smaller than its range, or ranges of one buffer that overlap without being NCCL's in-place form.
 */
export function checkCollective(op: string, input: CollectiveInput): CheckedCollective {
  requireName('checkCollective', 'op', op);
  const { kind, rank, size, version, send, recv, sameBuffer } = checkInput(op, input);
  const type = requireOneOf(op, 'type', input.type, ELEMENT_TYPES);
  const t = NCCL_DATA_TYPES[type];
  if (version < t.since) {
    throw new InvalidArgumentError(op, 'type', `type '${type}' needs NCCL ${versionText(t.since)} or newer; this NCCL is ${versionText(version)}`);
  }
  const count = requireSize(op, 'count', input.count);
  let redOp = 0;
  if (kind === 'allReduce' || kind === 'reduce' || kind === 'reduceScatter') {
    const name: ReduceOp = requireOneOf(op, 'op', input.op, REDUCE_OPS);
    const r = NCCL_RED_OPS[name];
    if (version < r.since) {
      throw new InvalidArgumentError(op, 'op', `op '${name}' needs NCCL ${versionText(r.since)} or newer; this NCCL is ${versionText(version)}`);
    }
    redOp = r.code;
  }
  let root = 0;
  if (kind === 'broadcast' || kind === 'reduce') root = requireInt(op, 'root', input.root, 0, size - 1);

  const s = t.bytes;
  const n = count * s;
  if (send.byteLength === null && recv.byteLength === null) {
    throw new InvalidArgumentError(op, 'send', 'give send, recv or both (one alone means in place)');
  }
  // Offsets: given, or (for an omitted buffer) derived from the other side's in-place position.
  let sendOffset: number;
  let recvOffset: number;
  if (send.byteLength === null) {
    if (send.offset !== undefined) throw new InvalidArgumentError(op, 'sendOffset', 'sendOffset was given without send');
    recvOffset = requireOffset(op, 'recvOffset', recv.offset, s);
    sendOffset = kind === 'allGather' ? recvOffset + rank * n : recvOffset;
  } else if (recv.byteLength === null) {
    if (recv.offset !== undefined) throw new InvalidArgumentError(op, 'recvOffset', 'recvOffset was given without recv');
    if (kind === 'allGather') throw new InvalidArgumentError(op, 'recv', 'allGather needs recv (it holds every rank\'s block)');
    sendOffset = requireOffset(op, 'sendOffset', send.offset, s);
    recvOffset = kind === 'reduceScatter' ? sendOffset + rank * n : sendOffset;
  } else {
    sendOffset = requireOffset(op, 'sendOffset', send.offset, s);
    recvOffset = requireOffset(op, 'recvOffset', recv.offset, s);
  }

  const isRoot = rank === root;
  let sendBytes: number;
  let recvBytes: number;
  switch (kind) {
    case 'allReduce':
      sendBytes = n;
      recvBytes = n;
      break;
    case 'broadcast':
      sendBytes = isRoot ? n : 0;
      recvBytes = n;
      break;
    case 'reduce':
      sendBytes = n;
      recvBytes = isRoot ? n : 0;
      break;
    case 'allGather':
      sendBytes = n;
      recvBytes = size * n;
      break;
    case 'reduceScatter':
      sendBytes = size * n;
      recvBytes = n;
      break;
  }
  const sendLength = send.byteLength ?? recv.byteLength!;
  const recvLength = recv.byteLength ?? send.byteLength!;
  fits(op, 'send', sendOffset, sendBytes, sendLength, kind, count, type);
  fits(op, 'recv', recvOffset, recvBytes, recvLength, kind, count, type);

  if (sameBuffer && sendBytes > 0 && recvBytes > 0) {
    const overlap = sendOffset < recvOffset + recvBytes && recvOffset < sendOffset + sendBytes;
    const inPlace =
      kind === 'allGather'
        ? sendOffset === recvOffset + rank * n
        : kind === 'reduceScatter'
          ? recvOffset === sendOffset + rank * n
          : sendOffset === recvOffset;
    if (overlap && !inPlace) {
      const form =
        kind === 'allGather'
          ? `sendOffset = recvOffset + rank·count·${s} (${recvOffset + rank * n})`
          : kind === 'reduceScatter'
            ? `recvOffset = sendOffset + rank·count·${s} (${sendOffset + rank * n})`
            : 'sendOffset = recvOffset';
      throw new InvalidArgumentError(
        op,
        'recvOffset',
        `send and recv are one buffer and their ranges overlap without being the in-place form (${form}); NCCL's result would be undefined`,
      );
    }
  }
  return { count, type, datatype: t.code, redOp, root, sendOffset, recvOffset, sendBytes, recvBytes };
}

/**
 * The fields of `input` that describe the call rather than the user's arguments (which collective,
 * this rank of how many, the NCCL version, the buffers' sizes), checked: a wrong one would make
 * every rule below answer for another call (an unknown kind checked no range at all). Each field
 * is read once.
 */
function checkInput(op: string, input: unknown): { kind: CollectiveOp; rank: number; size: number; version: number; send: BufferSide; recv: BufferSide; sameBuffer: boolean } {
  if (typeof input !== 'object' || input === null) throw new InvalidArgumentError(op, 'input', `input must be an object, got ${describe(input)}`);
  const i = input as Record<string, unknown>;
  const kind = requireOneOf(op, 'input.kind', i.kind, COLLECTIVE_OPS);
  const size = requireInt(op, 'input.size', i.size, 1, 1 << 30);
  const rank = requireInt(op, 'input.rank', i.rank, 0, size - 1);
  const version = requireInt(op, 'input.version', i.version, 0, 0x7fff_ffff);
  const sameBuffer = requireBoolean(op, 'input.sameBuffer', i.sameBuffer);
  return { kind, rank, size, version, send: bufferSide(op, 'input.send', i.send), recv: bufferSide(op, 'input.recv', i.recv), sameBuffer };
}

/** One `BufferSide`, checked: an object whose `byteLength` is null (no buffer) or a byte count. */
function bufferSide(op: string, name: string, value: unknown): BufferSide {
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError(op, name, `${name} must be an object { byteLength, offset }, got ${describe(value)}`);
  const side = value as Record<string, unknown>;
  const byteLength = side.byteLength === null ? null : requireSize(op, `${name}.byteLength`, side.byteLength);
  return { byteLength, offset: side.offset };
}

function fits(
  op: string,
  name: 'send' | 'recv',
  offset: number,
  bytes: number,
  byteLength: number,
  kind: CollectiveOp,
  count: number,
  type: ElementType,
): void {
  if (offset + bytes > byteLength || (bytes === 0 && offset > byteLength)) {
    throw new InvalidArgumentError(
      op,
      name,
      `${kind} of count ${count} × ${type} needs ${bytes} bytes of ${name} at offset ${offset}, but the buffer holds ${byteLength} bytes`,
    );
  }
}
