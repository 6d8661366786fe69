"""specbench's Triton kernels for int8 activations: W8A8 int8 and W4A8, ``y = x_q @ W_q.T * s_x[m] * s_w[n]``.

Inputs: ``xq`` int8 [M, K] and ``sx`` float32 [M] from ``act_quant_kernel.quantize_per_token``. Weights, K-contiguous
per output channel (the K-major operand int8 MMAs want): 8-bit codes int8 [N, K]; 4-bit codes uint8 [N, K/2], input
2i in the low nibble and 2i + 1 in the high one, unsigned (code + 8). ``ws`` float32 [N] is the per-channel scale
(the QQQ channel scale for grouped 4-bit weights); grouped 4-bit weights add group scales ``gs`` float32 [G, N]
(QQQ's integers in [1, 16], or any float).

Products are exact int8 x int8 sums in int32; the unsigned nibbles' offset comes off as ``8 * sum(x_q)``. Per-channel
weights accumulate int32 over all of K and scale once; grouped ones scale each BK tile's int32 partial by its group
scale (BK divides the group) into a float32 accumulator. Two paths (``A8Config.path``):
- ``gemv`` (M = 1): CUDA-core int32 multiply-adds on a [BN, BK] accumulator, reduced once per group (or at the end);
- ``dot`` (any M): ``tl.dot`` of the int8 weight tile [BN, BK] with the transposed activation tile [BK, BM]
  (output channels on the MMA's M side, so BM = 16 tokens still fills it; int8 tensor cores).
Both split K with ``splitk.store_tile``.
"""

from __future__ import annotations

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
    if cfg.path == "gemv" and cfg.BK < 2 * bits:
        return f"BK={cfg.BK} must be at least {2 * bits}"
    return None


if triton is not None:

    @triton.jit
    def _weight_tile(w_ptr, cols, k0, K, kb, col_ok, BITS: tl.constexpr):
        """The [BN, BK] tile of codes at inputs k0.. (int32 for 8 bits; for 4 bits the unsigned low and high
        nibbles [BN, BK/2] each: inputs k0 + 2i and k0 + 2i + 1)."""
        row_bytes = K * BITS // 8
        ptrs = w_ptr + cols[:, None].to(tl.int64) * row_bytes + (k0 * BITS // 8 + kb)[None, :]
        w = tl.load(ptrs, mask=col_ok[:, None], other=0, eviction_policy="evict_first")
        if BITS == 8:
            return w.to(tl.int32), w
        else:
            return (w & 0xF).to(tl.int32), (w >> 4).to(tl.int32)

    @triton.jit(do_not_specialize=["M"])
    def a8_kernel(xq_ptr, sx_ptr, w_ptr, ws_ptr, gs_ptr, y_ptr, part_ptr, count_ptr, M, N, K, stride_ym,
                  BITS: tl.constexpr, GROUP: tl.constexpr, CHANNEL: tl.constexpr, SPLIT_K: tl.constexpr,
                  GEMV: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_n, pid_m, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        cols = pid_n * BN + tl.arange(0, BN)
        col_ok = cols < N
        rows = pid_m * BM + tl.arange(0, BM)
        row_ok = rows < M
        k_len = K // tl.num_programs(2)
        k_begin = pid_k * k_len
        KB: tl.constexpr = BK * BITS // 8  # weight bytes per output channel per tile
        kb = tl.arange(0, KB)
        if GEMV:
            acc2 = tl.zeros((BN, KB), dtype=tl.int32)
            accf = tl.zeros((BN,), dtype=tl.float32)
            xtot = tl.zeros((1,), dtype=tl.int32)
        else:
            acc = tl.zeros((BN, BM), dtype=tl.int32)
            accg = tl.zeros((BN, BM), dtype=tl.float32)
            xtot = tl.zeros((BM,), dtype=tl.int32)
        for k0 in range(k_begin, k_begin + k_len, BK):
            lo, hi = _weight_tile(w_ptr, cols, k0, K, kb, col_ok, BITS)
            if GEMV:
                if BITS == 8:
                    part2 = lo * tl.load(xq_ptr + k0 + kb).to(tl.int32)[None, :]
                    xs = 0  # signed codes: no offset
                else:
                    xe = tl.load(xq_ptr + k0 + 2 * kb).to(tl.int32)
                    xo = tl.load(xq_ptr + k0 + 2 * kb + 1).to(tl.int32)
                    part2 = lo * xe[None, :] + hi * xo[None, :]
                    xs = tl.sum(xe + xo, axis=0)
                if CHANNEL:
                    acc2 += part2
                    xtot += xs
                else:
                    g = tl.load(gs_ptr + (k0 // GROUP) * N + cols, mask=col_ok, other=0.0)
                    accf += g * (tl.sum(part2, axis=1) - 8 * xs).to(tl.float32)
            else:
                xk = k0 + tl.arange(0, BK)
                x = tl.load(xq_ptr + rows[:, None].to(tl.int64) * K + xk[None, :], mask=row_ok[:, None], other=0)
                if BITS == 8:
                    w = hi
                    xs = tl.zeros((BM,), dtype=tl.int32)  # signed codes: no offset
                else:
                    w = tl.interleave(lo, hi).to(tl.int8)
                    xs = tl.sum(x.to(tl.int32), axis=1)
                if CHANNEL:
                    acc = tl.dot(w, tl.trans(x), acc, out_dtype=tl.int32)
                    xtot += xs
                else:
                    g = tl.load(gs_ptr + (k0 // GROUP) * N + cols, mask=col_ok, other=0.0)
                    part = tl.dot(w, tl.trans(x), out_dtype=tl.int32) - 8 * xs[None, :]
                    accg += g[:, None] * part.to(tl.float32)
        ws = tl.load(ws_ptr + cols, mask=col_ok, other=0.0)
        sx = tl.load(sx_ptr + rows, mask=row_ok, other=0.0)
        if GEMV:
            if CHANNEL:
                accf = (tl.sum(acc2, axis=1) - 8 * xtot).to(tl.float32)  # xtot is 0 for 8 bits
            out = (sx[:, None] * (accf * ws)[None, :])
        else:
            if CHANNEL:
                accg = (acc - 8 * xtot[None, :]).to(tl.float32)
            out = tl.trans(accg * ws[:, None]) * sx[:, None]
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
    a8_kernel[grid](
        xq, sx, weight, ws, ws if gs is None else gs, y, part, counters, m, n, k, y.stride(0),
        BITS=bits, GROUP=cfg.BK if group == k else group, CHANNEL=group == k, SPLIT_K=cfg.split > 1,
        GEMV=cfg.path == "gemv", BM=bm, BN=cfg.BN, BK=cfg.BK, num_warps=cfg.warps, num_stages=cfg.stages,
    )
    return y
