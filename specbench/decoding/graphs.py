"""Replay a tensor function as a CUDA graph: captured on the first call, then inputs copied in and replayed.

A graph destroyed while another is being captured ends that capture (CUDA refuses the destruction during a capture:
"operation not permitted when stream is capturing"). An old runner's graphs can go at any moment, when the cycle
collector runs or the last reference to the runner goes (seen on the H200 in the compiled-forward GPU test), so a
``GraphedCall`` freed during a capture hands its graph to ``_retired``, which is emptied once the capture ends.

``counting_replays`` counts each graph's replays inside a block: with ``timing.step_replays`` it gives the isolated
GPU time of every forward a generation ran.

A capture may be cut into pieces (``graph_break``, called by the function captured): a replay then launches the
pieces one after another. Launching a graph costs the host about a microsecond per kernel (an 8B forward of
~670 kernels: ~0.5 ms, measured on the H200), and the GPU starts it only once it is launched; after a host sync
that time is all idle. In pieces that grow (``ForwardRunner``: 1, 2, 4, … layers) the GPU starts on the first while
the host launches the next.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import torch

_retired: list[torch.cuda.CUDAGraph] = []
_capturing: GraphedCall | None = None  # the call whose graph is being captured
_replays: dict[GraphedCall, int] | None = None


@contextmanager
def counting_replays() -> Iterator[dict[GraphedCall, int]]:
    """Inside the block, count the replays of every ``GraphedCall``: yields ``{call: replays}``, filled as it runs."""
    global _replays
    outer, _replays = _replays, {}
    try:
        yield _replays
    finally:
        _replays = outer


def graph_break() -> None:
    """Inside the capture of a ``GraphedCall`` made with ``split=True``: end the graph captured so far and go on in
    a new one. Elsewhere (eager runs, warm-up, code being compiled) nothing."""
    if not torch.compiler.is_compiling() and _capturing is not None and _capturing.splits:
        _capturing.split()


class GraphedCall:
    """``fn(*tensors) -> tensor or tuple of tensors`` with static shapes, captured once into CUDA graphs (one, or
    one per piece ``graph_break`` cut when ``split``).

    Every call copies its arguments (device tensors or pinned host tensors) into the captured input buffers and
    replays. The returned tensors are the graph's own output buffers: read or copy them before the next call
    overwrites them.
    """

    def __init__(self, fn: Callable, pool=None, label: str = "", split: bool = False):
        self.fn = fn
        self.pool = pool
        self.splits = split
        self.label = label  # what the graph runs (e.g. "llama-3-8b-instruct[60]")
        self.graphs: list[torch.cuda.CUDAGraph] = []  # the pieces, in launch order; empty until captured
        self.inputs: tuple[torch.Tensor, ...] = ()
        self.outputs = None

    def capture(self, *args: torch.Tensor) -> None:
        device = torch.device("cuda", torch.cuda.current_device())
        self.inputs = tuple(a.to(device, copy=True) for a in args)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up outside the graph: lazy initialisation, compilation, autotuning
                self.fn(*self.inputs)
            stream.synchronize()
            global _capturing
            _capturing = self
            self.graphs = [torch.cuda.CUDAGraph()]
            self.graphs[0].capture_begin(pool=self.pool)
            try:
                self.outputs = self.fn(*self.inputs)
            finally:
                self.graphs[-1].capture_end()
                _capturing = None
                _retired.clear()
        torch.cuda.current_stream().wait_stream(stream)

    def split(self) -> None:
        """End the piece being captured and begin the next, in the same memory pool (pieces replay in order)."""
        self.graphs[-1].capture_end()
        pool = self.pool if self.pool is not None else self.graphs[0].pool()
        self.graphs.append(torch.cuda.CUDAGraph())
        self.graphs[-1].capture_begin(pool=pool)

    def replay(self) -> None:
        """Launch the captured pieces on the current stream, on the inputs last copied in."""
        for graph in self.graphs:
            graph.replay()

    def __del__(self):
        if _capturing is not None:
            _retired.extend(self.graphs)

    def __call__(self, *args: torch.Tensor):
        if not self.graphs:
            self.capture(*args)
        for dst, src in zip(self.inputs, args):
            dst.copy_(src, non_blocking=True)  # device tensors, or pinned host ones (ForwardRunner.tree)
        self.replay()
        if _replays is not None:
            _replays[self] = _replays.get(self, 0) + 1
        return self.outputs
