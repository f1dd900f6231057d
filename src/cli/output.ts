/** Where the CLI writes: stdout and stderr, or a test's buffers. */
export interface Output {
  /** Results (stdout). */
  out(text: string): void;
  /** Errors and progress (stderr). */
  err(text: string): void;
  /** True when stderr is a terminal: only then is a progress bar drawn. */
  readonly errIsTTY?: boolean;
}

/**
 * A writer to the process's `stream` whose reader may go away early (`cudagraph inspect --json
 * g.json | head -1`): the EPIPE that follows ends the writing quietly, as with other command-line
 * tools, instead of an uncaught error and its stack; what is written after it is dropped.
 */
function processWriter(stream: NodeJS.WriteStream): (text: string) => void {
  let closed = false;
  let watching = false;
  return (text) => {
    if (closed) return;
    if (!watching) {
      watching = true;
      stream.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code !== 'EPIPE') throw e;
        closed = true;
      });
    }
    stream.write(text);
  };
}

const writeOut = processWriter(process.stdout);
const writeErr = processWriter(process.stderr);

/** The process's stdout and stderr. */
export const processOutput: Output = {
  out: writeOut,
  err: writeErr,
  get errIsTTY() {
    return process.stderr.isTTY === true;
  },
};
