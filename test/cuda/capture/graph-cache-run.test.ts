/**
 * `GraphCache.run`, the cache's named scalars and its one stream, against the stand-in driver
 * built with copies that write down their order, kernel parameters and memory pools
 * (fixtures/stand-in-driver.c: STAND_IN_COPIES, STAND_IN_KERNEL_ARGS, STAND_IN_POOLS; every kernel
 * takes a pointer, an int and a float). Inputs are copied before the launch and outputs after it,
 * on the cache's stream; scalars are written into the graph before it launches, its other
 * arguments kept; every refusal comes before anything is enqueued; a cache's graph refuses
 * another stream. On the device: test/gpu/graph-cache.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, DisposedError, GraphCache, InvalidArgumentError, Module, arg, type Stream } from '../../../src/index.js';
import { loadStandIn } from '../../support/stand-in-driver.js';
import { refused as check } from '../../support/refused.js';

const lib = loadStandIn('graph-cache-run', ['STAND_IN_COPIES', 'STAND_IN_KERNEL_ARGS', 'STAND_IN_POOLS']);
const skip = lib === null && 'gcc is absent';
const orders = lib?.counter('orders');
const orderLog = lib?.u64s('order_log', 256);
const orderBytes = lib?.u64s('order_bytes', 256);
const argLog = lib?.u64s('exec_arg_log', 64 * 8);
const updates = lib?.counter('exec_updates');
const graphLaunches = lib?.counter('graph_launches');
lib?.u64s('param_sizes', 3).set([8n, 4n, 4n]);
lib?.u64s('param_count').set([3n]);

const NAMES: Record<number, string> = { 1: 'in', 2: 'out', 3: 'd2d', 4: 'launch', 5: 'patch' };

/** What reached the stream since `from`: each copy with its bytes, launches and exec updates. */
function since(from: number): string[] {
  return Array.from(orderLog!.subarray(from, orders!()), (w, i) => (w <= 3n ? `${NAMES[Number(w)]} ${orderBytes![from + i]}` : NAMES[Number(w)]!));
}

/** The int and the float argument of the last exec update. */
function lastScalars(): [number, number] {
  const i = updates!() - 1;
  const f = new DataView(new ArrayBuffer(4));
  f.setUint32(0, Number(argLog![i * 8 + 2]!), true);
  return [Number(BigInt.asIntN(32, argLog![i * 8 + 1]!)), f.getFloat32(0, true)];
}

/** A cache over one kernel `step(y, pos, scale)` with `pos` declared, and its static buffers. */
function setUp(options: Record<string, unknown> = {}) {
  const d = Device.get(0);
  const s = d.createStream();
  const step = Module.load(d, '// stand-in\n').function('step');
  const x = DeviceBuffer.alloc(d, 64);
  const y = DeviceBuffer.alloc(d, 64);
  const captured: number[] = [];
  const cache = new GraphCache({
    stream: s,
    buckets: [4, 8, 16],
    capture: (st: Stream, n: number) => {
      captured.push(n);
      step.launch(st, { grid: 1, block: n, args: [y, arg.i32(0), arg.f32(1.5)] });
    },
    scalars: { pos: { kernel: step, index: 1, type: 'i32' } },
    ...options,
  });
  return { d, s, x, y, cache, captured };
}

test('run: inputs copied before the launch, scalars written into the graph, outputs copied after, on the cache\'s stream', { skip }, () => {
  const { x, y, cache } = setUp();
  const host = new Float32Array(16);
  let mark = orders!();
  const r = cache.run(3, { inputs: [{ src: new Float32Array(3), dst: x }], outputs: [{ src: y, dst: host }], scalars: { pos: 7 } });
  assert.deepEqual([r.key, r.hit], [4, false]);
  assert.deepEqual(since(mark), ['in 12', 'patch', 'launch', 'out 64'], 'outputs: as many bytes as both sides hold');
  assert.deepEqual(lastScalars(), [7, 1.5], 'pos written, the float argument kept');
  mark = orders!();
  const again = cache.run(4, { inputs: [{ src: y, dst: x, byteLength: 16 }], outputs: [{ src: y, dst: x }, { src: y, dst: host, byteLength: 8 }], scalars: { pos: 8 } });
  assert.equal(again.hit, true);
  assert.deepEqual(since(mark), ['d2d 16', 'patch', 'launch', 'd2d 64', 'out 8']);
  assert.deepEqual(lastScalars(), [8, 1.5]);
  mark = orders!();
  cache.run(4);
  assert.deepEqual(since(mark), ['launch'], 'no scalars: the graph runs with the last values written');
  cache.dispose();
  check(() => cache.run(4), DisposedError, 'GraphCache.run', /GraphCache has been disposed/);
});

