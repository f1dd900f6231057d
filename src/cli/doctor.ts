/**
 * `cudagraph doctor`: can cudagraph use the GPU here? Five checks, each with what to do when it
 * fails: the CUDA driver library (where, which CUDA version), the devices (name, compute capability,
 * memory), NVRTC (where, which version), a real capture (a memset and two kernels over two streams,
 * fork/join through events, captured, replayed three times and checked), and the current-context
 * contract (cudagraph's mirror of the current context against the driver's).
 */
import {
  Device,
  DeviceBuffer,
  Module,
  StreamGraphCapture,
  arg,
  driverAvailable,
  nvrtcVersion,
  getContextCheck,
  type CudaError,
} from '../index.js';
import { contextReport } from '../cuda/core/context.js';
import { cudaVersionText, describeDevice, driverProblem, firstLine, gib, loadedLibraryPath, nvrtcProblem } from './gpu-probe.js';
import type { Output } from './output.js';
import { terminalText } from './terminal-text.js';
import { PROBE_PTX } from './probe-kernels.js';
import { nativeStatus } from '../driver/hot.js';

/** The outcome of one check: passed, failed, or skipped (it needs an earlier one). */
export type CheckStatus = 'ok' | 'failed' | 'skipped';

/** One check of `doctor`. */
export interface Check {
  readonly name: string;
  readonly status: CheckStatus;
  /** What was found, or what went wrong. */
  readonly detail: string;
  /** What to do about a failure (empty when it passed). */
  readonly fix: readonly string[];
  /** Facts for programs (paths, versions, devices). */
  readonly facts: Readonly<Record<string, unknown>>;
}

/** The advice lines of a loader error (the `- …` lines after `Check:` in its message). */
function adviceOf(message: string): string[] {
  const at = message.indexOf('\nCheck:');
  if (at < 0) return [];
  return message
    .slice(at + 7)
    .split('\n')
    .map((l) => l.replace(/^\s*-\s*/, '').trim())
    .filter((l) => l.length > 0);
}

function checkDriver(): Check {
  const name = 'CUDA driver';
  const d = driverAvailable();
  if (!d.ok) {
    return { name, status: 'failed', detail: driverProblem(d.error), fix: adviceOf(d.error.message), facts: { tried: d.error.details['tried'] ?? null } };
  }
  try {
    const version = Device.driverVersion();
    // The loader may have asked the dynamic loader for a bare name (libcuda.so.1): say which file that was.
    const file = loadedLibraryPath('libcuda.so') ?? d.path;
    const asked = file === d.path ? '' : ` (found as ${d.path})`;
    return {
      name,
      status: 'ok',
      detail: `libcuda loaded from ${file}${asked}; the driver supports CUDA ${cudaVersionText(version)}`,
      fix: [],
      facts: { path: file, requested: d.path, driverVersion: version },
    };
  } catch (e) {
    return {
      name,
      status: 'failed',
      detail: `libcuda loaded from ${d.path} but does not answer: ${firstLine(e)}`,
      fix: ['check that the driver works: `nvidia-smi` should list the GPU without errors', 'a driver/kernel-module version mismatch after an update needs a reboot'],
      facts: { path: d.path },
    };
  }
}

function checkDevices(driver: Check): Check {
  const name = 'GPUs';
  if (driver.status !== 'ok') return { name, status: 'skipped', detail: 'needs the CUDA driver', fix: [], facts: {} };
  try {
    const n = Device.count();
    if (n === 0) {
      const visible = process.env['CUDA_VISIBLE_DEVICES'];
      return {
        name,
        status: 'failed',
        detail: 'the driver sees no GPU',
        fix: [
          '`nvidia-smi` should list the GPU',
          visible === undefined ? 'CUDA_VISIBLE_DEVICES is not set (all GPUs visible)' : `CUDA_VISIBLE_DEVICES is '${visible}': unset it or list a valid GPU`,
          'in a container: run it with the NVIDIA container toolkit (`docker run --gpus all …`)',
        ],
        facts: { count: 0 },
      };
    }
    const devices = Array.from({ length: n }, (_, i) => {
      const d = Device.get(i);
      const m = d.memoryInfo();
      return {
        ordinal: i,
        name: d.name,
        computeCapability: `${d.computeCapability.major}.${d.computeCapability.minor}`,
        totalMemory: d.totalMemory,
        freeMemory: m.free,
        multiprocessors: d.multiprocessorCount,
        line: `#${i} ${describeDevice(d)}, ${gib(m.free)} free`,
      };
    });
    return {
      name,
      status: 'ok',
      detail: `${n} found: ${devices.map((d) => d.line).join('; ')}`,
      fix: [],
      facts: { count: n, devices: devices.map(({ line: _line, ...rest }) => rest) },
    };
  } catch (e) {
    return { name, status: 'failed', detail: firstLine(e), fix: ['`nvidia-smi` should list the GPU without errors'], facts: {} };
  }
}

