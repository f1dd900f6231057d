import { InvalidArgumentError } from '../../errors/base.js';
import { requireBoolean, requireOptions, assertInstance } from '../../util/validate.js';
import { CUDA_GRAPH_INSTANTIATE_FLAG as F } from '../../driver/layouts.js';
import type { Stream } from '../device/stream.js';
import { brands } from '../core/brands.js';

/** How to instantiate a graph (`CUgraphInstantiate_flags`). */
export interface InstantiateFlags {
  /** Free memory the graph allocated (and did not free) before each relaunch. */
  readonly autoFreeOnLaunch?: boolean;
  /** Upload the graph on this stream right after instantiation (moves setup out of the first launch). */
  readonly upload?: Stream;
  /** Make the graph launchable from device code (incompatible with `autoFreeOnLaunch`). */
  readonly deviceLaunch?: boolean;
  /** Run nodes by their per-node priority attributes rather than the launch stream's priority. */
  readonly useNodePriority?: boolean;
}

/** Checked flags: the driver bits and the upload stream. */
export interface CheckedFlags {
  readonly bits: number;
  readonly upload: Stream | null;
}

/**
 * Checks `InstantiateFlags`.
 * @throws InvalidArgumentError for unknown keys, wrong types, or a bad combination; DisposedError
 *   for a disposed `upload` stream.
 */
export function checkInstantiateFlags(op: string, flags: unknown): CheckedFlags {
  const f = requireOptions<InstantiateFlags>(op, flags, ['autoFreeOnLaunch', 'upload', 'deviceLaunch', 'useNodePriority']);
  let bits = 0;
  if (f.autoFreeOnLaunch !== undefined && requireBoolean(op, 'autoFreeOnLaunch', f.autoFreeOnLaunch)) bits |= F.AUTO_FREE_ON_LAUNCH;
  if (f.deviceLaunch !== undefined && requireBoolean(op, 'deviceLaunch', f.deviceLaunch)) bits |= F.DEVICE_LAUNCH;
  if (f.useNodePriority !== undefined && requireBoolean(op, 'useNodePriority', f.useNodePriority)) bits |= F.USE_NODE_PRIORITY;
  let upload: Stream | null = null;
  if (f.upload !== undefined) {
    assertInstance(op, 'upload', f.upload, brands.Stream);
    f.upload.handleFor(op);
    upload = f.upload;
    bits |= F.UPLOAD;
  }
  if (bits & F.DEVICE_LAUNCH && bits & F.AUTO_FREE_ON_LAUNCH) {
    throw new InvalidArgumentError(op, 'deviceLaunch', 'deviceLaunch cannot be combined with autoFreeOnLaunch');
  }
  return { bits, upload };
}