test('run refuses bad copies, scalars and keys before anything is enqueued or captured', { skip }, () => {
  const { d, x, y, cache, captured } = setUp({ overflow: 'eager' });
  const op = 'GraphCache.run';
  const gone = DeviceBuffer.alloc(d, 64);
  gone.dispose();
  const nothing = (call: () => unknown, cls: new (...a: never[]) => Error, pattern: RegExp): void => {
    const before = [orders!(), graphLaunches!(), updates!(), captured.length];
    check(call, cls, op, pattern);
    assert.deepEqual([orders!(), graphLaunches!(), updates!(), captured.length], before, `nothing enqueued or captured: ${pattern}`);
  };
  const ok = { src: new Float32Array(4), dst: x };
  nothing(() => cache.run(4, { input: [] } as never), InvalidArgumentError, /unknown option 'input'/);
  nothing(() => cache.run(4, { inputs: ok } as never), InvalidArgumentError, /inputs must be an array/);
  nothing(() => cache.run(4, { inputs: [ok, undefined] } as never), InvalidArgumentError, /inputs\[1\] must be an object/);
  nothing(() => cache.run(4, { inputs: [ok, , ok] } as never), InvalidArgumentError, /inputs\[1\] must be an object/);
  nothing(() => cache.run(4, { outputs: new Array(1) } as never), InvalidArgumentError, /outputs\[0\] must be an object/);
  nothing(() => cache.run(4, { inputs: [{ ...ok, to: x }] } as never), InvalidArgumentError, /unknown field of inputs\[0\] 'to'/);
  nothing(() => cache.run(4, { inputs: [{ src: 3, dst: x }] } as never), InvalidArgumentError, /inputs\[0\]\.src must be a TypedArray, DataView, Buffer or DeviceBuffer, got 3/);
  nothing(() => cache.run(4, { inputs: [{ src: ok.src, dst: new Float32Array(4) }] } as never), InvalidArgumentError, /inputs\[0\]\.dst must be a DeviceBuffer/);
  nothing(() => cache.run(4, { inputs: [ok, { src: ok.src, dst: gone }] }), DisposedError, /inputs\[1\]\.dst \(DeviceBuffer.*\) has been disposed/);
  nothing(() => cache.run(4, { inputs: [{ src: gone, dst: x }] }), DisposedError, /inputs\[0\]\.src/);
  nothing(() => cache.run(4, { inputs: [ok, { src: new Float32Array(32), dst: x }] }), InvalidArgumentError, /inputs\[1\] copies 128 bytes; its dst holds 64/);
  nothing(() => cache.run(4, { inputs: [{ ...ok, byteLength: 20 }] }), InvalidArgumentError, /inputs\[0\] copies 20 bytes; its src holds 16/);
  nothing(() => cache.run(4, { inputs: [{ ...ok, byteLength: 1.5 }] }), InvalidArgumentError, /inputs\[0\]\.byteLength must be an integer/);
  nothing(() => cache.run(4, { outputs: [{ src: new Float32Array(4), dst: y }] } as never), InvalidArgumentError, /outputs\[0\]\.src must be a DeviceBuffer/);
  nothing(() => cache.run(4, { outputs: [{ src: y, dst: DeviceBuffer.alloc(d, 32) }] }), InvalidArgumentError, /outputs\[0\] copies 64 bytes; its dst holds 32/);
  nothing(() => cache.run(4, { scalars: { position: 1 } }), InvalidArgumentError, /the cache declares no scalar 'position' \(declared: pos\)/);
  nothing(() => cache.run(4, { scalars: { pos: 2 ** 31 } }), InvalidArgumentError, /scalars\.pos must be an integer in -2147483648\.\.2147483647/);
  nothing(() => cache.run(4, { scalars: { pos: 1n } } as never), InvalidArgumentError, /scalars\.pos must be an integer/);
  nothing(() => cache.run(4, { scalars: 3 } as never), InvalidArgumentError, /scalars must be an object/);
  nothing(() => cache.run(20, { scalars: { pos: 1 } }), InvalidArgumentError, /key 20 is above the largest bucket and runs eagerly, with no graph to write scalars into/);
  nothing(() => cache.run(NaN, {}), InvalidArgumentError, /key must be a finite number/);
  // A valid first copy does not go out when a later part is refused.
  nothing(() => cache.run(8, { inputs: [ok], outputs: [{ src: y, dst: gone }] }), DisposedError, /outputs\[0\]\.dst/);
  assert.equal(cache.stats.graphs, 0);

  // Where a scalar goes is checked in the graph, once it is captured, still before anything is enqueued.
  const misplaced = (scalars: Record<string, unknown>, pattern: RegExp): void => {
    const { cache: c, x: cx } = setUp({ scalars });
    const before = [orders!(), graphLaunches!(), updates!()];
    check(() => c.run(4, { inputs: [{ src: new Float32Array(4), dst: cx }], scalars: { pos: 1 } }), InvalidArgumentError, op, pattern);
    assert.deepEqual([orders!(), graphLaunches!(), updates!()], before, `nothing enqueued: ${pattern}`);
    c.dispose();
  };
  misplaced({ pos: { kernel: 'attention', index: 1, type: 'i32' } }, /no kernel node runs 'attention' \(kernels in the graph: step\)/);
  misplaced({ pos: { kernel: 'step', index: 5, type: 'i32' } }, /runs 'step', which takes 3 arguments; there is no argument 5/);
  misplaced({ pos: [{ kernel: 'step', index: 1, type: 'i32' }, { kernel: 'step', index: 2, type: 'f64' }] }, /argument 2 of 'step' .* is 4 bytes; the value is 8/);
  cache.dispose();
});

