"""specbench's Triton W4A16 kernel: ``y = x @ W.T`` with int4 weights dequantized in registers.

Packed layout: ``packed`` int32 [K/8, N] holds 8 consecutive input rows per int32 (row 8i+j at bits 4j, unsigned
nibbles; a symmetric code c is stored as c + 8), i.e. GPTQ's ``qweight`` layout, so each program reads whole
rows of N-contiguous int32. ``scales`` [G, N] and, with zero points, ``zeros`` [G, N] are in the activation
dtype (G = K / group size; one group per output channel for per-channel weights, whose scale is applied to
the accumulator at the end).

Two paths, chosen by the config (``KernelConfig``):
- ``gemv`` (M = 1): CUDA-core multiply-adds on a [BK/8, BN] float32 accumulator, one nibble plane at a time
  (each nibble moved into a float32 mantissa: 1 + q/16, so a weight costs a shift, a LOP3 and an FMA; zero
  point and scale are applied once per int32), reduced once at the end;
- ``dot`` (any M): the [BK, BN] tile is unpacked, dequantized to 16 bits and fed to ``tl.dot`` with a
  [BM, BK] activation tile.
Both split K over ``split`` programs; partial sums go to a float32 workspace and the last program of each
output tile (an atomic counter, reset by that program, so no zeroing kernel runs) sums them and writes ``y``.

In the dot path int4 -> float uses the exponent trick: ``nibble | 0x4B000000`` read as float32 is 2^23 + nibble
(``DEQ`` 0), or ``nibble | 0x4300`` read as bfloat16 is 128 + nibble (``DEQ`` 1, 16-bit arithmetic; fp16:
``0x6400`` = 1024), or (``DEQ`` 2) the exact 128 + nibble goes into ``tl.dot`` and zero point and scale are
applied to the [BM, BN] product: sum (q - z) s x = s (sum (128 + q) x - (128 + z) sum x), one group per BK tile.
``DEQ`` 3 splits the tile into its eight nibble planes (plane j: rows 8r + j) of exact q - z, made two values per
instruction (``int4_convert.planes``: off + q by LOP3, minus off + z by one packed subtraction; inline PTX on CUDA,
plain ops in the interpreter), each multiplied in its own ``tl.dot`` with x's columns 8r + j (strided loads),
so no plane is unpacked lane by lane or reshaped and no sum of x is needed; the scale goes on the product.
``DEQ`` 4 is ``DEQ`` 3 with the operands swapped: it computes y.T = W x.T, the weight planes [BN, BK/8] being
``tl.dot``'s first operand, which Hopper's wgmma can read from registers (the second operand, x.T, goes through
shared memory), so the dequantized tile is never written to shared memory; BM is then the MMA's narrow side.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.quantization import splitk
from specbench.quantization.splitk import TileConfig

try:
    import triton
    import triton.language as tl

    from specbench.quantization.int4_convert import planes
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None
else:
    from specbench.quantization.splitk import store_tile

DTYPES = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class KernelConfig(TileConfig):
    DEQ: int = 0  # dot path: 0 float32 exponent trick, 1 16-bit one, 2 16-bit + scale after the product,
    # 3 as 2 with two values per instruction (``int4_convert.planes``), one tl.dot per nibble plane, 4 as 3 with
    # the weight as the first operand (y.T = W x.T)


def check_shape(n: int, k: int, group: int, cfg: KernelConfig) -> str | None:
    """Why ``cfg`` cannot run an [N, K] weight with this group size (a constraint named), or None."""
    if k % 8:
        return f"in_features {k} must be a multiple of 8 (8 nibbles per int32)"
    if k % group:
        return f"in_features {k} must be a multiple of the group size {group}"
    per_split = k // cfg.split if k % cfg.split == 0 else 0
    if per_split == 0 or per_split % cfg.BK:
        return f"in_features {k} must split into {cfg.split} parts that are multiples of BK={cfg.BK}"
    if group != k and group % cfg.BK and cfg.BK % group:
        return f"group size {group} and BK={cfg.BK} must divide one another"
    if cfg.path == "dot" and cfg.DEQ >= 2 and group != k and cfg.BK > group:
        return f"DEQ={cfg.DEQ} scales the product once per tile, so BK={cfg.BK} must not exceed the group size {group}"
    if cfg.path == "dot" and cfg.DEQ >= 3 and cfg.BK < 128:
        return f"DEQ={cfg.DEQ} multiplies each nibble plane of BK/8 rows in one tl.dot (K >= 16), so BK={cfg.BK} must be >= 128"
    if cfg.path == "gemv" and cfg.BK % 8:
        return f"BK={cfg.BK} must be a multiple of 8"
    return None


if triton is not None:

    @triton.jit
    def _nibbles(packed, BK8: tl.constexpr, BN: tl.constexpr):
        """[BK/8, BN] int32 -> [BK, BN] int32 in 0..15 (row 8i+j from bits 4j of row i)."""
        shifts = tl.arange(0, 8) * 4
        q = (packed[:, None, :] >> shifts[None, :, None]) & 0xF
        return tl.reshape(q, (BK8 * 8, BN))

    @triton.jit
    def _group_rows(t, SG: tl.constexpr, GROWS: tl.constexpr, BN: tl.constexpr):
        """[SG, BN] per-group values repeated over each group's GROWS rows -> [SG * GROWS, BN]."""
        return tl.reshape(tl.broadcast_to(t[:, None, :], (SG, GROWS, BN)), (SG * GROWS, BN))

    @triton.jit
    def _offset16(q, sixteen: tl.constexpr):
        """Nibbles ``q`` as exact 16-bit floats off + q (bf16: 128 + q from 0x4300, fp16: 1024 + q from 0x6400)."""
        if sixteen == tl.bfloat16:
            return (q | 0x4300).to(tl.int16).to(tl.bfloat16, bitcast=True), 128.0
        else:
            return (q | 0x6400).to(tl.int16).to(tl.float16, bitcast=True), 1024.0

    @triton.jit
    def _x_planes(x_ptr, rows, row_ok, k0, stride_xm, BM: tl.constexpr, BK: tl.constexpr):
        """x's [BM, BK] tile from column k0, one contiguous load, as eight [BM, BK/8] tiles: tile j = columns 8r + j
        (the inputs of nibble plane j), split in registers."""
        x = tl.load(x_ptr + rows[:, None] * stride_xm + (k0 + tl.arange(0, BK))[None, :], mask=row_ok[:, None],
                    other=0.0)
        even, odd = tl.split(tl.reshape(x, (BM, BK // 8, 2, 2, 2)))  # j = 4 b2 + 2 b1 + b0, split on b0, b1, b2
        e0, e1 = tl.split(even)
        o0, o1 = tl.split(odd)
        x0, x4 = tl.split(e0)
        x2, x6 = tl.split(e1)
        x1, x5 = tl.split(o0)
        x3, x7 = tl.split(o1)
        return x0, x1, x2, x3, x4, x5, x6, x7

    @triton.jit(do_not_specialize=["M"])
    def w4a16_kernel(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, part_ptr, count_ptr, M, N, K, stride_xm, stride_ym,
                     GROUP: tl.constexpr, CHANNEL: tl.constexpr, HAS_ZEROS: tl.constexpr, SPLIT_K: tl.constexpr,
                     GEMV: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DEQ: tl.constexpr,
                     ASM: tl.constexpr):
        pid_n, pid_m, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        cols = pid_n * BN + tl.arange(0, BN)
        col_ok = cols < N
        rows = pid_m * BM + tl.arange(0, BM)
        row_ok = rows < M
        split = tl.num_programs(2)
        k_len = K // split
        k_begin = pid_k * k_len
        BK8: tl.constexpr = BK // 8
        # groups a BK tile spans (SG) and, per group, its rows of the tile (GK)
        SG: tl.constexpr = 1 if CHANNEL else (BK // GROUP if BK >= GROUP else 1)
        GK: tl.constexpr = BK // SG
        sixteen = x_ptr.dtype.element_ty
        if CHANNEL:
            s_chan = tl.load(s_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
            if HAS_ZEROS:
                z_chan = tl.load(z_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
            else:
                z_chan = tl.full((1, BN), 8.0, tl.float32)
        if GEMV:
            acc2 = tl.zeros((BK8, BN), dtype=tl.float32)
        elif DEQ == 4:
            acc = tl.zeros((BN, BM), dtype=tl.float32)  # y.T
        else:
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            xtot = tl.zeros((BM,), dtype=tl.float32)
        prow = tl.arange(0, BK8)
        for k0 in range(k_begin, k_begin + k_len, BK):
            if DEQ == 4 and not GEMV:  # [BN, BK/8], the weight as the first operand
                packed = tl.load(w_ptr + (k0 // 8 + prow)[None, :].to(tl.int64) * N + cols[:, None],
                                 mask=col_ok[:, None], other=0, eviction_policy="evict_first")
            else:
                packed = tl.load(w_ptr + (k0 // 8 + prow)[:, None].to(tl.int64) * N + cols[None, :],
                                 mask=col_ok[None, :], other=0, eviction_policy="evict_first")
            if CHANNEL:
                s = tl.full((1, BN), 1.0, tl.float32)
                z = z_chan
            else:
                g = k0 // GROUP + tl.arange(0, SG)
                s = tl.load(s_ptr + g[:, None] * N + cols[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
                if HAS_ZEROS:
                    z = tl.load(z_ptr + g[:, None] * N + cols[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
                else:
                    z = tl.full((SG, BN), 8.0, tl.float32)
            if GEMV:
                # nibble plane j (rows 8i+j) as 1 + q/16: its bits shifted into float32's mantissa under 1.0's
                # exponent (shift + one LOP3 + FMA per weight); t = sum_j (1 + q/16) x, so that
                # sum_j (q - z) x = 16 t - (16 + z) sum_j x, scaled once per int32 row
                t = tl.zeros((BK8, BN), dtype=tl.float32)
                xs = tl.zeros((BK8,), dtype=tl.float32)
                for j in tl.static_range(8):
                    if j <= 4:
                        moved = packed << (19 - 4 * j)
                    else:
                        moved = packed >> (4 * j - 19)
                    f = ((moved & 0x780000) | 0x3F800000).to(tl.float32, bitcast=True)
                    xj = tl.load(x_ptr + k0 + prow * 8 + j).to(tl.float32)
                    t += f * xj[:, None]
                    xs += xj
                s_rows = _group_rows(s, SG, GK // 8, BN)
                z_rows = _group_rows(z, SG, GK // 8, BN)
                acc2 += s_rows * (16.0 * t - (16.0 + z_rows) * xs[:, None])
            elif DEQ == 3:  # eight plane dots on the exact q - z, made two per instruction on CUDA
                zoff = (z + _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]).to(sixteen)
                p0, p1, p2, p3, p4, p5, p6, p7 = planes(packed, zoff, sixteen, ASM)
                x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes(x_ptr, rows, row_ok, k0, stride_xm, BM, BK)
                part = tl.dot(x0, p0)
                part = tl.dot(x1, p1, part)
                part = tl.dot(x2, p2, part)
                part = tl.dot(x3, p3, part)
                part = tl.dot(x4, p4, part)
                part = tl.dot(x5, p5, part)
                part = tl.dot(x6, p6, part)
                part = tl.dot(x7, p7, part)
                acc += part if CHANNEL else s * part
            elif DEQ == 4:  # the same plane dots on y.T: s and z are one group (SG = 1) as columns [BN, 1]
                zoff = (tl.reshape(z, (BN, 1)) + _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]).to(sixteen)
                p0, p1, p2, p3, p4, p5, p6, p7 = planes(packed, zoff, sixteen, ASM)
                x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes(x_ptr, rows, row_ok, k0, stride_xm, BM, BK)
                part = tl.dot(p0, tl.trans(x0))
                part = tl.dot(p1, tl.trans(x1), part)
                part = tl.dot(p2, tl.trans(x2), part)
                part = tl.dot(p3, tl.trans(x3), part)
                part = tl.dot(p4, tl.trans(x4), part)
                part = tl.dot(p5, tl.trans(x5), part)
                part = tl.dot(p6, tl.trans(x6), part)
                part = tl.dot(p7, tl.trans(x7), part)
                acc += part if CHANNEL else tl.reshape(s, (BN, 1)) * part
            else:
                q = _nibbles(packed, BK8, BN)
                xk = k0 + tl.arange(0, BK)
                x = tl.load(x_ptr + rows[:, None] * stride_xm + xk[None, :], mask=row_ok[:, None], other=0.0)
                if DEQ == 0:
                    f = (q | 0x4B000000).to(tl.float32, bitcast=True) - 8388608.0
                    w = ((f - _group_rows(z, SG, GK, BN)) * _group_rows(s, SG, GK, BN)).to(sixteen)
                    acc += tl.dot(x, w)
                else:
                    base, off = _offset16(q, sixteen)
                    if DEQ == 1:
                        zz = _group_rows((z + off).to(sixteen), SG, GK, BN)
                        acc += tl.dot(x, (base - zz) * _group_rows(s.to(sixteen), SG, GK, BN))
                    else:  # the product of the exact off + q; zero point and scale on the [BM, BN] result
                        part = tl.dot(x, base)
                        xsum = tl.sum(x.to(tl.float32), axis=1)
                        if CHANNEL:
                            acc += part
                            xtot += xsum
                        else:
                            acc += s * (part - (z + off) * xsum[:, None])
        if GEMV:
            acc = tl.sum(acc2, axis=0)[None, :]
        elif DEQ == 4:
            acc = tl.trans(acc)
        if CHANNEL:
            if DEQ == 2 and not GEMV:
                acc -= (z_chan + _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]) * xtot[:, None]
            acc = acc * s_chan[None, :]
        store_tile(acc, y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLIT_K)


def counters_needed(n: int, m: int, cfg: KernelConfig) -> int:
    """Counter slots a split-K launch uses: one per output tile."""
    return splitk.counters_needed(n, m, cfg.BN, 1 if cfg.path == "gemv" else cfg.BM)


def launch(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor | None,
           counters: torch.Tensor, group: int, cfg: KernelConfig) -> torch.Tensor:
    """``x`` [M, K] (16-bit) times the packed [N, K] int4 weight -> [M, N]; ``counters`` int32 zeros (>= the
    ``counters_needed`` slots when ``cfg.split`` > 1) are left zero again."""
    m, k = x.shape
    n = packed.shape[1]
    if cfg.path == "gemv" and m != 1:
        raise ValueError(f"the gemv path takes one row, not M={m}")
    bm = 1 if cfg.path == "gemv" else cfg.BM
    if m == 0:
        return torch.empty(m, n, dtype=x.dtype, device=x.device)
    y, part = splitk.outputs(m, n, x.dtype, x.device, cfg.split, cfg.BN, bm, counters)
    grid = (triton.cdiv(n, cfg.BN), triton.cdiv(m, bm), cfg.split)
    w4a16_kernel[grid](
        x, packed, scales, scales if zeros is None else zeros, y, part, counters, m, n, k, x.stride(0), y.stride(0),
        GROUP=cfg.BK if group == k else group, CHANNEL=group == k, HAS_ZEROS=zeros is not None,
        SPLIT_K=cfg.split > 1, GEMV=cfg.path == "gemv",
        BM=bm, BN=cfg.BN, BK=cfg.BK, DEQ=cfg.DEQ, ASM=x.is_cuda, num_warps=cfg.warps, num_stages=cfg.stages,
    )
    return y
