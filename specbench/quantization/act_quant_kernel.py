"""Per-token dynamic int8 quantization of activations in one Triton kernel, as ``qweight.fake_quant_act`` defines it.

For each row: ``s = max(|x|) / 127`` (at least float32's smallest normal), ``q = round(x / s)`` (half to even,
like ``torch.round``) clamped to [-127, 127]. Returns int8 ``q`` [M, K] and float32 ``s`` [M]. One program per
row; rows of up to ``ONE_PASS_MAX`` elements are read once and kept in registers, longer ones are read twice.
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None

ONE_PASS_MAX = 32768


if triton is not None:
    TINY = tl.constexpr(torch.finfo(torch.float32).tiny)
    ROUND = tl.constexpr(12582912.0)  # 1.5 * 2^23: (v + ROUND) - ROUND rounds float32 |v| < 2^22, ties to even

    @triton.jit
    def _quantize(x, s):
        v = tl.minimum(tl.maximum(tl.math.div_rn(x, s), -127.0), 127.0)
        return ((v + ROUND) - ROUND).to(tl.int8)

    @triton.jit
    def act_quant_kernel(x_ptr, q_ptr, s_ptr, K, stride_xm, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        x_row, q_row = x_ptr + row * stride_xm, q_ptr + row * K
        if ONE_PASS:
            x = tl.load(x_row + offs, mask=offs < K, other=0.0).to(tl.float32)
            s = tl.maximum(tl.max(tl.abs(x), axis=0) / 127.0, TINY)
            tl.store(q_row + offs, _quantize(x, s), mask=offs < K)
        else:
            amax = tl.zeros((BLOCK,), dtype=tl.float32)
            for k0 in range(0, K, BLOCK):
                x = tl.load(x_row + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
                amax = tl.maximum(amax, tl.abs(x))
            s = tl.maximum(tl.max(amax, axis=0) / 127.0, TINY)
            for k0 in range(0, K, BLOCK):
                x = tl.load(x_row + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
                tl.store(q_row + k0 + offs, _quantize(x, s), mask=k0 + offs < K)
        tl.store(s_ptr + row, s)


def quantize_per_token(x: torch.Tensor, block: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 codes [M, K], float32 scales [M]) of ``x`` [M, K] (K-contiguous rows); ``block`` caps the elements
    read per step (default: the whole row up to ``ONE_PASS_MAX``)."""
    m, k = x.shape
    if x.stride(1) != 1:
        raise ValueError("per-token quantization needs K-contiguous rows")
    q = torch.empty(m, k, dtype=torch.int8, device=x.device)
    s = torch.empty(m, dtype=torch.float32, device=x.device)
    if m == 0:
        return q, s
    block = min(block or ONE_PASS_MAX, triton.next_power_of_2(k))
    warps = max(1, min(16, block // 1024))
    act_quant_kernel[(m,)](x, q, s, k, x.stride(0), BLOCK=block, ONE_PASS=block >= k, num_warps=warps)
    return q, s
