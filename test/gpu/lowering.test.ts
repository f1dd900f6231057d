/**
 * Lowering on the device: a pipeline built with GraphBuilder (upload → two kernels in parallel →
 * a join kernel → download), lowered with explicit node APIs and launched, computes exactly what
 * the same work run eagerly computes, and reads back as the graph it came from. Host nodes call JS
 * without deadlocking the awaitable wait; a synchronous wait is refused instead of hanging; a
 * callback that throws is reported. The host-function scenarios run in child processes with a
 * timeout, so a deadlock fails a test instead of hanging the run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  Device,
  DeviceBuffer,
  GraphBuilder,
  HostCallbackError,
  HostFunction,
  Module,
  PinnedHostBuffer,
  StreamGraphCapture,
  arg,
  lowerGraph,
} from '../../src/index.js';
import { gpuSuite, gpuUnavailable } from './gpu.js';
import { PIPELINE_SOURCE, PipelineRig, pipeline, sameAsSource, N, GRID } from './lowering-pipeline.js';

// ── host-function scenarios, each run in a child process ─────────────────────────────────────

const self = fileURLToPath(import.meta.url);
const SCENARIOS: Record<string, () => Promise<unknown>> = {
  /** A host node fills the input before the upload, every launch; the awaitable wait lets it run. */
  async 'host node feeds the upload'() {
    const d = Device.get(0);
    const s = d.createStream();
    const m = Module.compile(d, PIPELINE_SOURCE);
    const b = new GraphBuilder();
    const hin = b.hostBuffer('in', 4 * N);
    const hout = b.hostBuffer('out', 4 * N);
    const x = b.buffer('x', 4 * N);
    const y = b.buffer('y', 4 * N);
    let launch = 0;
    const pin = PinnedHostBuffer.alloc(d, 4 * N);
    const pout = PinnedHostBuffer.alloc(d, 4 * N);
    b.host('fill', () => pin.asFloat32().fill(++launch), { writes: [hin] });
    b.memcpy({ src: hin, dst: x });
    b.kernel('scale', { grid: GRID, block: 256, args: [x, y, b.f32(3), b.i32(N)], reads: [x], writes: [y] });
    b.memcpy({ src: y, dst: hout });
    const built = b.build();
    const xb = DeviceBuffer.alloc(d, 4 * N);
    const yb = DeviceBuffer.alloc(d, 4 * N);
    const lowered = lowerGraph(built.graph, { modules: m, nodes: built.bindings, buffers: { x: xb, y: yb }, hostBuffers: { in: pin, out: pout } });
    const exec = lowered.instantiate();
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      exec.launch(s);
      await s.synchronizeAsync();
      seen.push(pout.asFloat32()[N - 1]!);
    }
    return { seen, launches: launch };
  },

  /** A synchronous wait while a JS host call is pending is refused at once; the awaitable one completes. */
  async 'synchronous wait refused while a host call is pending'() {
    const d = Device.get(0);
    const s = d.createStream();
    let calls = 0;
    const hf = HostFunction.create(() => void calls++, { label: 'tick' });
    const out: Record<string, unknown> = {};
    // Eager: cuLaunchHostFunc.
    hf.launch(s);
    for (const [name, wait] of [
      ['stream', () => s.synchronize()],
      ['event', () => s.record().synchronize()],
      ['device', () => d.synchronize()],
    ] as const) {
      try {
        wait();
        out[name] = 'returned';
      } catch (e) {
        out[name] = e instanceof HostCallbackError ? e.code : String(e);
      }
    }
    await s.synchronizeAsync();
    out['callsAfterAwait'] = calls;
    s.synchronize(); // nothing pending now: allowed
    // Captured: a graph with the host function, replayed.
    const cap = StreamGraphCapture.begin(s);
    hf.launch(s);
    hf.launch(s);
    const exec = cap.end();
    exec.launch();
    try {
      s.synchronize();
      out['graph'] = 'returned';
    } catch (e) {
      out['graph'] = e instanceof HostCallbackError ? e.code : String(e);
    }
    await s.synchronizeAsync();
    out['callsAfterGraph'] = calls;
    return out;
  },

  /** A callback that throws: reported by the awaitable wait (cause kept), once; later work still ran. */
  async 'a throwing callback is reported'() {
    const d = Device.get(0);
    const s = d.createStream();
    const m = Module.compile(d, PIPELINE_SOURCE);
    const counter = DeviceBuffer.alloc(d, 4);
    counter.memsetAsync(s, 0);
    await s.synchronizeAsync();
    let n = 0;
    const b = new GraphBuilder();
    const c = b.buffer('c', 4);
    const h = b.host('flaky', () => {
      if (++n === 2) throw new RangeError('flaky failed on call 2');
    });
    const k = b.kernel('bump', { grid: 1, block: 32, args: [c] });
    b.dep(h, k);
    const built = b.build();
    const lowered = lowerGraph(built.graph, { modules: m, nodes: built.bindings, buffers: { c: counter } });
    const exec = lowered.instantiate();
    exec.launch(s);
    exec.launch(s);
    exec.launch(s);
    let reported: unknown = null;
    try {
      await s.synchronizeAsync();
    } catch (e) {
      reported = e;
    }
    const again = await s.synchronizeAsync().then(
      () => 'ok',
      (e: unknown) => String(e),
    );
    const host = new Uint32Array(1);
    counter.copyToHost(host);
    const r = reported as HostCallbackError | null;
    return {
      code: r?.code ?? null,
      causeIsOriginal: r !== null && r.cause instanceof RangeError && (r.cause as Error).message === 'flaky failed on call 2',
      message: r?.message ?? null,
      again,
      calls: n,
      kernelRuns: host[0],
    };
  },
};

