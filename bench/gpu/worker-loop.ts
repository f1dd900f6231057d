/**
 * The worker side of the protocol for workers written in TypeScript (the cudagraph worker): the
 * same row logic as bench/gpu/py/common.py and bench/gpu/c/worker.c. An implementation supplies
 * the timed loops, each returning nanoseconds measured with `process.hrtime.bigint()`; the loops
 * must stay tight, since the loop is what is measured.
 */
import { createInterface } from 'node:readline';
import { launchWarmupReps, parseCommand, type RowCommand, type RowReply } from './protocol.js';

/** What a worker is, reported in its ready line. */
export interface WorkerInfo {
  readonly device?: string;
  readonly driverVersion?: number;
  readonly version?: string;
}

/** The timed operations of one implementation; `G` is its graph handle. */
export interface BenchImpl<G> {
  info(): WorkerInfo;
  /** n launches (`add2` when withArgs, else `empty`); stream idle before, no sync inside the span. */
  eager(n: number, withArgs: boolean): number;
  /** begin + n launches (captureNs), then end + instantiate (instantiateNs). */
  capture(n: number, withArgs: boolean): { captureNs: number; instantiateNs: number; graph: G };
  destroy(graph: G): void;
  /** A graph of n empty nodes, launched once and synchronised (untimed). */
  readyGraph(n: number): G;
  /**
   * One graph launch call on an idle stream: `launchNs`, timed from a second clock read after the
   * wait to the call's return, and `timerNs`, the span between the first and second reads (the
   * harness's own cost right after a wait; docs/benchmark.md).
   */
  launchOnce(graph: G): { launchNs: number; timerNs: number };
  /** `launches` back-to-back graph launches plus the final synchronisation. */
  replay(graph: G, launches: number): number;
  /** n launches of `empty` submitted by one call (cudagraph's `LaunchSequence`, built untimed); absent elsewhere. */
  eagerSequence?(n: number): number;
  /** begin + the same sequence on the capturing stream, then end + instantiate; absent elsewhere. */
  captureSequence?(n: number): { captureNs: number; instantiateNs: number; graph: G };
  /** n `add2` kernel nodes added to an empty graph, each after the one before (ns; destroyed untimed). */
  build?(n: number): number;
  /** The same chain added by one batch call (`graph.addKernelNodes`; its entries made before the span); absent elsewhere. */
  buildBatch?(n: number): number;
  /**
   * A chain of n `add2` kernel nodes, instantiated (untimed); then `reps` repetitions (after one
   * warm-up) of: `UPDATE_CALLS` in-place updates of the middle node's arguments, `UPDATE_CALLS`
   * disables and enables of it (ns per call), one instantiation of the whole graph (ns; the new
   * exec destroyed untimed).
   */
  updateRow?(n: number, reps: number): { update: number[]; toggle: number[]; reinstantiate: number[] };
  /**
   * One round trip on an idle stream: the graph's launch and the blocking wait for it (ns, timed
   * from a second clock read after the wait before, as `launchOnce`).
   */
  roundTrip(graph: G): number;
  /** The same with a wait that leaves the event loop free (`await`); absent where there is none. */
  roundTripAwait?(graph: G): Promise<number>;
}

/** The capture metrics of `reps` repetitions (after one warm-up) of `capture`, in µs per node. */
function captureSamples<G>(impl: BenchImpl<G>, n: number, reps: number, capture: () => { captureNs: number; instantiateNs: number; graph: G }): Record<string, number[]> {
  const out = { capture: [] as number[], instantiate: [] as number[], total: [] as number[] };
  for (let i = -1; i < reps; i++) {
    const r = capture();
    impl.destroy(r.graph);
    if (i < 0) continue;
    out.capture.push(r.captureNs / 1e3 / n);
    out.instantiate.push(r.instantiateNs / 1e3 / n);
    out.total.push((r.captureNs + r.instantiateNs) / 1e3 / n);
  }
  return out;
}

/** The optional method `name` of `impl`, bound, or an error naming the row this worker cannot run. */
function optional<G, K extends 'eagerSequence' | 'captureSequence' | 'build' | 'buildBatch' | 'updateRow'>(impl: BenchImpl<G>, name: K, row: string): NonNullable<BenchImpl<G>[K]> {
  const f = impl[name];
  if (typeof f !== 'function') throw new Error(`row ${row}: this implementation has no ${name === 'build' || name === 'buildBatch' || name === 'updateRow' ? 'explicit graph construction' : 'launch sequence'}`);
  return f.bind(impl) as NonNullable<BenchImpl<G>[K]>;
}

