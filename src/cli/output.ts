/** Where the CLI writes: stdout and stderr, or a test's buffers. */
import { fileErrorReason } from './usage-error.js';

/** The CLI's two outputs. */
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
 * tools, instead of an uncaught error and its stack; what is written after it is dropped. Any other
 * failure of stdout (`> /dev/full`) is one line on stderr and exit status 1.
 */
function processWriter(stream: NodeJS.WriteStream, name: 'stdout' | 'stderr'): (text: string) => void {
  let closed = false;
  let watching = false;
  return (text) => {
    if (closed) return;
    if (!watching) {
      watching = true;
      stream.on('error', (e: NodeJS.ErrnoException) => {
        closed = true;
        if (e.code === 'EPIPE') return;
        process.exitCode = 1;
        // Where stderr itself failed there is nowhere to say so.
        if (name === 'stdout') writeErr(`cudagraph: cannot write to stdout: ${fileErrorReason(e)}\n`);
      });
    }
    stream.write(text);
  };
}

const writeOut = processWriter(process.stdout, 'stdout');
const writeErr = processWriter(process.stderr, 'stderr');

/** The process's stdout and stderr. */
export const processOutput: Output = {
  out: writeOut,
  err: writeErr,
  get errIsTTY() {
    return process.stderr.isTTY === true;
  },
};
