/**
 * Is a file a font the PNG renderer can draw text with? resvg (through ttf-parser) reads TrueType
 * and OpenType fonts and collections of them, and silently draws no text at all with anything else
 * (checked: a WOFF made from DejaVu Sans, or a text file, leave every label blank). So `--font` is
 * checked here first: the signature, the table directory, and the tables the renderer needs.
 */

/** Tables without which the renderer cannot draw a glyph: the header, metrics, glyph count, character map. */
const REQUIRED = ['head', 'hhea', 'maxp', 'cmap'];
/** One of these holds the outlines: TrueType's `glyf` (with `loca`), or CFF's. */
const OUTLINES = ['glyf', 'CFF ', 'CFF2'];

function tag(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
}

/** True when the font at `at` starts with a TrueType (0x00010000, `true`) or OpenType (`OTTO`) signature. */
function isSfnt(bytes: Uint8Array, view: DataView, at: number): boolean {
  if (at + 4 > bytes.length) return false;
  const name = tag(bytes, at);
  return view.getUint32(at) === 0x0001_0000 || name === 'true' || name === 'OTTO';
}

/** The problem with the table directory of the sfnt (TrueType or OpenType font) at `at`, or null. */
function sfntProblem(bytes: Uint8Array, view: DataView, at: number): string | null {
  if (!isSfnt(bytes, view, at)) return 'a font collection whose first font has no TrueType or OpenType signature';
  if (at + 12 > bytes.length) return 'a font file cut short (no table directory)';
  const count = view.getUint16(at + 4);
  if (count === 0) return 'a font file with an empty table directory';
  if (at + 12 + 16 * count > bytes.length) return `a font file cut short (its directory of ${count} tables does not fit)`;
  const tables = new Set<string>();
  for (let i = 0; i < count; i++) {
    const rec = at + 12 + 16 * i;
    const t = tag(bytes, rec);
    const offset = view.getUint32(rec + 8);
    const length = view.getUint32(rec + 12);
    if (offset + length > bytes.length) return `a font file cut short (table '${t.trim()}' ends past its end)`;
    tables.add(t);
  }
  const missing = REQUIRED.filter((t) => !tables.has(t));
  if (missing.length > 0) return `a font without the ${missing.map((t) => `'${t}'`).join(', ')} table${missing.length === 1 ? '' : 's'} the renderer needs`;
  if (!OUTLINES.some((t) => tables.has(t))) return 'a font without glyph outlines (no glyf, CFF or CFF2 table)';
  if (tables.has('glyf') && !tables.has('loca')) return "a font with a 'glyf' table but no 'loca' table";
  return null;
}

/**
 * Why `bytes` is not a font the PNG renderer can use, as a phrase that follows "is" (`a WOFF2 web
 * font, …`, `not a TrueType or OpenType font (it starts with "<!DO")`), or null for a TrueType (.ttf), OpenType (.otf) or collection (.ttc) file whose
 * table directory holds what the renderer needs.
 */
export function fontProblem(bytes: Uint8Array): string | null {
  if (bytes.length < 12) return `not a font (${bytes.length} bytes)`;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = tag(bytes, 0);
  if (magic === 'wOFF' || magic === 'wOF2') {
    return `a ${magic === 'wOFF' ? 'WOFF' : 'WOFF2'} web font, which the PNG renderer cannot read (it would draw no text)`;
  }
  if (magic === 'ttcf') {
    const fonts = view.getUint32(8);
    if (fonts === 0 || 12 + 4 * fonts > bytes.length) return 'a font collection that is empty or cut short';
    return sfntProblem(bytes, view, view.getUint32(12));
  }
  if (isSfnt(bytes, view, 0)) return sfntProblem(bytes, view, 0);
  const start = Array.from(bytes.subarray(0, 4), (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
  return `not a TrueType or OpenType font (it starts with "${start}")`;
}
