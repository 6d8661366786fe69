"""Per-token dynamic int8 quantization of activations in one Triton kernel, as ``qweight.fake_quant_act`` defines it.

For each row: ``s = max(|x|) / 127`` (at least float32's smallest normal), ``q = round(x / s)`` (half to even,
like ``torch.round``) clamped to [-127, 127]. Returns int8 ``q`` [M, K] and float32 ``s`` [M].

A row is cut into ``parts`` chunks of whole blocks, one program each, so that a few rows still occupy many
multiprocessors (one program per row left one SM quantizing a 28672-wide row for 7 µs). Every program of a row reads
the whole row for its maximum and quantizes only its chunk. Both passes are unrolled over the row's blocks (their
count is a compile-time constant), so all of a pass's loads are in flight together: a loop over the blocks waited
for each load in turn (28672 inputs: 7.85 -> 5.95 µs at M = 64 in the even-odd order the 4-bit kernels then read,
docs/benchmarks.md, session 24). The quotient x / s
costs a multiply and two FMAs: with r = 1 / s correctly rounded, q0 = x r and the exact residual x - q0 s,
q0 + r (x - q0 s) rounds to the correctly rounded x / s (Markstein), so the codes are those of a true division.

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

BLOCK = 4096  # elements a program reads per step (2048 and 1024 measured slower on the H200)
PROGRAMS = 128  # about one program per multiprocessor (M = 64, 28672-wide rows in 2 chunks: 5.0 µs, in 4: 6.0)
if PDL:
    from specbench.quantization.pdl import gdc_launch_dependents


if triton is not None:
    TINY = tl.constexpr(torch.finfo(torch.float32).tiny)
    ROUND = tl.constexpr(12582912.0)  # 1.5 * 2^23: (v + ROUND) - ROUND rounds float32 |v| < 2^22, ties to even

    @triton.jit
    def _quantize(x, s, r):
        """int8 codes of ``x`` at scale ``s`` (``r``: 1 / s correctly rounded): round(x / s) clamped to ±127."""
        q0 = x * r
        v = tl.fma(tl.fma(-q0, s, x), r, q0)  # x / s correctly rounded
        v = tl.minimum(tl.maximum(v, -127.0), 127.0)
        return ((v + ROUND) - ROUND).to(tl.int8)

    @triton.jit
    def _row_block(x_row, k0, K, BLOCK: tl.constexpr):
        """The row's BLOCK inputs from k0 as float32 (0 past K), in one coalesced load."""
        offs = k0 + tl.arange(0, BLOCK)
        return tl.load(x_row + offs, mask=offs < K, other=0.0).to(tl.float32)

    @triton.jit
    def act_quant_kernel(x_ptr, q_ptr, s_ptr, K, stride_xm, BLOCK: tl.constexpr, BLOCKS: tl.constexpr,
                         CHUNK_BLOCKS: tl.constexpr, LAUNCH_NEXT: tl.constexpr):
        if LAUNCH_NEXT:
            gdc_launch_dependents()
        row, part = tl.program_id(0).to(tl.int64), tl.program_id(1)
        x_row, q_row = x_ptr + row * stride_xm, q_ptr + row * K
        amax = tl.zeros((BLOCK,), dtype=tl.float32)
        for b in tl.static_range(BLOCKS):  # unrolled, so every block's load is in flight at once
            amax = tl.maximum(amax, tl.abs(_row_block(x_row, b * BLOCK, K, BLOCK)))
        s = tl.maximum(tl.max(amax, axis=0) / 127.0, TINY)
        r = tl.math.div_rn(1.0, s)
        for b in tl.static_range(BLOCKS):  # this program's chunk of CHUNK_BLOCKS blocks, read again (from L1/L2)
            if b // CHUNK_BLOCKS == part:
                x = _row_block(x_row, b * BLOCK, K, BLOCK)
                offs = b * BLOCK + tl.arange(0, BLOCK)
                tl.store(q_row + offs, _quantize(x, s, r), mask=offs < K)
        if part == 0:
            tl.store(s_ptr + row, s)


def parts_per_row(m: int, k: int, block: int) -> int:
    """Programs per row: enough that M rows give about ``PROGRAMS``, each with at least one block."""
    return max(1, min(-(-PROGRAMS // m), -(-k // block)))


def quantize_per_token(x: torch.Tensor, block: int | None = None,
                       parts: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 codes [M, K], float32 scales [M]) of ``x`` [M, K] (K-contiguous rows); ``block`` caps the elements
    read per step (default ``BLOCK``), ``parts`` sets the programs per row (default ``parts_per_row``)."""
    m, k = x.shape
    if x.stride(1) != 1:
        raise ValueError("per-token quantization needs K-contiguous rows")
    q = torch.empty(m, k, dtype=torch.int8, device=x.device)
    s = torch.empty(m, dtype=torch.float32, device=x.device)
    if m == 0:
        return q, s
    block = min(block or BLOCK, max(2, triton.next_power_of_2(k)))
    blocks = -(-k // block)
    chunk_blocks = -(-blocks // (parts or parts_per_row(m, k, block)))  # whole blocks: every chunk starts even
    act_quant_kernel[(m, -(-blocks // chunk_blocks))](
        x, q, s, k, x.stride(0), BLOCK=block, BLOCKS=blocks, CHUNK_BLOCKS=chunk_blocks, LAUNCH_NEXT=PDL,
        num_warps=max(1, min(8, block // 512)))
    return q, s