/**
 * Runs one command: untimed warm-up (one repetition; `launchWarmupReps(n)` for `launch` and the
 * round trips), then `reps` timed ones; samples in µs.
 */
export async function runRow<G>(impl: BenchImpl<G>, cmd: RowCommand): Promise<RowReply> {
  const { row, n, reps, launches } = cmd;
  const samples: Record<string, number[]> = {};
  switch (row) {
    case 'eager':
    case 'eager-args': {
      const withArgs = row === 'eager-args';
      impl.eager(n, withArgs);
      samples.eager = Array.from({ length: reps }, () => impl.eager(n, withArgs) / 1e3 / n);
      break;
    }
    case 'capture':
    case 'capture-args': {
      const withArgs = row === 'capture-args';
      Object.assign(samples, captureSamples(impl, n, reps, () => impl.capture(n, withArgs)));
      break;
    }
    case 'eager-seq': {
      const eager = optional(impl, 'eagerSequence', row);
      eager(n);
      samples.eager = Array.from({ length: reps }, () => eager(n) / 1e3 / n);
      break;
    }
    case 'capture-seq': {
      const capture = optional(impl, 'captureSequence', row);
      Object.assign(samples, captureSamples(impl, n, reps, () => capture(n)));
      break;
    }
    case 'build': {
      const build = optional(impl, 'build', row);
      build(n);
      samples.build = Array.from({ length: reps }, () => build(n) / 1e3 / n);
      break;
    }
    case 'build-batch': {
      const build = optional(impl, 'buildBatch', row);
      build(n);
      samples.build = Array.from({ length: reps }, () => build(n) / 1e3 / n);
      break;
    }
    case 'update': {
      const r = optional(impl, 'updateRow', row)(n, reps);
      samples.update = r.update.map((ns) => ns / 1e3);
      samples.toggle = r.toggle.map((ns) => ns / 1e3);
      samples.reinstantiate = r.reinstantiate.map((ns) => ns / 1e3);
      break;
    }
    case 'roundtrip':
    case 'roundtrip-await': {
      const graph = impl.readyGraph(n);
      try {
        const once = row === 'roundtrip' ? async (g: G) => impl.roundTrip(g) : optionalAwait(impl, row);
        for (let i = launchWarmupReps(n); i > 0; i--) await once(graph);
        const xs: number[] = [];
        for (let i = 0; i < reps; i++) xs.push((await once(graph)) / 1e3);
        samples[row === 'roundtrip' ? 'sync' : 'await'] = xs;
      } finally {
        impl.destroy(graph);
      }
      break;
    }
    case 'launch':
    case 'replay': {
      const graph = impl.readyGraph(n);
      try {
        if (row === 'launch') {
          for (let i = launchWarmupReps(n); i > 0; i--) impl.launchOnce(graph);
          const pairs = Array.from({ length: reps }, () => impl.launchOnce(graph));
          samples.launch = pairs.map((p) => p.launchNs / 1e3);
          samples.timer = pairs.map((p) => p.timerNs / 1e3);
        } else {
          impl.replay(graph, launches);
          samples.replay = Array.from({ length: reps }, () => impl.replay(graph, launches) / 1e3 / (launches * n));
        }
      } finally {
        impl.destroy(graph);
      }
      break;
    }
  }
  return { ok: true, row, n, samples };
}

/** `impl.roundTripAwait`, bound, or an error naming the row. */
function optionalAwait<G>(impl: BenchImpl<G>, row: string): (graph: G) => Promise<number> {
  const f = impl.roundTripAwait;
  if (typeof f !== 'function') throw new Error(`row ${row}: this implementation has no wait that leaves the event loop free`);
  return f.bind(impl);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/**
 * Serves the protocol on stdin/stdout: `make()` initialises (a failure is reported as
 * `{"ready":false}` and exit code 1), then each command is answered until `quit` or end of input.
 * A failing command is answered `{"ok":false,"error":…}` and the worker goes on.
 */
export async function serve<G>(implId: string, make: () => BenchImpl<G>): Promise<number> {
  const say = (obj: unknown): void => {
    process.stdout.write(JSON.stringify(obj) + '\n');
  };
  let impl: BenchImpl<G>;
  try {
    impl = make();
  } catch (e) {
    say({ ready: false, impl: implId, error: messageOf(e) });
    return 1;
  }
  say({ ready: true, impl: implId, ...impl.info() });
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    let reply: RowReply;
    try {
      const cmd = parseCommand(line);
      if (cmd === null) continue;
      if (cmd === 'quit') break;
      reply = await runRow(impl, cmd);
    } catch (e) {
      reply = { ok: false, error: messageOf(e) };
    }
    say(reply);
  }
  return 0;
}
