/**
 * The root of cudagraph's error hierarchy. Every error the library throws on purpose is a
 * `CudagraphError`; each subclass has a stable `code` that programs can switch on (messages may
 * be reworded, codes may not).
 */
export abstract class CudagraphError extends Error {
  /** Stable identifier of the failure. A string, except for `CudaError`, whose code is the CUresult number. */
  abstract readonly code: string | number;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // Subclasses set `name` through the prototype so `err.name` is the class name even when minified.
    this.name = new.target.name;
  }
}

/**
 * Input refused by a public entry point: a wrong type, NaN, a negative or fractional count, a value
 * out of range, an unknown option. The message starts with the operation
 * (`StreamCapture.recordKernel: numBlocks must be …`) and the call changed no state.
 */
export class InvalidArgumentError extends CudagraphError {
  readonly code = 'ERR_INVALID_ARGUMENT' as const;
  /** The operation that refused the input, e.g. `StreamCapture.recordKernel`. */
  readonly operation: string;
  /** The name of the parameter that was refused. */
  readonly parameter: string;

  constructor(operation: string, parameter: string, message: string) {
    super(`${operation}: ${message}`);
    this.operation = operation;
    this.parameter = parameter;
  }
}

/**
 * A method was called on a resource after `dispose()` (or after `using` left its scope).
 * Thrown instead of touching a freed driver handle, which could crash the process.
 */
export class DisposedError extends CudagraphError {
  readonly code = 'ERR_DISPOSED' as const;
  /** The operation that was attempted, e.g. `Stream.synchronize`. */
  readonly operation: string;

  constructor(operation: string, what: string) {
    super(`${operation}: ${what} has been disposed`);
    this.operation = operation;
  }
}

/**
 * Two errors at once: the error that was already propagating (`error`) and a failure during the
 * cleanup that followed (`suppressed`). Mirrors the TC39 `SuppressedError` (absent from Node 20),
 * so code that inspects `error`/`suppressed` works on both.
 */
export class SuppressedCleanupError extends CudagraphError {
  readonly code = 'ERR_SUPPRESSED' as const;
  readonly error: unknown;
  readonly suppressed: unknown;

  constructor(error: unknown, suppressed: unknown, message: string) {
    super(message, { cause: error });
    this.error = error;
    this.suppressed = suppressed;
  }
}

/**
 * The error a constructor that users must not call throws (objects made by a factory, such as
 * `device.createStream()`): an `InvalidArgumentError` whose operation is `new ClassName` and whose
 * message names the factory to use.
 */
export function privateConstructorError(className: string, factory: string): InvalidArgumentError {
  return new InvalidArgumentError(`new ${className}`, 'key', `${className} objects are made by ${factory}, not by new ${className}()`);
}