test('the scalars declaration is checked when the cache is made', { skip }, () => {
  const d = Device.get(0);
  const s = d.createStream();
  const bad = (scalars: unknown, pattern: RegExp): void => {
    check(() => new GraphCache({ stream: s, capture: () => {}, scalars: scalars as never }), InvalidArgumentError, 'GraphCache', pattern);
  };
  bad(3, /scalars must be an object \{ name: \{ kernel, index, type \} \}/);
  bad({ pos: [] }, /scalars\.pos must name at least one place/);
  bad({ pos: { kernel: '', index: 1, type: 'i32' } }, /scalars\.pos\.kernel must be a non-empty string/);
  bad({ pos: { kernel: 'k', index: -1, type: 'i32' } }, /scalars\.pos\.index must be an integer/);
  bad({ pos: [{ kernel: 'k', index: 1, type: 'i32' }, { kernel: 'k', index: 1, type: 'int' }] }, /scalars\.pos\[1\]\.type must be one of 'i32'/);
  bad({ pos: { kernel: 'k', index: 1, type: 'i32', name: 'p' } }, /unknown field of scalars\.pos 'name'/);
  bad({ pos: 'k' }, /scalars\.pos must be \{ kernel, index, type \}/);
  bad({ pos: [{ kernel: 'k', index: 1, type: 'i32' }, , { kernel: 'k', index: 2, type: 'i32' }] }, /scalars\.pos\[1\] must be \{ kernel, index, type \}, got undefined/);
});

test('a cache\'s graph refuses a launch on another stream and changes nothing, with or without a pool', { skip }, () => {
  for (const pool of [true, false]) {
    const d = Device.get(0);
    const s = d.createStream();
    const step = Module.load(d, '// stand-in\n').function('step');
    const y = DeviceBuffer.alloc(d, 64);
    const cache = new GraphCache({ stream: s, pool, capture: (st: Stream) => step.launch(st, { grid: 1, block: 32, args: [y, arg.i32(0), arg.f32(1)] }) });
    const other = d.createStream();
    const r = cache.launch(4);
    const graph = r.graph!;
    assert.equal(graph.onlyStream, s);
    const before = [graphLaunches!(), graph.numReplays];
    check(() => graph.launch(other), InvalidArgumentError, 'CapturedGraph.launch', /launches on Stream.* only, not on Stream.*it belongs to a GraphCache/);
    assert.deepEqual([graphLaunches!(), graph.numReplays], before, 'no launch, no count');
    graph.launch();
    graph.launch(s);
    assert.equal(graph.numReplays, 3, 'its own stream, given or by default');
    cache.dispose();
  }
});
