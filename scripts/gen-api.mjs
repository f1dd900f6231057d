#!/usr/bin/env node
// The API reference, docs/api/*.md, from the doc comments of the emitted typings (dist/src/**/*.d.ts,
// so `npm run build` first): one page per entry point (the package root, cudagraph/model,
// cudagraph/driver), each export with its declaration and its doc comment, grouped by the module
// that declares it; classes and interfaces list their public members too.
//
//   node scripts/gen-api.mjs           # write docs/api/
//   node scripts/gen-api.mjs --check   # fail when docs/api/ differs from what the typings give
//   --dts <dir> --out <dir>            # other folders (tests)
//
// Fails (exit 1, naming each) when an export has no doc comment, or an entry's typings are missing.
// The typings are read with TypeScript 5's compiler API (the devDependency `typescript5`, an alias
// of typescript@5): the compiler that builds the project, TypeScript 7, has no JavaScript API.
// Nothing is type-checked here; only declarations and their comments are read. docs/development.md
// says why this script rather than TypeDoc or API Extractor.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript5';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? resolve(args[i + 1]) : dflt;
};
const check = args.includes('--check');
const dts = option('--dts', join(root, 'dist', 'src'));
const out = option('--out', join(root, 'docs', 'api'));

/** The entry points, as package.json `exports` names them. */
const ENTRIES = [
  { page: 'cudagraph.md', name: 'cudagraph', file: 'index.d.ts', source: 'src/index.ts' },
  { page: 'model.md', name: 'cudagraph/model', file: 'entries/model.d.ts', source: 'src/entries/model.ts' },
  { page: 'driver.md', name: 'cudagraph/driver', file: 'entries/driver.d.ts', source: 'src/entries/driver.ts' },
];

const problems = [];
const files = ENTRIES.map((e) => join(dts, e.file));
for (const f of files) if (!existsSync(f)) problems.push(`${relative(root, f)} is missing (run npm run build)`);
if (problems.length > 0) fail();

const program = ts.createProgram(files, {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  types: [],
  noEmit: true,
  skipLibCheck: true,
});
const checker = program.getTypeChecker();

/** `src/…` of a typings file (the path a reader finds the source under). */
function sourcePath(sf) {
  return relative(dts, sf.fileName).replace(/\\/g, '/').replace(/\.d\.ts$/, '.ts');
}

/** The text of a node's doc comment (the last `/** … *\/` before it) and its tags, or null. */
function docOf(node) {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const doc = docs.at(-1);
  if (doc === undefined) return null;
  const text = (ts.getTextOfJSDocComment(doc.comment) ?? '').trim();
  const tags = (doc.tags ?? []).map((t) => {
    const name = t.name !== undefined ? ` \`${t.name.getText()}\`` : '';
    const comment = (ts.getTextOfJSDocComment(t.comment) ?? '').trim();
    if (t.tagName.text === 'example') return `*Example:*\n\n\`\`\`ts\n${comment}\n\`\`\``;
    return `*@${t.tagName.text}*${name}${comment ? ` ${comment}` : ''}`;
  });
  if (text === '' && tags.length === 0) return null;
  return [text, ...tags].filter((s) => s !== '').join('\n\n');
}

/**
 * A module's own doc comment: the `/** … *\/` that opens its source file (src/…/x.ts beside the
 * typings' folder; the emitted typings drop it where the file's first statement is an import that
 * leaves no trace in them), else the one that opens the typings file.
 */
