/**
 * Every link and image of README.md resolves where the README is read: a relative one names a file
 * the package ships (`npm pack --dry-run --json`, so the link works in the unpacked package as in a
 * checkout), and its `#anchor`, if any, a heading of that file; a `#anchor` alone, a heading of the
 * README; an absolute one is a well-formed https URL (not fetched: no network here). The relative
 * links of the docs the package ships are checked the same way where they point at shipped files.
 *
 * The package has no `repository` field (no public URL is known), so the links stay relative and
 * the docs ship in the package: docs/development.md, "Links in the README".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The package's files, as `npm pack` would ship them (paths with `/`). */
function packedFiles(): Set<string> {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const [pack] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
  return new Set(pack.files.map((f) => f.path));
}

/** Markdown without fenced code blocks and code spans (a `[x](y)` in code is no link). */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, '');
}

/** The link targets of `markdown`: `[text](target)`, `![alt](target)`, `[x]: target`, `<img src>` and `<a href>`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const targets: string[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) targets.push(m[1]!);
  for (const m of text.matchAll(/<(?:img|a|source)\b[^>]*?\s(?:src|href|srcset)="([^"]*)"/g)) targets.push(m[1]!);
  return targets;
}

/** The anchors GitHub (and the npm registry page) give the headings of `markdown`. */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const code = /^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;
  for (const m of markdown.replace(code, '').matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = m[1]!
      .replace(/<[^>]+>/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_ -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** What is wrong with each link of `file` (a path relative to the package root), given the shipped files. */
function brokenLinks(file: string, shipped: Set<string>, onlyShippedTargets: boolean): string[] {
  const markdown = readFileSync(join(root, file), 'utf8');
  const problems: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (target === '') {
      problems.push('an empty link');
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (/^mailto:/i.test(target)) continue;
      let url: URL | null = null;
      try {
        url = new URL(target);
      } catch {
        // reported below
      }
      if (url === null || url.protocol !== 'https:' || url.hostname === '') problems.push(`${target}: not a well-formed https URL`);
      continue;
    }
    const [path, anchor] = target.split('#', 2) as [string, string | undefined];
    const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path))).replace(/\\/g, '/');
    if (!shipped.has(resolved)) {
      if (!onlyShippedTargets) problems.push(`${target}: ${resolved} is not in the package`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(readFileSync(join(root, resolved), 'utf8')).has(anchor)) {
      problems.push(`${target}: ${resolved} has no heading #${anchor}`);
    }
  }
  return problems;
}

test('the link and heading readers: code is no link, anchors as GitHub makes them', () => {
  assert.deepEqual(linkTargets('[a](docs/x.md) `[b](no)` ![i](img.png "t")\n```\n[c](no)\n```\n[r]: https://e.org/\n<img src="p.png" width="4">'), [
    'docs/x.md',
    'img.png',
    'https://e.org/',
    'p.png',
  ]);
  assert.deepEqual([...headingAnchors('# A `b` c!\n## A b c\n```\n# not\n```\n### Waiting — without blocking')], ['a-b-c', 'a-b-c-1', 'waiting--without-blocking']);
});

test("every link and image of the README resolves in the package as shipped (npm pack's file list)", () => {
  const shipped = packedFiles();
  assert.ok(shipped.has('README.md'));
  const targets = linkTargets(readFileSync(join(root, 'README.md'), 'utf8'));
  assert.ok(targets.some((t) => t.startsWith('docs/img/')), 'the README has its picture');
  assert.ok(targets.filter((t) => t.startsWith('docs/')).length >= 15, `docs links: ${targets.length}`);
  assert.deepEqual(brokenLinks('README.md', shipped, false), []);
});

test('the links between the shipped docs land on headings that exist', () => {
  const shipped = packedFiles();
  const docs = [...shipped].filter((f) => f.endsWith('.md'));
  assert.ok(docs.includes('docs/api/README.md'), 'the API reference ships');
  const problems = docs.flatMap((f) => brokenLinks(f, shipped, true).map((p) => `${f}: ${p}`));
  assert.deepEqual(problems, []);
});
