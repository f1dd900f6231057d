/**
 * The brand checks of the object layer's classes, registered by each class when it is defined
 * (`static { registerBrand('Stream', Stream); }`). A module that only checks that an argument is,
 * say, a genuine `Stream` uses `brands.Stream` from this leaf module instead of importing the class,
 * so the layer's imports form no circle: only a module that constructs or calls a class imports it.
 *
 * Before a class's module has loaded its entry answers false for everything, which is right: no
 * object of that class can exist yet.
 */
import type { BrandedClass } from '../../util/validate.js';
import type { Device } from '../device/device.js';
import type { Stream } from '../device/stream.js';
import type { Event } from '../device/event.js';
import type { DeviceBuffer } from '../memory/device-buffer.js';
import type { PinnedHostBuffer } from '../memory/pinned-host-buffer.js';
import type { Module } from '../kernel/module.js';
import type { Kernel } from '../kernel/kernel.js';
import type { PreparedLaunch } from '../kernel/prepared-launch.js';
import type { LaunchSequence } from '../kernel/launch-sequence.js';
import type { KernelArgValue } from '../kernel/arg.js';
import type { HostFunction } from '../host/host-function.js';
import type { Graph } from '../graph/graph.js';
import type { GraphExec } from '../graph/graph-exec.js';
import type { CapturePool } from '../pool/capture-pool.js';

/** The classes whose genuine instances the layer checks arguments against. */
export interface Brands {
  Device: BrandedClass<Device>;
  Stream: BrandedClass<Stream>;
  Event: BrandedClass<Event>;
  DeviceBuffer: BrandedClass<DeviceBuffer>;
  PinnedHostBuffer: BrandedClass<PinnedHostBuffer>;
  Module: BrandedClass<Module>;
  Kernel: BrandedClass<Kernel>;
  PreparedLaunch: BrandedClass<PreparedLaunch>;
  LaunchSequence: BrandedClass<LaunchSequence>;
  KernelArgValue: BrandedClass<KernelArgValue>;
  HostFunction: BrandedClass<HostFunction>;
  Graph: BrandedClass<Graph>;
  GraphExec: BrandedClass<GraphExec>;
  CapturePool: BrandedClass<CapturePool>;
}

function unregistered<T>(name: string): BrandedClass<T> {
  return { name, prototype: null, is: (_value: unknown): _value is T => false };
}

/** Each class's brand check (a stand-in that refuses everything until the class registers). */
export const brands: Brands = {
  Device: unregistered('Device'),
  Stream: unregistered('Stream'),
  Event: unregistered('Event'),
  DeviceBuffer: unregistered('DeviceBuffer'),
  PinnedHostBuffer: unregistered('PinnedHostBuffer'),
  Module: unregistered('Module'),
  Kernel: unregistered('Kernel'),
  PreparedLaunch: unregistered('PreparedLaunch'),
  LaunchSequence: unregistered('LaunchSequence'),
  KernelArgValue: unregistered('KernelArgValue'),
  HostFunction: unregistered('HostFunction'),
  Graph: unregistered('Graph'),
  GraphExec: unregistered('GraphExec'),
  CapturePool: unregistered('CapturePool'),
};

/** Called once by each class, in a static block of its definition. */
export function registerBrand<K extends keyof Brands>(name: K, cls: Brands[K]): void {
  brands[name] = cls;
}
