/**
 * The CPU examples under examples/ run as a user runs them (`node examples/<name>.mjs` after the
 * build) and print what they promise. The GPU example (conditional-loop.mjs) runs in the GPU suite
 * (test/gpu/readme.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

test('examples/plan-streams.mjs: levels, critical path and reachability of a three-stream pipeline', () => {
  const r = spawnSync(process.execPath, [join(root, 'examples', 'plan-streams.mjs')], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    r.stdout,
    [
      '6 nodes, 7 edges on 3 streams',
      'level 0: upload',
      'level 1: attention | mlp_up',
      'level 2: softmax | mlp_down',
      'level 3: download',
      'critical path: upload → mlp_up → mlp_down → download (260 µs)',
      'attention before download: true',
      '',
    ].join('\n'),
  );
});