function checkNvrtc(): Check {
  const name = 'NVRTC';
  try {
    const v = nvrtcVersion();
    const path = loadedLibraryPath('libnvrtc') ?? loadedLibraryPath('nvrtc');
    return {
      name,
      status: 'ok',
      detail: `${path ?? 'loaded (path unknown on this system)'}, version ${v.major}.${v.minor}`,
      fix: [],
      facts: { path, version: `${v.major}.${v.minor}` },
    };
  } catch (e) {
    const fix = adviceOf(e instanceof Error ? e.message : String(e));
    return {
      name,
      status: 'failed',
      detail: `${nvrtcProblem(e)}: needed by \`cudagraph demo\` and Module.compile (capture and launch work without it)`,
      fix: fix.length > 0 ? fix : ['install the CUDA toolkit (or `pip install nvidia-cuda-nvrtc-cu12`) or set NVRTC_PATH to libnvrtc'],
      facts: {},
    };
  }
}

const N = 1024;

function checkCapture(devices: Check): Check {
  const name = 'capture';
  if (devices.status !== 'ok') return { name, status: 'skipped', detail: 'needs a GPU', fix: [], facts: {} };
  const disposables: { dispose(): void }[] = [];
  const keep = <T extends { dispose(): void }>(x: T): T => {
    disposables.push(x);
    return x;
  };
  try {
    const d = Device.get(0);
    const s = keep(d.createStream());
    const side = keep(d.createStream());
    const m = keep(Module.load(d, PROBE_PTX));
    const buf = keep(DeviceBuffer.alloc(d, 4 * N));
    buf.copyFromHost(new Uint32Array(N));
    d.synchronize(); // the zeros went up on the legacy stream, which non-blocking streams do not wait for
    const add = m.function('add_u32');
    const args = [buf, arg.u32(5), arg.i32(N)];

    const t0 = process.hrtime.bigint();
    const cap = keep(StreamGraphCapture.begin(s, 'global'));
    buf.memsetAsync(s, 7, { elementSize: 4 });
    side.join(s); // fork: the side stream joins the capture
    add.launch(side, { grid: N / 256, block: 256, args });
    s.join(side); // join back before the end
    add.launch(s, { grid: N / 256, block: 256, args });
    const exec = keep(cap.end());
    const captureUs = Number(process.hrtime.bigint() - t0) / 1e3;

    const host = new Uint32Array(N);
    buf.copyToHost(host);
    const untouched = host.every((v) => v === 0);
    const edges = exec.graph.edges();
    for (let i = 0; i < 3; i++) exec.launch(s);
    s.synchronize();
    buf.copyToHost(host);
    const wrong = host.findIndex((v) => v !== 17);
    const facts = { nodes: exec.nodeCount, edges: edges.length, captureUs, replays: 3 };
    const problems: string[] = [];
    if (!untouched) problems.push('the captured work ran during the capture (the buffer changed before any launch)');
    if (exec.nodeCount !== 3) problems.push(`expected 3 nodes (a memset, 2 kernels), the driver has ${exec.nodeCount}`);
    if (wrong >= 0) problems.push(`after 3 replays element ${wrong} is ${host[wrong]}, expected 17 (memset 7, then +5 on each stream)`);
    if (problems.length > 0) {
      return { name, status: 'failed', detail: problems.join('; '), fix: ['this is a bug or a driver fault: please report it with the output of `cudagraph doctor --json`'], facts };
    }
    return {
      name,
      status: 'ok',
      detail: `captured a memset and 2 kernels over 2 streams (fork/join through events) on device 0 in ${captureUs.toFixed(0)} µs: ${exec.nodeCount} nodes, ${edges.length} edges; replayed 3 times, all ${N} values right`,
      fix: [],
      facts,
    };
  } catch (e) {
    const code = (e as CudaError).code;
    return {
      name,
      status: 'failed',
      detail: firstLine(e),
      fix: [
        typeof code === 'number' && code === 801 ? 'update the NVIDIA driver: stream capture needs CUDA 10.0 or newer' : 'run `nvidia-smi` to check the GPU is healthy',
        'if the GPU works for other programs, please report this with the output of `cudagraph doctor --json`',
      ],
      facts: {},
    };
  } finally {
    for (const x of disposables.reverse()) x.dispose();
  }
}

