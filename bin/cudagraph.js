#!/usr/bin/env node
// The `cudagraph` command. The CLI lives in dist/ (compiled TypeScript): build it first.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('cudagraph: the package is not built yet; run `npm run build` in its folder first\n');
  process.exit(1);
}
const { run } = await import(main.href);
process.exitCode = await run(process.argv.slice(2));
