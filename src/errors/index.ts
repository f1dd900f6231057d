export { CudagraphError, InvalidArgumentError, DisposedError, SuppressedCleanupError } from './base.js';
export { GraphError, type GraphErrorKind } from './graph-error.js';
export {
  CudaError,
  NvrtcError,
  CUresult,
  cudaErrorName,
  cudaErrorDescription,
  isCaptureErrorCode,
  type CUresultName,
  type CudaErrorInit,
  type CudaErrorDetails,
} from './cuda-error.js';
export { FileFormatError } from './file-format-error.js';
export { HostCallbackError, type HostCallbackErrorCode, type HostCallPendingDetails } from './host-callback-error.js';
