"""CuPy benchmark worker: usage `python3 cupy_worker.py <kernels.ptx>` (protocol in common.py).

Launches the same PTX kernels as the C worker through cupy.RawModule, on a non-blocking stream
made current once (kernel calls and Graph.launch() run on it). CuPy's end_capture() instantiates, so its `instantiate` span is end_capture().
"""
import os
import sys
from time import perf_counter_ns

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve  # noqa: E402

ELEMENTS = 256


class CuPyImpl:
    def __init__(self, ptx_path):
        import cupy
        import numpy

        self.cp = cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.stream.use()
        module = cupy.RawModule(path=ptx_path)
        self.k_empty = module.get_function("empty")
        self.k_add2 = module.get_function("add2")
        self.x = cupy.zeros(ELEMENTS, dtype=cupy.float32)
        self.n = numpy.int32(ELEMENTS)
        # Global mode everywhere (CuPy's own default is relaxed); CU_STREAM_CAPTURE_MODE_GLOBAL is 0.
        self.mode = getattr(cupy.cuda.runtime, "streamCaptureModeGlobal", 0)
        self.stream.synchronize()

    def info(self):
        rt = self.cp.cuda.runtime
        name = rt.getDeviceProperties(0)["name"]
        if isinstance(name, bytes):
            name = name.decode()
        return {"device": name, "driverVersion": rt.driverGetVersion(),
                "version": "CuPy %s" % self.cp.__version__}

    def _kernel(self, with_args):
        if with_args:
            return self.k_add2, (1,), (ELEMENTS,), (self.x, self.n)
        return self.k_empty, (1,), (32,), ()

    def eager(self, n, with_args):
        k, grid, block, args = self._kernel(with_args)
        s = self.stream
        s.synchronize()
        t0 = perf_counter_ns()
        for _ in range(n):
            k(grid, block, args)
        t1 = perf_counter_ns()
        s.synchronize()
        return t1 - t0

    def capture(self, n, with_args):
        k, grid, block, args = self._kernel(with_args)
        s = self.stream
        s.synchronize()
        t0 = perf_counter_ns()
        s.begin_capture(self.mode)
        for _ in range(n):
            k(grid, block, args)
        t1 = perf_counter_ns()
        graph = s.end_capture()
        t2 = perf_counter_ns()
        return t1 - t0, t2 - t1, graph

    def destroy(self, graph):
        # CuPy frees a Graph's exec and graph when the object goes: the caller (common._row) drops
        # its last reference right after this call, so the graph is released where the other
        # implementations release theirs, before the next capture.
        pass

    def sync(self):
        self.stream.synchronize()

    def launcher(self, graph):
        # The stream made current in __init__: Graph.launch() with no argument launches on it.
        return graph.launch


if __name__ == "__main__":
    sys.exit(serve("cupy", lambda: CuPyImpl(sys.argv[1])))
