/**
 * Conditional nodes (CUDA 12.4+): handles (`cuGraphConditionalHandleCreate`) and the node itself,
 * added through the generic `cuGraphAddNode_v2` with `CU_GRAPH_NODE_TYPE_CONDITIONAL` — the only
 * way the driver API adds one. The driver creates the node's body graphs and owns them: they live
 * as long as the node, and are never destroyed by the caller.
 */
import { driverSymbol, koffi } from '../sys.js';
import { check } from './check.js';
import { GRAPH_NODE_PARAMS as P, CU_GRAPH_NODE_TYPE } from '../layouts.js';
import { takeHandle, u64 } from './scratch.js';

const CONDITIONAL = CU_GRAPH_NODE_TYPE.indexOf('conditional');

/**
 * Creates a conditional handle for a node of `graph` or of a body inside it
 * (`cuGraphConditionalHandleCreate`); `flags` 0 or `CU_GRAPH_COND_ASSIGN_DEFAULT`.
 */
export function conditionalHandleCreate(op: string, graph: bigint, ctx: bigint, defaultValue: number, flags: number): bigint {
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphConditionalHandleCreate')(u64, graph, ctx, defaultValue, flags), op, 'cuGraphConditionalHandleCreate');
  return takeHandle();
}

/** A conditional node just added: its handle and the body graphs the driver made for it (owned by the node). */
export interface AddedConditional {
  readonly node: bigint;
  readonly bodies: readonly bigint[];
}

/**
 * Adds a conditional node of `type` (`CU_GRAPH_COND_TYPE`) with `size` bodies after `deps`
 * (`cuGraphAddNode_v2`, no edge data), returning it and its bodies.
 */
export function addConditionalNode(
  op: string,
  graph: bigint,
  deps: BigUint64Array | null,
  handle: bigint,
  type: number,
  size: number,
  ctx: bigint,
): AddedConditional {
  const params = new Uint8Array(P.size);
  const v = new DataView(params.buffer);
  v.setInt32(P.type, CONDITIONAL, true);
  v.setBigUint64(P.conditionalHandle, handle, true);
  v.setInt32(P.conditionalType, type, true);
  v.setUint32(P.conditionalSize, size, true);
  v.setBigUint64(P.conditionalCtx, ctx, true);
  u64[0] = 0n;
  check(driverSymbol(op, 'cuGraphAddNode_v2')(u64, graph, deps, null, deps?.length ?? 0, params), op, 'cuGraphAddNode_v2');
  const node = takeHandle();
  // The driver wrote the address of its array of body graphs into the parameters (valid while the node lives).
  const array = v.getBigUint64(P.conditionalGraphs, true);
  return { node, bodies: readHandles(op, array, size) };
}

/** `n` 64-bit handles at the host address `address` (the driver's array), copied out. */
function readHandles(op: string, address: bigint, n: number): bigint[] {
  if (address === 0n) throw new Error(`${op}: internal error: the driver returned no body graphs`);
  return [...new BigUint64Array(koffi().view(address, n * 8) as ArrayBuffer).slice()];
}
