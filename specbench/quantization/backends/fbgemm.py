"""fbgemm-gpu-genai's CUTLASS Hopper kernels: w4a16 (``bf16i4bf16_shuffled``), w4a8_fp8 (``f8i4bf16_shuffled``) and
w8a8_fp8 (``f8f8bf16_rowwise``); the fp8 schemes quantize activations per token in the layer (fbgemm's
``quantize_fp8_row``: scale = max|x| / 448, as ``fake_quant_act``), so it is timed with the GEMM.

Layouts each op takes (built once from the canonical ``QuantizedWeight``):
- ``bf16i4bf16_shuffled(x, w, s, z)``: signed int4 codes q in [-8, 7], two per int8 (even input column in the low
  nibble), preshuffled by ``preshuffle_i4``; bf16 group scales s and group offsets z [G, N] in weight units, so
  ``W = q * s + z``. From canonical codes c, zero points zc and scales s: q = c - 8, z = (8 - zc) * s (0 when
  symmetric).
- ``f8i4bf16_shuffled(xq, w, x_scale, row_scale, group_scale)``: the same codes; fp8 group scales, preshuffled to
  [G, 8, N] (as far as that layout shows, a per-group table of code x scale in fp8: power-of-two group scales,
  which ``w4a8_fp8`` RTN makes, keep every such product exact however the kernel rounds it), and a float32
  per-channel scale; ``W = q * group_scale * row_scale``.
- ``f8f8bf16_rowwise(xq, w, x_scale, w_scale)``: fp8 [N, K] codes, float32 per-channel scales; called without
  fast accumulation (Hopper's fp8 MMA accumulator is promoted to fp32 as it goes).
Outputs are bf16 (cast back for fp16 activations).
"""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization.backends import Backend, register
from specbench.quantization.qweight import FP8, QuantizedWeight

PACKAGE = "fbgemm_gpu.experimental.gen_ai"
OPS = {"w4a16": "bf16i4bf16_shuffled", "w4a8_fp8": "f8i4bf16_shuffled", "w8a8_fp8": "f8f8bf16_rowwise"}


def _signed_int4(qw: QuantizedWeight) -> torch.Tensor:
    """[N, K/2] int8: signed codes, input column 2i in the low nibble of byte i, 2i + 1 in the high one."""
    q = qw.codes.to(torch.int16) - (0 if qw.zeros is None else 8)
    return ((q[:, 0::2] & 0xF) | ((q[:, 1::2] & 0xF) << 4)).to(torch.uint8).view(torch.int8).contiguous()


def _quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from fbgemm_gpu.experimental.gemm.triton_gemm.fp8_gemm import quantize_fp8_row

    return quantize_fp8_row(x.to(torch.bfloat16).contiguous())


def w4a16_operands(qw: QuantizedWeight) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(signed int4 pairs [N, K/2], scales [G, N], offsets [G, N]) with ``W = q * s + z`` before preshuffling."""
    scales = qw.scales.t().float().contiguous()
    offsets = torch.zeros_like(scales) if qw.zeros is None else (8.0 - qw.zeros.t().float()) * scales
    return _signed_int4(qw), scales, offsets.contiguous()


class W4A16Shuffled(nn.Module):
    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        pairs, scales, offsets = w4a16_operands(qw)
        packed, shuffled = torch.ops.fbgemm.preshuffle_i4(pairs, scales.to(torch.bfloat16))
        self.register_buffer("packed", packed)
        self.register_buffer("scales", shuffled)
        self.register_buffer("zeros", offsets.to(torch.bfloat16))

    def forward(self, x):
        xb = x.to(torch.bfloat16).contiguous()
        return torch.ops.fbgemm.bf16i4bf16_shuffled(xb, self.packed, self.scales, self.zeros).to(x.dtype)


class W4A8Fp8Shuffled(nn.Module):
    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        group = qw.scales.t().to(FP8).contiguous()  # [G, N], exact (checked in limits)
        packed, shuffled = torch.ops.fbgemm.preshuffle_i4(_signed_int4(qw), group)
        row = torch.ones(qw.shape[0], device=qw.device) if qw.channel_scale is None else qw.channel_scale
        self.register_buffer("packed", packed)
        self.register_buffer("group_scale", shuffled)
        self.register_buffer("row_scale", row.float().contiguous())

    def forward(self, x):
        xq, x_scale = _quantize_rows(x)
        y = torch.ops.fbgemm.f8i4bf16_shuffled(xq, self.packed, x_scale, self.row_scale, self.group_scale)
        return y.to(x.dtype)


class W8A8Fp8Rowwise(nn.Module):
    def __init__(self, qw: QuantizedWeight):
        super().__init__()
        self.register_buffer("weight", qw.codes.contiguous())
        self.register_buffer("weight_scale", qw.scales.reshape(-1).float().contiguous())

    def forward(self, x):
        xq, x_scale = _quantize_rows(x)
        y = torch.ops.fbgemm.f8f8bf16_rowwise(xq, self.weight, x_scale, self.weight_scale, use_fast_accum=False)
        return y.to(x.dtype)


def _is_power_of_two(t: torch.Tensor) -> bool:
    mantissa, _ = torch.frexp(t.float())
    return bool(((mantissa == 0.5) & (t >= 2.0 ** -9) & (t <= 448)).all())


@register
class Fbgemm(Backend):
    name = "fbgemm"
    schemes = tuple(OPS)
    package, extra = PACKAGE, "fbgemm"
    install_note = " (fbgemm-gpu-genai is built per torch release: 1.6.x for torch 2.11, 1.9 for 2.14)"

    def limits(self, qw, dtype):
        n, k = qw.shape
        if dtype not in (torch.bfloat16, torch.float16):
            return f"fbgemm's kernels take bf16 (or fp16, cast) activations, not {dtype}"
        if torch.cuda.get_device_capability(qw.device) < (9, 0):
            return "fbgemm-gpu-genai's CUTLASS kernels here need sm90 (Hopper)"
        if n % 128 or k % 128:
            return f"fbgemm's kernels need in/out features that are multiples of 128 (got {k} -> {n})"
        if qw.scheme.weight == "int4" and (qw.group_size % 128 or k % qw.group_size):
            return f"preshuffled int4 needs a group size that is a multiple of 128 (got {qw.group_size})"
        if qw.scheme.name == "w4a8_fp8" and not _is_power_of_two(qw.scales):
            return ("f8i4bf16_shuffled rounds code x group scale to fp8, so group scales must be powers of two in "
                    "[2^-9, 448] (what w4a8_fp8 RTN makes)")
        if qw.scheme.name == "w4a16" and qw.channel_scale is not None:
            return "a second per-channel scale (QQQ layout) has no place in bf16i4bf16_shuffled"
        return None

    def build(self, qw, dtype):
        return {"w4a16": W4A16Shuffled, "w4a8_fp8": W4A8Fp8Shuffled, "w8a8_fp8": W8A8Fp8Rowwise}[qw.scheme.name](qw)

    def describe(self, qw):
        packing = {"w4a16": "preshuffled int4 [N, K/2], bf16 group scale + offset [G, N]",
                   "w4a8_fp8": "preshuffled int4 [N, K/2], fp8 group scale table + fp32 row scale",
                   "w8a8_fp8": "fp8 e4m3 [N, K], fp32 row scales"}[qw.scheme.name]
        act = "" if qw.scheme.act == "none" else " + quantize_fp8_row(x)"
        return {"kernel": f"fbgemm {OPS[qw.scheme.name]}{act}", "packing": packing}
