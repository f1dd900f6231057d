import { CudagraphError } from '../errors/base.js';

/**
 * The codes of `RendezvousError`:
 *
 * - `ERR_RENDEZVOUS_TIMEOUT`: the group was not complete in time. On rank 0, `missingRanks` names
 *   the ranks that never arrived (or arrived and did not confirm the payload); on the other ranks,
 *   `reached` says whether rank 0 was ever reached at `address`.
 * - `ERR_RENDEZVOUS_WORLD_SIZE`: two ranks disagree on the number of ranks.
 * - `ERR_RENDEZVOUS_DUPLICATE_RANK`: two processes claimed the same rank.
 * - `ERR_RENDEZVOUS_RANK_RANGE`: a peer claimed a rank outside 1..worldSize−1.
 * - `ERR_RENDEZVOUS_PROTOCOL`: the other side does not speak this protocol (another program on
 *   the port, another protocol version, a malformed frame).
 * - `ERR_RENDEZVOUS_HOST_FAILED`: rank 0 gave up (its own timeout, abort or a refused peer) and told
 *   this rank why; the message carries rank 0's reason.
 * - `ERR_RENDEZVOUS_DISCONNECTED`: a peer left after the payload was sent and before confirming it.
 * - `ERR_RENDEZVOUS_LISTEN`: rank 0 could not listen on its port (in use, not permitted).
 * - `ERR_RENDEZVOUS_ABORTED`: the caller's `AbortSignal` fired; `cause` is its reason.
 */
export type RendezvousErrorCode =
  | 'ERR_RENDEZVOUS_TIMEOUT'
  | 'ERR_RENDEZVOUS_WORLD_SIZE'
  | 'ERR_RENDEZVOUS_DUPLICATE_RANK'
  | 'ERR_RENDEZVOUS_RANK_RANGE'
  | 'ERR_RENDEZVOUS_PROTOCOL'
  | 'ERR_RENDEZVOUS_HOST_FAILED'
  | 'ERR_RENDEZVOUS_DISCONNECTED'
  | 'ERR_RENDEZVOUS_LISTEN'
  | 'ERR_RENDEZVOUS_ABORTED';

/** Facts about a `RendezvousError`, for programs (every field is optional: each code fills its own). */
export interface RendezvousErrorDetails {
  /** The rank that reports the error. */
  readonly rank?: number;
  /** The world size the reporting rank holds. */
  readonly worldSize?: number;
  /** `host:port` of rank 0, as this rank knows it. */
  readonly address?: string;
  /** Rank 0's timeout: the ranks that did not arrive (or did not confirm), ascending. */
  readonly missingRanks?: readonly number[];
  /** A peer's timeout: whether a connection to rank 0 was ever made. */
  readonly reached?: boolean;
  /** The rank a refused peer claimed. */
  readonly peerRank?: number;
  /** The world size a refused peer claimed. */
  readonly peerWorldSize?: number;
}

/**
 * A TCP rendezvous (`tcpRendezvous`, `initFromEnvironment`) did not complete. `code` says why,
 * `details` carries the ranks and the address involved, and the message starts with the operation
 * (`tcpRendezvous: rank 0 timed out after 5000 ms: ranks 2, 3 of 4 did not arrive …`). Every socket
 * and timer of the attempt has been closed when it is thrown.
 */
export class RendezvousError extends CudagraphError {
  /** Why the rendezvous failed (see `RendezvousErrorCode`). */
  readonly code: RendezvousErrorCode;
  /** The operation that failed, e.g. `tcpRendezvous`. */
  readonly operation: string;
  /** The ranks and the address involved. */
  readonly details: RendezvousErrorDetails;

  constructor(operation: string, code: RendezvousErrorCode, message: string, details: RendezvousErrorDetails = {}, options?: { cause?: unknown }) {
    super(`${operation}: ${message}`, options);
    this.code = code;
    this.operation = operation;
    this.details = Object.freeze({ ...details, ...(details.missingRanks ? { missingRanks: Object.freeze([...details.missingRanks]) } : {}) });
  }
}
