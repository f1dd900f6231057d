/**
 * How the CLI's text output lists many items (sources, sinks, the critical path, joins, streams):
 * whole up to a screenful, else the first 40 and the last 10 with a count between, and a pointer to
 * `--json`, which always lists every one. A graph of a million sources would otherwise print a
 * line of megabytes.
 */
import { isCut, listText, type ListLimits } from '../model/bounded-text.js';

/** The limits of the CLI's text lists: the first 40 and the last 10 items. */
export const TEXT_LIST: ListLimits = Object.freeze({ head: 40, tail: 10 });

/** `items` shown with `format`, joined by `separator`, cut as `TEXT_LIST` says. */
export function textList<T>(items: readonly T[], format: (item: T) => string, separator = ', '): string {
  return listText(items.length, (i) => format(items[i]!), separator, TEXT_LIST);
}

/** What a cut list adds after it: ` (1,000,000 in all; --json lists every one)`, or nothing. */
export function cutNote(count: number): string {
  return isCut(count, TEXT_LIST) ? ` (${count.toLocaleString('en-US')} in all; --json lists every one)` : '';
}
