/**
 * The child processes of wait.test.ts: each scenario ends its process in one way with a wait
 * pending or just ended (with the addon's completion thread, or with `CUDAGRAPH_NATIVE=0` polled
 * from the event loop), and prints `<scenario>: ok` when it got where it should. The parent runs
 * each with a timeout (a hang fails it) and checks the exit.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { Device } from '../../src/index.js';
import { loadStandIn } from '../support/stand-in-driver.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;

/** The stand-in's u64 named `name`, in this process's copy of it (`path`). */
function cell(path: string, name: string): BigUint64Array {
  return new BigUint64Array(koffi.view(koffi.load(path).symbol(name) as bigint, 8));
}

const scenario = isMainThread ? process.argv[2]! : (workerData as { scenario: string }).scenario;

if (!isMainThread) {
  // worker-body: hold the events, wait, tell the parent.
  const path = process.env['CUDA_DRIVER_PATH']!;
  cell(path, 'events_hold')[0] = 1n;
  void Device.get(0).createStream().synchronizeAsync();
  parentPort!.postMessage('waiting');
} else {
  loadStandIn(`wait-${scenario}`);
  const path = process.env['CUDA_DRIVER_PATH']!;
  const hold = cell(path, 'events_hold');
  const upto = cell(path, 'events_done_upto');
  const records = cell(path, 'event_records');
  const ok = () => process.stdout.write(`${scenario}: ok\n`);
  const s = Device.get(0).createStream();
  switch (scenario) {
    case 'exit-when-done': {
      hold[0] = 1n;
      const p = s.synchronizeAsync();
      setTimeout(() => (upto[0] = records[0]!), 20);
      void p.then(ok);
      break;
    }
    case 'exit-while-pending': {
      hold[0] = 1n;
      void s.synchronizeAsync();
      setTimeout(() => {
        ok();
        process.exit(0);
      }, 20);
      break;
    }
    case 'worker-terminated': {
      const w = new Worker(new URL(import.meta.url), { workerData: { scenario: 'worker-body' } });
      w.once('message', () => {
        void w.terminate().then(() => {
          // The worker's wait is gone with it; this process's own waits still work.
          hold[0] = 0n;
          upto[0] = records[0]!;
          return s.synchronizeAsync().then(ok);
        });
      });
      break;
    }
    case 'pending-keeps-alive': {
      hold[0] = 1n;
      const p = s.synchronizeAsync();
      // An unreferenced timer does not keep the process alive: only the pending wait can.
      setTimeout(() => (upto[0] = records[0]!), 100).unref();
      void p.then(ok);
      break;
    }
    default:
      process.stderr.write(`unknown scenario ${scenario}\n`);
      process.exit(2);
  }
}