const childCase = process.argv.indexOf('--host-child');
if (childCase >= 0) {
  const name = process.argv[childCase + 1]!;
  SCENARIOS[name]!().then(
    (r) => {
      console.log(`RESULT ${JSON.stringify(r)}`);
      process.exit(0);
    },
    (e: unknown) => {
      console.log(`ERROR ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      process.exit(1);
    },
  );
}

function runChild(name: string): Record<string, unknown> {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [self, '--host-child', name], { encoding: 'utf8', timeout: 15_000 });
  const ms = Date.now() - t0;
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  assert.ok(r.signal === null, `'${name}' did not finish within 15 s (${r.signal}, ${ms} ms): a deadlock? ${r.stdout}${r.stderr}`);
  assert.ok(line !== undefined, `'${name}' gave no result (status ${r.status}): ${r.stdout}${r.stderr}`);
  return JSON.parse(line.slice(7)) as Record<string, unknown>;
}

if (childCase < 0) {
  gpuSuite('lowering a ComputeGraph to a CUDA graph', () => {
    test('the pipeline lowered and launched computes what the same work run eagerly computes; it reads back as its source', () => {
      const d = Device.get(0);
      const s = d.createStream();
      using rig = new PipelineRig(d);
      const { module: m, pin, pout, x, y1, y2, z } = rig;
      const built = pipeline(1.5, -2);
      using lowered = rig.lower(1.5, -2);
      using exec = lowered.instantiate();
      // Eager: the same kernels on the same data.
      const eager = (input: Float32Array): Float32Array => {
        const out = new Float32Array(N);
        x.copyFromHost(input);
        m.function('scale').launch(s, { grid: GRID, block: 256, args: [x, y1, arg.f32(1.5), arg.i32(N)] });
        m.function('offset').launch(s, { grid: GRID, block: 256, args: [x, y2, arg.f32(-2), arg.i32(N)] });
        m.function('combine').launch(s, { grid: GRID, block: 256, args: [y1, y2, z, arg.i32(N)] });
        s.synchronize();
        z.copyToHost(out);
        return out;
      };
      for (let r = 0; r < 3; r++) {
        const input = Float32Array.from({ length: N }, (_, i) => Math.sin(i * 0.01 + r) * 100);
        pin.asFloat32().set(input);
        exec.launch(s);
        s.synchronize();
        const got = Float32Array.from(pout.asFloat32());
        const want = eager(input);
        assert.deepEqual(got, want, `launch ${r}: out[1] = ${got[1]}, eager ${want[1]}`);
        const f = Math.fround;
        assert.equal(got[7], f(f(f(f(1.5) * input[7]!) * f(input[7]! - 2)) + 0.5), 'the floats JS computes with the same roundings');
      }
      const back = lowered.graph.toComputeGraph();
      assert.equal(back.nodeCount(), built.graph.nodeCount());
      assert.equal(back.edgeCount(), built.graph.edgeCount());
      assert.deepEqual(sameAsSource(built.graph, back, lowered.modelIds()), []);
      const kinds = back.nodes().map((n) => n.kind).sort();
      assert.deepEqual(kinds, ['kernel', 'kernel', 'kernel', 'memcpy', 'memcpy']);
    });

    test('every node kind lowers (kernel, memcpy each way, memset of 1/2/4-byte elements, host, empty), and reads back as its source', () => {
      const d = Device.get(0);
      using m = Module.compile(d, PIPELINE_SOURCE);
      const b = new GraphBuilder();
      const h = b.hostBuffer('h', 1024);
      const u = b.buffer('u', 1024);
      const v = b.buffer('v', 1024);
      const c = b.buffer('c', 4);
      const up = b.memcpy({ src: h, dst: u });
      const f1 = b.memset(v, 7, { sizeBytes: 256 });
      const f2 = b.memset(v, 0x1234, { elementSize: 2, offset: 256, sizeBytes: 256 });
      const f4 = b.memset(v, 0xdeadbeef, { elementSize: 4, offset: 512, sizeBytes: 512 });
      const join = b.empty('join');
      b.fanIn([up, f1, f2, f4], join);
      const dd = b.memcpy({ src: u, dst: v, sizeBytes: 128 });
      b.dep(join, dd);
      b.kernel('bump', { grid: 2, block: 64, sharedMem: 64, args: [c] });
      b.host('note', () => {});
      b.memcpy({ src: v, dst: h, sizeBytes: 1024 });
      const built = b.build();
      using pin = PinnedHostBuffer.alloc(d, 1024);
      using ub = DeviceBuffer.alloc(d, 1024);
      using vb = DeviceBuffer.alloc(d, 1024);
      using cb = DeviceBuffer.alloc(d, 4);
      using lowered = lowerGraph(built.graph, { modules: [m], nodes: built.bindings, buffers: { u: ub, v: vb, c: cb }, hostBuffers: { h: pin } });
      const back = lowered.graph.toComputeGraph();
      assert.deepEqual(sameAsSource(built.graph, back, lowered.modelIds()), []);
      assert.equal(back.edgeCount(), built.graph.edgeCount(), 'the driver graph has exactly the model edges');
      const types = lowered.graph.readBack().nodes.map((n) => n.type).sort();
      assert.deepEqual(types, ['empty', 'hostCallback', 'kernel', 'memcpy', 'memcpy', 'memcpy', 'memset', 'memset', 'memset']);
    });

    test('lowering refuses what it cannot bind, naming the node, and leaves nothing behind', () => {
      const d = Device.get(0);
      using m = Module.compile(d, PIPELINE_SOURCE);
      const built = pipeline(1, 1);
      assert.throws(() => lowerGraph(built.graph, { modules: m, nodes: built.bindings }), /lowerGraph: node 0 \(memcpy 'upload'\): host buffer 'in' is not bound/);
      const b = new GraphBuilder();
      b.kernel('nope', { grid: 1, block: 1 });
      const g2 = b.build();
      assert.throws(() => lowerGraph(g2.graph, { modules: m, nodes: g2.bindings }), /node 0 \(kernel 'nope'\): no kernel named 'nope'/);
      const b3 = new GraphBuilder();
      const c = b3.buffer('c', 4);
      b3.kernel('bump', { grid: 1, block: 1, args: [c, b3.i32(1)] });
      const g3 = b3.build();
      using cb = DeviceBuffer.alloc(d, 4);
      assert.throws(() => lowerGraph(g3.graph, { modules: m, nodes: g3.bindings, buffers: { c: cb } }), /node 0 \(kernel 'bump'\): kernel 'bump' takes 1 parameter/);
      const b4 = new GraphBuilder();
      b4.host('unbound');
      assert.throws(() => lowerGraph(b4.build().graph, { modules: m }), /no callback for label 'unbound'/);
    });

    test('host node output feeds the upload on every launch; the awaitable wait lets JS host calls run', () => {
      const r = runChild('host node feeds the upload');
      assert.deepEqual(r, { seen: [3, 6, 9, 12, 15], launches: 5 });
    });

    test('a synchronous wait with JS host calls pending is refused at once instead of deadlocking', () => {
      const r = runChild('synchronous wait refused while a host call is pending');
      assert.deepEqual(r, {
        stream: 'ERR_HOST_CALL_PENDING',
        event: 'ERR_HOST_CALL_PENDING',
        device: 'ERR_HOST_CALL_PENDING',
        callsAfterAwait: 1,
        graph: 'ERR_HOST_CALL_PENDING',
        callsAfterGraph: 3,
      });
    });

    test('a host callback that throws is reported once by the awaitable wait, with its error as cause; the GPU work after it ran', () => {
      const r = runChild('a throwing callback is reported');
      assert.equal(r['code'], 'ERR_HOST_CALLBACK_FAILED');
      assert.equal(r['causeIsOriginal'], true);
      assert.match(String(r['message']), /the host function 'flaky' threw while the GPU ran it: flaky failed on call 2/);
      assert.equal(r['again'], 'ok');
      assert.equal(r['calls'], 3);
      assert.equal(r['kernelRuns'], 3);
    });
  });
} else if (gpuUnavailable !== null) {
  console.log(`ERROR ${gpuUnavailable}`);
}
