"""The one canonical form of a quantized weight, round-to-nearest quantization, and activation fake-quant.

``W[n, perm[k]] = (codes[n, k] - zeros[n, k // g]) * scales[n, k // g] * channel_scale[n]`` where absent
``zeros`` / ``channel_scale`` / ``perm`` mean 0 / 1 / identity. Every checkpoint reader and RTN produce this
form; every kernel backend packs it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from specbench.quantization.schemes import Scheme, check_layout

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


@dataclass
class QuantizedWeight:
    scheme: Scheme
    codes: torch.Tensor  # [N, K] int8 (int4 codes: [-8, 7] symmetric, [0, 15] with zeros) or float8_e4m3fn
    scales: torch.Tensor  # [N, K // group_size] float32
    group_size: int  # K for one group per output channel
    zeros: torch.Tensor | None = None  # [N, K // group_size] float32, in code units
    channel_scale: torch.Tensor | None = None  # [N] float32 (w4a8 group: scales are integers in [1, 16];
    # w4a8_fp8: scales are powers of two in [2^-9, 1])
    perm: torch.Tensor | None = None  # [K] int64: input channel k of codes is input perm[k] of the layer

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.codes.shape)

    @property
    def device(self) -> torch.device:
        return self.codes.device

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The dense [N, K] weight in the layer's input order."""
        g = self.group_size
        w = self.codes.to(dtype)
        if self.zeros is not None:
            w = w - self.zeros.to(dtype).repeat_interleave(g, dim=1)
        w = w * self.scales.to(dtype).repeat_interleave(g, dim=1)
        if self.channel_scale is not None:
            w = w * self.channel_scale.to(dtype)[:, None]
        if self.perm is not None:
            w = torch.empty_like(w).index_copy_(1, self.perm, w)
        return w

    def to(self, device) -> "QuantizedWeight":
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(self, codes=move(self.codes), scales=move(self.scales), zeros=move(self.zeros),
                       channel_scale=move(self.channel_scale), perm=move(self.perm))


def stack(parts: list[QuantizedWeight]) -> QuantizedWeight | None:
    """The parts as one weight, their rows concatenated along N (q/k/v into one kernel), or None where their
    layouts differ: scheme, K, group size, zero points or channel scales in some only, or act-order perms that
    are not the same."""
    first = parts[0]

    def same_perm(qw: QuantizedWeight) -> bool:
        if qw.perm is None or first.perm is None:
            return qw.perm is None and first.perm is None
        return torch.equal(qw.perm, first.perm)

    def agrees(qw: QuantizedWeight) -> bool:
        return (qw.scheme == first.scheme and qw.shape[1] == first.shape[1] and qw.group_size == first.group_size
                and (qw.zeros is None) == (first.zeros is None)
                and (qw.channel_scale is None) == (first.channel_scale is None) and same_perm(qw))

    if not all(agrees(qw) for qw in parts):
        return None
    cat = lambda field: None if getattr(first, field) is None else torch.cat([getattr(q, field) for q in parts])  # noqa: E731
    return QuantizedWeight(first.scheme, cat("codes"), cat("scales"), first.group_size, cat("zeros"),
                           cat("channel_scale"), first.perm)


def _grouped(w: torch.Tensor, group_size: int) -> torch.Tensor:
    n, k = w.shape
    if k % group_size:
        raise ValueError(f"in_features {k} is not a multiple of group size {group_size}")
    return w.reshape(n, k // group_size, group_size)


def quantize_rtn(weight: torch.Tensor, scheme: Scheme, group_size: int | None = None, sym: bool = True) -> QuantizedWeight:
    """Round-to-nearest quantization of a dense [N, K] weight; no calibration."""
    group_size = scheme.default_group if group_size is None else group_size
    check_layout(scheme, group_size, sym)
    w = weight.detach().float()
    g = w.shape[1] if group_size == -1 else group_size
    wg = _grouped(w, g)
    tiny = torch.finfo(torch.float32).tiny
    if scheme.weight == "fp8":
        s = (wg.abs().amax(-1) / FP8_MAX).clamp_min(tiny)
        codes = (wg / s[..., None]).clamp(-FP8_MAX, FP8_MAX).to(FP8).reshape(w.shape)
        return QuantizedWeight(scheme, codes, s, g)
    if scheme.weight == "int8":
        s = (wg.abs().amax(-1) / 127).clamp_min(tiny)
        codes = torch.round(wg / s[..., None]).clamp(-127, 127).to(torch.int8).reshape(w.shape)
        return QuantizedWeight(scheme, codes, s, g)
    if not sym:  # asymmetric int4: codes in [0, 15] around an integer zero point
        lo, hi = wg.amin(-1).clamp(max=0), wg.amax(-1).clamp(min=0)
        s = ((hi - lo) / 15).clamp_min(tiny)
        z = torch.round(-lo / s).clamp(0, 15)
        codes = (torch.round(wg / s[..., None]) + z[..., None]).clamp(0, 15).to(torch.int8).reshape(w.shape)
        return QuantizedWeight(scheme, codes, s, g, zeros=z)
    s = (wg.abs().amax(-1) * (2 / 15)).clamp_min(tiny)  # GPTQ's symmetric grid: [-8, 7] * s covers +-7.5 s
    channel = None
    if scheme.act == "fp8":
        # power-of-two group scales in [2^-9, 1] times a per-channel scale: every code x group scale is exact in
        # fp8 e4m3, as kernels that look that product up in fp8 (fbgemm's f8i4bf16_shuffled) need
        channel = s.amax(-1)
        s = torch.exp2(torch.ceil(torch.log2(s / channel[:, None]))).clamp(2.0 ** -9, 1.0)
        eff = s * channel[:, None]
    elif scheme.act == "int8" and g != w.shape[1]:
        # QQQ: integer group scales in [1, 16] times a per-channel scale, so codes * group scale fit int8
        channel = (s.amax(-1) / 16).clamp_min(tiny)
        s = torch.ceil(s / channel[:, None]).clamp(1, 16)
        eff = s * channel[:, None]
    else:
        eff = s
    codes = torch.round(wg / eff[..., None]).clamp(-8, 7).to(torch.int8).reshape(w.shape)
    return QuantizedWeight(scheme, codes, s, g, channel_scale=channel)


def fake_quant_act(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token dynamic quantization then dequantization, as an int8/fp8 kernel sees its input."""
    if kind == "none":
        return x
    qmax = 127.0 if kind == "int8" else FP8_MAX
    s = (x.abs().amax(-1, keepdim=True) / qmax).clamp_min(torch.finfo(torch.float32).tiny)
    if kind == "int8":
        return torch.round(x / s).clamp(-127, 127) * s
    return (x / s).clamp(-FP8_MAX, FP8_MAX).to(FP8).to(x.dtype) * s
