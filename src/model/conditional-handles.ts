/**
 * The conditional handles of a `StreamCapture` (internal). One registry serves a capture and the
 * captures of its conditional bodies, nested ones too: CUDA's handle is made on the capture's graph
 * and may serve a conditional node in it or in a body inside it, so the ids form one space.
 *
 * A handle serves one conditional node. Recording a conditional reserves its handle before the
 * bodies run (so a body cannot take the same handle), and a refused recording gives back every id
 * issued or used since it began (`mark` / `rollback`): the capture is left as it was.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, U32_MAX } from '../util/validate.js';
import type { ConditionalHandleRecord } from './conditional.js';

/** The registry's state at a point in time, to roll back to. */
export interface HandleMark {
  readonly next: number;
  readonly used: number;
}

/** Handles issued by one capture tree, and which of them a conditional node uses. */
export class HandleRegistry {
  /** Issued handles by id: the brand check (a look-alike object is not the one issued). */
  readonly #issued = new Map<number, ConditionalHandleRecord>();
  /** Ids used by a conditional node, in the order used (a stack, for rollback). */
  readonly #used: number[] = [];
  readonly #usedSet = new Set<number>();
  /** Handles a rollback forgot, so that a refusal of one can say why it is no longer valid. */
  readonly #forgotten = new WeakSet<ConditionalHandleRecord>();
  #next = 0;

  /** Issues a new handle; `op` names the call for the one refusal (all 2^32 ids issued). */
  issue(op: string, dflt: number, assignDefault: boolean): ConditionalHandleRecord {
    if (this.#next > U32_MAX) throw new InvalidArgumentError(op, 'options', 'this capture has issued all 2^32 conditional handle ids');
    const h: ConditionalHandleRecord = Object.freeze({ id: this.#next++, default: dflt, assignDefault });
    this.#issued.set(h.id, h);
    return h;
  }

  /**
   * `value` if it is a handle this registry issued that no conditional node uses yet.
   * @throws InvalidArgumentError naming `op` and `name`.
   */
  unused(op: string, name: string, value: unknown): ConditionalHandleRecord {
    const h = value as ConditionalHandleRecord;
    if (typeof value === 'object' && value !== null && this.#forgotten.has(h)) {
      throw new InvalidArgumentError(
        op,
        name,
        `${name} was made while a conditional recording of this capture ran, and that recording failed: the handles made during it were given back with it (id ${h.id} may have been issued again); make another with conditionalHandle()`,
      );
    }
    if (typeof value !== 'object' || value === null || this.#issued.get(h.id) !== h) {
      throw new InvalidArgumentError(op, name, `${name} must be a handle made by this capture's conditionalHandle() (or its bodies' captures), got ${describe(value)}`);
    }
    if (this.#usedSet.has(h.id)) {
      throw new InvalidArgumentError(op, name, `${name} ${h.id} already serves a conditional node; a conditional handle serves one conditional node (CUDA rule): make another with conditionalHandle()`);
    }
    return h;
  }

  /** Marks `h` used by a conditional node. */
  use(h: ConditionalHandleRecord): void {
    this.#used.push(h.id);
    this.#usedSet.add(h.id);
  }

  /** The state now, for `rollback`. */
  mark(): HandleMark {
    return { next: this.#next, used: this.#used.length };
  }

  /** Forgets every handle issued and every use made since `mark`. */
  rollback(mark: HandleMark): void {
    while (this.#used.length > mark.used) this.#usedSet.delete(this.#used.pop()!);
    for (let id = mark.next; id < this.#next; id++) {
      this.#forgotten.add(this.#issued.get(id)!);
      this.#issued.delete(id);
    }
    this.#next = mark.next;
  }
}
