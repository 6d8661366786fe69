"""Per-token dynamic int8 quantization of activations in one Triton kernel, as ``qweight.fake_quant_act`` defines it.

For each row: ``s = max(|x|) / 127`` (at least float32's smallest normal), ``q = round(x / s)`` (half to even,
like ``torch.round``) clamped to [-127, 127]. Returns int8 ``q`` [M, K] and float32 ``s`` [M]; with ``even_odd``
each row holds its even inputs then its odd ones (``q[2i]`` at i, ``q[2i + 1]`` at K/2 + i), the order the 4-bit
gemv reads. One program per row; rows of up to ``ONE_PASS_MAX`` elements are read once and kept in registers,
longer ones are read twice.

With programmatic dependent launch (``pdl.PDL``) the kernel lets the GEMM launched after it start at once: that
GEMM (``int8_kernel``) streams weights and waits (``gdc_wait``) only before it reads the codes.
"""

from __future__ import annotations

import torch

from specbench.quantization.pdl import PDL

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None

ONE_PASS_MAX = 32768
if PDL:
    from specbench.quantization.pdl import gdc_launch_dependents


if triton is not None:
    TINY = tl.constexpr(torch.finfo(torch.float32).tiny)
    ROUND = tl.constexpr(12582912.0)  # 1.5 * 2^23: (v + ROUND) - ROUND rounds float32 |v| < 2^22, ties to even

    @triton.jit
    def _quantize(x, s):
        v = tl.minimum(tl.maximum(tl.math.div_rn(x, s), -127.0), 127.0)
        return ((v + ROUND) - ROUND).to(tl.int8)

    @triton.jit
    def _dest(idx, K, EVEN_ODD: tl.constexpr):
        """Where input ``idx`` of a row goes: itself, or in even-odd order."""
        if EVEN_ODD:
            return (idx % 2) * (K // 2) + idx // 2
        else:
            return idx

    @triton.jit
    def act_quant_kernel(x_ptr, q_ptr, s_ptr, K, stride_xm, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr,
                         EVEN_ODD: tl.constexpr, LAUNCH_NEXT: tl.constexpr):
        if LAUNCH_NEXT:
            gdc_launch_dependents()
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        x_row, q_row = x_ptr + row * stride_xm, q_ptr + row * K
        if ONE_PASS:
            x = tl.load(x_row + offs, mask=offs < K, other=0.0).to(tl.float32)
            s = tl.maximum(tl.max(tl.abs(x), axis=0) / 127.0, TINY)
            tl.store(q_row + _dest(offs, K, EVEN_ODD), _quantize(x, s), mask=offs < K)
        else:
            amax = tl.zeros((BLOCK,), dtype=tl.float32)
            for k0 in range(0, K, BLOCK):
                x = tl.load(x_row + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
                amax = tl.maximum(amax, tl.abs(x))
            s = tl.maximum(tl.max(amax, axis=0) / 127.0, TINY)
            for k0 in range(0, K, BLOCK):
                x = tl.load(x_row + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
                tl.store(q_row + _dest(k0 + offs, K, EVEN_ODD), _quantize(x, s), mask=k0 + offs < K)
        tl.store(s_ptr + row, s)


def quantize_per_token(x: torch.Tensor, block: int | None = None,
                       even_odd: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 codes [M, K], float32 scales [M]) of ``x`` [M, K] (K-contiguous rows); ``block`` caps the elements
    read per step (default: the whole row up to ``ONE_PASS_MAX``)."""
    m, k = x.shape
    if x.stride(1) != 1:
        raise ValueError("per-token quantization needs K-contiguous rows")
    if even_odd and k % 2:
        raise ValueError(f"the even-odd order needs an even row length, not {k}")
    q = torch.empty(m, k, dtype=torch.int8, device=x.device)
    s = torch.empty(m, dtype=torch.float32, device=x.device)
    if m == 0:
        return q, s
    block = min(block or ONE_PASS_MAX, triton.next_power_of_2(k))
    warps = max(1, min(16, block // 1024))
    act_quant_kernel[(m,)](x, q, s, k, x.stride(0), BLOCK=block, ONE_PASS=block >= k, EVEN_ODD=even_odd,
                           LAUNCH_NEXT=PDL, num_warps=warps)
    return q, s
