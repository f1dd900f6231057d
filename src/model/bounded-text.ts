/**
 * Bounded text for messages that quote what the user built: lists of node ids, stream ids or
 * names, and names themselves.
 *
 * Why: a message is read by a person (and printed as one line by the CLI), yet graphs have
 * millions of nodes. A cycle through a million nodes once made an 8.9 MB message. Every list a
 * message quotes goes through `listText`, which keeps the first and last few items and says how
 * many it left out; every name goes through `nameText`, which cuts a very long one.
 */

/** How many items of a list `listText` shows when the list is cut: the first `head` and the last `tail`. */
export interface ListLimits {
  readonly head: number;
  readonly tail: number;
}

/** The limits of error messages: the first 5 and the last 3 items. */
export const MESSAGE_LIST: ListLimits = Object.freeze({ head: 5, tail: 3 });

/** The longest name a message quotes whole, in characters. */
export const NAME_MAX = 60;

/** True when `listText` would cut a list of `count` items (it shows lists of up to head + tail + 1 whole). */
export function isCut(count: number, limits: ListLimits = MESSAGE_LIST): boolean {
  return count > limits.head + limits.tail + 1;
}

/**
 * The `count` items `item(0)`, …, `item(count − 1)` joined by `separator`; a longer list than
 * `limits` allows shows its first `head` and last `tail` items with `… N more …` between them.
 * Only the items shown are built, so a list of a million costs nothing.
 * @example
 * listText(1_000_000, String, ' → ') // '0 → 1 → 2 → 3 → 4 → … 999,992 more … → 999997 → 999998 → 999999'
 */
export function listText(count: number, item: (i: number) => string, separator = ', ', limits: ListLimits = MESSAGE_LIST): string {
  const parts: string[] = [];
  if (!isCut(count, limits)) {
    for (let i = 0; i < count; i++) parts.push(item(i));
  } else {
    for (let i = 0; i < limits.head; i++) parts.push(item(i));
    parts.push(`… ${(count - limits.head - limits.tail).toLocaleString('en-US')} more …`);
    for (let i = count - limits.tail; i < count; i++) parts.push(item(i));
  }
  return parts.join(separator);
}

/** `name`, cut to `NAME_MAX` characters (the cut marked with `…`) when it is longer. */
export function nameText(name: string): string {
  if (name.length <= NAME_MAX) return name;
  // Cut on a code point boundary, so no half of a surrogate pair is left.
  let out = '';
  for (const ch of name) {
    if (out.length + ch.length > NAME_MAX - 1) break;
    out += ch;
  }
  return `${out}…`;
}
