#!/usr/bin/env node
// Runs `node --test` over every *.test.js under the given folders (compiled tests in dist/).
// Node 20's `node --test` takes no glob patterns, so the files are listed here. A folder that
// does not exist is skipped with a note; no test files at all is a failure (a runner that finds
// nothing must not pass).
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function walk(dir, out) {
  for (const entry of readdirSync(dir).sort()) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (entry.endsWith('.test.js')) out.push(p);
  }
}

const files = [];
for (const dir of process.argv.slice(2)) {
  if (existsSync(dir)) walk(dir, files);
  else console.error(`run-tests: ${dir} does not exist, skipped`);
}
if (files.length === 0) {
  console.error('run-tests: no test files found');
  process.exit(1);
}
// A test without a timeout of its own fails after 5 minutes (RUN_TESTS_TIMEOUT_MS) instead of
// stalling the run: a hang is a failure to report, not a run that never ends (the longest GPU
// suites take about two minutes).
const timeout = process.env.RUN_TESTS_TIMEOUT_MS ?? '300000';
if (!/^[1-9]\d*$/.test(timeout)) {
  console.error(`run-tests: RUN_TESTS_TIMEOUT_MS must be a whole number of milliseconds, got '${timeout}'`);
  process.exit(2);
}
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=1', `--test-timeout=${timeout}`, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
