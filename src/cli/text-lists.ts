/**
 * How the CLI's text output lists many items (sources, sinks, the critical path, joins, streams):
 * whole up to a screenful, else the first 40 and the last 10 with a count between, and a pointer to
 * `--json`, which always lists every one. A graph of a million sources would otherwise print a
 * line of megabytes.
 */
import { isCut, listText, type ListLimits } from '../model/bounded-text.js';

/** The limits of the CLI's text lists: the first 40 and the last 10 items. */
export const TEXT_LIST: ListLimits = Object.freeze({ head: 40, tail: 10 });

/** The limits of `--full`: none. */
const FULL_LIST: ListLimits = Object.freeze({ head: Infinity, tail: 0 });
let limits = TEXT_LIST;

/** Runs `f` with every list shown whole (`inspect --full`). */
export function withFullLists<T>(f: () => T): T {
  const before = limits;
  limits = FULL_LIST;
  try {
    return f();
  } finally {
    limits = before;
  }
}

/** `items` shown with `format`, joined by `separator`, cut as `TEXT_LIST` says (whole within `withFullLists`). */
export function textList<T>(items: readonly T[], format: (item: T) => string, separator = ', '): string {
  if (limits === FULL_LIST) {
    let text = '';
    for (let i = 0; i < items.length; i++) text += (i === 0 ? '' : separator) + format(items[i]!);
    return text;
  }
  return listText(items.length, (i) => format(items[i]!), separator, limits);
}

/** What a cut list adds after it: ` (1,000,000 in all; --json lists every one)`, or nothing (nothing within `withFullLists`). */
export function cutNote(count: number): string {
  return limits !== FULL_LIST && isCut(count, limits) ? ` (${count.toLocaleString('en-US')} in all; --json lists every one)` : '';
}
