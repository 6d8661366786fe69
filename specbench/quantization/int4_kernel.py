"""specbench's Triton W4A16 kernel: ``y = x @ W.T`` with int4 weights dequantized in registers.

Packed layout: ``packed`` holds 8 input rows per int32 (unsigned nibbles; a symmetric code c is stored as c + 8)
in blocks of WB word rows (``blocked``: int32 [K/8/WB, N, WB], WB = 16 where K/8 allows): the WB words of one
column are contiguous and the columns of a block follow one another, so a [BN, WB] tile is one contiguous run and
the joined-plane paths, whose threads hold runs of word rows, copy it 16 bytes at a time (an N-major [K/8, N] layout
gave them 4-byte copies; a plain K-major one, 64-byte runs per column, slowed M = 1). The rows are interleaved in
blocks of P = min(128, group size) inputs (``block_rows``): word 16b + r of a 128-block holds rows 128b + 16j + r at
bits 4j, so nibble plane j of a word row is 16 consecutive inputs, which the plane paths multiply with a contiguous
[BM, 16] slice of x (with GPTQ's order, 8i + j, that slice is strided); ``kernel_order`` gives the permutation
and the backend's ``pack`` applies it at load time. ``scales`` [G, N] and, with zero points, ``zeros`` [G, N]
are in the activation dtype (G = K / group size; one group per output channel for per-channel weights, whose
scale is applied to the accumulator at the end).

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
``DEQ`` 3 splits the tile into its eight nibble planes (plane j: one input per word row) of exact q - z, made two
values per instruction (``int4_convert.planes``: off + q by LOP3, minus off + z by one packed subtraction; inline
PTX on CUDA, plain ops in the interpreter), each multiplied in its own ``tl.dot`` with x's matching columns (16
contiguous per 128-block), so no plane is unpacked lane by lane or reshaped and no sum of x is needed; the scale
goes on the product. ``DEQ`` 4 is ``DEQ`` 3 with the operands swapped: it computes y.T = W x.T, the weight planes
[BN, BK/8] being ``tl.dot``'s first operand, which Hopper's wgmma reads from registers (x.T, the second operand,
is copied to shared memory asynchronously), so the dequantized tile never goes through shared memory; BM is
then the MMA's narrow side. Triton waits for each register-operand wgmma before the next, so ``DEQ`` 5 joins the
eight planes back into input order (``_joined``: in registers, each thread keeps its values) and multiplies them in
one ``tl.dot`` with one contiguous x tile: one wait per tile, not one per plane. ``DEQ`` 6 is ``DEQ`` 5 on the
planes of the exact off + q (``planes`` with ``SUBTRACT=False``: a LOP3 per two values, no subtraction); the zero
point comes off the float32 product as in ``DEQ`` 2, through the sum of x's tile.
``DEQ`` 7 (grouped weights, M = 1 alone) takes the zero point and the scale off the loop: of the MMA's BM
columns, which one row of x would leave empty but one, each holds one group of the program's K range (x's tile goes
into column c for its c-th group, the other columns zero), so the [BN, BM] accumulator collects each group's sum of
(off + q) x apart, with no per-tile work on the product and no scale or zero-point loads in the loop; after it, each
column loses (off + z) times its group's sum of x and takes its scale, and the columns add up to the one row (a
program's K range must be whole groups, at most BM of them). sm_90 instructions per K step (``tools.int4_sass``,
Triton 3.6) at BN 128 / 256, BM 16: ``DEQ`` 5 327 / 606, 6 338 / 564, 7 259 / 462.
``DEQ`` 9 (grouped weights, any M) is ``DEQ`` 5 with the group's scale put on the planes in 16 bits
(``int4_convert.scaled_planes``: one more packed instruction per two values, each weight rounded once), so the tile's
product needs no scaling. The scales (and zero points) are read as 32-bit words holding two columns each: Triton's
pipeline leaves out 16-bit loads, and a value loaded outside it pins the planes' layout, so the tile went through
shared memory to the wgmma (641 instructions per K step at BN 128, BM 16, against 418).
Every dot path keeps minus the sum and subtracts each K step's product (a scaled one is added times the negated
scale, which spares a negation per element), negated once after the loop (negation is exact: the result is that of
adding the product after the dot). An added product (``acc += tl.dot(a, b)``) is folded by Triton into the dot's
accumulator, and Triton 3.6 then starts the next K step with up to seven of the tile's wgmmas in flight. When the
weight is the register operand, ptxas before CUDA 13.3 lets that step's dequantization overwrite the registers those
wgmmas have yet to read (``tools.wgmma_hazards`` finds the writes in the SASS; docs/quantization.md). A subtracted
product is waited for, so no register is reused early.
``DEQ`` 6 and 9 run with 4 warps only: with 8 (two warp groups) three configs gave wrong results on the H200, in
the builds that had those early writes.
``DEQ`` 4-6 on grouped weights scale each tile's product after its dot, which leaves their scale loads out of Triton's
pipeline; with ``scales_ahead`` each K step loads the next tile's scales (and zero points) into registers itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench import wgmma_guard
from specbench.quantization import splitk
from specbench.quantization.splitk import TileConfig

try:
    import triton
    import triton.language as tl

    from specbench.quantization.int4_convert import planes, scaled_planes
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None
else:
    from specbench.quantization.splitk import k_range, store_tile

DTYPES = (torch.bfloat16, torch.float16)
GROUP_COLUMNS = 7  # the DEQ mode with one group per MMA column (M = 1, grouped weights)
RETIRED = {8: "DEQ 8 (DEQ 7 with the product added) let ptxas before CUDA 13.3 overwrite the registers of wgmmas still "
              "in flight (docs/quantization.md); DEQ 7 is the same tile without that"}
SCALED_PLANES = 9  # the DEQ mode that scales the weight tile before the dot (grouped weights, any M)
WARP_GROUP_LIMITED = (6, 9)  # modes that gave wrong results with 8 warps before the fix (check_shape)


@dataclass(frozen=True)
class KernelConfig(TileConfig):
    DEQ: int = 0  # dot path: 0 float32 exponent trick, 1 16-bit one, 2 16-bit + scale after the product,
    # 3 as 2 with two values per instruction (``int4_convert.planes``), one tl.dot per nibble plane, 4 as 3 with
    # the weight as the first operand (y.T = W x.T), 5 as 4 with the planes joined into one tile and one tl.dot,
    # 6 as 5 on the planes of off + q (no subtraction), 7 as 6 with one group per MMA column (M = 1), 9 as 5 with
    # the planes scaled in 16 bits (any M); 8 is retired (``RETIRED``)
    scales_ahead: bool = False  # DEQ 4-6 with groups: each K step loads the next tile's scales (and zero points)
    # itself, a step before they are used; otherwise the step that uses them loads them (docs/quantization.md)

    @property
    def one_row(self) -> bool:
        return self.path == "gemv" or (self.path == "dot" and self.DEQ == GROUP_COLUMNS)


def odd_fma(cfg: KernelConfig) -> bool:
    """Whether fp16's odd nibble planes are made by one fma (``int4_convert.pair_asm``): at BM >= 32, and at BM 16
    where each warp group holds at least 128 weight rows (BN >= 32 x warps). Measured on an H100 (docs/benchmarks.md,
    session 45), it made the BM 16 tiles of 128-256 rows a warp group 0.4-2.1 % faster and those of 64 rows 9-15 %
    slower."""
    return cfg.path == "dot" and (cfg.BM >= 32 or cfg.BN >= 32 * cfg.warps)


def block_rows(k: int, group: int) -> int:
    """P, the inputs per interleaved block of the packing: 128, or the group size below 128."""
    return min(128, group, k)


def kernel_order(k: int, group: int) -> torch.Tensor:
    """The input row held by each packed position: packed row 8i + j (word i, bits 4j) holds input
    ``kernel_order(k, group)[8i + j]``."""
    p = block_rows(k, group)
    pos = torch.arange(k)
    word, nibble = pos // 8, pos % 8
    per = p // 8  # words per block
    return (word // per) * p + nibble * per + word % per


def word_block(k: int) -> int:
    """WB, the word rows per block of the storage: 16, or the largest power of two dividing K/8 below that."""
    words = k // 8
    return words & -words if words % 16 else 16


def blocked(packed: torch.Tensor) -> torch.Tensor:
    """[K/8, N] int32 words -> the kernel's storage [K/8/WB, N, WB]."""
    words, n = packed.shape
    wb = word_block(8 * words)
    return packed.reshape(words // wb, wb, n).permute(0, 2, 1).contiguous()


def unblocked(packed: torch.Tensor) -> torch.Tensor:
    """The kernel's storage -> [K/8, N] int32 words."""
    return packed.permute(0, 2, 1).reshape(-1, packed.shape[1])


def k_unit(group: int, cfg: KernelConfig) -> int:
    """The inputs of one unit of K's split: a group where ``DEQ`` 7 keeps groups in MMA columns, else BK."""
    return group if cfg.path == "dot" and cfg.DEQ == GROUP_COLUMNS and group > cfg.BK else cfg.BK


def check_shape(n: int, k: int, group: int, cfg: KernelConfig) -> str | None:
    """Why ``cfg`` cannot run an [N, K] weight with this group size (a constraint named), or None."""
    if cfg.path == "dot" and cfg.DEQ in RETIRED:
        return RETIRED[cfg.DEQ]
    if k % group:
        return f"in_features {k} must be a multiple of the group size {group}"
    p = block_rows(k, group)
    if p % 8:
        return (f"the packing's block of {p} inputs (128 or a smaller group size) must be a multiple of 8 "
                "(8 nibbles per int32)")
    if p & (p - 1):
        return (f"group size {group} gives packing blocks of {p} inputs, and the kernel's tiles need a power of two: "
                "use a power-of-two group size (32, 64, 128) or per-channel scales")
    if k % p:
        return f"in_features {k} must be a multiple of {p} (the packing's block of inputs)"
    if any(b & (b - 1) for b in (cfg.BN, cfg.BK, cfg.BM)):
        return f"BN={cfg.BN}, BK={cfg.BK} and BM={cfg.BM} must be powers of two"
    if cfg.BK % p:
        return f"BK={cfg.BK} must be a multiple of the packing's block of {p} inputs"
    reason = splitk.check_split(k, k_unit(group, cfg), cfg)
    if reason:
        return reason
    if group != k and group % cfg.BK and cfg.BK % group:
        return f"group size {group} and BK={cfg.BK} must divide one another"
    if cfg.path == "dot" and cfg.DEQ >= 2 and group != k and cfg.BK > group:
        return f"DEQ={cfg.DEQ} scales the product once per tile, so BK={cfg.BK} must not exceed the group size {group}"
    if cfg.path == "dot" and cfg.DEQ >= 3 and cfg.BK < 128:
        return f"DEQ={cfg.DEQ} multiplies each nibble plane of BK/8 rows in one tl.dot (K >= 16), so BK={cfg.BK} must be >= 128"
    if cfg.path == "dot" and cfg.DEQ == SCALED_PLANES and group == k:
        return f"DEQ={cfg.DEQ} scales each group's planes; per-channel weights are scaled once after the loop (DEQ 5)"
    if cfg.path == "dot" and cfg.DEQ == SCALED_PLANES and n % 2:
        return f"DEQ={cfg.DEQ} reads scales in pairs of columns, so out_features {n} must be even"
    if cfg.scales_ahead and not (cfg.path == "dot" and 4 <= cfg.DEQ <= 6 and group != k):
        return (f"scales_ahead loads each tile's group scales a K step early, as DEQ 4-6 with grouped weights do, "
                f"not path {cfg.path}, DEQ={cfg.DEQ} with {'per-channel weights' if group == k else f'group {group}'}")
    if cfg.path == "dot" and cfg.DEQ in WARP_GROUP_LIMITED and cfg.warps > 4:
        return (f"DEQ={cfg.DEQ} runs with 4 warps, not {cfg.warps}: with two warp groups it gave wrong results on the "
                "H200 (Triton 3.6, before the products were subtracted; kept until that is checked on a GPU: "
                "docs/quantization.md)")
    if cfg.path == "dot" and cfg.DEQ == GROUP_COLUMNS and group == k:
        return f"DEQ={cfg.DEQ} keeps groups apart; per-channel weights have one (DEQ 5 or 6 scale them once)"
    if cfg.path == "dot" and cfg.DEQ == GROUP_COLUMNS and (-(-k // group // cfg.split) > cfg.BM
                                                            or group & (group - 1)):
        return (f"DEQ={cfg.DEQ} keeps each group of a program's K range in its own MMA column: each split of K={k} "
                f"(split={cfg.split}) must be whole groups of a power-of-two size ({group}), at most BM={cfg.BM} of them")
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
    def _inputs(k0, prow, j, P: tl.constexpr):
        """The input of nibble j of word rows ``prow`` of the tile at k0 (blocks of P inputs, P/8 words each)."""
        return k0 + (prow // (P // 8)) * P + j * (P // 8) + prow % (P // 8)

    @triton.jit
    def _plane_inputs(k0, BK8: tl.constexpr, j: tl.constexpr, P: tl.constexpr):
        """The inputs of nibble plane j of the tile at k0: runs of P/8 consecutive inputs, which the hints tell
        the compiler so that it vectorizes their loads."""
        idx = _inputs(k0, tl.arange(0, BK8), j, P)
        if (P // 8) & (P // 8 - 1) == 0:  # hints take powers of two (a per-channel K such as 96 gets none)
            idx = tl.max_contiguous(tl.multiple_of(idx, P // 8), P // 8)
        return idx

    @triton.jit
    def _word_offsets(words, cols, N, WB: tl.constexpr, TRANS: tl.constexpr):
        """Offsets of word rows ``words`` of columns ``cols`` in the blocked storage: [BN, BK/8] when TRANS, else
        [BK/8, BN]."""
        w = words.to(tl.int64)
        if TRANS:
            return (w // WB * WB * N + w % WB)[None, :] + cols[:, None] * WB
        else:
            return (w // WB * WB * N + w % WB)[:, None] + cols[None, :] * WB

    @triton.jit
    def _joined(p, BN: tl.constexpr, BK: tl.constexpr, P: tl.constexpr):
        """The eight [BN, BK/8] planes as one [BN, BK] tile in input order (input P b + (P/8) j + r of the tile is
        plane j's word row (P/8) b + r)."""
        t = tl.join(tl.join(tl.join(p[0], p[1]), tl.join(p[2], p[3])),
                    tl.join(tl.join(p[4], p[5]), tl.join(p[6], p[7])))
        t = tl.reshape(tl.permute(t, (0, 1, 4, 3, 2)), (BN, BK // P, P // 8, 8))  # plane j = 4c + 2b + a last
        return tl.reshape(tl.permute(t, (0, 1, 3, 2)), (BN, BK))

    @triton.jit
    def _halves(ptr, words, mask, BN: tl.constexpr, sixteen: tl.constexpr):
        """[BN, 1] 16-bit values of a tensor read as the BN / 2 32-bit ``words`` that hold them in pairs."""
        word = tl.load(ptr.to(tl.pointer_type(tl.int32), bitcast=True) + words, mask=mask, other=0)
        lo = (word & 0xFFFF).to(tl.int16).to(sixteen, bitcast=True)
        hi = ((word >> 16) & 0xFFFF).to(tl.int16).to(sixteen, bitcast=True)
        return tl.reshape(tl.join(lo, hi), (BN, 1))

    @triton.jit
    def _tile_scales(s_ptr, z_ptr, k0, N, cols, ok, HAS_ZEROS: tl.constexpr, GROUP: tl.constexpr):
        """The scales and zero points [BN, 1] (float32) of the one group of the tile at k0 (8 without zero points);
        zeros where ``ok`` is false."""
        at = (k0 // GROUP) * N + cols
        s = tl.load(s_ptr + at, mask=ok, other=0.0).to(tl.float32)[:, None]
        if HAS_ZEROS:
            z = tl.load(z_ptr + at, mask=ok, other=0.0).to(tl.float32)[:, None]
        else:
            z = tl.full(s.shape, 8.0, tl.float32)
        return s, z

    @triton.jit(do_not_specialize=["M"])
    def w4a16_kernel(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, part_ptr, count_ptr, M, N, K, stride_xm, stride_ym,
                     WB: tl.constexpr,
                     GROUP: tl.constexpr, CHANNEL: tl.constexpr, HAS_ZEROS: tl.constexpr, SPLIT_K: tl.constexpr,
                     GEMV: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DEQ: tl.constexpr,
                     P: tl.constexpr, ASM: tl.constexpr, UNIT: tl.constexpr, UNEVEN: tl.constexpr,
                     SCALES_AHEAD: tl.constexpr, ODD_FMA: tl.constexpr):
        pid_n, pid_m = tl.program_id(0), tl.program_id(1)
        cols = pid_n * BN + tl.arange(0, BN)
        col_ok = cols < N
        rows = pid_m * BM + tl.arange(0, BM)
        row_ok = rows < M
        k_begin, k_len = k_range(K, UNIT, BK, UNEVEN)
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
        elif DEQ >= 4:
            acc = tl.zeros((BN, BM), dtype=tl.float32)  # minus y.T: each K step subtracts its product (docstring)
        else:
            acc = tl.zeros((BM, BN), dtype=tl.float32)  # minus y
        xtot = tl.zeros((BM,), dtype=tl.float32)
        prow = tl.arange(0, BK8)
        if DEQ >= 4 and not GEMV:  # [BN, BK/8] tiles, the weight as the first operand: BK/8 >= 16 words are whole
            # blocks of WB, so each K step moves the tile's pointers by BK/8 rows of N words
            w_tile = w_ptr + _word_offsets(k_begin // 8 + prow, cols, N, WB, True)
        if SCALES_AHEAD:  # the first tile's scales; each K step then loads the next one's (module docstring)
            s_next, z_next = _tile_scales(s_ptr, z_ptr, k_begin, N, cols, col_ok, HAS_ZEROS, GROUP)
        for k0 in range(k_begin, k_begin + k_len, BK):
            if DEQ >= 4 and not GEMV:
                packed = tl.load(w_tile, mask=col_ok[:, None], other=0, eviction_policy="evict_first")
                w_tile += BK8 * N
            else:
                packed = tl.load(w_ptr + _word_offsets(k0 // 8 + prow, cols, N, WB, False),
                                 mask=col_ok[None, :], other=0, eviction_policy="evict_first")
            if CHANNEL:
                s = tl.full((1, BN), 1.0, tl.float32)
                z = z_chan
            elif SCALES_AHEAD:
                s, z = s_next, z_next
                more = cols * 0 + k0 + BK < k_begin + k_len  # as a [BN] mask: the interpreter takes no scalar one
                s_next, z_next = _tile_scales(s_ptr, z_ptr, k0 + BK, N, cols, col_ok & more, HAS_ZEROS, GROUP)
            elif DEQ < 7:  # GROUP_COLUMNS applies them after the loop, DEQ 9 in its planes
                g = k0 // GROUP + tl.arange(0, SG)
                s = tl.load(s_ptr + g[:, None] * N + cols[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
                if HAS_ZEROS:
                    z = tl.load(z_ptr + g[:, None] * N + cols[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
                else:
                    z = tl.full((SG, BN), 8.0, tl.float32)
            if GEMV:
                # nibble plane j (``_plane_inputs``) as 1 + q/16: its bits shifted into float32's mantissa under 1.0's
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
                    xj = tl.load(x_ptr + _plane_inputs(k0, BK8, j, P)).to(tl.float32)
                    t += f * xj[:, None]
                    xs += xj
                s_rows = _group_rows(s, SG, GK // 8, BN)
                z_rows = _group_rows(z, SG, GK // 8, BN)
                acc2 += s_rows * (16.0 * t - (16.0 + z_rows) * xs[:, None])
            elif DEQ >= 3:  # nibble planes of the exact q - z (6: off + q), made two per instruction on CUDA
                off = _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]
                OFFSET: tl.constexpr = DEQ == 6 or DEQ == 7
                COLUMNS: tl.constexpr = DEQ == 7
                if DEQ == 9:  # the group's scales (and zero points) as [BN, 1], each read in the 32-bit word of its
                    # column pair: loads of 16 bits leave Triton's pipeline, and it then moves the tile through shared
                    # memory to the wgmma
                    at = ((k0 // GROUP) * N + pid_n * BN) // 2 + tl.arange(0, BN // 2)
                    pair_ok = pid_n * BN + 2 * tl.arange(0, BN // 2) < N
                    if HAS_ZEROS:
                        zoff = (_halves(z_ptr, at, pair_ok, BN, sixteen).to(tl.float32) + off).to(sixteen)
                    else:
                        zoff = tl.full((1, 1), off + 8.0, sixteen)
                    p = scaled_planes(packed, zoff, _halves(s_ptr, at, pair_ok, BN, sixteen), sixteen, ASM, ODD_FMA)
                else:
                    if DEQ >= 4 and not COLUMNS:  # on y.T: s and z (one group, SG = 1) as columns [BN, 1]
                        z, s = tl.reshape(z, (BN, 1)), tl.reshape(s, (BN, 1))
                    zoff = tl.zeros((1, 1), sixteen) if OFFSET else (z + off).to(sixteen)
                    p = planes(packed, zoff, sixteen, ASM, SUBTRACT=not OFFSET, ODD_FMA=ODD_FMA)
                xrow, xm = x_ptr + rows[:, None] * stride_xm, row_ok[:, None]
                if DEQ == 9:  # the planes carry the scale: the product needs no work before it is subtracted
                    xt = tl.load(xrow + k0 + tl.arange(0, BK)[None, :], mask=xm, other=0.0)
                    acc -= tl.dot(_joined(p, BN, BK, P), tl.trans(xt))
                elif COLUMNS:  # x's one row into column c for the program's c-th group, zeros elsewhere; off + q
                    col = (k0 - k_begin) // GROUP
                    xt = tl.load(x_ptr + (k0 + tl.arange(0, BK))[None, :] + tl.zeros((BM, 1), tl.int32),
                                 mask=(tl.arange(0, BM) == col)[:, None], other=0.0)
                    acc -= tl.dot(_joined(p, BN, BK, P), tl.trans(xt))
                elif DEQ >= 5:  # the planes joined back into input order: one dot over the whole tile
                    xt = tl.load(xrow + k0 + tl.arange(0, BK)[None, :], mask=xm, other=0.0)
                    part = tl.dot(_joined(p, BN, BK, P), tl.trans(xt))
                    if OFFSET:
                        xsum = tl.sum(xt.to(tl.float32), axis=1)
                else:  # one dot per plane, with x's [BM, BK/8] columns of that plane
                    part = tl.zeros_like(acc)
                    for j in tl.static_range(8):
                        xj = tl.load(xrow + _plane_inputs(k0, BK8, j, P)[None, :], mask=xm, other=0.0)
                        if DEQ == 4:
                            part = tl.dot(p[j], tl.trans(xj), part)
                        else:
                            part = tl.dot(xj, p[j], part)
                if DEQ >= 7:
                    pass  # subtracted above
                elif CHANNEL:
                    acc -= part
                    if OFFSET:
                        xtot += xsum
                elif OFFSET:  # the scale negated, not each element of the product (ptxas spent a LOP3 on each)
                    acc += -s * (part - (z + off) * xsum[None, :])
                else:
                    acc += -s * part
            else:
                q = _nibbles(packed, BK8, BN)
                t = tl.arange(0, BK)  # q's row 8i + j: nibble j of word row i
                xk = _inputs(k0, t // 8, t % 8, P)
                x = tl.load(x_ptr + rows[:, None] * stride_xm + xk[None, :], mask=row_ok[:, None], other=0.0)
                if DEQ == 0:
                    f = (q | 0x4B000000).to(tl.float32, bitcast=True) - 8388608.0
                    w = ((f - _group_rows(z, SG, GK, BN)) * _group_rows(s, SG, GK, BN)).to(sixteen)
                    acc -= tl.dot(x, w)
                else:
                    base, off = _offset16(q, sixteen)
                    if DEQ == 1:
                        zz = _group_rows((z + off).to(sixteen), SG, GK, BN)
                        acc -= tl.dot(x, (base - zz) * _group_rows(s.to(sixteen), SG, GK, BN))
                    else:  # the product of the exact off + q; zero point and scale on the [BM, BN] result
                        part = tl.dot(x, base)
                        xsum = tl.sum(x.to(tl.float32), axis=1)
                        if CHANNEL:
                            acc -= part
                            xtot += xsum
                        else:
                            acc += -s * (part - (z + off) * xsum[:, None])
        if GEMV:
            acc = tl.sum(acc2, axis=0)[None, :]
        elif DEQ == 7:  # GROUP_COLUMNS. Column c: minus sum (off + q) x over group k_begin / GROUP + c; then zero
            # point, scale and one row
            c = tl.arange(0, BM)
            c_ok = c < k_len // GROUP
            gofs = (k_begin // GROUP + c)[:, None] * N + cols[None, :]
            sg = tl.load(s_ptr + gofs, mask=c_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32)
            if HAS_ZEROS:
                zg = tl.load(z_ptr + gofs, mask=c_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32)
            else:
                zg = tl.full((BM, BN), 8.0, tl.float32)
            xg = tl.load(x_ptr + k_begin + c[:, None] * GROUP + tl.arange(0, GROUP)[None, :], mask=c_ok[:, None],
                         other=0.0)
            xs = tl.sum(xg.to(tl.float32), axis=1)
            off = _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]
            acc = tl.sum(sg * (-tl.trans(acc) - (zg + off) * xs[:, None]), axis=0)[None, :]
            rows = tl.arange(0, 1)
        elif DEQ >= 4:
            acc = -tl.trans(acc)
        else:
            acc = -acc
        if CHANNEL:
            if (DEQ == 2 or DEQ == 6) and not GEMV:
                acc -= (z_chan + _offset16(tl.zeros((1, 1), tl.int32), sixteen)[1]) * xtot[:, None]
            acc = acc * s_chan[None, :]
        store_tile(acc, y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLIT_K)


def launch(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor | None,
           counters: torch.Tensor, group: int, cfg: KernelConfig, deferred: bool = False) -> torch.Tensor:
    """``x`` [M, K] (16-bit) times the [N, K] int4 weight (``packed`` in the ``blocked`` storage) -> [M, N];
    ``counters`` int32 zeros (>= the ``splitk.tile_counters`` slots when ``cfg.split`` > 1) are left zero again.
    ``deferred`` with ``cfg.split`` > 1: the float32 partial sums [split, M, N] instead, for the caller to add."""
    m, k = x.shape
    n = packed.shape[1]
    if cfg.one_row and m != 1:
        raise ValueError(f"{cfg} takes one row, not M={m}")
    y, part = splitk.outputs(m, n, x.dtype, x.device, cfg.split, cfg.BN, splitk.tile_rows(cfg), counters, deferred)
    if m == 0:
        return y
    # column tiles on the grid's x axis. Launched as (row tiles, column tiles, split), the 70B gate/up projection at
    # M = 16 ran 30 % slower in session 30, but session 31 saw that slowdown in some processes with this order too
    # (docs/benchmarks.md), so the order is kept, not shown to matter
    compiled = w4a16_kernel[splitk.grid(n, m, cfg)](
        x, packed, scales, scales if zeros is None else zeros, y, part, counters, m, n, k, x.stride(0), y.stride(-2),
        WB=packed.shape[2],
        GROUP=cfg.BK if group == k else group, CHANNEL=group == k, HAS_ZEROS=zeros is not None,
        SPLIT_K=splitk.store_mode(cfg.split, deferred), GEMV=cfg.path == "gemv",
        BM=1 if cfg.path == "gemv" else cfg.BM, BN=cfg.BN, BK=cfg.BK, DEQ=cfg.DEQ, P=block_rows(k, group),
        ASM=x.is_cuda, UNIT=k_unit(group, cfg), UNEVEN=bool(cfg.uneven), SCALES_AHEAD=cfg.scales_ahead,
        ODD_FMA=odd_fma(cfg),
        num_warps=cfg.warps, num_stages=cfg.stages,
    )
    wgmma_guard.check(compiled, lambda: f"the Triton W4A16 kernel with {cfg} on [{n}, {k}], group {group}")
    return y
