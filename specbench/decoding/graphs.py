"""Replay a tensor function as a CUDA graph: captured on the first call, then inputs copied in and replayed."""

from __future__ import annotations

from typing import Callable, Sequence

import torch


class GraphedCall:
    """``fn(*tensors) -> tensor or tuple of tensors`` with static shapes, captured once into CUDA graphs.

    ``fn`` may be a sequence of stages, each called on the previous stage's outputs (a tuple) and captured as
    its own graph: replaying launches them one after another, so the GPU runs the first while the host is
    still launching the rest (one big graph's launch costs host time proportional to its kernels, all of it
    before the GPU starts). Every call copies its arguments (device tensors or pinned host tensors) into the
    captured input buffers and replays. The returned tensors are the last graph's own output buffers: read or
    copy them before the next call overwrites them.
    """

    def __init__(self, fn: Callable | Sequence[Callable], pool=None):
        self.stages = list(fn) if isinstance(fn, (list, tuple)) else [fn]
        self.pool = pool
        self.graphs: list[torch.cuda.CUDAGraph] = []
        self.inputs: tuple[torch.Tensor, ...] = ()
        self.between: list = []  # stage outputs that later stages read: kept alive with the graphs
        self.outputs = None

    def capture(self, *args: torch.Tensor) -> None:
        device = torch.device("cuda", torch.cuda.current_device())
        self.inputs = tuple(a.to(device, copy=True) for a in args)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up outside the graph: lazy initialisation, compilation, autotuning
                out = self.inputs
                for stage in self.stages:
                    out = stage(*out)
        torch.cuda.current_stream().wait_stream(stream)
        out = self.inputs
        for stage in self.stages:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                out = stage(*out)
            self.graphs.append(graph)
            self.between.append(out)
        self.outputs = out

    def __call__(self, *args: torch.Tensor):
        if not self.graphs:
            self.capture(*args)
        for dst, src in zip(self.inputs, args):
            dst.copy_(src, non_blocking=True)  # device tensors, or pinned host ones (ForwardRunner.tree)
        for graph in self.graphs:
            graph.replay()
        return self.outputs
