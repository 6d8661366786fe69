"""Readers of published checkpoint layouts (GPTQ, AWQ GEMM, compressed-tensors) into the canonical form.

GPTQ: ``qweight`` int32 [K/8, N] packs 8 input rows per int32 (row 8i+j at bits 4j); ``qzeros`` int32
[G, N/8] packs output columns the same way; ``scales`` [G, N]; ``g_idx`` [K] maps input rows to groups.
v1 checkpoints (AutoGPTQ, ``checkpoint_format`` "gptq") store zero point - 1. AWQ GEMM: ``qweight`` int32
[K, N/8] packs output columns, nibble i holding column 8m + AWQ_ORDER[i]; ``qzeros`` likewise; real zeros.
compressed-tensors ``pack-quantized``: ``weight_packed`` int32 [N, K/8] packs signed values + 8 along the input
dim (nibble j = column 8m + j); ``weight_zero_point`` packs along the output dim; ``weight_shape`` = (N, K).
"""

from __future__ import annotations

import torch

from specbench.quantization.qweight import QuantizedWeight
from specbench.quantization.schemes import QuantConfigError, Scheme, check_layout

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def unpack_int32(packed: torch.Tensor, bits: int, dim: int, order: tuple[int, ...] | None = None) -> torch.Tensor:
    """Unpack ``32 // bits`` unsigned fields per int32 along ``dim``; field i lands at position ``order[i]``."""
    per = 32 // bits
    p = packed.to(torch.int32).movedim(dim, -1)
    fields = torch.stack([(p >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], dim=-1)
    if order is not None:
        fields = fields[..., torch.argsort(torch.tensor(order))]
    return fields.reshape(*p.shape[:-1], -1).movedim(-1, dim)


def pack_int32(values: torch.Tensor, bits: int, dim: int, order: tuple[int, ...] | None = None) -> torch.Tensor:
    """Inverse of ``unpack_int32`` for unsigned ``values``, on their own device (int32 arithmetic throughout)."""
    per = 32 // bits
    v = values.to(torch.int32).movedim(dim, -1)
    v = v.reshape(*v.shape[:-1], -1, per)
    packed = torch.zeros(v.shape[:-1], dtype=torch.int32, device=v.device)
    for i in range(per):
        packed |= v[..., i if order is None else order[i]] << (bits * i)
    return packed.movedim(-1, dim)


def _canonical(scheme: Scheme, q: torch.Tensor, zeros: torch.Tensor | None, scales: torch.Tensor,
               g_idx: torch.Tensor | None = None) -> QuantizedWeight:
    """Build from unsigned codes ``q`` [N, K], zeros/scales [N, G]; recentre symmetric weights; sort act-order."""
    n, k = q.shape
    groups = scales.shape[1]
    if k % groups:
        raise QuantConfigError(f"in_features {k} is not a multiple of the {groups} quantization groups")
    gs = k // groups
    mid = 1 << (scheme.bits - 1)
    sym = zeros is None or bool((zeros == mid).all())
    if sym and zeros is not None:
        q, zeros = q - mid, None
    check_layout(scheme, gs if groups > 1 else -1, sym)
    perm = None
    if g_idx is not None and not torch.equal(g_idx.long(), torch.arange(k, device=g_idx.device) // gs):
        if not torch.equal(torch.bincount(g_idx.long(), minlength=groups), torch.full((groups,), gs, device=g_idx.device)):
            raise QuantConfigError("act-order g_idx with unequal group sizes cannot be sorted into contiguous groups")
        perm = torch.argsort(g_idx.long(), stable=True)
        q = q[:, perm]
    return QuantizedWeight(scheme, q.to(torch.int8), scales.float(), gs, None if zeros is None else zeros.float(), perm=perm)


def read_gptq(t: dict[str, torch.Tensor], scheme: Scheme, v1: bool = True) -> QuantizedWeight:
    """From GPTQ ``qweight``/``qzeros``/``scales``/``g_idx`` (v1: stored zero point is one less)."""
    bits = scheme.bits
    q = unpack_int32(t["qweight"], bits, 0).t()
    zeros = unpack_int32(t["qzeros"], bits, 1)[:, : q.shape[0]] + int(v1)
    return _canonical(scheme, q, zeros.t(), t["scales"].t(), t.get("g_idx"))


def read_awq(t: dict[str, torch.Tensor], scheme: Scheme) -> QuantizedWeight:
    """From AWQ GEMM ``qweight``/``qzeros``/``scales`` (columns interleaved in AWQ_ORDER)."""
    q = unpack_int32(t["qweight"], 4, 1, AWQ_ORDER).t()
    zeros = unpack_int32(t["qzeros"], 4, 1, AWQ_ORDER)
    return _canonical(scheme, q, zeros.t(), t["scales"].t())


def read_compressed(t: dict[str, torch.Tensor], scheme: Scheme) -> QuantizedWeight:
    """From compressed-tensors: ``weight_packed`` (int4) or 8-bit ``weight`` codes (int8 / fp8), + scales."""
    scale = t["weight_scale"]
    if "weight_packed" in t:
        n, k = (int(v) for v in t["weight_shape"])
        q = unpack_int32(t["weight_packed"], 4, 1)[:, :k]  # unsigned = signed + 8
        scale, zp = scale.reshape(n, -1), t.get("weight_zero_point")
        zeros = torch.full(scale.shape, 8.0) if zp is None else unpack_int32(zp, 4, 0)[:n].float()
        return _canonical(scheme, q, zeros, scale, t.get("weight_g_idx"))
    if "weight" not in t:
        raise QuantConfigError(f"a {scheme.name} compressed-tensors layer has weight_scale but neither weight_packed "
                               "nor 8-bit weight codes")
    weight = t["weight"]
    n, k = weight.shape
    scale = scale.float().reshape(-1, 1).expand(n, 1) if scale.numel() == 1 else scale.float().reshape(n, -1)
    if "weight_zero_point" in t and bool(t["weight_zero_point"].ne(0).any()):
        raise QuantConfigError("asymmetric 8-bit compressed-tensors weights are not supported")
    check_layout(scheme, -1 if scale.shape[1] == 1 else k // scale.shape[1], True)
    return QuantizedWeight(scheme, weight, scale.contiguous(), k)


def pack_gptq(qw: QuantizedWeight) -> dict[str, torch.Tensor]:
    """GPTQ v1 tensors of a 4-bit weight, as Marlin loaders expect (groups already contiguous)."""
    n, k = qw.shape
    q = qw.codes.to(torch.int32).cpu() + (8 if qw.zeros is None else 0)
    zeros = torch.full_like(qw.scales, 8.0) if qw.zeros is None else qw.zeros
    groups = qw.scales.shape[1]
    return {
        "qweight": pack_int32(q.t(), 4, 0),
        "qzeros": pack_int32((zeros.t().cpu() - 1).clamp(0, 15), 4, 1),
        "scales": qw.scales.t().contiguous(),
        "g_idx": torch.arange(k, dtype=torch.int32) // (k // groups),
    }
