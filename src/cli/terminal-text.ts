/**
 * User-supplied text (node names, file paths) on a terminal. A name is data: printed as it is, a
 * line break in it would forge lines of the report, an escape sequence (`ESC [ …`) could move the
 * cursor, recolour or retitle the terminal, and a bidirectional override would show the text in
 * another order than it is. So such characters are shown as escapes instead of being sent.
 */

/**
 * The characters that are never sent as they are: C0 controls (line breaks and tabs included),
 * DEL, C1 controls (U+0080–U+009F; U+009B is a one-byte CSI), the line and paragraph separators,
 * and the invisible bidirectional controls.
 */
const UNSAFE_CLASS = '[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069]';
const UNSAFE = new RegExp(UNSAFE_CLASS, 'g');
const HAS_UNSAFE = new RegExp(UNSAFE_CLASS);

function escaped(ch: string): string {
  return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `s` with every unsafe character as a `\uXXXX` escape: for paths and messages on one line. */
export function terminalText(s: string): string {
  return s.replace(UNSAFE, escaped);
}

/**
 * A node name for the text reports: as it is when it holds no unsafe character, else as a
 * JSON string literal (`"two\nlines"`), quoted so that an escape in the output cannot be taken for
 * the same characters typed in the name.
 */
export function nameForTerminal(name: string): string {
  if (!HAS_UNSAFE.test(name)) return name;
  return JSON.stringify(name).replace(UNSAFE, escaped);
}

/** A message of several lines (a driver error's details): each line as `terminalText`, the line breaks kept. */
export function terminalLines(s: string): string {
  return s.split('\n').map(terminalText).join('\n');
}
