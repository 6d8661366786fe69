"""Replay a tensor function as a CUDA graph: captured on the first call, then inputs copied in and replayed."""

from __future__ import annotations

from typing import Callable

import torch


class GraphedCall:
    """``fn(*tensors) -> tensor or tuple of tensors`` with static shapes, captured once into a CUDA graph.

    Every call copies its arguments (device tensors or pinned host tensors) into the captured input buffers and
    replays. The returned tensors are the graph's own output buffers: read or copy them before the next call
    overwrites them.
    """

    def __init__(self, fn: Callable, pool=None):
        self.fn = fn
        self.pool = pool
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
        with torch.cuda.graph(self.graph, pool=self.pool):
            self.outputs = self.fn(*self.inputs)

    def __call__(self, *args: torch.Tensor):
        if self.graph is None:
            self.capture(*args)
        for dst, src in zip(self.inputs, args):
            dst.copy_(src, non_blocking=True)  # device tensors, or pinned host ones (ForwardRunner.tree)
        self.graph.replay()
        return self.outputs
