/**
 * NCCL, NVIDIA's collective library, bound like the driver (loaded at run time, lazily resolved
 * symbols, typed errors): communicators, collectives on streams (capturable in CUDA graphs), group
 * calls, the capture of one step across several GPUs, and the rendezvous of ranks on several hosts.
 */
export { NcclComm, NcclClique } from './comm.js';
export type {
  AllReduceOptions,
  BroadcastOptions,
  ReduceOptions,
  AllGatherOptions,
  ReduceScatterOptions,
  InitRankOptions,
  PerRank,
} from './comm.js';
export { NcclUniqueId } from './unique-id.js';
export { ncclGroup, ncclGroupStart, ncclGroupEnd, ncclGroupDepth } from './group.js';
export { NcclError, type NcclErrorInit } from './nccl-error.js';
export {
  NcclResult,
  ncclResultName,
  ncclResultDescription,
  NCCL_UNIQUE_ID_BYTES,
  NCCL_DATA_TYPES,
  NCCL_RED_OPS,
  NCCL_MIN_CAPTURE_VERSION,
  decodeNcclVersion,
  type NcclResultName,
} from './codes.js';
export { checkCollective, type CollectiveInput, type CheckedCollective } from './collective-args.js';
export { loadNccl, ncclAvailable, ncclPath, type NcclInfo, type LoadNcclOptions } from './version.js';
export { ncclCandidates } from './loader.js';
export { captureMultiDevice, MultiDeviceGraphExec, type MultiDeviceCaptureGpuOptions } from './multi-device.js';
export { tcpRendezvous, type TcpRendezvousOptions, type RendezvousResult, type AbortSignalLike } from './rendezvous.js';
export { RendezvousError, type RendezvousErrorCode, type RendezvousErrorDetails } from './rendezvous-error.js';
export { parseLaunchEnvironment, type LaunchEnvironment, type EnvironmentVariables } from './launch-environment.js';
export { LaunchEnvironmentError } from './launch-environment-error.js';
export { initNcclFromEnvironment, type InitNcclFromEnvironmentOptions } from './from-environment.js';
