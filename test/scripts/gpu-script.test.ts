/**
 * scripts/gpu.sh, the one command a GPU machine runs, checked on the CPU: its help lists every
 * option, a wrong option is refused with the reason, and without the GPUs it needs it stops before
 * building or writing anything. A stand-in `nvidia-smi` first on PATH plays the machine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/driver/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = join(root, 'scripts', 'gpu.sh');

function gpuSh(args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync('bash', [script, ...args], { encoding: 'utf8', env, timeout: 30_000 });
}

test('gpu.sh --help lists every option and exits 0', () => {
  const r = gpuSh(['--help']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^Usage: bash scripts\/gpu\.sh \[options\]/);
  for (const option of ['--bench [budget]', '--pin <cpus>', '--host', '--cli', '--cpu', '--nccl', '-h, --help']) {
    assert.ok(r.stdout.includes(`\n  ${option} `), `--help lists ${option}`);
  }
  assert.equal(gpuSh(['-h']).stdout, r.stdout);
});

test('gpu.sh refuses an unknown option, and --pin without CPUs, with the reason', () => {
  const unknown = gpuSh(['--bench', '60', '--frobnicate']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /unknown option '--frobnicate'.*--help/);
  for (const args of [['--pin'], ['--pin', '--host']]) {
    const r = gpuSh(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /--pin needs a CPU list/);
  }
});

test('without a GPU (or with one, for --nccl) gpu.sh stops before building, and says why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-gpu-sh-'));
  try {
    // A machine whose `nvidia-smi -L` lists `gpus` GPUs.
    const machine = (gpus: number) => {
      const bin = join(dir, `bin-${gpus}`);
      mkdirSync(bin);
      const listing = Array.from({ length: gpus }, (_, i) => `echo 'GPU ${i}: Stand-in GPU (UUID: GPU-${i})'\n`).join('');
      writeFileSync(join(bin, 'nvidia-smi'), `#!/bin/sh\n[ "$1" = -L ] || exit 0\n${listing}`);
      chmodSync(join(bin, 'nvidia-smi'), 0o755);
      return { ...process.env, PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`, OUT: join(dir, `out-${gpus}`) };
    };
    const none = gpuSh([], machine(0));
    assert.equal(none.status, 2, none.stdout + none.stderr);
    assert.match(none.stderr, /nvidia-smi lists no GPU/);
    assert.match(none.stderr, /'npm test' runs the CPU suite/);
    const one = gpuSh(['--nccl'], machine(1));
    assert.equal(one.status, 2, one.stdout + one.stderr);
    assert.match(one.stderr, /--nccl needs two GPUs; nvidia-smi lists 1/);
    assert.ok(!existsSync(join(dir, 'out-0')) && !existsSync(join(dir, 'out-1')), 'nothing was written to $OUT');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
