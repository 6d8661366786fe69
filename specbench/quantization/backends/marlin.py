"""Marlin (w4a16, symmetric) and QQQ (w4a8) kernels through GPTQModel, which JIT-compiles them on first use."""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization.backends import Backend, register
from specbench.quantization.formats import pack_gptq


def _marlin(qw, dtype) -> nn.Module:
    from gptqmodel.nn_modules.qlinear import marlin

    cls = getattr(marlin, "MarlinLinear", None) or marlin.MarlinQuantLinear  # renamed across GPTQModel versions
    n, k = qw.shape
    group = -1 if qw.group_size == k else qw.group_size
    layer = cls(bits=4, group_size=group, desc_act=False, sym=True, in_features=k, out_features=n, bias=False, dtype=dtype)
    for name, tensor in pack_gptq(qw).items():
        getattr(layer, name).data = tensor.to(qw.device, getattr(layer, name).dtype)
    layer.post_init()
    return layer


def _qqq(qw, dtype) -> nn.Module:
    from gptqmodel.nn_modules.qlinear.qqq import QQQLinear

    n, k = qw.shape
    group = -1 if qw.group_size == k else qw.group_size
    layer = QQQLinear(bits=4, group_size=group, desc_act=False, sym=True, in_features=k, out_features=n, bias=False)
    fake = nn.Linear(k, n, bias=False)
    fake.weight.data = qw.dequantize()
    scales = qw.scales if qw.channel_scale is None else qw.scales * qw.channel_scale[:, None]
    layer.pack(fake, scales, None if qw.channel_scale is None else qw.channel_scale.reshape(1, -1))
    layer.to(qw.device).post_init()
    return layer


@register
class Marlin(Backend):
    name = "marlin"
    schemes = ("w4a16", "w4a8")
    package, extra = "gptqmodel", "gptq"

    def limits(self, qw, dtype):
        n, k = qw.shape
        if qw.zeros is not None:
            return "Marlin/QQQ through GPTQModel take symmetric weights only"
        if dtype not in (torch.float16, torch.bfloat16):
            return f"Marlin/QQQ need fp16/bf16 activations, not {dtype}"
        if qw.group_size not in (k, 32, 64, 128) or n % 64 or k % 64:
            return "Marlin needs group size -1/32/64/128 and in/out features multiples of 64"
        if qw.scheme.act == "int8" and qw.group_size != k and qw.channel_scale is None:
            return "QQQ group-wise weights need integer group scales with a per-channel scale (QQQ-style RTN)"
        return None

    def build(self, qw, dtype):
        return _qqq(qw, dtype) if qw.scheme.act == "int8" else _marlin(qw, dtype)

    def describe(self, qw):
        if qw.scheme.act == "int8":
            return {"kernel": "GPTQModel QQQ (Marlin W4A8, fp16 out)", "packing": "QQQ tile-permuted int4"}
        return {"kernel": "GPTQModel gptq_marlin_gemm", "packing": "Marlin tile-permuted int4 (from GPTQ layout)"}
