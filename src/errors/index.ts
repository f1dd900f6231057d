export { CudagraphError, InvalidArgumentError, DisposedError, SuppressedCleanupError } from './base.js';
export { GraphError, type GraphErrorKind } from './graph-error.js';
