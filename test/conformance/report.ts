/**
 * Prints what the GPU run of the conformance, lowering and update tests wrote to
 * `$CONFORMANCE_OUT` (conformance.json, update.json): every case with a difference, the node kinds
 * CUDA reported, the update table and the 10,000-node timings, then a short summary table.
 * Usage: node dist/test/conformance/report.js <dir>
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? process.env['CONFORMANCE_OUT'] ?? '.';
const read = (f: string): unknown => (existsSync(join(dir, f)) ? JSON.parse(readFileSync(join(dir, f), 'utf8')) : null);
const cut = (s: string, n = 400): string => (s.length > n ? `${s.slice(0, n)}…` : s);

const conf = (read('conformance.json') ?? []) as Array<{ recorder: string; script: string; expected: string; actual: string; differences: string[]; cleanupError?: string }>;
let agree = 0;
for (const r of conf) {
  if (r.recorder === 'node kinds') {
    console.log(`node kinds as CUDA reports them (${r.script}): ${cut(r.actual, 1500)}`);
    continue;
  }
  if (r.differences.length === 0 && r.cleanupError === undefined) {
    agree++;
    continue;
  }
  console.log(`DIFF ${r.script}: actual ${r.actual}; expected ${r.expected}; ${cut(r.differences.join(' | '))}${r.cleanupError ? `; cleanup: ${cut(r.cleanupError, 200)}` : ''}`);
}
const upd = read('update.json') as { cases?: Array<Record<string, string>>; '10k'?: Record<string, unknown> } | null;
const rows = upd?.cases ?? [];
for (const r of rows) console.log(`update ${r['case']}: predicted ${r['predicted']}, captured ${r['captured']}, lowered ${r['lowered']}`);
const k = upd?.['10k'];
if (k) console.log(`10k: ${JSON.stringify({ ...k, samples: undefined })}`);
const growth = (upd as Record<string, unknown> | null)?.['large growth'];
if (growth) console.log(`large 1-D growth: ${JSON.stringify(growth)}`);
const agreeUpd = rows.filter((r) => r['captured'] === r['predicted'] && r['lowered'] === r['predicted']).length;
console.table({
  'conformance cases agreeing': `${agree} / ${conf.filter((r) => r.recorder !== 'node kinds').length}`,
  'update cases agreeing': `${agreeUpd} / ${rows.length}`,
  'model diff+update (ms)': k?.['modelDiffUpdateMs'] ?? '-',
  'cuGraphExecUpdate (ms)': k?.['driverUpdateMs'] ?? '-',
  're-instantiate (ms)': k?.['reinstantiateMs'] ?? '-',
  'model / re-instantiate': k?.['modelOverReinstantiate'] ?? '-',
  'driver update / re-instantiate': k?.['driverUpdateOverReinstantiate'] ?? '-',
});
