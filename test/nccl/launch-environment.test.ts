/**
 * `parseLaunchEnvironment`: the variables torchrun sets, read and checked; every refusal a
 * `LaunchEnvironmentError` naming the variable and the value it held.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseLaunchEnvironment, LaunchEnvironmentError, InvalidArgumentError, CudagraphError } from '../../src/index.js';

const GOOD = { RANK: '3', WORLD_SIZE: '8', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: 'node0.cluster', MASTER_PORT: '29500' };

test('a torchrun environment: every variable read as a number or a host', () => {
  assert.deepEqual(parseLaunchEnvironment(GOOD), { rank: 3, worldSize: 8, localRank: 1, localWorldSize: 2, masterAddr: 'node0.cluster', masterPort: 29500, agentStore: false });
  assert.equal(parseLaunchEnvironment({ ...GOOD, TORCHELASTIC_USE_AGENT_STORE: 'True' }).agentStore, true);
  assert.equal(parseLaunchEnvironment({ ...GOOD, TORCHELASTIC_USE_AGENT_STORE: 'False' }).agentStore, false);
  const { LOCAL_WORLD_SIZE: _, ...noLocalSize } = GOOD;
  assert.equal(parseLaunchEnvironment(noLocalSize).localWorldSize, null);
  assert.equal(parseLaunchEnvironment({ ...GOOD, MASTER_ADDR: 'fe80::1' }).masterAddr, 'fe80::1');
  assert.equal(parseLaunchEnvironment({ ...GOOD, RANK: '007' }).rank, 7);
});

test('process.env is the default', () => {
  const saved = { ...process.env };
  try {
    Object.assign(process.env, GOOD);
    assert.equal(parseLaunchEnvironment().rank, 3);
  } finally {
    for (const k of Object.keys(GOOD)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
});

test('each refusal names the variable and its value', () => {
  const cases: Array<[Record<string, string | undefined>, string, string | undefined, RegExp]> = [
    [{ RANK: undefined }, 'RANK', undefined, /RANK is not set \(a launcher such as torchrun sets/],
    [{ WORLD_SIZE: undefined }, 'WORLD_SIZE', undefined, /WORLD_SIZE is not set/],
    [{ LOCAL_RANK: undefined }, 'LOCAL_RANK', undefined, /LOCAL_RANK is not set/],
    [{ MASTER_ADDR: undefined }, 'MASTER_ADDR', undefined, /MASTER_ADDR is not set/],
    [{ MASTER_PORT: undefined }, 'MASTER_PORT', undefined, /MASTER_PORT is not set/],
    [{ RANK: '-1' }, 'RANK', '-1', /RANK must be a whole number ≥ 0, got '-1' \(negative\)/],
    [{ RANK: '1.5' }, 'RANK', '1.5', /got '1\.5' \(not a whole number\)/],
    [{ RANK: 'one' }, 'RANK', 'one', /got 'one' \(not a whole number\)/],
    [{ RANK: '' }, 'RANK', '', /got '' \(not a whole number\)/],
    [{ RANK: ' 1' }, 'RANK', ' 1', /got ' 1'/],
    [{ RANK: '1e3' }, 'RANK', '1e3', /not a whole number/],
    [{ RANK: '0x10' }, 'RANK', '0x10', /not a whole number/],
    [{ RANK: '8' }, 'RANK', '8', /RANK must be below WORLD_SIZE \(8\), got '8'/],
    [{ RANK: '99999999999999999999' }, 'RANK', '99999999999999999999', /RANK must be a whole number ≥ 0/],
    [{ WORLD_SIZE: '0' }, 'WORLD_SIZE', '0', /WORLD_SIZE must be a whole number ≥ 1, got '0'/],
    [{ WORLD_SIZE: 'NaN' }, 'WORLD_SIZE', 'NaN', /not a whole number/],
    [{ WORLD_SIZE: '-4' }, 'WORLD_SIZE', '-4', /\(negative\)/],
    [{ LOCAL_RANK: '2' }, 'LOCAL_RANK', '2', /LOCAL_RANK must be below LOCAL_WORLD_SIZE \(2\), got '2'/],
    [{ LOCAL_RANK: '-1' }, 'LOCAL_RANK', '-1', /negative/],
    [{ LOCAL_WORLD_SIZE: undefined, LOCAL_RANK: '8' }, 'LOCAL_RANK', '8', /LOCAL_RANK must be below WORLD_SIZE \(8\)/],
    [{ LOCAL_WORLD_SIZE: '0' }, 'LOCAL_WORLD_SIZE', '0', /LOCAL_WORLD_SIZE must be a whole number ≥ 1/],
    [{ LOCAL_WORLD_SIZE: '9' }, 'LOCAL_WORLD_SIZE', '9', /must not exceed WORLD_SIZE \(8\)/],
    [{ MASTER_ADDR: '' }, 'MASTER_ADDR', '', /MASTER_ADDR must be a host name or IP address without spaces, got ''/],
    [{ MASTER_ADDR: 'node 0' }, 'MASTER_ADDR', 'node 0', /without spaces, got 'node 0'/],
    [{ MASTER_PORT: '0' }, 'MASTER_PORT', '0', /MASTER_PORT must be a port number in 1\.\.65535, got '0'/],
    [{ MASTER_PORT: '65536' }, 'MASTER_PORT', '65536', /got '65536'/],
    [{ MASTER_PORT: 'http' }, 'MASTER_PORT', 'http', /not a whole number/],
  ];
  for (const [change, variable, value, message] of cases) {
    const env = { ...GOOD, ...change };
    for (const k of Object.keys(change)) if (change[k] === undefined) delete (env as Record<string, unknown>)[k];
    assert.throws(
      () => parseLaunchEnvironment(env),
      (e: unknown) =>
        e instanceof LaunchEnvironmentError &&
        e instanceof CudagraphError &&
        e.code === 'ERR_LAUNCH_ENVIRONMENT' &&
        e.variable === variable &&
        e.value === value &&
        e.message.startsWith('parseLaunchEnvironment: ') &&
        message.test(e.message),
      JSON.stringify(change),
    );
  }
  assert.throws(() => parseLaunchEnvironment(null as never), (e: unknown) => e instanceof InvalidArgumentError && e.parameter === 'env');
  assert.throws(() => parseLaunchEnvironment('RANK=0' as never), InvalidArgumentError);
});

test('property: any consistent environment reads back as its numbers; RANK ≥ WORLD_SIZE is always refused naming RANK', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 100_000 }).chain((worldSize) =>
        fc.record({
          worldSize: fc.constant(worldSize),
          rank: fc.integer({ min: 0, max: worldSize - 1 }),
          localWorldSize: fc.integer({ min: 1, max: worldSize }),
          port: fc.integer({ min: 1, max: 65535 }),
          wrongRank: fc.integer({ min: worldSize, max: 2 ** 40 }),
        }),
      ),
      fc.nat(),
      ({ worldSize, rank, localWorldSize, port, wrongRank }, seed) => {
        const localRank = seed % localWorldSize;
        const env = { RANK: `${rank}`, WORLD_SIZE: `${worldSize}`, LOCAL_RANK: `${localRank}`, LOCAL_WORLD_SIZE: `${localWorldSize}`, MASTER_ADDR: '10.0.0.1', MASTER_PORT: `${port}` };
        assert.deepEqual(parseLaunchEnvironment(env), { rank, worldSize, localRank, localWorldSize, masterAddr: '10.0.0.1', masterPort: port, agentStore: false });
        assert.throws(() => parseLaunchEnvironment({ ...env, RANK: `${wrongRank}` }), (e: unknown) => e instanceof LaunchEnvironmentError && e.variable === 'RANK' && e.value === `${wrongRank}`);
      },
    ),
  );
});

test('property: a value that is not plain decimal digits is refused naming the variable, whatever it is', () => {
  fc.assert(
    fc.property(fc.constantFrom('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MASTER_PORT'), fc.string({ maxLength: 12 }).filter((s) => !/^[0-9]+$/.test(s)), (variable, value) => {
      assert.throws(() => parseLaunchEnvironment({ ...GOOD, [variable]: value }), (e: unknown) => e instanceof LaunchEnvironmentError && e.variable === variable && e.value === value);
    }),
  );
});
