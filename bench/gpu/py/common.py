"""The stdin/stdout protocol shared by the Python benchmark workers (CuPy, PyTorch).

A worker initialises once, prints one JSON line ({"ready": true, ...} or {"ready": false,
"error": ...}), then answers `row <name> <n> <reps> [<launches>]` with one JSON line of samples
until `quit` or end of input. bench/gpu/c/worker.c and bench/gpu/worker-loop.ts speak the same
protocol; docs/benchmark.md defines each row. An implementation supplies the timed loops (they
must stay tight: the loop is what is measured) and this module does the rest:

  eager(n, with_args) -> ns            n launches, stream idle before, no sync inside the span
  capture(n, with_args) -> (ns_capture, ns_instantiate, graph)
  destroy(graph)
  sync()                               synchronise the worker's stream
  launcher(graph) -> callable          launches the graph when called with no argument; a bound
                                       method, so the timed call adds no Python frame
"""
import asyncio
import json
import sys
from time import perf_counter_ns



def launch_warmup_reps(n):
    """Untimed repetitions before a `launch` row's timed ones, as in every worker
    (bench/gpu/protocol.ts, launchWarmupReps, says why)."""
    return min(1000, max(1, -(-10000 // n)))


def _ready_graph(impl, n):
    """A graph of n empty nodes, launched once and synced (untimed)."""
    graph = impl.capture(n, False)[2]
    impl.launcher(graph)()
    impl.sync()
    return graph


def _launch_once(sync, go):
    """One graph launch call on an idle stream, until the call returns: (launch, timer) in ns.
    The clock is read once right after the wait and the span starts at a second read, as in every
    worker: `timer` is the first span, the harness's own cost after a wait (docs/benchmark.md)."""
    sync()
    ta = perf_counter_ns()
    t0 = perf_counter_ns()
    go()
    t1 = perf_counter_ns()
    sync()
    return t1 - t0, t0 - ta


def _replay(sync, go, launches):
    """`launches` back-to-back graph launches plus the final sync."""
    sync()
    t0 = perf_counter_ns()
    for _ in range(launches):
        go()
    sync()
    return perf_counter_ns() - t0


def _round_trip(sync, go):
    """One launch and the blocking wait for it, on an idle stream (ns)."""
    sync()
    perf_counter_ns()
    t0 = perf_counter_ns()
    go()
    sync()
    return perf_counter_ns() - t0


async def _round_trips_awaited(sync, go, warmup, reps):
    """Round trips whose wait leaves the asyncio event loop free, as a Python program waits for a
    blocking call: the synchronisation on the loop's default thread pool (ns each)."""
    loop = asyncio.get_running_loop()
    spans = []
    for i in range(-warmup, reps):
        sync()
        perf_counter_ns()
        t0 = perf_counter_ns()
        go()
        await loop.run_in_executor(None, sync)
        t1 = perf_counter_ns()
        if i >= 0:
            spans.append(t1 - t0)
    return spans


def _row(impl, row, n, reps, launches):
    """Runs one row: an untimed warm-up repetition, then `reps` timed ones. Samples in µs."""
    if row in ("eager", "eager-args"):
        with_args = row == "eager-args"
        impl.eager(n, with_args)
        return {"eager": [impl.eager(n, with_args) / 1e3 / n for _ in range(reps)]}
    if row in ("capture", "capture-args"):
        with_args = row == "capture-args"
        capture, instantiate, total = [], [], []
        for i in range(-1, reps):
            t_cap, t_inst, graph = impl.capture(n, with_args)
            impl.destroy(graph)
            # Drop the last reference now: a library that frees a graph with its object (CuPy) would
            # otherwise keep it alive through the next capture, which C, cudagraph and PyTorch do not
            # (the release order moves the next capture's time by a quarter: docs/benchmark.md).
            del graph
            if i >= 0:
                capture.append(t_cap / 1e3 / n)
                instantiate.append(t_inst / 1e3 / n)
                total.append((t_cap + t_inst) / 1e3 / n)
        return {"capture": capture, "instantiate": instantiate, "total": total}
    if row in ("launch", "replay"):
        graph = _ready_graph(impl, n)
        sync, go = impl.sync, impl.launcher(graph)
        try:
            if row == "launch":
                for _ in range(launch_warmup_reps(n)):
                    _launch_once(sync, go)
                pairs = [_launch_once(sync, go) for _ in range(reps)]
                return {"launch": [p[0] / 1e3 for p in pairs], "timer": [p[1] / 1e3 for p in pairs]}
            _replay(sync, go, launches)
            return {"replay": [_replay(sync, go, launches) / 1e3 / (launches * n) for _ in range(reps)]}
        finally:
            impl.destroy(graph)
    if row in ("roundtrip", "roundtrip-await"):
        graph = _ready_graph(impl, n)
        sync, go = impl.sync, impl.launcher(graph)
        try:
            if row == "roundtrip":
                for _ in range(launch_warmup_reps(n)):
                    _round_trip(sync, go)
                return {"sync": [_round_trip(sync, go) / 1e3 for _ in range(reps)]}
            spans = asyncio.run(_round_trips_awaited(sync, go, launch_warmup_reps(n), reps))
            return {"await": [x / 1e3 for x in spans]}
        finally:
            impl.destroy(graph)
    raise ValueError("unknown row '%s'" % row)


def _command(impl, parts):
    if len(parts) not in (4, 5) or parts[0] != "row":
        raise ValueError("bad command: %s" % " ".join(parts))
    row = parts[1]
    n, reps = int(parts[2]), int(parts[3])
    launches = int(parts[4]) if len(parts) == 5 else 10
    if n < 1 or reps < 1 or launches < 1:
        raise ValueError("row %s: need n >= 1, reps >= 1, launches >= 1" % row)
    return {"ok": True, "row": row, "n": n, "samples": _row(impl, row, n, reps, launches)}


def _say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(impl_id, make):
    """Initialises through make(), reports readiness, then answers commands. Returns an exit code."""
    try:
        impl = make()
    except Exception as e:  # a missing module or a failed CUDA init: report it, the run goes on
        _say({"ready": False, "impl": impl_id, "error": "%s: %s" % (type(e).__name__, e)})
        return 1
    _say(dict(ready=True, impl=impl_id, **impl.info()))
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "quit":
            break
        try:
            reply = _command(impl, parts)
        except Exception as e:
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        _say(reply)
    return 0
