"""What the layers of specbench's Triton kernels share: the launch config per M (from ``kernel_table.choose``,
cached per M, with where it came from), the split-K counters, and when a compiled forward leaves a split-K sum to
the consumer (``partials``)."""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization import kernel_table, splitk

PATHS = ("gemv", "dot")  # a config travels to the custom op as (path index, BN, BK, split, BM, warps, stages, ...)
# the most splits whose sum is left to the consumer (``transformer.settle``): one load each in the consumer's kernel
DEFER_MAX_SPLIT = 8
# a consumer that reduces over each row (a norm) reads a row's partials in one program: at most this many floats a row
# (the 8B's 8 x 4096 gained in its verify of 31 rows, the 70B's 8 x 8192 lost in its verify of 8: docs/benchmarks.md,
# sessions 47 and 48)
DEFER_MAX_ROW = 8 * 4096


def leaves_partials(split: int, n: int, m: int, row_reduced: bool) -> bool:
    """Whether a compiled forward's launch of ``split`` K ranges on M rows of N outputs leaves the partial sums to its
    consumer: M > 1, at most ``DEFER_MAX_SPLIT`` splits and, where the consumer reduces each row (a norm), at most
    ``DEFER_MAX_ROW`` partials a row. At M = 1 a norm would read every partial in one program."""
    return m > 1 and 1 < split <= DEFER_MAX_SPLIT and not (row_reduced and split * n > DEFER_MAX_ROW)


class TritonLayer(nn.Module):
    def __init__(self, n: int, k: int, group: int, scheme: str, gpu: str | None, device: torch.device,
                 zero_points: bool = False):
        super().__init__()
        self.n, self.k, self.group, self.scheme, self.gpu = n, k, group, scheme, gpu
        self.hopper = device.type == "cuda" and torch.cuda.get_device_capability(device)[0] == 9  # sm_90 heuristic
        # the most any config with blocks of at least 16 uses, up to the largest M that splits K
        worst = splitk.counters_needed(n, kernel_table.MAX_SPLIT_M, 16, 16)
        self.register_buffer("counters", torch.zeros(worst, dtype=torch.int32, device=device))
        # read here, not in a traced forward
        self._entries = kernel_table.tuned_entries(gpu, n, k, group, scheme, zero_points)
        self._chosen: dict[int, tuple[list[int], str]] = {}

    def config(self, m: int) -> tuple[list[int], str]:
        """The launch config for M rows (cached per M in eager code) and where it came from."""
        if torch.compiler.is_compiling():  # a trace that read the cache would guard on its contents, and filling
            return self._choose(m)         # it would trace the forward again, in a CUDA graph's capture if it came next
        if m not in self._chosen:
            self._chosen[m] = self._choose(m)
        return self._chosen[m]

    def partials(self, x: torch.Tensor, row_reduced: bool = False) -> torch.Tensor | None:
        """The float32 partial sums [split, M, N] of ``x @ W.T`` where a compiled forward on the GPU leaves them to the
        consumer (``leaves_partials``; Inductor then adds them inside the consumer's kernel, and no program of the
        linear waits for the others); else None."""
        config, _ = self.config(x.shape[0])
        if not (x.is_cuda and torch.compiler.is_compiling()
                and leaves_partials(config[3], self.n, x.shape[0], row_reduced)):
            return None
        return self.partials_op(x.contiguous(), config)

    def partials_op(self, x: torch.Tensor, config: list[int]) -> torch.Tensor:
        """The kernel's custom op that returns the split-K partials of ``config``."""
        raise NotImplementedError

    def _choose(self, m: int) -> tuple[list[int], str]:
        cfg, source = kernel_table.choose(self.gpu, self.n, self.k, self.group, m, self.scheme, self._entries,
                                           self.hopper)
        tiles = splitk.tile_counters(self.n, m, cfg)
        if cfg.split > 1 and tiles > self.counters.numel():
            raise ValueError(f"config {cfg} splits K over {tiles} output tiles at M = {m}, more than the layer's "
                             f"{self.counters.numel()} counters (sized for blocks of at least 16)")
        d = cfg.as_dict()
        return [PATHS.index(d.pop("path")), *map(int, d.values())], source
