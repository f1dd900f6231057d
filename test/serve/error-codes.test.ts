/**
 * The error table of docs/serve.md against the code: every `code` the server's sources can send
 * (each literal given to `new ApiError`, `badRequest` and `argumentRefusal`, and the codes of the
 * parser's refusals) is in the table with the status the code gives it, and the table lists no
 * code the sources never send. Read with TypeScript 5's compiler API (the devDependency
 * `typescript5`), so a call whose code is not a literal is found and reported, not skipped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript5';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** What a source sends: code → the statuses it goes with (`badRequest` and `argumentRefusal`: 400). */
function sentCodes(): { codes: Map<string, Set<number>>; unread: string[] } {
  const codes = new Map<string, Set<number>>();
  const unread: string[] = [];
  const add = (code: string, status: number): void => {
    if (!codes.has(code)) codes.set(code, new Set());
    codes.get(code)!.add(status);
  };
  const dir = join(root, 'src', 'serve');
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const file = ts.createSourceFile(name, readFileSync(join(dir, name), 'utf8'), ts.ScriptTarget.Latest, true);
    /** The literal a code argument holds: `'x'`, or `a ?? 'x'` (the parser's refusals: known, else 'x'). */
    const literal = (e: ts.Expression | undefined): string | null => {
      if (e === undefined) return null;
      if (ts.isStringLiteral(e)) return e.text;
      if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) return literal(e.right);
      return null;
    };
    const status = (e: ts.Expression | undefined): number | null => {
      if (e !== undefined && ts.isNumericLiteral(e)) return Number(e.text);
      if (e !== undefined && ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) return status(e.right);
      return null;
    };
    const visit = (node: ts.Node): void => {
      const call = ts.isCallExpression(node) || ts.isNewExpression(node) ? node : null;
      const callee = call !== null && ts.isIdentifier(call.expression) ? call.expression.text : '';
      if (call !== null && ['ApiError', 'badRequest', 'argumentRefusal'].includes(callee)) {
        const code = call.arguments?.[1];
        const at = `${name}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
        const text = literal(code);
        // The helpers themselves pass their `code` parameter on.
        const passedOn = code !== undefined && ts.isIdentifier(code) && code.text === 'code' && name === 'api-error.ts';
        if (text !== null) {
          const s = callee === 'ApiError' ? status(call.arguments![0]) : 400;
          if (s === null) unread.push(`${at}: the status of ${text}`);
          else add(text, s);
        } else if (!passedOn) unread.push(`${at}: ${code?.getText() ?? '(no code)'}`);
      }
      // The refusals of requests Node's parser rejects: { status, code, message } records.
      if (ts.isObjectLiteralExpression(node)) {
        const field = (key: string): ts.Expression | undefined => {
          const p = node.properties.find((q) => ts.isPropertyAssignment(q) && ts.isIdentifier(q.name) && q.name.text === key);
          return p !== undefined && ts.isPropertyAssignment(p) ? p.initializer : undefined;
        };
        const code = literal(field('code'));
        const s = status(field('status'));
        if (code !== null && s !== null) add(code, s);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return { codes, unread };
}

/** The table under "### Errors" in docs/serve.md: code → status (a row may name several codes). */
function documentedCodes(): Map<string, number> {
  const doc = readFileSync(join(root, 'docs', 'serve.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Errors'), doc.indexOf('\n## ', doc.indexOf('### Errors')));
  const codes = new Map<string, number>();
  for (const m of section.matchAll(/^\| (\d{3}) \| ([^|]+) \|/gm)) {
    for (const c of m[2]!.matchAll(/`([a-z_]+)`/g)) {
      assert.ok(!codes.has(c[1]!), `${c[1]} is in the table twice`);
      codes.set(c[1]!, Number(m[1]));
    }
  }
  return codes;
}

test("docs/serve.md's error table lists every code the server sends, with its status, and no other", () => {
  const { codes, unread } = sentCodes();
  assert.deepEqual(unread, [], 'every code the sources send is a literal this test can read');
  const documented = documentedCodes();
  assert.ok(codes.size >= 20 && documented.size >= 20, `${codes.size} codes sent, ${documented.size} documented`);
  for (const [code, statuses] of codes) {
    assert.ok(documented.has(code), `${code} (sent with ${[...statuses].join(', ')}) is missing from the table`);
    assert.deepEqual([...statuses], [documented.get(code)], `${code}: the table's status against the code's`);
  }
  for (const code of documented.keys()) assert.ok(codes.has(code), `the table lists ${code}, which the server never sends`);
});
