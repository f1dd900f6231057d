/**
 * Kernel launch with attributes (`cuLaunchKernelEx`): thread-block clusters, a per-launch
 * priority, programmatic dependent launch (programmatic stream serialization, a programmatic
 * event). Under capture the driver records these as node attributes and programmatic edges.
 * Not the hot path: a plain launch goes through `launchKernel` (launch.ts).
 */
import { driverSymbol } from '../sys.js';
import { allocHostBlock } from './host.js';
import { check } from './check.js';
import { LAUNCH_CONFIG as C, LAUNCH_ATTRIBUTE as A, CU_LAUNCH_ATTRIBUTE as ID } from '../layouts.js';

/** The attributes of one launch, already checked (each absent one is not passed). */
export interface LaunchAttributeValues {
  readonly cluster: readonly [number, number, number] | null;
  readonly priority: number | null;
  /** `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: may start before the kernel before it in the stream ends. */
  readonly programmaticStreamSerialization: boolean;
  /** `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`: the event to record when every block has triggered (or started). */
  readonly programmaticEvent: { readonly event: bigint; readonly triggerAtBlockStart: boolean } | null;
}

/** The most attributes one launch takes (one of each kind cudagraph sets). */
const MAX_ATTRIBUTES = 4;

/** C memory for the attribute array `CUlaunchConfig.attrs` points at: it never moves (allocated once, on first use). */
let attrBlock: { address: bigint; view: DataView } | null = null;

/** Writes the `CUlaunchAttribute` array of `a` into `view` from byte 0; returns the count. */
function writeAttributes(v: DataView, a: LaunchAttributeValues): number {
  let n = 0;
  const at = (): number => n++ * A.size;
  if (a.cluster !== null) {
    const o = at();
    v.setInt32(o + A.id, ID.CLUSTER_DIMENSION, true);
    v.setUint32(o + A.value, a.cluster[0], true);
    v.setUint32(o + A.value + 4, a.cluster[1], true);
    v.setUint32(o + A.value + 8, a.cluster[2], true);
  }
  if (a.priority !== null) {
    const o = at();
    v.setInt32(o + A.id, ID.PRIORITY, true);
    v.setInt32(o + A.value, a.priority, true);
  }
  if (a.programmaticStreamSerialization) {
    const o = at();
    v.setInt32(o + A.id, ID.PROGRAMMATIC_STREAM_SERIALIZATION, true);
    v.setInt32(o + A.value, 1, true);
  }
  if (a.programmaticEvent !== null) {
    const o = at();
    v.setInt32(o + A.id, ID.PROGRAMMATIC_EVENT, true);
    v.setBigUint64(o + A.value, a.programmaticEvent.event, true);
    v.setInt32(o + A.value + 8, 0, true); // flags: the default record
    v.setInt32(o + A.value + 12, a.programmaticEvent.triggerAtBlockStart ? 1 : 0, true);
  }
  return n;
}

/** Launches `fn` on `stream` with attributes `attrs` (`cuLaunchKernelEx`). */
export function launchKernelEx(
  op: string,
  fn: bigint,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  sharedMem: number,
  stream: bigint,
  params: bigint,
  attrs: LaunchAttributeValues,
): void {
  const at = (attrBlock ??= allocHostBlock(MAX_ATTRIBUTES * A.size));
  new Uint8Array(at.view.buffer, at.view.byteOffset, at.view.byteLength).fill(0);
  const count = writeAttributes(at.view, attrs);
  const config = new Uint8Array(C.size);
  const v = new DataView(config.buffer);
  v.setUint32(C.gridDimX, grid[0], true);
  v.setUint32(C.gridDimY, grid[1], true);
  v.setUint32(C.gridDimZ, grid[2], true);
  v.setUint32(C.blockDimX, block[0], true);
  v.setUint32(C.blockDimY, block[1], true);
  v.setUint32(C.blockDimZ, block[2], true);
  v.setUint32(C.sharedMemBytes, sharedMem, true);
  v.setBigUint64(C.hStream, stream, true);
  v.setBigUint64(C.attrs, count === 0 ? 0n : at.address, true);
  v.setUint32(C.numAttrs, count, true);
  check(driverSymbol(op, 'cuLaunchKernelEx')(config, fn, params === 0n ? null : params, null), op, 'cuLaunchKernelEx');
}

/** Sets the attributes of a kernel node (`cuGraphKernelNodeSetAttribute`, one call each): the cluster shape, the priority. */
export function setKernelNodeAttributes(op: string, node: bigint, attrs: LaunchAttributeValues): void {
  const bytes = new Uint8Array(MAX_ATTRIBUTES * A.size);
  const v = new DataView(bytes.buffer);
  const count = writeAttributes(v, attrs);
  for (let i = 0; i < count; i++) {
    const id = v.getInt32(i * A.size + A.id, true);
    check(driverSymbol(op, 'cuGraphKernelNodeSetAttribute')(node, id, bytes.subarray(i * A.size + A.value, (i + 1) * A.size)), op, 'cuGraphKernelNodeSetAttribute');
  }
}