function fileDocOf(sf) {
  const source = join(dts, '..', '..', 'src', sourcePath(sf));
  const text = existsSync(source) ? readFileSync(source, 'utf8') : sf.text;
  const range = ts.getLeadingCommentRanges(text, 0)?.find((r) => text.startsWith('/**', r.pos));
  if (range === undefined) return null;
  return text
    .slice(range.pos + 3, range.end - 2)
    .split('\n')
    .map((l) => l.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/** A declaration's text without its doc comment, `export`/`declare`, or (for classes and interfaces) body. */
function signatureOf(decl) {
  const sf = decl.getSourceFile();
  let node = decl;
  let prefix = '';
  if (ts.isVariableDeclaration(decl)) {
    const list = decl.parent;
    prefix = list.flags & ts.NodeFlags.Const ? 'const ' : list.flags & ts.NodeFlags.Let ? 'let ' : 'var ';
  }
  let text;
  if (ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node)) {
    text = sf.text.slice(node.getStart(sf), node.members.pos).replace(/\{\s*$/, '').trim();
  } else {
    text = sf.text.slice(node.getStart(sf), node.end).trim();
  }
  text = text.replace(/^export\s+/, '').replace(/^declare\s+/, '');
  return prefix + text.replace(/;$/, '');
}

/** The public members of a class or interface: signature and doc comment. */
function membersOf(decl) {
  const sf = decl.getSourceFile();
  const members = [];
  for (const m of decl.members) {
    if (m.name !== undefined && ts.isPrivateIdentifier(m.name)) continue;
    const mods = ts.canHaveModifiers(m) ? (ts.getModifiers(m) ?? []) : [];
    if (mods.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword)) continue;
    const text = sf.text.slice(m.getStart(sf), m.end).trim().replace(/;$/, '');
    members.push({ text, doc: docOf(m) });
  }
  return members;
}

/** `symbol` with aliases followed to its declarations. */
function resolved(symbol) {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** The declarations of an export (all overloads of a function; a class and the namespace merged with it). */
function declarationsOf(symbol) {
  return (symbol.declarations ?? []).filter((d) => !ts.isSourceFile(d));
}

/** One export's markdown, and its problems pushed with `where`. */
function renderExport(name, symbol, where, level) {
  const target = resolved(symbol);
  const decls = declarationsOf(target);
  const lines = [];
  if (decls.length === 0) {
    problems.push(`${where}: ${name} has no declaration`);
    return lines;
  }
  const first = decls[0];
  const file = sourcePath(first.getSourceFile());
  const doc = decls.map(docOf).find((d) => d !== null) ?? null;
  if (doc === null) problems.push(`${where}: ${name} (${file}) has no doc comment`);
  lines.push(`${'#'.repeat(level)} \`${name}\``, '');
  lines.push('```ts', ...decls.map(signatureOf), '```', '');
  if (doc !== null) lines.push(doc, '');
  for (const d of decls) {
    if (!ts.isClassDeclaration(d) && !ts.isInterfaceDeclaration(d)) continue;
    const members = membersOf(d);
    if (members.length === 0) continue;
    for (const m of members) {
      lines.push(`- \`${m.text.replace(/\s*\n\s*/g, ' ')}\``);
      if (m.doc !== null) lines.push(...m.doc.split('\n').map((l) => (l === '' ? '' : `  ${l}`)).map((l, i, all) => (l === '' && all[i + 1] !== undefined ? '' : l)));
    }
    lines.push('');
  }
  return lines;
}

/** Whether `symbol` (an alias followed) is a module re-exported as a namespace (`export * as x`). */
function namespaceFile(symbol) {
  const decl = resolved(symbol).declarations?.[0];
  return decl !== undefined && ts.isSourceFile(decl) ? decl : null;
}

/**
 * The sections of the exports of `moduleSymbol`, named `prefix` + name: grouped by the module that
 * declares them (in declaration order) under `level`-deep headings, then each namespace re-export
 * as a section of its own, with its file's doc comment. Contents lines go to `contents`.
 */
function renderModule(prefix, moduleSymbol, where, level, contents) {
  const lines = [];
  const namespaces = [];
  const byModule = new Map();
  for (const s of checker.getExportsOfModule(moduleSymbol)) {
    const file = namespaceFile(s);
    if (file !== null) {
      namespaces.push({ name: prefix + s.name, module: resolved(s), file });
      continue;
    }
    const decl = resolved(s).declarations?.[0];
    const from = decl === undefined ? '?' : sourcePath(decl.getSourceFile());
    if (!byModule.has(from)) byModule.set(from, []);
    byModule.get(from).push({ s, at: decl === undefined ? 0 : decl.getStart() });
  }
  const modules = [...byModule.keys()].sort();
  const indent = '  '.repeat(level - 2);
  for (const m of modules) {
    const group = byModule.get(m).sort((a, b) => a.at - b.at || a.s.name.localeCompare(b.s.name));
    slug(`src/${m}`);
    contents.push(`${indent}- \`src/${m}\`: ${group.map((x) => `[\`${prefix}${x.s.name}\`](#${slug(prefix + x.s.name)})`).join(', ')}`);
    lines.push(`${'#'.repeat(level)} \`src/${m}\``, '');
    for (const { s } of group) lines.push(...renderExport(prefix + s.name, s, where, level + 1));
  }
  for (const n of namespaces) {
    contents.push(`${indent}- namespace [\`${n.name}\`](#${slug(n.name)}) (\`src/${sourcePath(n.file)}\`)`);
    lines.push(`${'#'.repeat(level)} \`${n.name}\``, '');
    const doc = fileDocOf(n.file);
    if (doc === null) problems.push(`${where}: namespace ${n.name} (src/${sourcePath(n.file)}) has no doc comment at its top`);
    else lines.push(doc, '');
    lines.push(...renderModule(`${n.name}.`, n.module, where, level + 1, contents));
  }
  return lines;
}

/** The page of one entry point. */
function renderEntry(entry) {
  slugsUsed = new Map();
  slug(entry.name);
  slug('Contents');
  const sf = program.getSourceFile(join(dts, entry.file));
  const moduleSymbol = checker.getSymbolAtLocation(sf);
  const lines = [
    `# \`${entry.name}\``,
    '',
    `<!-- Generated by scripts/gen-api.mjs from the doc comments of the typings (source: ${entry.source}); do not edit. -->`,
    '',
  ];
  const intro = fileDocOf(sf);
  if (intro === null) problems.push(`${entry.name}: ${entry.source} has no doc comment at its top`);
  else lines.push(intro, '');
  if (moduleSymbol === undefined) {
    problems.push(`${entry.name}: ${entry.source} exports nothing`);
    return lines.join('\n');
  }
  const contents = [];
  const body = renderModule('', moduleSymbol, entry.name, 2, contents);
  lines.push('## Contents', '', ...contents, '', ...body);
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

/**
 * The anchors of one page's headings, as GitHub makes them: lower case, punctuation dropped, spaces
 * to dashes, and `-1`, `-2`… after a repeat (`GraphPoolHandle` and `graphPoolHandle`). Headings must
 * be given in page order.
 */
let slugsUsed = new Map();
function slug(heading) {
  const base = heading.toLowerCase().replace(/[^a-z0-9_ -]/g, '').replace(/ /g, '-');
  const n = slugsUsed.get(base) ?? 0;
  slugsUsed.set(base, n + 1);
  return n === 0 ? base : `${base}-${n}`;
}

function index() {
  return [
    '# API reference',
    '',
    '<!-- Generated by scripts/gen-api.mjs; do not edit. -->',
    '',
    'Generated from the doc comments of the published typings (`npm run gen:api`; `npm test` fails when',
    'these pages are stale or an export has no doc comment). One page per entry point:',
    '',
    ...ENTRIES.map((e) => `- [\`${e.name}\`](${e.page}) (\`import … from '${e.name}'\`)`),
    '',
  ].join('\n');
}

function fail() {
  for (const p of problems) process.stderr.write(`gen-api: ${p}\n`);
  process.exit(1);
}

const pages = new Map([['README.md', index()], ...ENTRIES.map((e) => [e.page, renderEntry(e)])]);
if (problems.length > 0) fail();

if (check) {
  const stale = [];
  for (const [page, text] of pages) {
    const at = join(out, page);
    if (!existsSync(at) || readFileSync(at, 'utf8') !== text) stale.push(relative(root, at));
  }
  const extra = existsSync(out) ? readdirSync(out).filter((f) => !pages.has(f)) : [];
  for (const f of extra) stale.push(`${relative(root, join(out, f))} (not generated)`);
  if (stale.length > 0) {
    process.stderr.write(`gen-api: stale, run npm run gen:api: ${stale.join(', ')}\n`);
    process.exit(1);
  }
  process.stdout.write(`gen-api: ${relative(root, out) || out} is up to date (${pages.size} pages)\n`);
} else {
  mkdirSync(out, { recursive: true });
  for (const f of readdirSync(out)) if (f.endsWith('.md') && !pages.has(f)) rmSync(join(out, f));
  for (const [page, text] of pages) writeFileSync(join(out, page), text);
  process.stdout.write(`gen-api: wrote ${[...pages.keys()].map((p) => relative(root, join(out, p))).join(', ')}\n`);
}
