/**
 * Runs one hazard scenario (scenarios.ts) in this process and prints one JSON line:
 * `{"ok":"<name>", …facts}`; exits 0, or 1 with the error on stderr.
 *
 *   node --expose-gc dist/test/support/hazards/run-scenario.js <name>
 *
 * With HAZARD_STAND_IN=1 the driver is the hazard stand-in named by CUDA_DRIVER_PATH (its counters
 * are read through koffi, and `delay` pauses its GPU thread); otherwise the real driver and GPU,
 * where `delay` launches a kernel that spins on the GPU's clock.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Device, Module, arg, type Stream } from '../../../src/index.js';
import { scenarios, type DriverCounters, type HazardContext } from './scenarios.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;

const SPIN = `extern "C" __global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}`;

async function gc(): Promise<void> {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) {
    collect();
    await new Promise((r) => setTimeout(r, 5));
  }
}

function standInContext(): HazardContext {
  const path = process.env['CUDA_DRIVER_PATH'];
  if (path === undefined) throw new Error('HAZARD_STAND_IN=1 needs CUDA_DRIVER_PATH');
  const lib = koffi.load(path);
  // Each counter of DriverCounters and the stand-in's exported variable that holds it.
  const symbols: { readonly [K in keyof DriverCounters]: string } = {
    waits: 'waits',
    allocs: 'allocs',
    frees: 'frees',
    loads: 'loads',
    unloads: 'unloads',
    registers: 'registers',
    unregisters: 'unregisters',
    launches: 'launches',
    hostCallsRun: 'host_calls_run',
  };
  const views = Object.entries(symbols).map(([key, sym]) => [key, new BigUint64Array(koffi.view(lib.symbol(sym) as bigint, 8))] as const);
  const delay = lib.func('int stand_in_delay(uint64_t stream, unsigned int ms)');
  const device = Device.get(0);
  const image = '// the stand-in driver loads anything\n';
  return {
    device,
    module: Module.load(device, image),
    image,
    gpu: false,
    delay(stream: Stream, ms: number) {
      if (delay(stream.handle, ms) !== 0) throw new Error('stand_in_delay failed');
    },
    counters: () => Object.fromEntries(views.map(([key, v]) => [key, Number(v[0]!)])) as unknown as DriverCounters,
    gc,
  };
}

function gpuContext(): HazardContext {
  const device = Device.get(0);
  const image = readFileSync(fileURLToPath(new URL('../../../../test/gpu/fixtures/kernels.ptx', import.meta.url)), 'utf8');
  const spin = Module.compile(device, SPIN).function('spin_ns');
  return {
    device,
    module: Module.load(device, image),
    image,
    gpu: true,
    delay(stream: Stream, ms: number) {
      spin.launch(stream, { grid: 1, block: 1, args: [arg.u64(BigInt(Math.round(ms * 1e6)))] });
    },
    counters: null,
    gc,
  };
}

async function main(): Promise<void> {
  const name = process.argv[2] ?? '';
  const scenario = scenarios[name];
  if (scenario === undefined) throw new Error(`no scenario '${name}' (known: ${Object.keys(scenarios).join(', ')})`);
  const ctx = process.env['HAZARD_STAND_IN'] === '1' ? standInContext() : gpuContext();
  const facts = await scenario(ctx);
  process.stdout.write(`${JSON.stringify({ ok: name, ...facts })}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
