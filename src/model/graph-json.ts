/**
 * The JSON form of a `ComputeGraph` (schema version 1, documented in docs/model.md):
 *
 * ```json
 * { "format": "cudagraph.ComputeGraph", "version": 1,
 *   "nodes": [ { "id": 0, "kind": "memcpy", "name": "upload", "stream": 0, "cost": 1,
 *                "dir": "HostToDevice", "sizeBytes": 4096 }, … ],
 *   "edges": [ [0, 1], … ] }
 * ```
 *
 * `nodes[i]` is exactly the record `graph.node(i)` returns, so `id` equals the index; `edges` are
 * `[from, to]` pairs sorted by `from`, then `to`.
 */
import type { GraphNode } from './node.js';

/** The `format` tag of a graph document. */
export const GRAPH_JSON_FORMAT = 'cudagraph.ComputeGraph';
/** The schema version this build writes (and the only one it reads). */
export const GRAPH_JSON_VERSION = 1;

/** A graph document: what `toJSON()` returns and `ComputeGraph.fromJSON()` reads. */
export interface ComputeGraphJson {
  readonly format: typeof GRAPH_JSON_FORMAT;
  readonly version: typeof GRAPH_JSON_VERSION;
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly (readonly [from: number, to: number])[];
}
