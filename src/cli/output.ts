/** Where the CLI writes: stdout and stderr, or a test's buffers. */
export interface Output {
  /** Results (stdout). */
  out(text: string): void;
  /** Errors and progress (stderr). */
  err(text: string): void;
  /** True when stderr is a terminal: only then is a progress bar drawn. */
  readonly errIsTTY?: boolean;
}

/** The process's stdout and stderr. */
export const processOutput: Output = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  get errIsTTY() {
    return process.stderr.isTTY === true;
  },
};
