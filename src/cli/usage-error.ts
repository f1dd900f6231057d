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

/** The reason of a failed file operation, for messages: `ENOENT` becomes `no such file`. */
export function fileErrorReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or folder';
    case 'EISDIR':
      return 'it is a folder';
    case 'ENOTDIR':
      return 'a part of the path is not a folder';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return code ?? (e instanceof Error ? e.message : String(e));
  }
}
