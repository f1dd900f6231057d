/**
 * The JSON form of a `ComputeGraph` (schema version 2, documented in docs/model.md):
 *
 * ```json
 * { "format": "cudagraph.ComputeGraph", "version": 2,
 *   "nodes": [ { "id": 0, "kind": "memcpy", "name": "upload", "stream": 0, "cost": 1,
 *                "dir": "HostToDevice", "sizeBytes": 4096 }, … ],
 *   "edges": [ [0, 1], [1, 2, { "kind": "programmatic", "port": "trigger" }], … ] }
 * ```
 *
 * `nodes[i]` is the record `graph.node(i)` returns, so `id` equals the index, except that a child
 * graph node's `graph`, and each of a conditional node's `bodies`, is written as a nested document of
 * the same form. `edges` are sorted by `from`, then `to`: a pair `[from, to]` for a plain edge, a
 * triple with the edge's data for any other.
 *
 * Version 1 (earlier releases) is version 2 without the event, child graph and memory node kinds
 * and without edge data; this build still reads it.
 *
 * Conditional nodes (`"kind": "conditional"`, with `type`, `handle` `{ id, default, assignDefault }`,
 * `estimate` and `bodies`) came later and did not bump the version: they add a kind and change
 * nothing else, so every document without one stays readable by every version 2 reader, and an
 * older reader refuses one that holds one by naming its kind.
 */
import type { EdgeData, GraphNode } from './node.js';

/** The `format` tag of a graph document. */
export const GRAPH_JSON_FORMAT = 'cudagraph.ComputeGraph';
/** The schema version this build writes. */
export const GRAPH_JSON_VERSION = 2;
/** The schema versions this build reads. */
export const GRAPH_JSON_VERSIONS: readonly number[] = [1, 2];

/** A node of a graph document: its record, a child graph's `graph` and a conditional's `bodies` written as nested documents. */
export type GraphJsonNode =
  | Exclude<GraphNode, { kind: 'childGraph' | 'conditional' }>
  | (Omit<Extract<GraphNode, { kind: 'childGraph' }>, 'graph'> & { readonly graph: ComputeGraphJson })
  | (Omit<Extract<GraphNode, { kind: 'conditional' }>, 'bodies'> & { readonly bodies: readonly ComputeGraphJson[] });

/** An edge of a graph document: `[from, to]` when plain, else with its data. */
export type GraphJsonEdge = readonly [from: number, to: number] | readonly [from: number, to: number, data: EdgeData];

/** A graph document: what `toJSON()` returns and `ComputeGraph.fromJSON()` reads. */
export interface ComputeGraphJson {
  readonly format: typeof GRAPH_JSON_FORMAT;
  readonly version: typeof GRAPH_JSON_VERSION;
  readonly nodes: readonly GraphJsonNode[];
  readonly edges: readonly GraphJsonEdge[];
}
