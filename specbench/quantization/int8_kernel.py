"""specbench's Triton kernels for int8 activations: W8A8 int8 and W4A8, ``y = x_q @ W_q.T * s_x[m] * s_w[n]``.

Inputs: ``xq`` int8 [M, K] and ``sx`` float32 [M] from ``act_quant_kernel.quantize_per_token``. Weights, K-contiguous
per output channel (the K-major operand int8 MMAs want): 8-bit codes int8 [N, K]; 4-bit codes uint8 [N, K/2], input
2i in the low nibble and 2i + 1 in the high one, unsigned (code + 8). ``ws`` float32 [N] is the per-channel scale
(the QQQ channel scale for grouped 4-bit weights); grouped 4-bit weights add group scales ``gs`` float32 [G, N]
(QQQ's integers in [1, 16], or any float).

Products are exact int8 x int8 sums in int32; the unsigned nibbles' offset comes off as ``8 * sum(x_q)``. Per-channel
weights accumulate int32 over all of K and scale once; grouped ones scale each BK tile's int32 partial by its group
scale (BK divides the group) into a float32 accumulator. Two paths (``A8Config.path``):
- ``gemv`` (M = 1): the weights read as int32 words, four int8 products per ``dp4a`` (4-bit words split into their
  low and high nibbles, matched with the even and odd activation bytes) into a [BN, words] int32 accumulator,
  scaled once per group and reduced once at the end;
- ``dot`` (any M): ``tl.dot`` of the int8 weight tile [BN, BK] with the transposed activation tile [BK, BM]
  (output channels on the MMA's M side, so BM = 16 tokens still fills it; int8 tensor cores).
Both split K with ``splitk.store_tile``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import torch

from specbench.quantization import splitk

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None
else:
    from specbench.quantization.splitk import store_tile


@dataclass(frozen=True)
class A8Config:
    path: str  # "gemv" (M = 1 only) or "dot"
    BN: int
    BK: int
    split: int = 1
    BM: int = 16  # dot path only
    warps: int = 4
    stages: int = 2

    def as_dict(self) -> dict:
        return asdict(self)


def check_shape(n: int, k: int, group: int, bits: int, cfg: A8Config) -> str | None:
    """Why ``cfg`` cannot run an [N, K] ``bits``-bit weight with this group size (a constraint named), or None."""
    if bits == 4 and k % 2:
        return f"in_features {k} must be even (two 4-bit codes per byte)"
    if k % group:
        return f"in_features {k} must be a multiple of the group size {group}"
    if any(b & (b - 1) for b in (cfg.BN, cfg.BK, cfg.BM)):
        return f"BN={cfg.BN}, BK={cfg.BK} and BM={cfg.BM} must be powers of two"
    per_split = k // cfg.split if k % cfg.split == 0 else 0
    if per_split == 0 or per_split % cfg.BK:
        return f"in_features {k} must split into {cfg.split} parts that are multiples of BK={cfg.BK}"
    if group != k and group % cfg.BK:
        return f"BK={cfg.BK} must divide the group size {group} (one group scale per tile)"
    if cfg.path == "dot" and (cfg.BM < 16 or cfg.BN < 16 or cfg.BK < 32):
        return f"tl.dot on int8 needs BM, BN >= 16 and BK >= 32 (got BM={cfg.BM}, BN={cfg.BN}, BK={cfg.BK})"
    if cfg.path == "gemv" and cfg.BK * bits < 32:
        return f"BK={cfg.BK} must hold at least one 32-bit word of weights ({32 // bits} inputs)"
    return None


if triton is not None:

    @triton.jit
    def _dp4a(a, b, c, ASM: tl.constexpr):
        """c + the dot product of the four signed bytes of int32 ``a`` and ``b`` (PTX ``dp4a``; byte by byte
        where inline PTX cannot run, e.g. in the interpreter)."""
        if ASM:
            return tl.inline_asm_elementwise("dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r", [a, b, c],
                                             dtype=tl.int32, is_pure=True, pack=1)
        else:
            for i in tl.static_range(4):
                c += ((a << (24 - 8 * i)) >> 24) * ((b << (24 - 8 * i)) >> 24)
            return c

    @triton.jit
    def _even_odd_bytes(w0, w1):
        """Bytes (0, 2) of ``w0`` then (0, 2) of ``w1`` as one int32, and bytes (1, 3) likewise."""
        even = (w0 & 0xFF) | ((w0 >> 8) & 0xFF00) | ((w1 << 16) & 0xFF0000) | ((w1 << 8) & -16777216)
        odd = ((w0 >> 8) & 0xFF) | ((w0 >> 16) & 0xFF00) | ((w1 << 8) & 0xFF0000) | (w1 & -16777216)
        return even, odd

    @triton.jit(do_not_specialize=["M"])
    def a8_kernel(xq_ptr, sx_ptr, w_ptr, ws_ptr, gs_ptr, y_ptr, part_ptr, count_ptr, M, N, K, stride_wn, stride_ym,
                  BITS: tl.constexpr, GROUP: tl.constexpr, CHANNEL: tl.constexpr, SPLIT_K: tl.constexpr,
                  GEMV: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ASM: tl.constexpr):
        pid_n, pid_m, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        cols = pid_n * BN + tl.arange(0, BN)
        col_ok = cols < N
        rows = pid_m * BM + tl.arange(0, BM)
        row_ok = rows < M
        k_len = K // tl.num_programs(2)
        k_begin = tl.multiple_of(pid_k * k_len, BK)  # check_shape: each split is whole BK tiles
        if GEMV:  # int32 words: weights [N, K * BITS / 32], activations [K / 4]
            W: tl.constexpr = BK * BITS // 32
            j = tl.arange(0, W)
            w_rows = w_ptr + cols[:, None].to(tl.int64) * stride_wn + j[None, :]
            acc = tl.zeros((BN, W), dtype=tl.int32)
            accf = tl.zeros((BN, W), dtype=tl.float32)
            xtot = tl.zeros((W,), dtype=tl.int32)
        else:  # bytes: weights [N, K * BITS / 8], activations [M, K]
            KB: tl.constexpr = BK * BITS // 8
            w_rows = w_ptr + cols[:, None].to(tl.int64) * stride_wn + tl.arange(0, KB)[None, :]
            acc = tl.zeros((BN, BM), dtype=tl.int32)
            accf = tl.zeros((BN, BM), dtype=tl.float32)
            xtot = tl.zeros((BM,), dtype=tl.int32)
        for k0 in range(k_begin, k_begin + k_len, BK):
            if GEMV:
                w = tl.load(w_rows + k0 * BITS // 32, mask=col_ok[:, None], other=0, eviction_policy="evict_first")
                if BITS == 8:
                    xw = tl.broadcast_to(tl.load(xq_ptr + k0 // 4 + j)[None, :], (BN, W))
                    xs = tl.zeros((W,), dtype=tl.int32)  # signed codes: no offset
                    part = _dp4a(w, xw, acc if CHANNEL else tl.zeros_like(acc), ASM)
                else:  # word j holds inputs 8j + (0, 2, 4, 6) in its low nibbles, 8j + (1, 3, 5, 7) in the high
                    x0, x1 = tl.split(tl.reshape(tl.load(xq_ptr + k0 // 4 + tl.arange(0, 2 * W)), (W, 2)))
                    xe, xo = _even_odd_bytes(x0, x1)
                    ones = tl.full((W,), 0x01010101, tl.int32)
                    xs = _dp4a(xe, ones, _dp4a(xo, ones, tl.zeros_like(xe), ASM), ASM)
                    xe, xo = tl.broadcast_to(xe[None, :], (BN, W)), tl.broadcast_to(xo[None, :], (BN, W))
                    part = _dp4a(w & 0x0F0F0F0F, xe, acc if CHANNEL else tl.zeros_like(acc), ASM)
                    part = _dp4a((w >> 4) & 0x0F0F0F0F, xo, part, ASM)
                if CHANNEL:
                    acc = part
                    xtot += xs
                else:
                    g = tl.load(gs_ptr + (k0 // GROUP) * N + cols, mask=col_ok, other=0.0)
                    accf += g[:, None] * (part - 8 * xs[None, :]).to(tl.float32)
            else:
                b = tl.load(w_rows + k0 * BITS // 8, mask=col_ok[:, None], other=0, eviction_policy="evict_first")
                x = tl.load(xq_ptr + rows[:, None].to(tl.int64) * K + (k0 + tl.arange(0, BK))[None, :],
                            mask=row_ok[:, None], other=0)
                if BITS == 8:
                    w = b
                    xs = tl.zeros((BM,), dtype=tl.int32)  # signed codes: no offset
                else:  # byte i holds inputs 2i (low nibble) and 2i + 1 (high)
                    w = tl.interleave(b & 0xF, b >> 4).to(tl.int8)
                    xs = tl.sum(x.to(tl.int32), axis=1)
                if CHANNEL:
                    acc = tl.dot(w, tl.trans(x), acc, out_dtype=tl.int32)
                    xtot += xs
                else:
                    g = tl.load(gs_ptr + (k0 // GROUP) * N + cols, mask=col_ok, other=0.0)
                    part = tl.dot(w, tl.trans(x), out_dtype=tl.int32) - 8 * xs[None, :]
                    accf += g[:, None] * part.to(tl.float32)
        if CHANNEL:  # unsigned 4-bit codes: take off 8 * sum(x); xtot is 0 for 8 bits
            accf = (acc - 8 * xtot[None, :]).to(tl.float32)
        ws = tl.load(ws_ptr + cols, mask=col_ok, other=0.0)
        sx = tl.load(sx_ptr + rows, mask=row_ok, other=0.0)
        if GEMV:
            out = sx[:, None] * (tl.sum(accf, axis=1) * ws)[None, :]
        else:
            out = tl.trans(accf * ws[:, None]) * sx[:, None]
        store_tile(out, y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLIT_K)


def counters_needed(n: int, m: int, cfg: A8Config) -> int:
    """Counter slots a split-K launch uses: one per output tile."""
    return splitk.counters_needed(n, m, cfg.BN, 1 if cfg.path == "gemv" else cfg.BM)


def launch(xq: torch.Tensor, sx: torch.Tensor, weight: torch.Tensor, ws: torch.Tensor, gs: torch.Tensor | None,
           counters: torch.Tensor, bits: int, group: int, cfg: A8Config, dtype: torch.dtype) -> torch.Tensor:
    """``xq`` [M, K] int8 with per-row scales ``sx`` times the packed [N, K] weight -> [M, N] in ``dtype``;
    ``counters`` int32 zeros (>= the ``counters_needed`` slots when ``cfg.split`` > 1) are left zero again."""
    m, k = xq.shape
    n = weight.shape[0]
    if cfg.path == "gemv" and m != 1:
        raise ValueError(f"the gemv path takes one row, not M={m}")
    reason = check_shape(n, k, group, bits, cfg)
    if reason:
        raise ValueError(reason)
    bm = 1 if cfg.path == "gemv" else cfg.BM
    if m == 0:
        return torch.empty(m, n, dtype=dtype, device=xq.device)
    y, part = splitk.outputs(m, n, dtype, xq.device, cfg.split, cfg.BN, bm, counters)
    grid = (triton.cdiv(n, cfg.BN), triton.cdiv(m, bm), cfg.split)
    if cfg.path == "gemv":  # the gemv path reads int32 words
        xq, weight = xq.view(torch.int32), weight.view(torch.int32)
    a8_kernel[grid](
        xq, sx, weight, ws, ws if gs is None else gs, y, part, counters, m, n, k, weight.stride(0), y.stride(0),
        BITS=bits, GROUP=cfg.BK if group == k else group, CHANNEL=group == k, SPLIT_K=cfg.split > 1,
        GEMV=cfg.path == "gemv", BM=bm, BN=cfg.BN, BK=cfg.BK, ASM=os.environ.get("TRITON_INTERPRET") != "1",
        num_warps=cfg.warps, num_stages=cfg.stages,
    )
    return y
