"""specbench's own Triton kernels for int8 activations (``int8_kernel``): w8a8_int8 and w4a8, configs from the table.

The module's forward quantizes the activations per token (``act_quant_kernel``) and runs the GEMM: two launches.
"""

from __future__ import annotations

from typing import Optional

import torch

from specbench.quantization import kernel_table
from specbench.quantization.backends.triton_layer import PATHS, TritonLayer
from specbench.quantization.int8_kernel import A8Config, matmul
from specbench.quantization.qweight import QuantizedWeight

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def pack(qw: QuantizedWeight) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(codes int8 [N, K] or two 4-bit codes per byte uint8 [N, K/2], channel scales float32 [N] (/ 16 for 4 bits),
    group scales [G, N] or None: uint8 for QQQ's integers in [1, 16] (the dot path multiplies them into the codes),
    else float16 where that is exact, else float32) in the kernel's layout."""
    n, k = qw.shape
    chan = torch.ones(n, device=qw.device) if qw.channel_scale is None else qw.channel_scale.float()
    if qw.scheme.bits == 8:
        weight = qw.codes.contiguous()
    else:
        weight = pack_nibbles(qw.codes)
        chan = chan / 16  # the kernel multiplies 16 x code
    if qw.group_size == k:
        return weight, (qw.scales[:, 0].float() * chan).contiguous(), None
    gs = qw.scales.t().float()
    if torch.equal(gs, gs.round()) and bool(((gs >= 1) & (gs <= 16)).all()):
        return weight, chan.contiguous(), gs.to(torch.uint8).contiguous()
    half = gs.half()
    return weight, chan.contiguous(), (half if torch.equal(half.float(), gs) else gs).contiguous()


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """int8 4-bit codes [N, K] -> uint8 [N, K/2]: per chunk of 32 inputs, byte p holds input 32c + p in its low nibble
    and 32c + 16 + p in its high one (``int8_kernel``'s layout; K a multiple of 32)."""
    n, k = codes.shape
    u = (codes.to(torch.int16) & 0xF).to(torch.uint8).view(n, k // 32, 2, 16)
    return (u[:, :, 0] | (u[:, :, 1] << 4)).reshape(n, k // 2).contiguous()


@torch.library.custom_op("specbench::a8_mm", mutates_args=("counters",))
def a8_mm(x: torch.Tensor, weight: torch.Tensor, ws: torch.Tensor, gs: Optional[torch.Tensor], counters: torch.Tensor,
          bits: int, group: int, config: list[int]) -> torch.Tensor:
    """``x @ W.T``, ``x`` quantized per token to int8; ``config`` = (path index, BN, BK, split, BM, warps, stages)."""
    path, *sizes = config
    return matmul(x, weight, ws, gs, counters, bits, group, A8Config(PATHS[path], *sizes))


@a8_mm.register_fake
def _(x, weight, ws, gs, counters, bits, group, config):
    return x.new_empty(x.shape[0], weight.shape[0])


@torch.library.custom_op("specbench::a8_mm_partials", mutates_args=())
def a8_mm_partials(x: torch.Tensor, weight: torch.Tensor, ws: torch.Tensor, gs: Optional[torch.Tensor],
                   counters: torch.Tensor, bits: int, group: int, config: list[int]) -> torch.Tensor:
    """``a8_mm``'s float32 partial sums [split, M, N] (a config that splits K), their sum left to the caller."""
    path, *sizes = config
    return matmul(x, weight, ws, gs, counters, bits, group, A8Config(PATHS[path], *sizes), deferred=True)


@a8_mm_partials.register_fake
def _(x, weight, ws, gs, counters, bits, group, config):
    return x.new_empty(config[3], x.shape[0], weight.shape[0], dtype=torch.float32)


class A8Triton(TritonLayer):
    def __init__(self, qw: QuantizedWeight, gpu: str | None):
        super().__init__(*qw.shape, qw.group_size, qw.scheme.name, gpu, qw.device)
        self.bits = qw.scheme.bits
        weight, ws, gs = pack(qw)
        self.register_buffer("weight", weight)
        self.register_buffer("ws", ws)
        self.register_buffer("gs", gs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        config, _ = self.config(x.shape[0])
        return a8_mm(x.contiguous(), self.weight, self.ws, self.gs, self.counters, self.bits, self.group, config)

    def partials_op(self, x: torch.Tensor, config: list[int]) -> torch.Tensor:
        return a8_mm_partials(x, self.weight, self.ws, self.gs, self.counters, self.bits, self.group, config)


class TritonA8:
    """The ``triton`` backend's w8a8_int8 / w4a8 half (``backends.triton`` dispatches to it)."""

    schemes = ("w8a8_int8", "w4a8")

    def limits(self, qw, dtype):
        n, k = qw.shape
        if dtype not in DTYPES:
            return f"the Triton int8-activation kernels take bf16/fp16/fp32 activations, not {dtype}"
        if qw.zeros is not None:
            return "the Triton int8-activation kernels take symmetric weights only (no zero points)"
        if qw.codes.dtype != torch.int8:
            return f"the Triton int8-activation kernels take int8 codes, not {qw.codes.dtype}"
        probe = kernel_table.heuristic_a8(n, k, qw.group_size, 1, qw.scheme.bits)
        return kernel_table.kernel_of(qw.scheme.name)[1](n, k, qw.group_size, probe)

    def build(self, qw, dtype):
        return A8Triton(qw, kernel_table.gpu_key(qw.device))

    def describe(self, qw):
        n, k = qw.shape
        weights = ("int8 [N, K]" if qw.scheme.bits == 8
                   else "int4 [N, K/2] uint8 (inputs i and i + 16 of each 32 per byte, two's complement)")
        groups = "" if qw.group_size == k else ", group scales [G, N]"
        source = kernel_table.describe_source(kernel_table.gpu_key(qw.device), n, k, qw.group_size, qw.scheme.name)
        return {"kernel": f"specbench Triton {qw.scheme.name} (per-token int8 act quant + dp4a gemv M=1 / "
                          "int8 tl.dot, split-K)",
                "packing": f"{weights}, fp32 channel scales{groups}", "autotune": source}
