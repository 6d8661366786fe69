"""Replay a tensor function as a CUDA graph: captured on the first call, then inputs copied in and replayed.

A graph destroyed while another is being captured ends that capture (CUDA refuses the destruction during a capture:
"operation not permitted when stream is capturing"). An old runner's graphs can go at any moment, when the cycle
collector runs or the last reference to the runner goes (seen on the H200 in the compiled-forward GPU test), so a
``GraphedCall`` freed during a capture hands its graph to ``_retired``, which is emptied once the capture ends.

``counting_replays`` counts each graph's replays inside a block: with ``timing.step_replays`` it gives the isolated
GPU time of every forward a generation ran.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import torch

_retired: list[torch.cuda.CUDAGraph] = []
_capturing = False
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


class GraphedCall:
    """``fn(*tensors) -> tensor or tuple of tensors`` with static shapes, captured once into a CUDA graph.

    Every call copies its arguments (device tensors or pinned host tensors) into the captured input buffers and
    replays. The returned tensors are the graph's own output buffers: read or copy them before the next call
    overwrites them.
    """

    def __init__(self, fn: Callable, pool=None, label: str = "", reads: int = 0):
        self.fn = fn
        self.pool = pool
        self.label = label  # what the graph runs, for reports (e.g. "llama-3-8b-instruct[60]")
        self.reads = reads  # bytes a replay must read: its forwards' weights (``model.footprint``); 0 = not counted
        self.graph: torch.cuda.CUDAGraph | None = None
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
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        global _capturing
        _capturing = True
        try:
            with torch.cuda.graph(self.graph, pool=self.pool):
                self.outputs = self.fn(*self.inputs)
        finally:
            _capturing = False
            _retired.clear()

    def __del__(self):
        if _capturing and self.graph is not None:
            _retired.append(self.graph)

    def __call__(self, *args: torch.Tensor):
        if self.graph is None:
            self.capture(*args)
        for dst, src in zip(self.inputs, args):
            dst.copy_(src, non_blocking=True)  # device tensors, or pinned host ones (ForwardRunner.tree)
        self.graph.replay()
        if _replays is not None:
            _replays[self] = _replays.get(self, 0) + 1
        return self.outputs
