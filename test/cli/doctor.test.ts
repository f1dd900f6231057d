import { test } from 'node:test';
import assert from 'node:assert/strict';
import { driverAvailable } from '../../src/index.js';
import { cudagraph, inTempDir } from './helpers.js';

const noDriver = !driverAvailable().ok;
const skip = noDriver ? false : 'a CUDA driver loads here (the GPU tests cover doctor there)';

test('doctor without a driver: the driver check fails with what to do, GPU checks are skipped, status 1', { skip }, () => {
  const r = cudagraph(['doctor']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, '');
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines[0], 'cudagraph doctor');
  assert.match(lines[1]!, /^ {2}\[FAIL\] CUDA driver {2}the CUDA driver library \(libcuda\) is not available.* \(tried libcuda\.so\.1 and \d+ other places\)$/);
  // The loader's advice, one line each.
  assert.match(r.stdout, /- an NVIDIA driver is installed and working \(`nvidia-smi` lists the GPU\)/);
  assert.match(r.stdout, /- or set CUDA_DRIVER_PATH to the full path of libcuda\.so\.1/);
  assert.match(r.stdout, /^ {2}\[skip\] GPUs {9}needs the CUDA driver$/m);
  assert.match(r.stdout, /^ {2}\[(ok {2}|FAIL)\] NVRTC {8}/m);
  assert.match(r.stdout, /^ {2}\[skip\] capture {6}needs a GPU$/m);
  assert.match(r.stdout, /^ {2}\[skip\] context {6}needs a GPU$/m);
  assert.match(lines.at(-1)!, /problems?: `cudagraph demo` will use the CPU model/);
  // Which binding makes the hot calls, and why: the addon where it loads, else koffi with the reason.
  assert.match(lines.at(-2)!, /^ {2}binding: {5}(the Node-API addon \(.+cudagraph_hot\.node\) makes the hot calls|koffi makes every driver call: .+)/);
  const off = cudagraph(['doctor'], { env: { ...process.env, CUDAGRAPH_NATIVE: '0' } });
  assert.match(off.stdout, /^ {2}binding: {5}koffi makes every driver call: CUDAGRAPH_NATIVE=0 /m);
  const j = JSON.parse(cudagraph(['doctor', '--json'], { env: { ...process.env, CUDAGRAPH_NATIVE: '0' } }).stdout) as { binding: { active: boolean; reason: string } };
  assert.deepEqual([j.binding.active, j.binding.reason], [false, 'CUDAGRAPH_NATIVE=0']);
});

test('doctor --json: the five checks as data, with the same verdict', { skip }, () => {
  const r = cudagraph(['doctor', '--json']);
  assert.equal(r.status, 1);
  const doc = JSON.parse(r.stdout) as { ok: boolean; verdict: string; checks: { name: string; status: string; detail: string; fix: string[]; facts: Record<string, unknown> }[] };
  assert.equal(doc.ok, false);
  assert.deepEqual(doc.checks.map((c) => c.name), ['CUDA driver', 'GPUs', 'NVRTC', 'capture', 'context']);
  const [driver, gpus, nvrtc, capture, context] = doc.checks;
  assert.equal(driver!.status, 'failed');
  assert.ok(driver!.fix.length >= 3);
  assert.match(String(driver!.facts['tried']), /^libcuda\.so\.1, libcuda\.so, /);
  assert.equal(gpus!.status, 'skipped');
  assert.equal(capture!.status, 'skipped');
  assert.equal(context!.status, 'skipped');
  // NVRTC does not need the driver: checked either way; a failure says where it looked and what to do.
  if (nvrtc!.status === 'failed') {
    assert.match(nvrtc!.detail, /\(tried libnvrtc\.so\.\d+ and \d+ other places\)/);
    assert.ok(nvrtc!.fix.some((f) => /NVRTC_PATH/.test(f)));
  } else {
    assert.equal(nvrtc!.status, 'ok');
  }
});

test('doctor: extra arguments are a user mistake', () => {
  const r = cudagraph(['doctor', 'now']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^cudagraph: too many arguments/);
});

test('doctor and demo show a CUDA_DRIVER_PATH with control characters escaped', { skip }, () => {
  const env = { ...process.env, CUDA_DRIVER_PATH: '/no/such\x1b[31m\nforged' };
  const d = cudagraph(['doctor'], { env });
  assert.equal(d.status, 1);
  assert.doesNotMatch(d.stdout, /\x1b|\nforged/);
  assert.match(d.stdout, /tried \/no\/such\\u001b\[31m\\u000aforged/);
  inTempDir((dir) => {
    for (const args of [['demo', '-o', dir], ['demo', 'solver', '--n', '8', '-o', dir]]) {
      const m = cudagraph(args, { env });
      assert.equal(m.status, 0, m.stderr);
      assert.doesNotMatch(m.stdout, /\x1b|\nforged/, args.join(' '));
      assert.match(m.stdout.split('\n')[0]!, /^cudagraph demo( solver)?: CPU model mode: .*tried \/no\/such\\u001b\[31m\\u000aforged/, args.join(' '));
    }
  });
});
