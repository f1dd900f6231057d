/**
 * Edge data (CUDA's `CUgraphEdgeData`): the kind of an edge and the port it leaves its upstream
 * node by, checked against CUDA's rules and packed into one small code for the store.
 *
 * Code 0 is a plain edge leaving on completion, the edge nearly every graph holds only; the store
 * keeps codes for the other edges alone (graph-store.ts), so plain graphs pay nothing.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireOneOf, requireOptions } from '../util/validate.js';
import type { EdgeData, EdgeKind, EdgePort, EdgeSpec, NodeKind } from './node.js';

/** Every edge kind, in code order. */
export const EDGE_KINDS: readonly EdgeKind[] = ['plain', 'programmatic'];
/** Every port, in code order (CUDA's `CU_GRAPH_KERNEL_NODE_PORT_DEFAULT`, `…_PROGRAMMATIC`, `…_LAUNCH_ORDER`). */
export const EDGE_PORTS: readonly EdgePort[] = ['completion', 'trigger', 'launchOrder'];

/** The code of a plain edge that fires on completion. */
export const PLAIN_EDGE = 0;

/** The code of `kind` and `port` (already checked). */
export function edgeCode(kind: EdgeKind, port: EdgePort): number {
  return EDGE_KINDS.indexOf(kind) * EDGE_PORTS.length + EDGE_PORTS.indexOf(port);
}

/** The edge data of `code`. */
export function edgeDataOf(code: number): EdgeData {
  return { kind: EDGE_KINDS[Math.floor(code / EDGE_PORTS.length)]!, port: EDGE_PORTS[code % EDGE_PORTS.length]! };
}

/** The edge data of every code, indexed by code (frozen: records share them only as values to copy). */
export const EDGE_DATA_BY_CODE: readonly EdgeData[] = Array.from({ length: EDGE_KINDS.length * EDGE_PORTS.length }, (_, code) => Object.freeze(edgeDataOf(code)));

/** `kind` (and `port` unless it is the kind's usual one), e.g. `programmatic` or `plain, launchOrder`. */
export function edgeDataText(code: number): string {
  const d = edgeDataOf(code);
  return d.port === defaultPort(d.kind) ? d.kind : `${d.kind}, ${d.port}`;
}

function defaultPort(kind: EdgeKind): EdgePort {
  return kind === 'plain' ? 'completion' : 'trigger';
}

/**
 * Checks an edge spec (`{ kind?, port? }`, or undefined for a plain edge) on its own and returns
 * its code; `endpoints` checks it against the nodes it joins. Refusals name `op` and `name`.
 */
export function readEdgeSpec(op: string, name: string, spec: unknown): number {
  if (spec === undefined) return PLAIN_EDGE;
  const o = requireOptions<EdgeSpec>(op, spec, ['kind', 'port'], name);
  const kind = o.kind === undefined ? 'plain' : requireOneOf(op, `${name}.kind`, o.kind, EDGE_KINDS);
  const port = o.port === undefined ? defaultPort(kind) : requireOneOf(op, `${name}.port`, o.port, EDGE_PORTS);
  if (port === 'trigger' && kind !== 'programmatic') {
    throw new InvalidArgumentError(op, `${name}.port`, `${name}.port 'trigger' is only for programmatic edges (CUDA's CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC), got kind ${describe(kind)}`);
  }
  if (kind === 'programmatic' && port === 'completion') {
    throw new InvalidArgumentError(
      op,
      `${name}.port`,
      `${name}.port must be 'trigger' or 'launchOrder' for a programmatic edge, got 'completion' (CUDA's rule for CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC)`,
    );
  }
  return edgeCode(kind, port);
}

/**
 * Checks edge data `code` against the kinds of the nodes it joins: a port other than completion
 * leaves a kernel; a programmatic edge joins two kernels. Returns the refusal's text, or null.
 */
export function endpointProblem(code: number, from: number, fromKind: NodeKind, to: number, toKind: NodeKind): string | null {
  if (code === PLAIN_EDGE) return null;
  const d = edgeDataOf(code);
  if (d.kind === 'programmatic' && (fromKind !== 'kernel' || toKind !== 'kernel')) {
    const bad = fromKind !== 'kernel' ? `node ${from} is a '${fromKind}' node` : `node ${to} is a '${toKind}' node`;
    return `a programmatic edge joins two kernel nodes, but ${bad}`;
  }
  if (d.port !== 'completion' && fromKind !== 'kernel') {
    return `only a kernel node has a '${d.port}' port, but node ${from} is a '${fromKind}' node`;
  }
  return null;
}
