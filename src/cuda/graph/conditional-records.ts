/**
 * What cudagraph knows of each conditional node it added, by node handle: CUDA 13.0 cannot read a
 * conditional node's parameters back (13.2 can), so read-back takes its kind and bodies from here.
 * Entries go when the node is removed or its graph destroyed. A leaf module: read-back and the
 * graph both use it.
 */

/** The kind of a conditional node. */
export type ConditionalKind = 'if' | 'while' | 'switch';

const added = new Map<number, { readonly kind: ConditionalKind; readonly bodies: readonly bigint[] }>();

/** Remembers conditional node `node` of `kind` and its body graphs. */
export function rememberConditional(node: bigint, kind: ConditionalKind, bodies: readonly bigint[]): void {
  added.set(Number(node), { kind, bodies });
}

/** The kind and body graphs of conditional node `node`, when cudagraph added it; else null. */
export function conditionalRecord(node: bigint): { readonly kind: ConditionalKind; readonly bodies: readonly bigint[] } | null {
  return added.get(Number(node)) ?? null;
}

/** Forgets conditional node `node` (removed, or its graph destroyed). */
export function forgetConditional(node: bigint): void {
  added.delete(Number(node));
}
