/**
 * How a node spec gets its child graph or conditional body: a read-only copy of a `ComputeGraph`
 * (from `addNode`) or a graph read from a nested document (from `fromJSON`).
 *
 * `ComputeGraph` registers the two readers here when its module loads, so that the spec checker
 * (node-spec.ts), which compute-graph.ts imports, can make child graphs without importing it back:
 * no import runs in a circle.
 */
import type { ComputeGraph } from './compute-graph.js';

/** A child graph or body, copied and read-only, with what the spec checker needs to know about it. */
export interface ChildSnapshot {
  readonly graph: ComputeGraph;
  /** How deep child graphs and bodies nest inside it (1: none). */
  readonly depth: number;
  /** Its nodes, with those its own child graphs and bodies hold. */
  readonly expanded: number;
  /** Its critical path by its nodes' costs (0 when empty): the node's default cost. */
  readonly cost: number;
  /** The first allocation or free node in it, or null (CUDA does not allow them in a child graph). */
  readonly memoryNode: { readonly id: number; readonly kind: string } | null;
  /** Its first conditional node, or null (CUDA does not allow a graph holding one as a child graph). */
  readonly conditionalNode: number | null;
}

/** The readers `ComputeGraph` provides. */
export interface ChildReaders {
  /** Copies a graph given to `addNode`, or refuses a value that is not a `ComputeGraph` (InvalidArgumentError naming `op` and `name`). */
  readonly copy: (op: string, name: string, value: unknown) => ChildSnapshot;
  /** Reads a nested graph document at `depth` (the document's own depth is 1), refusing as `fromJSON` does, fields named from `prefix`. */
  readonly read: (op: string, prefix: string, value: unknown, depth: number) => ChildSnapshot;
}

let readers: ChildReaders | null = null;

/** Called once by compute-graph.ts. */
export function registerChildReaders(r: ChildReaders): void {
  readers = r;
}

/** The registered readers (compute-graph.ts has always loaded by the time a spec is checked). */
export function childReaders(): ChildReaders {
  return readers!;
}
