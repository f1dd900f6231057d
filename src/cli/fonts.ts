/**
 * A font for the text of PNG pictures. The SVG → PNG renderer (resvg, compiled to WebAssembly)
 * cannot see the system's fonts by itself: it draws text only with fonts handed to it as bytes.
 * So the CLI looks for a sans-serif font file in the usual places, preferring fonts with
 * Helvetica's widths (Graphviz sizes its boxes by Helvetica's metrics): Liberation Sans, Arial,
 * Helvetica, then DejaVu Sans Condensed, DejaVu Sans, Noto Sans, FreeSans.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { fontProblem } from './font-file.js';
import { UsageError, fileErrorReason, inputFileSize } from './usage-error.js';

/** File names tried first, best first (case-insensitive). */
const PREFERRED = [
  'LiberationSans-Regular.ttf',
  'Arial.ttf',
  'arial.ttf',
  'Helvetica.ttc',
  'DejaVuSansCondensed.ttf',
  'DejaVuSans.ttf',
  'NotoSans-Regular.ttf',
  'FreeSans.ttf',
].map((n) => n.toLowerCase());

/** Folders that hold fonts on Linux, macOS and Windows. */
export function fontFolders(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = homedir();
  return [
    '/usr/share/fonts',
    '/usr/local/share/fonts',
    join(home, '.local/share/fonts'),
    join(home, '.fonts'),
    '/System/Library/Fonts',
    '/Library/Fonts',
    join(home, 'Library/Fonts'),
    join(env['WINDIR'] ?? 'C:\\Windows', 'Fonts'),
  ];
}

function* fontFiles(dir: string, depth: number): Generator<string> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory() && depth > 0) yield* fontFiles(p, depth - 1);
    else if (/\.(ttf|otf|ttc)$/i.test(e.name)) yield p;
  }
}

/** The best sans-serif font file found in `folders`, or null. */
export function findFont(folders: readonly string[] = fontFolders()): string | null {
  let best: string | null = null;
  let bestRank = Infinity;
  let fallback: string | null = null;
  for (const dir of folders) {
    for (const file of fontFiles(dir, 4)) {
      const rank = PREFERRED.indexOf(basename(file).toLowerCase());
      if (rank >= 0 && rank < bestRank) {
        best = file;
        bestRank = rank;
      }
      // Any regular sans face will do when none of the preferred ones is installed.
      if (fallback === null && /sans/i.test(basename(file)) && !/(bold|italic|oblique|mono|light|thin)/i.test(basename(file))) fallback = file;
    }
    if (bestRank === 0) break;
  }
  return best ?? fallback;
}

/** A font file read and checked by `loadFont`. */
export interface LoadedFont {
  readonly path: string;
  readonly bytes: Uint8Array;
}

/**
 * The bytes of the font for PNG text: `explicit` (the `--font` option) or `$CUDAGRAPH_FONT` when
 * given, else the best one found in `folders`.
 * @throws UsageError when the given file cannot be read or is not a TrueType or OpenType font
 *   (`fontProblem`), or no font is found.
 */
export function loadFont(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
  folders: readonly string[] = fontFolders(env),
): LoadedFont {
  const given = explicit ?? env['CUDAGRAPH_FONT'];
  const path = given ?? findFont(folders);
  if (path === null) {
    throw new UsageError(
      'a PNG needs a font for its text and none was found in the usual font folders; pass --font <file.ttf> ' +
        '(or set CUDAGRAPH_FONT), install one (e.g. fonts-dejavu-core or fonts-liberation), or render to .svg instead',
    );
  }
  let bytes: Uint8Array;
  // A FIFO or a device (`--font /dev/zero`) would hold the read forever: refused first.
  inputFileSize(path, 'the font ');
  try {
    bytes = new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new UsageError(`cannot read the font ${path}: ${fileErrorReason(e)}`, { cause: e });
  }
  // resvg would draw no text with anything else, and say nothing (font-file.ts).
  const problem = fontProblem(bytes);
  if (problem !== null) {
    const from = explicit !== undefined ? '--font' : given !== undefined ? '$CUDAGRAPH_FONT' : 'the font found';
    throw new UsageError(`${from} ${path} is ${problem}; pass a TrueType or OpenType font (.ttf, .otf, .ttc)`);
  }
  return { path, bytes };
}
