/**
 * scripts/llama-reference.py, the transformers side of the logits comparison, checked without
 * PyTorch: its help, exit 3 naming what cannot be imported, exit 2 for bad sequences, and, with
 * stand-in `torch` and `transformers` modules first on the path, what it asks of transformers
 * (float32, eager attention, TF32 off, the dtype keyword of its version) and what it writes.
 * Python runs with -S (no site-packages), so an installed torch or transformers does not change
 * what is tested.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/scripts/ → the package root.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = join(root, 'scripts', 'llama-reference.py');
const noPython = spawnSync('python3', ['-c', 'pass']).status !== 0 ? 'python3 is not on PATH' : false;

function run(args: readonly string[], pythonPath?: string, extra: Record<string, string> = {}) {
  const env = { ...process.env, PYTHONPATH: pythonPath ?? '', ...extra };
  return spawnSync('python3', ['-S', script, ...args], { encoding: 'utf8', env, timeout: 30_000 });
}

const STAND_IN_TORCH = `
__version__ = "0.0+stand-in"
float32 = "float32"
long = "long"
class _Flags:
    allow_tf32 = True
class backends:
    class cuda:
        matmul = _Flags()
    cudnn = _Flags()
class cuda:
    @staticmethod
    def is_available():
        return False
class no_grad:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
class Tensor:
    def __init__(self, data):
        self.data = data
    def __getitem__(self, i):
        return Tensor(self.data[i])
    def float(self):
        return self
    def tolist(self):
        return self.data
    def item(self):
        return self.data
def tensor(data, dtype=None, device=None):
    return Tensor(data)
def argmax(t):
    return Tensor(max(range(len(t.data)), key=lambda i: (t.data[i], -i)))
`;

// The model's logits at position p after token t: [p, t, t, -1] (a tie between 1 and 2 when t > p).
const STAND_IN_TRANSFORMERS = `
import json, os, torch
__version__ = os.environ.get("STAND_IN_VERSION", "4.57.0")
class _Output:
    def __init__(self, logits):
        self.logits = logits
class LlamaForCausalLM:
    @classmethod
    def from_pretrained(cls, path, **kwargs):
        with open(os.environ["STAND_IN_LOG"], "w") as f:
            json.dump({"path": path, "kwargs": kwargs, "tf32": [torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32]}, f)
        return cls()
    def to(self, device):
        return self
    def eval(self):
        return self
    def __call__(self, input_ids, use_cache):
        assert use_cache is False
        return _Output(torch.Tensor([[[float(p), float(t), float(t), -1.0] for p, t in enumerate(input_ids.data[0])]]))
`;

/** A folder with the stand-in modules (`transformers` too unless `withTransformers` is false). */
function standIns(dir: string, withTransformers = true): string {
  const path = join(dir, 'site');
  mkdirSync(join(path, 'torch'), { recursive: true });
  writeFileSync(join(path, 'torch', '__init__.py'), STAND_IN_TORCH);
  if (withTransformers) {
    mkdirSync(join(path, 'transformers'));
    writeFileSync(join(path, 'transformers', '__init__.py'), STAND_IN_TRANSFORMERS);
  }
  return path;
}

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudagraph-llama-ref-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('llama-reference.py --help says how to call it', { skip: noPython }, () => {
  const r = run(['--help']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /usage: llama-reference\.py .*model sequences out/s);
  assert.match(r.stdout, /--all-positions/);
});

test('llama-reference.py exits 3 naming torch or transformers when it cannot import them', { skip: noPython }, (t) => {
  const dir = tempDir(t);
  const sequences = join(dir, 'seq.json');
  writeFileSync(sequences, '[[256, 1]]');
  const none = run([dir, sequences, join(dir, 'out.json')]);
  assert.equal(none.status, 3, none.stderr);
  assert.match(none.stderr, /^llama-reference\.py: torch is not importable/);
  const torchOnly = run([dir, sequences, join(dir, 'out.json')], standIns(dir, false));
  assert.equal(torchOnly.status, 3, torchOnly.stderr);
  assert.match(torchOnly.stderr, /^llama-reference\.py: transformers is not importable \(No module named 'transformers'\)/);
});

test('llama-reference.py exits 2 for sequences that are not lists of token ids', { skip: noPython }, (t) => {
  const dir = tempDir(t);
  const site = standIns(dir);
  for (const bad of ['[[256, -1]]', '[[]]', '{"a": 1}', '[[1.5]]', 'not json']) {
    writeFileSync(join(dir, 'seq.json'), bad);
    const r = run([dir, join(dir, 'seq.json'), join(dir, 'out.json')], site);
    assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /^llama-reference\.py: /);
  }
});

test('llama-reference.py loads the model in float32 with eager attention and TF32 off, and writes each sequence’s logits', { skip: noPython }, (t) => {
  const dir = tempDir(t);
  const site = standIns(dir);
  const sequences = join(dir, 'seq.json');
  writeFileSync(sequences, '[[256, 7, 9], [256]]');
  const out = join(dir, 'out.json');
  const log = join(dir, 'log.json');
  for (const [version, key] of [['4.57.0', 'dtype'], ['4.56.0.dev0', 'dtype'], ['4.46.2', 'torch_dtype']] as const) {
    const r = run([join(dir, 'model'), sequences, out], site, { STAND_IN_LOG: log, STAND_IN_VERSION: version });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(readFileSync(log, 'utf8')), { path: join(dir, 'model'), kwargs: { attn_implementation: 'eager', [key]: 'float32' }, tf32: [false, false] });
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), {
      transformers: version,
      torch: '0.0+stand-in',
      device: 'cpu',
      positions: 'last',
      results: [
        { tokens: [256, 7, 9], next: 1, logits: [2, 9, 9, -1] },
        { tokens: [256], next: 1, logits: [0, 256, 256, -1] },
      ],
    });
  }
  const all = run([join(dir, 'model'), sequences, out, '--all-positions', '--device', 'cuda:1'], site, { STAND_IN_LOG: log });
  assert.equal(all.status, 0, all.stderr);
  const written = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(written.positions, 'all');
  assert.equal(written.device, 'cuda:1');
  assert.deepEqual(written.results[0].logits, [[0, 256, 256, -1], [1, 7, 7, -1], [2, 9, 9, -1]]);
});
