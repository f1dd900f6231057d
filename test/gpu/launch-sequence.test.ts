/**
 * `LaunchSequence` on the real driver, on both bindings (the Node-API addon's one-call loop and
 * koffi's JS loop) in one process: a sequence computes what the same launches made one at a time
 * compute, eagerly and captured (node count, read-back order and edges, replay), across two
 * streams, with a graph that outlives the sequence, and fails the way single launches fail
 * (which entry, what ran before it, capture errors with the caller's stack).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Device, DeviceBuffer, Module, Stream, StreamGraphCapture, CudaError, LaunchSequence, arg } from '../../src/index.js';
import type { GraphExec } from '../../src/index.js';
import { gpuSuite, fixturePtx, readU32, NVRTC_SOURCE, bindings, onBinding } from './gpu.js';


function zeroed(s: Stream, n: number): DeviceBuffer {
  const b = DeviceBuffer.alloc(s.device, 4 * n);
  b.memsetAsync(s, 0);
  s.synchronize();
  return b;
}

function reset(s: Stream, ...bufs: DeviceBuffer[]): void {
  for (const b of bufs) b.memsetAsync(s, 0);
  s.synchronize();
}

/** Every element of `buf` equals `v` (the first differing element in the message). */
function allEqual(buf: DeviceBuffer, v: number, what: string): void {
  const xs = readU32(buf);
  const bad = xs.findIndex((x) => x !== v);
  assert.equal(bad, -1, `${what}: element ${bad} is ${xs[bad]}, expected ${v}`);
}

/** The kernel names of a captured chain, following its edges from the node without predecessors. */
function chainOf(exec: GraphExec): string[] {
  const { nodes, edges } = exec.graph.readBack();
  const next = new Map(edges.map(([a, b]) => [a, b] as const));
  const targets = new Set(edges.map(([, b]) => b));
  const names: string[] = [];
  for (let at: number | undefined = nodes.findIndex((_, i) => !targets.has(i)); at !== undefined && at >= 0; at = next.get(at)) {
    names.push(nodes[at]!.kernel?.name ?? nodes[at]!.type);
  }
  return names;
}

const N = 1000;
const GRID = Math.ceil(N / 256);

