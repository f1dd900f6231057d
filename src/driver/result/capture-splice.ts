/**
 * Capture meets explicit nodes: the graph and the frontier of a live capture
 * (`cuStreamGetCaptureInfo_v3`), replacing or extending that frontier
 * (`cuStreamUpdateCaptureDependencies_v2`), and capturing into an existing graph
 * (`cuStreamBeginCaptureToGraph`).
 */
import { driverSymbol, koffi } from '../sys.js';
import { check } from './check.js';
import { GRAPH_EDGE_DATA as E, CU_STREAM_CAPTURE_DEPENDENCIES } from '../layouts.js';

/** What a capturing stream reports. */
export interface CaptureInfo {
  /** `CUstreamCaptureStatus`: 0 none, 1 active, 2 invalidated. */
  readonly status: number;
  /** The capture's id, unique in the process. */
  readonly id: bigint;
  /** The graph being captured into (owned by the capture), 0n when not capturing. */
  readonly graph: bigint;
  /** The nodes the next captured work will depend on, copied out of the driver's array. */
  readonly dependencies: bigint[];
  /** Each dependency's edge data `[fromPort, type]`. */
  readonly edgeData: Array<readonly [number, number]>;
}

/** The capture state of `stream` with its graph and frontier (`cuStreamGetCaptureInfo_v3`). */
export function captureInfo(op: string, stream: bigint): CaptureInfo {
  const status = new Int32Array(1);
  const id = new BigUint64Array(1);
  const graph = new BigUint64Array(1);
  const deps = new BigUint64Array(1);
  const data = new BigUint64Array(1);
  const count = new BigUint64Array(1);
  check(driverSymbol(op, 'cuStreamGetCaptureInfo_v3')(stream, status, id, graph, deps, data, count), op, 'cuStreamGetCaptureInfo_v3');
  const n = Number(count[0]!);
  const dependencies: bigint[] = [];
  const edgeData: Array<readonly [number, number]> = [];
  if (status[0] === 1 && n > 0 && deps[0] !== 0n) {
    // The arrays are the driver's, valid until the next call on the stream: copy them out now.
    const k = koffi();
    dependencies.push(...new BigUint64Array(k.view(deps[0]!, n * 8) as ArrayBuffer).slice());
    const bytes = data[0] !== 0n ? new Uint8Array(k.view(data[0]!, n * E.size) as ArrayBuffer).slice() : null;
    for (let i = 0; i < n; i++) edgeData.push(bytes === null ? [0, 0] : [bytes[i * E.size + E.from_port]!, bytes[i * E.size + E.type]!]);
  }
  return { status: status[0]!, id: id[0]!, graph: status[0] === 1 ? graph[0]! : 0n, dependencies, edgeData };
}

/** `CU_STREAM_ADD_CAPTURE_DEPENDENCIES` / `CU_STREAM_SET_CAPTURE_DEPENDENCIES`. */
export const CAPTURE_DEPENDENCIES = CU_STREAM_CAPTURE_DEPENDENCIES;

/** Adds `nodes` to, or makes them, the frontier of the capture on `stream` (`cuStreamUpdateCaptureDependencies_v2`). */
export function updateCaptureDependencies(op: string, stream: bigint, nodes: BigUint64Array, mode: number): void {
  check(driverSymbol(op, 'cuStreamUpdateCaptureDependencies_v2')(stream, nodes, null, nodes.length, mode), op, 'cuStreamUpdateCaptureDependencies_v2');
}

/** Begins capturing `stream` into `graph`, the first work depending on `deps` (`cuStreamBeginCaptureToGraph`). */
export function beginCaptureToGraph(op: string, stream: bigint, graph: bigint, deps: BigUint64Array, mode: number): void {
  check(driverSymbol(op, 'cuStreamBeginCaptureToGraph')(stream, graph, deps.length === 0 ? null : deps, null, deps.length, mode), op, 'cuStreamBeginCaptureToGraph');
}