function hex(ctx: bigint | null): string | null {
  return ctx === null ? null : `0x${ctx.toString(16)}`;
}

/**
 * The contract of docs/driver.md, "The current context": after cudagraph's own calls, the context
 * it believes current must be the one the driver reports; otherwise other code in this process
 * switches contexts behind its back and `setContextCheck('verify')` is needed.
 */
function checkContext(devices: Check): Check {
  const name = 'context';
  if (devices.status !== 'ok') return { name, status: 'skipped', detail: 'needs a GPU', fix: [], facts: {} };
  try {
    Device.get(0);
    const r = contextReport('cudagraph doctor');
    const mode = getContextCheck();
    const facts = { expected: hex(r.expected), actual: hex(r.actual), mode };
    if (r.ok) {
      return { name, status: 'ok', detail: `the current context is the one cudagraph made current (${hex(r.actual)}); context check '${mode}'`, fix: [], facts };
    }
    return {
      name,
      status: 'failed',
      detail: `cudagraph made context ${hex(r.expected)} current, the driver reports ${r.actual === 0n ? 'none' : hex(r.actual)}: other code switched it`,
      fix: [
        "code that switches the JS thread's CUDA context must restore it before calling cudagraph",
        "or run with CUDAGRAPH_CONTEXT_CHECK=verify (setContextCheck('verify')): cudagraph then asks the driver before each call",
      ],
      facts,
    };
  } catch (e) {
    return { name, status: 'failed', detail: firstLine(e), fix: ['run `nvidia-smi` to check the GPU is healthy'], facts: {} };
  }
}

/** Which binding makes the hot calls (launches, graph launches), and why: not a check, a fact. */
function bindingText(b: ReturnType<typeof nativeStatus>): string {
  return b.active
    ? `the Node-API addon${b.path !== null ? ` (${b.path})` : ''} makes the hot calls (launches, graph launches, node batches); koffi the rest`
    : `koffi makes every driver call: ${b.reason} (docs/ffi-decision.md says what the addon saves)`;
}

/** Runs every check, in order. */
export function runChecks(): Check[] {
  const driver = checkDriver();
  const devices = checkDevices(driver);
  const nvrtc = checkNvrtc();
  const capture = checkCapture(devices);
  const context = checkContext(devices);
  return [driver, devices, nvrtc, capture, context];
}

const MARK: Record<CheckStatus, string> = { ok: 'ok  ', failed: 'FAIL', skipped: 'skip' };

/** Runs `cudagraph doctor`; returns 0 when every check passed, else 1. */
export function doctor(options: { json: boolean }, io: Output): number {
  const checks = runChecks();
  const failed = checks.filter((c) => c.status === 'failed');
  const ok = failed.length === 0;
  const gpuReady = checks.every((c) => c.status === 'ok');
  const verdict = gpuReady
    ? 'everything works: `cudagraph demo` and `cudagraph bench` run on the GPU'
    : checks.find((c) => c.name === 'capture')?.status === 'ok' && checks.filter((c) => c.status !== 'ok').every((c) => c.name === 'NVRTC')
      ? 'capture works; `cudagraph demo` needs NVRTC to compile its kernels, so it will use the CPU model until NVRTC is found'
      : `${failed.length} problem${failed.length === 1 ? '' : 's'}: \`cudagraph demo\` will use the CPU model (the model, render and inspect need no GPU)`;
  const binding = nativeStatus();
  if (options.json) {
    io.out(JSON.stringify({ ok, checks, binding, verdict }, null, 2) + '\n');
    return ok ? 0 : 1;
  }
  const lines = ['cudagraph doctor'];
  for (const c of checks) {
    lines.push(`  [${MARK[c.status]}] ${c.name.padEnd(12)} ${c.detail}`);
    for (const f of c.fix) lines.push(`  ${' '.repeat(20)}- ${f}`);
  }
  lines.push(`  binding:     ${bindingText(binding)}`);
  lines.push(verdict);
  // Paths and names from the environment (CUDA_DRIVER_PATH, NVRTC_PATH) are shown escaped.
  io.out(lines.map(terminalText).join('\n') + '\n');
  return ok ? 0 : 1;
}
