/**
 * A progress bar on stderr, drawn only when stderr is a terminal (never into a log file or a pipe,
 * where it would be noise), and erased when done.
 */
import type { Output } from './output.js';
import { terminalText } from './terminal-text.js';

/** A progress bar over `total` units. */
export class ProgressBar {
  readonly #io: Output;
  readonly #total: number;
  readonly #width: number;
  readonly #delayMs: number;
  readonly #start = Date.now();
  #done = 0;
  #drawn = false;

  /**
   * `delayMs`: draw nothing until the work has run this long, so that work which ends sooner
   * (most files) leaves no flicker; the CLI waits a second.
   */
  constructor(io: Output, total: number, width = 30, delayMs = 0) {
    this.#io = io;
    this.#total = Math.max(1, total);
    this.#width = width;
    this.#delayMs = delayMs;
  }

  /** True when the bar is drawn at all (stderr is a terminal). */
  get visible(): boolean {
    return this.#io.errIsTTY === true;
  }

  /** Advances by `units` and redraws with `label`. */
  tick(label: string, units = 1): void {
    this.update(this.#done + units, label);
  }

  /** Sets the units done so far to `done` and redraws with `label` (a path in it is shown escaped, as `terminalText` does). */
  update(done: number, label: string): void {
    this.#done = Math.min(this.#total, done);
    if (!this.visible || Date.now() - this.#start < this.#delayMs) return;
    const filled = Math.round((this.#done / this.#total) * this.#width);
    const pct = Math.round((this.#done / this.#total) * 100);
    this.#io.err(`\r\x1b[K[${'#'.repeat(filled)}${'-'.repeat(this.#width - filled)}] ${String(pct).padStart(3)}% ${terminalText(label)}`);
    this.#drawn = true;
  }

  /** Erases the bar. */
  done(): void {
    if (this.#drawn) this.#io.err('\r\x1b[K');
    this.#drawn = false;
  }
}
