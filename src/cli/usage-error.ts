import { statSync } from 'node:fs';

/**
 * A mistake by the person at the command line (a bad path, a malformed graph file, a bad option
 * value) or a missing prerequisite they can fix (no GPU for `bench`): printed as one line on
 * stderr, without a stack trace, and the command exits with status 1.
 */
export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UsageError';
  }
}

/**
 * A bad option value or combination of options (`--rounds 0`, `--summary` with `--full`): a
 * `UsageError` printed, as commander's own option errors are, with a pointer at the help of the
 * command it was given to.
 */
export class OptionError extends UsageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OptionError';
  }
}

/** The reason of a failed file operation, for messages: `ENOENT` becomes `no such file`. */
export function fileErrorReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or folder';
    case 'EISDIR':
      return 'it is a folder';
    case 'ENOTDIR':
    case 'EEXIST': // mkdir of a folder where a file is
      return 'a part of the path is not a folder';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EFBIG':
      return 'the file is larger than this process may write (ulimit -f)';
    case 'EROFS':
      return 'the file system is read-only';
    case 'ENAMETOOLONG':
      return 'the name is too long';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENXIO': // open() of a socket through /proc/self/fd, or a FIFO with no reader
      return 'it cannot be opened for writing (a socket, or a FIFO with no reader)';
    default:
      return code ?? (e instanceof Error ? e.message : String(e));
  }
}

/** Why a file the CLI reads is not read: it is not a regular file (a device, a pipe or a socket). */
const NOT_REGULAR = 'it is not a regular file (a device, a pipe or a socket)';

/**
 * The size of the file at `path`, which a command is about to read. Only a regular file is read:
 * a folder cannot be, and a device, pipe or socket may never end (`/dev/zero`) or hold the open
 * until a writer comes (a FIFO), leaving the command waiting forever.
 * @throws UsageError `cannot read <what><path>: <why>` when it is not one or cannot be found.
 */
export function inputFileSize(path: string, what = ''): number {
  let why: string;
  try {
    const st = statSync(path);
    if (st.isFile()) return st.size;
    why = st.isDirectory() ? fileErrorReason(Object.assign(new Error('a folder'), { code: 'EISDIR' })) : NOT_REGULAR;
  } catch (e) {
    throw new UsageError(`cannot read ${what}${path}: ${fileErrorReason(e)}`, { cause: e });
  }
  throw new UsageError(`cannot read ${what}${path}: ${why}`);
}
