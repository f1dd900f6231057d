/**
 * The current-context contract (src/cuda/core/context.ts): cudagraph trusts its mirror of the current
 * context by default; `'verify'` repairs a context switched behind its back, `'strict'` reports
 * it. Against the hazard stand-in driver with two devices, loaded as this process's driver, which
 * records the context current at each kernel launch; the "other code" is a direct call of the
 * stand-in's cuCtxSetCurrent, as another addon would make.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { CudaError, Device, InvalidArgumentError, Module, getContextCheck, setContextCheck } from '../../../src/index.js';
import { contextReport } from '../../../src/cuda/core/context.js';
import { buildHazardDriver } from '../../support/hazards/child.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const so = buildHazardDriver();
const skip = so === null && 'gcc is absent';

function setUp() {
  process.env['CUDA_DRIVER_PATH'] = so!;
  process.env['STAND_IN_DEVICES'] = '2';
  const lib = koffi.load(so!);
  const outsideSwitch = lib.func('int cuCtxSetCurrent(uint64_t ctx)');
  const lastCtx = new BigUint64Array(koffi.view(lib.symbol('last_launch_ctx') as bigint, 8));
  const d0 = Device.get(0);
  const d1 = Device.get(1);
  const s0 = d0.createStream();
  const k = Module.load(d0, '// stand-in\n').function('k').prepare({ grid: 1, block: 1, args: [] });
  return { d0, d1, s0, k, outside: (ctx: bigint) => outsideSwitch(ctx), lastCtx: () => lastCtx[0]! };
}

test('context checks: trust (the default) assumes no outside switch, verify repairs one, strict reports it', { skip }, () => {
  const { d0, d1, s0, k, outside, lastCtx } = setUp();
  assert.equal(getContextCheck(), 'trust');
  k.launch(s0);
  assert.equal(lastCtx(), d0.context);

  // trust: an outside switch goes unnoticed, as the contract says (docs/driver.md).
  outside(d1.context);
  assert.equal(contextReport('test').ok, false, 'the report sees the broken contract');
  k.launch(s0);
  assert.equal(lastCtx(), d1.context, 'trusting the mirror, the launch ran in the switched context');

  // verify: every call asks the driver and repairs.
  setContextCheck('verify');
  outside(d1.context);
  k.launch(s0);
  assert.equal(lastCtx(), d0.context);
  outside(0n);
  k.launch(s0);
  assert.equal(lastCtx(), d0.context);

  // strict: the switch is reported, naming both contexts; the next call proceeds.
  setContextCheck('strict');
  k.launch(s0);
  outside(d1.context);
  assert.throws(
    () => k.launch(s0),
    (e: unknown) =>
      e instanceof CudaError &&
      e.code === 201 &&
      e.message.startsWith('PreparedLaunch.launch: ') &&
      e.message.includes(`0x${d0.context.toString(16)}`) &&
      e.message.includes(`context 0x${d1.context.toString(16)}`),
  );
  k.launch(s0);
  assert.equal(lastCtx(), d0.context);
  assert.equal(contextReport('test').ok, true);

  setContextCheck('trust');
  assert.throws(() => setContextCheck('sometimes' as never), (e: unknown) => e instanceof InvalidArgumentError && /^setContextCheck: mode must be one of/.test(e.message));
  assert.equal(getContextCheck(), 'trust', 'a refused mode changes nothing');
});
