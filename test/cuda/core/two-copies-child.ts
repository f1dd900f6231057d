/**
 * Child process of two-copies.test.ts: imports two separately installed copies of cudagraph
 * (argv: the two `dist/src/index.js` paths) in one process, against the hazard stand-in driver
 * with two devices, and checks that the process-wide state is one: the current-context mirror,
 * the frees held back by a capture, and the host-call gate. Prints one JSON line of facts.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

type Api = typeof import('../../../src/index.js');

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;

async function main(): Promise<void> {
  const [pathA, pathB] = process.argv.slice(2);
  const A = (await import(pathToFileURL(pathA!).href)) as Api;
  const B = (await import(pathToFileURL(pathB!).href)) as Api;
  assert.notEqual(A.Device, B.Device, 'two copies, two sets of classes');
  const lib = koffi.load(process.env['CUDA_DRIVER_PATH']!);
  const counter = (name: string): (() => bigint) => {
    const v = new BigUint64Array(koffi.view(lib.symbol(name) as bigint, 8));
    return () => v[0]!;
  };
  const frees = counter('frees');
  const lastLaunchCtx = counter('last_launch_ctx');
  const delay = lib.func('int stand_in_delay(uint64_t stream, unsigned int ms)');
  const facts: Record<string, unknown> = {};

  // 1. The current-context mirror is shared: a switch made by B is seen by A.
  const a0 = A.Device.get(0);
  const b1 = B.Device.get(1);
  const sA = a0.createStream();
  const kA = A.Module.load(a0, '// stand-in\n').function('k').prepare({ grid: 1, block: 1, args: [] });
  kA.launch(sA);
  b1.makeCurrent(); // B makes device 1's context current
  kA.launch(sA); // A must make device 0's current again, not trust a private mirror
  assert.equal(lastLaunchCtx(), a0.context, 'A launched in its own device context');
  facts['context'] = 'shared';

  // 2. A capture begun through A holds back frees made through B.
  const b0 = B.Device.get(0);
  const bufB = B.DeviceBuffer.alloc(b0, 4096);
  const cap = A.StreamGraphCapture.begin(sA, 'global');
  const before = frees();
  bufB.dispose();
  assert.equal(frees(), before, "B's free waits for A's capture");
  cap.end().dispose();
  assert.equal(frees(), before + 1n, "B's free ran when A's capture ended");
  facts['captureDeferral'] = 'shared';

  // 3. A host call in flight through A closes the gate for B.
  let ran = 0;
  const hf = A.HostFunction.create(() => void ran++, { label: 'from A' });
  const sB = b0.createStream();
  delay(sA.handle, 200);
  hf.launch(sA);
  assert.throws(
    () => sB.synchronize(),
    (e: unknown) => e instanceof B.HostCallbackError && e.code === 'ERR_HOST_CALL_PENDING' && /'from A' \(1 call\)/.test(e.message),
  );
  const bufB2 = B.DeviceBuffer.alloc(b0, 4096);
  const before2 = frees();
  bufB2.dispose();
  assert.equal(frees(), before2, "B's waiting free is deferred while A's host call is in flight");
  await sA.synchronizeAsync();
  await new Promise((r) => setImmediate(r));
  assert.equal(ran, 1);
  assert.equal(frees(), before2 + 1n, "B's deferred free ran once A's host call had run");
  sB.synchronize();
  facts['gate'] = 'shared';

  // 4. Objects of one copy are refused by the other, by name.
  assert.throws(
    () => A.DeviceBuffer.alloc(b0 as never, 16),
    (e: unknown) => e instanceof A.InvalidArgumentError && /another loaded copy of cudagraph/.test(e.message),
  );
  facts['mixing'] = 'refused';
  process.stdout.write(`${JSON.stringify(facts)}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
