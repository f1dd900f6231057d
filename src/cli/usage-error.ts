/**
 * A mistake by the person at the command line (a bad path, a bad option value): printed as one
 * line on stderr, without a stack trace, and the command exits with status 1.
 */
export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UsageError';
  }
}
