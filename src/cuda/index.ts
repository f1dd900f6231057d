/** The object layer: devices, streams, events, memory, modules and kernel launches. */
export { Device } from './device.js';
export { Stream, type StreamOptions } from './stream.js';
export { Event, type EventOptions } from './event.js';
export { DeviceBuffer, type MemsetOptions, type HostCopyOptions, type DeviceCopyOptions } from './device-buffer.js';
export { PinnedHostBuffer } from './pinned-host-buffer.js';
export { Module, imageKind, type ModuleImageKind } from './module.js';
export { nvrtcVersion, type CompileOptions } from './nvrtc.js';
export { Kernel } from './kernel.js';
export { PreparedLaunch } from './prepared-launch.js';
export { LaunchSequence, type LaunchSequenceEntry } from './launch-sequence.js';
export { arg, KernelArgValue, type KernelArg, type ArgType } from './arg.js';
export type { Dim3, LaunchConfig } from './launch-config.js';
export { driverAvailable } from './availability.js';
export { HostFunction, type HostFunctionOptions } from './host-function.js';
export { setContextCheck, getContextCheck, type ContextCheck } from './context.js';
