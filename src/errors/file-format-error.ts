import { CudagraphError } from './base.js';

/**
 * A file that cudagraph reads is not what its format says it must be: a `.safetensors` file whose
 * header runs past the end, whose JSON does not parse, whose tensors overlap or leave a gap, whose
 * shape does not fit its bytes, or whose dtype is unknown; a weight file that lacks a tensor the
 * model needs. The message starts with the operation and then the file
 * (`readSafetensors: model.safetensors: tensor 'x' …`); nothing was loaded.
 */
export class FileFormatError extends CudagraphError {
  readonly code = 'ERR_FILE_FORMAT' as const;
  /** The operation that read the file, e.g. `readSafetensors`. */
  readonly operation: string;
  /** The file as the caller named it. */
  readonly file: string;

  constructor(operation: string, file: string, message: string, options?: { cause?: unknown }) {
    super(`${operation}: ${file}: ${message}`, options);
    this.operation = operation;
    this.file = file;
  }
}
