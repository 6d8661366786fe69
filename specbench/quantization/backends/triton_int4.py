"""specbench's own Triton W4A16 kernel (``specbench.quantization.int4_kernel``), configs from the committed table."""

from __future__ import annotations

from typing import Optional

import torch

from specbench.quantization import kernel_table
from specbench.quantization.backends.triton_layer import PATHS, TritonLayer
from specbench.quantization.formats import pack_int32
from specbench.quantization.int4_kernel import DTYPES, KernelConfig, blocked, check_shape, kernel_order, launch
from specbench.quantization.qweight import QuantizedWeight


def pack(qw: QuantizedWeight, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(packed int32 words in the kernel's ``blocked`` storage, scales [G, N], zero points [G, N] or None), the
    input rows in ``kernel_order``."""
    unsigned = qw.codes.to(torch.int32) + (8 if qw.zeros is None else 0)
    order = kernel_order(qw.shape[1], qw.group_size).to(unsigned.device)
    packed = blocked(pack_int32(unsigned.t()[order], 4, 0))
    zeros = None if qw.zeros is None else qw.zeros.t().to(dtype).contiguous()
    return packed, qw.scales.t().to(dtype).contiguous(), zeros


@torch.library.custom_op("specbench::w4a16_mm", mutates_args=("counters",))
def w4a16_mm(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
             counters: torch.Tensor, group: int, config: list[int]) -> torch.Tensor:
    """``x @ W.T`` for the packed int4 weight; ``config`` = (path index, BN, BK, split, BM, warps, stages, uneven,
    DEQ, scales_ahead)."""
    path, *sizes = config
    cfg = KernelConfig(PATHS[path], *sizes)
    return launch(x, packed, scales, zeros, counters, group, cfg)


@w4a16_mm.register_fake
def _(x, packed, scales, zeros, counters, group, config):
    return x.new_empty(x.shape[0], packed.shape[1])


@torch.library.custom_op("specbench::w4a16_mm_partials", mutates_args=())
def w4a16_mm_partials(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
                      counters: torch.Tensor, group: int, config: list[int]) -> torch.Tensor:
    """``w4a16_mm``'s float32 partial sums [split, M, N] (a config that splits K), their sum left to the caller."""
    path, *sizes = config
    return launch(x, packed, scales, zeros, counters, group, KernelConfig(PATHS[path], *sizes), deferred=True)


@w4a16_mm_partials.register_fake
def _(x, packed, scales, zeros, counters, group, config):
    return x.new_empty(config[3], x.shape[0], packed.shape[1], dtype=torch.float32)


class Int4Triton(TritonLayer):
    def __init__(self, qw: QuantizedWeight, dtype: torch.dtype, gpu: str | None):
        super().__init__(*qw.shape, qw.group_size, "w4a16", gpu, qw.device, zero_points=qw.zeros is not None)
        packed, scales, zeros = pack(qw, dtype)
        self.register_buffer("packed", packed)
        self.register_buffer("scales", scales)
        self.register_buffer("zeros", zeros)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        config, _ = self.config(x.shape[0])
        return w4a16_mm(x.contiguous(), self.packed, self.scales, self.zeros, self.counters, self.group, config)

    def partials_op(self, x: torch.Tensor, config: list[int]) -> torch.Tensor:
        return w4a16_mm_partials(x, self.packed, self.scales, self.zeros, self.counters, self.group, config)


class TritonInt4:
    """The ``triton`` backend's w4a16 half (``backends.triton`` dispatches to it)."""

    def limits(self, qw, dtype):
        n, k = qw.shape
        if dtype not in DTYPES:
            return f"the Triton int4 kernel takes bf16/fp16 activations, not {dtype}"
        if qw.channel_scale is not None:
            return "a second per-channel scale (QQQ layout) is not implemented in the Triton w4a16 kernel"
        probe = kernel_table.heuristic(n, k, qw.group_size, 1)
        return check_shape(n, k, qw.group_size, probe)

    def build(self, qw, dtype):
        return Int4Triton(qw, dtype, kernel_table.gpu_key(qw.device))

    def describe(self, qw):
        return {"kernel": "specbench Triton w4a16 (gemv M=1, tl.dot M>1, split-K)",
                "packing": "int4 int32 [K/128, N, 16] (blocks of 16 words per column, int4_kernel.blocked; unsigned, "
                "input rows interleaved in blocks of 128: int4_kernel.kernel_order), 16-bit scales/zeros [G, N]",
                "autotune": kernel_table.describe_source(kernel_table.gpu_key(qw.device), *qw.shape, qw.group_size,
                                                         zero_points=qw.zeros is not None)}
