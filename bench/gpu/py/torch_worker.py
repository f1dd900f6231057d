"""PyTorch benchmark worker: usage `python3 torch_worker.py <kernels.ptx>` (protocol in common.py).

PyTorch has no public way to launch a bare PTX kernel cheaply, so every row launches its cheapest
op, x.add_(1) on 256 floats (as in ANCHORS.md), with and without "args" alike: the -args rows are
the same op. The capture uses torch.cuda.CUDAGraph.capture_begin/capture_end directly (the
torch.cuda.graph context manager adds a device sync and empty_cache per capture); capture_end()
instantiates, so it is the `instantiate` span. The PTX path is accepted and unused.
"""
import os
import sys
from time import perf_counter_ns

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve  # noqa: E402

ELEMENTS = 256


class TorchImpl:
    def __init__(self):
        import torch

        self.torch = torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.stream = torch.cuda.Stream(device=0)
        # Capture needs a non-default current stream; every op below runs on this one.
        torch.cuda.set_stream(self.stream)
        self.x = torch.zeros(ELEMENTS, dtype=torch.float32, device="cuda:0")
        self.x.add_(1)
        self.stream.synchronize()

    def info(self):
        t = self.torch
        return {"device": t.cuda.get_device_name(0),
                "version": "PyTorch %s (CUDA %s)" % (t.__version__, t.version.cuda)}

    def eager(self, n, with_args):
        x, s = self.x, self.stream
        s.synchronize()
        t0 = perf_counter_ns()
        for _ in range(n):
            x.add_(1)
        t1 = perf_counter_ns()
        s.synchronize()
        return t1 - t0

    def capture(self, n, with_args):
        x, s = self.x, self.stream
        s.synchronize()
        t0 = perf_counter_ns()
        graph = self.torch.cuda.CUDAGraph()
        graph.capture_begin()
        for _ in range(n):
            x.add_(1)
        t1 = perf_counter_ns()
        graph.capture_end()
        t2 = perf_counter_ns()
        return t1 - t0, t2 - t1, graph

    def destroy(self, graph):
        graph.reset()

    def sync(self):
        self.stream.synchronize()

    def launcher(self, graph):
        return graph.replay  # replays on the current stream, set in __init__


if __name__ == "__main__":
    sys.exit(serve("torch", TorchImpl))
