import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { NCCL_UNIQUE_ID_BYTES } from './codes.js';
import { getUniqueId } from './result.js';

const HEX = /^[0-9a-fA-F]*$/;

/**
 * The rendezvous token of a communicator (`ncclUniqueId`, 128 bytes): made once by one rank with
 * `NcclUniqueId.create()` (`ncclGetUniqueId`), carried to every other rank by the program (a
 * command-line argument, a message, a file: as hex or bytes), and given to each rank's
 * `NcclComm.initRank`. It holds the address of rank 0's bootstrap socket, so it is valid only
 * while that process lives.
 *
 * @example
 * // rank 0
 * const id = NcclUniqueId.create();
 * child.send(id.toHex());
 * // every rank
 * const comm = NcclComm.initRank(Device.get(rank), { id: NcclUniqueId.fromHex(hex), rank, size });
 */
export class NcclUniqueId {
  readonly #bytes: Uint8Array;

  private constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /**
   * A new id from NCCL (`ncclGetUniqueId`).
   * @throws NcclError `NCCL_NOT_LOADED` listing the paths tried; NcclError from NCCL (e.g.
   *   `ncclSystemError` when no network interface is usable for the bootstrap).
   */
  static create(): NcclUniqueId {
    return new NcclUniqueId(getUniqueId('NcclUniqueId.create'));
  }

  /** The id from its 256 hexadecimal digits (`toHex()`). @throws InvalidArgumentError for anything else. */
  static fromHex(hex: string): NcclUniqueId {
    const op = 'NcclUniqueId.fromHex';
    if (typeof hex !== 'string' || hex.length !== 2 * NCCL_UNIQUE_ID_BYTES || !HEX.test(hex)) {
      throw new InvalidArgumentError(
        op,
        'hex',
        `hex must be ${2 * NCCL_UNIQUE_ID_BYTES} hexadecimal digits (an ncclUniqueId is ${NCCL_UNIQUE_ID_BYTES} bytes), got ${describe(hex)}${typeof hex === 'string' ? ` (${hex.length} characters)` : ''}`,
      );
    }
    return new NcclUniqueId(Uint8Array.from(Buffer.from(hex, 'hex')));
  }

  /** The id from its 128 bytes (copied). @throws InvalidArgumentError unless exactly 128 bytes. */
  static fromBytes(bytes: ArrayBufferView): NcclUniqueId {
    const op = 'NcclUniqueId.fromBytes';
    if (!ArrayBuffer.isView(bytes) || bytes.byteLength !== NCCL_UNIQUE_ID_BYTES) {
      throw new InvalidArgumentError(
        op,
        'bytes',
        `bytes must be an ArrayBufferView of exactly ${NCCL_UNIQUE_ID_BYTES} bytes, got ${ArrayBuffer.isView(bytes) ? `${bytes.byteLength} bytes` : describe(bytes)}`,
      );
    }
    return new NcclUniqueId(new Uint8Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)));
  }

  /** @internal True for an NcclUniqueId this class made (a brand check, not `instanceof`). */
  static is(value: unknown): value is NcclUniqueId {
    return typeof value === 'object' && value !== null && #bytes in value;
  }

  /** The id as 256 lowercase hexadecimal digits. */
  toHex(): string {
    return Buffer.from(this.#bytes).toString('hex');
  }

  /** A copy of the id's 128 bytes. */
  toBytes(): Uint8Array {
    return this.#bytes.slice();
  }

  /** True when `other` holds the same bytes. */
  equals(other: NcclUniqueId): boolean {
    return NcclUniqueId.is(other) && Buffer.from(this.#bytes).equals(Buffer.from(other.#bytes));
  }

  /** @internal The bytes themselves, for `ncclCommInitRank`. */
  bytesFor(): Uint8Array {
    return this.#bytes;
  }

  /** `NcclUniqueId(0123abcd…)`: the first bytes only. */
  toString(): string {
    return `NcclUniqueId(${this.toHex().slice(0, 8)}…)`;
  }
}
