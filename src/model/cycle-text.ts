/** How refusals name a cycle of the graph, short however long the cycle. */
import { isCut, listText } from './bounded-text.js';

/**
 * `3 → 4 → 3` for the cycle [3, 4]; a long cycle shows its first and last few nodes and its length
 * (`1,000,000 nodes: 0 → 1 → … → 999,999 → 0`), so the message stays short (bounded-text.ts).
 */
export function cycleText(cycle: readonly number[]): string {
  const path = listText(cycle.length + 1, (i) => String(cycle[i % cycle.length]), ' → ');
  return isCut(cycle.length + 1) ? `${cycle.length.toLocaleString('en-US')} nodes: ${path}` : path;
}
