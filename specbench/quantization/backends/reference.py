"""The correctness oracle and CPU path: dequantize, fake-quantize activations per token, matmul in fp32."""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization.backends import Backend, register
from specbench.quantization.qweight import QuantizedWeight, fake_quant_act
from specbench.quantization.schemes import SCHEMES


class ReferenceKernel(nn.Module):
    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        self.scheme, self.group_size = qw.scheme, qw.group_size
        self.register_buffer("codes", qw.codes)
        self.register_buffer("scales", qw.scales)
        self.register_buffer("zeros", qw.zeros)
        self.register_buffer("channel_scale", qw.channel_scale)

    def weight(self) -> QuantizedWeight:
        return QuantizedWeight(self.scheme, self.codes, self.scales, self.group_size, self.zeros, self.channel_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xq = fake_quant_act(x.float(), self.scheme.act)
        return (xq @ self.weight().dequantize().t()).to(x.dtype)


@register
class Reference(Backend):
    name = "reference"
    schemes = tuple(SCHEMES)
    cuda_only = False

    def build(self, qw, dtype):
        return ReferenceKernel(qw)

    def describe(self, qw):
        codes = "fp8 e4m3" if qw.scheme.weight == "fp8" else "int8"
        return {"kernel": "dequantize + fp32 matmul (reference)", "packing": f"{codes} codes, unpacked"}
