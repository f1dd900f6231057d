/**
 * `Kernel` against the stand-in driver (fixtures/stand-in-driver.c with parameter sizes): what a
 * kernel of a disposed module still answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DisposedError, Module, arg } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused } from '../../support/refused.js';

const lib = loadStandIn('kernel', ['STAND_IN_PARAM_INFO']);
const skip = lib === null && 'gcc is absent';

test('a kernel of a disposed module answers its getters (paramSizes: known, or null) and refuses launches', { skip }, () => {
  const count = lib!.u64s('param_count');
  const sizes = lib!.u64s('param_sizes', 8);
  count[0] = 2n;
  sizes[0] = 8n;
  sizes[1] = 4n;
  const d = Device.get(0);
  const m = Module.load(d, '// stand-in: any text\n');
  const read = m.function('a');
  const unread = m.function('b');
  assert.deepEqual(read.paramSizes, [8, 4]);
  m.dispose();
  assert.deepEqual(read.paramSizes, [8, 4], 'read before the dispose: kept');
  assert.equal(unread.paramSizes, null, 'never read: the driver can no longer say');
  assert.equal(String(unread), 'Kernel(b)');
  assert.equal(unread.name, 'b');
  refused(() => unread.handle, DisposedError, 'Kernel.handle');
  refused(() => unread.launch(d.stream(), { grid: 1, block: 1, args: [arg.u64(0), arg.i32(0)] }), DisposedError, 'Kernel.launch');
  refused(() => unread.prepare({ grid: 1, block: 1, args: [] }), DisposedError, 'Kernel.prepare');
});
