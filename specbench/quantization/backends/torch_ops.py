"""Core PyTorch kernels: tinygemm ``_weight_int4pack_mm`` (w4a16) and rowwise ``torch._scaled_mm`` (w8a8_fp8)."""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization.backends import Backend, register
from specbench.quantization.qweight import FP8, FP8_MAX, QuantizedWeight

TINYGEMM_GROUPS = (256, 128, 64, 32)


class Int4TinyGemm(nn.Module):
    """tinygemm computes ``(q - 8) * scale + zero`` per group, bf16 in and out."""

    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        n, k = qw.shape
        g = qw.group_size if qw.group_size != k else next(s for s in TINYGEMM_GROUPS if k % s == 0)
        reps = qw.group_size // g  # per-channel scales repeat exactly over smaller groups
        s = qw.scales.repeat_interleave(reps, dim=1)
        if qw.zeros is None:
            q, zero = qw.codes.to(torch.int32) + 8, torch.zeros_like(s)
        else:
            q, zero = qw.codes.to(torch.int32), (8 - qw.zeros.repeat_interleave(reps, dim=1)) * s
        nibbles = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
        self.group = g
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack(nibbles.contiguous(), 8))
        self.register_buffer("scales_and_zeros", torch.stack([s.t(), zero.t()], -1).to(torch.bfloat16).contiguous())

    def forward(self, x):
        out = torch.ops.aten._weight_int4pack_mm(x.to(torch.bfloat16), self.packed, self.group, self.scales_and_zeros)
        return out.to(x.dtype)


class Fp8Rowwise(nn.Module):
    """fp8 e4m3 per-token activations x per-channel weights through cuBLASLt/CUTLASS rowwise scaling."""

    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        self.register_buffer("weight", qw.codes.contiguous())
        self.register_buffer("weight_scale", qw.scales.reshape(1, -1).float().contiguous())

    def forward(self, x):
        xf = x.float()
        xs = (xf.abs().amax(-1, keepdim=True) / FP8_MAX).clamp_min(torch.finfo(torch.float32).tiny)
        xq = (xf / xs).clamp(-FP8_MAX, FP8_MAX).to(FP8)
        out = torch._scaled_mm(xq, self.weight.t(), scale_a=xs, scale_b=self.weight_scale, out_dtype=torch.bfloat16)
        return out.to(x.dtype)


@register
class TorchOps(Backend):
    name = "torch"
    schemes = ("w4a16", "w8a8_fp8")

    def limits(self, qw, dtype):
        n, k = qw.shape
        if qw.scheme.name == "w8a8_fp8":
            if torch.cuda.get_device_capability(qw.device) < (9, 0):
                return "rowwise torch._scaled_mm needs sm90 (Hopper) or newer"
            return None if k % 16 == 0 and n % 16 == 0 else "in/out features must be multiples of 16"
        if qw.group_size not in (*TINYGEMM_GROUPS, k) or k % 128 or n % 8:
            return f"tinygemm needs group size in {TINYGEMM_GROUPS} or per-channel, K % 128 == 0, N % 8 == 0"
        if torch.cuda.get_device_capability(qw.device) < (8, 0):
            return "tinygemm needs sm80 or newer"
        return None

    def build(self, qw, dtype):
        return Fp8Rowwise(qw) if qw.scheme.name == "w8a8_fp8" else Int4TinyGemm(qw)

    def describe(self, qw):
        if qw.scheme.name == "w8a8_fp8":
            return {"kernel": "torch._scaled_mm rowwise", "packing": "fp8 e4m3 [N, K], fp32 row/col scales"}
        return {"kernel": "aten._weight_int4pack_mm (tinygemm)", "packing": "int4pack innerKTiles=8, bf16 scale+zero"}