gpuSuite('LaunchSequence: many prepared launches in one call', () => {
  test('a sequence computes what single launches compute, eagerly and captured (node count, order, replay), on both bindings', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, NVRTC_SOURCE);
    // ((x + 5) * 2 + 1 + 7) * 2 + 1: any other order gives another number.
    const step = (x: number): number => (((x + 5) * 2 + 1 + 7) * 2 + 1) >>> 0;
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using buf = zeroed(s, N);
        using add5 = m.function('add_u32').prepare({ grid: GRID, block: 256, args: [buf, arg.u32(5), arg.i32(N)] });
        using dbl = m.function('branch_a').prepare({ grid: GRID, block: 256, args: [buf, arg.i32(N)] });
        using add7 = m.function('add_u32').prepare({ grid: GRID, block: 256, args: [buf, arg.u32(7), arg.i32(N)] });
        const order = [add5, dbl, add7, dbl];
        for (const p of order) p.launch(s);
        s.synchronize();
        allEqual(buf, step(0), `${name}: single launches`);
        using seq = s.sequence(order);
        assert.equal(seq.native, hot !== null, name);
        seq.launch();
        s.synchronize();
        allEqual(buf, step(step(0)), `${name}: the sequence, eagerly`);

        reset(s, buf);
        let exec: GraphExec;
        {
          using cap = StreamGraphCapture.begin(s, 'global');
          seq.launch();
          exec = cap.end();
        }
        using e = exec;
        assert.equal(e.nodeCount, 4, name);
        assert.equal(e.graph.readBack().edges.length, 3, name);
        assert.deepEqual(chainOf(e), ['add_u32', 'branch_a', 'add_u32', 'branch_a'], name);
        allEqual(buf, 0, `${name}: captured, not run`);
        e.launch(s);
        s.synchronize();
        allEqual(buf, step(0), `${name}: one replay`);
        e.launch(s);
        s.synchronize();
        allEqual(buf, step(step(0)), `${name}: two replays`);
      });
    }
  });

  test('entries on two streams: eagerly, and captured with a fork and a join (two chains)', () => {
    const d = Device.get(0);
    const s = d.stream();
    using side = d.createStream();
    using ptx = Module.load(d, fixturePtx());
    using m = Module.compile(d, NVRTC_SOURCE);
    // The fork/join marker events exist before the capture.
    side.join(s);
    s.join(side);
    s.synchronize();
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using a = zeroed(s, N);
        using b = zeroed(s, N);
        using fillA = ptx.function('fill_u32').prepare({ grid: GRID, block: 256, args: [a, arg.u32(3), arg.i32(N)] });
        using fillB = ptx.function('fill_u32').prepare({ grid: GRID, block: 256, args: [b, arg.u32(10), arg.i32(N)] });
        using addA = m.function('add_u32').prepare({ grid: GRID, block: 256, args: [a, arg.u32(4), arg.i32(N)] });
        using dblB = m.function('branch_a').prepare({ grid: GRID, block: 256, args: [b, arg.i32(N)] });
        using seq = new LaunchSequence([
          { launch: fillA, stream: s },
          { launch: fillB, stream: side },
          { launch: addA, stream: s },
          { launch: dblB, stream: side },
        ]);
        seq.launch();
        s.synchronize();
        side.synchronize();
        allEqual(a, 7, `${name}: eager a`);
        allEqual(b, 21, `${name}: eager b`);

        reset(s, a, b);
        let exec: GraphExec;
        {
          using cap = StreamGraphCapture.begin(s, 'global');
          side.join(s);
          seq.launch();
          s.join(side);
          exec = cap.end();
        }
        using e = exec;
        assert.equal(e.nodeCount, 4, name);
        const g = e.graph.readBack();
        const label = (i: number): string => g.nodes[i]!.kernel?.name ?? g.nodes[i]!.type;
        assert.deepEqual(g.edges.map(([x, y]) => `${label(x)}->${label(y)}`).sort(), ['fill_u32->add_u32', 'fill_u32->branch_a'], name);
        allEqual(a, 0, `${name}: captured, not run`);
        e.launch(s);
        s.synchronize();
        allEqual(a, 7, `${name}: replayed a`);
        allEqual(b, 21, `${name}: replayed b`);
      });
    }
  });

  test('1000 entries: one call launches them all; captured, 1000 nodes that replay', () => {
    const d = Device.get(0);
    const s = d.stream();
    using ptx = Module.load(d, fixturePtx());
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using counter = zeroed(s, 1);
        using inc = ptx.function('add_one').prepare({ grid: 1, block: 32, args: [counter] });
        using seq = s.sequence(Array.from({ length: 1000 }, () => inc));
        seq.launch();
        s.synchronize();
        allEqual(counter, 1000, `${name}: eager`);
        let exec: GraphExec;
        {
          using cap = StreamGraphCapture.begin(s, 'global');
          seq.launch();
          exec = cap.end();
        }
        using e = exec;
        assert.equal(e.nodeCount, 1000, name);
        e.launch(s);
        e.launch(s);
        s.synchronize();
        allEqual(counter, 3000, `${name}: two replays`);
      });
    }
  });

  test('the graph keeps what a captured sequence used alive after the program disposed the sequence, its launches and buffers', () => {
    const d = Device.get(0);
    const s = d.stream();
    using ptx = Module.load(d, fixturePtx());
    using m = Module.compile(d, NVRTC_SOURCE);
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        // src is used by the sequence's launches only: nothing else registers it with the capture.
        const src = DeviceBuffer.alloc(d, 4 * N);
        using dst = zeroed(s, N);
        const fill = ptx.function('fill_u32').prepare({ grid: GRID, block: 256, args: [src, arg.u32(0x77), arg.i32(N)] });
        const sum = m.function('join_sum').prepare({ grid: GRID, block: 256, args: [src, src, dst, arg.i32(N)] });
        const seq = s.sequence([fill, sum]);
        let exec: GraphExec;
        {
          using cap = StreamGraphCapture.begin(s, 'global');
          seq.launch();
          exec = cap.end();
        }
        using e = exec;
        seq.dispose();
        fill.dispose();
        sum.dispose();
        src.dispose();
        // A fresh allocation must not reuse src's memory while the graph still holds it.
        using scratch = DeviceBuffer.alloc(d, 4 * N);
        scratch.memsetAsync(s, 0x11);
        e.launch(s);
        s.synchronize();
        allEqual(dst, 0xee, name);
      });
    }
  });

  test('a refused entry: a CudaError naming it; the entries before it ran, the rest did not; the same on both bindings', () => {
    const d = Device.get(0);
    const s = d.stream();
    using m = Module.compile(d, NVRTC_SOURCE);
    const messages: string[] = [];
    const codes: number[] = [];
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using buf = zeroed(s, N);
        using add5 = m.function('add_u32').prepare({ grid: GRID, block: 256, args: [buf, arg.u32(5), arg.i32(N)] });
        // 2048 threads a block is over the hardware limit (1024): the driver refuses the launch.
        using tooBig = m.function('branch_a').prepare({ grid: 1, block: 2048, args: [buf, arg.i32(N)] });
        using add7 = m.function('add_u32').prepare({ grid: GRID, block: 256, args: [buf, arg.u32(7), arg.i32(N)] });
        let single = 0;
        assert.throws(() => tooBig.launch(s), (e: unknown) => e instanceof CudaError && (single = e.code) > 0);
        using seq = s.sequence([add5, add5, tooBig, add7]);
        assert.throws(
          () => seq.launch(),
          (e: unknown) =>
            e instanceof CudaError &&
            e.code === single &&
            codes.push(e.code) > 0 &&
            messages.push(e.message) > 0 &&
            e.operation === 'LaunchSequence.launch' &&
            e.driverCall === 'cuLaunchKernel' &&
            e.details['index'] === 2 &&
            e.details['kernel'] === 'branch_a' &&
            e.details['submitted'] === 2 &&
            e.message.includes("entry 2 of 4 (kernel 'branch_a' on ") &&
            e.message.includes('failed: entries 0–1 were submitted; entry 3 was not'),
          name,
        );
        s.synchronize();
        allEqual(buf, 10, `${name}: entries 0 and 1 ran, entry 3 did not`);
      });
    }
    assert.ok(codes.every((c) => c === codes[0]), `the same code on every binding: ${codes.join(', ')}`);
    assert.ok(messages.every((x) => x === messages[0]), messages.join('\n---\n'));
  });

  test('an entry that breaks a capture is recorded with its index and the JS stack; the stream is usable again', () => {
    const d = Device.get(0);
    using ptx = Module.load(d, fixturePtx());
    const legacy = Stream.wrap(d, 0n);
    for (const [name, hot] of bindings()) {
      onBinding(hot, () => {
        using blocking = d.createStream({ nonBlocking: false });
        using buf = zeroed(blocking, N);
        using fill = ptx.function('fill_u32').prepare({ grid: GRID, block: 256, args: [buf, arg.u32(9), arg.i32(N)] });
        // Work on the legacy stream while a blocking stream captures would depend on the capture:
        // the driver refuses it (900–908).
        using seq = new LaunchSequence([
          { launch: fill, stream: blocking },
          { launch: fill, stream: legacy },
          { launch: fill, stream: blocking },
        ]);
        const cap = StreamGraphCapture.begin(blocking, 'global');
        try {
          assert.throws(
            () => seq.launch(),
            (e: unknown) => e instanceof CudaError && e.code >= 900 && e.code <= 908 && e.details['index'] === 1 && e.details['submitted'] === 1,
            name,
          );
          const first = cap.firstFailure;
          assert.equal(first?.operation, 'LaunchSequence.launch', name);
          assert.equal(first?.error.driverCall, 'cuLaunchKernel', name);
          assert.equal(first?.error.details['index'], 1, name);
          assert.ok((first?.error.stack ?? '').includes('launch-sequence.test'), `${name}: ${first?.error.stack}`);
        } finally {
          cap.dispose();
        }
        using again = blocking.sequence([fill]);
        again.launch();
        blocking.synchronize();
        allEqual(buf, 9, name);
      });
    }
  });
});
